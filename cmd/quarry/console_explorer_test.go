package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/chromedp/chromedp"
)

// back goes back in the browser's history and waits for the page it lands
// on (a page answered to a POST lands on Chromium's ERR_CACHE_MISS). The
// page may come from the back/forward cache, so the wait is for the
// address to change, not for a new document.
func back() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		from, err := chromedp.Run(ctx, chromedp.Evaluate[string]("location.href"))
		if err != nil {
			return err
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("history.back(); true")); err != nil {
			return err
		}
		for {
			done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.href !== `+strconv.Quote(from)+` && document.readyState === "complete"`))
			if err == nil && done {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// TestConsoleExplorer drives the store explorer in Chromium as an
// operator over a table of 30 items: the grid and its columns, the item a
// click away, the card views, paging forward and back, the page size,
// bulk delete with its confirmation, Back after each write and after a
// refused save (no ERR_CACHE_MISS, nothing posted again), the export
// whose JSON lines and CSV rows are a Scan's items, PartiQL with its
// pages, a Query's empty partition key, and the table settings.
func TestConsoleExplorer(t *testing.T) {
	s := startChecksServer(t)
	base := "http://" + s.api
	var out, errs syncBuffer
	if code := run(t.Context(), []string{"admin", "token", "create", "--name", "ops", "--data-dir", s.dir}, noEnv, &out, &errs); code != 0 {
		t.Fatalf("admin token create: %s", errs.String())
	}
	opToken := strings.TrimSpace(out.String())
	ctx := context.Background()
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + s.store),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
	const table = "explorer-demo"
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("n"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("n"), KeyType: types.KeyTypeRange}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		it := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "shop"}, "n": &types.AttributeValueMemberN{Value: fmt.Sprint(i)},
			"title": &types.AttributeValueMemberS{Value: fmt.Sprintf("item %02d", i)}, "price": &types.AttributeValueMemberN{Value: fmt.Sprint(i * 3)}}
		if i == 2 {
			it["note"] = &types.AttributeValueMemberS{Value: "a long note " + strings.Repeat("that goes on ", 20) + "to the end"}
			it["tags"] = &types.AttributeValueMemberSS{Value: []string{"red", "blue"}}
		}
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		o, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount})
		if err != nil {
			t.Fatal(err)
		}
		return int(o.Count)
	}

	d := newDriver(t, base)
	d.signIn("operator", opToken)
	path := "/console/explorer/t/" + table

	// The grid: key columns first, then the page's attributes by name.
	d.open(path+"?op=query&pk=shop&limit=10", "#items")
	if got := d.eval(`[...document.querySelectorAll("#items thead th")].map(e => e.textContent).join(",")`); got != ",pk,n,note,price,tags,title" {
		t.Errorf("grid columns %q", got)
	}
	firstKeys := func() string {
		return d.eval(`[...document.querySelectorAll("#items tbody tr")].map(r => r.cells[2].textContent).join(",")`)
	}
	if got := firstKeys(); got != "0,1,2,3,4,5,6,7,8,9" {
		t.Errorf("page 1 rows %q", got)
	}
	d.eval(`document.querySelector("#count").scrollIntoView(); ""`)
	d.shot("console-explorer-grid.png")
	// A cut cell has the whole value in its title; the key opens the item.
	if got := d.eval(`document.querySelector("#items tbody tr:nth-child(3) td[title]").title`); !strings.HasSuffix(got, "to the end") {
		t.Errorf("the cut note's title: %q", got)
	}
	d.run("open an item", d.submit("#items tbody tr:nth-child(3) a.key"), chromedp.WaitVisible(chromedp.CSS("#item-form")))
	if got := d.eval(`document.querySelector("#item").value`); !strings.Contains(got, "to the end") || !strings.Contains(got, `"blue"`) {
		t.Errorf("the item page holds %s", got)
	}
	d.run("back to the grid", back(), chromedp.WaitVisible(chromedp.CSS("#items")))

	// Paging forward twice, back twice: each page as seen before.
	d.run("next", d.submit("#next"), chromedp.WaitVisible(chromedp.CSS("#prev")))
	page2 := firstKeys()
	d.run("next again", d.submit("#next"), chromedp.WaitVisible(chromedp.CSS("#prev")))
	if got := firstKeys(); got != "20,21,22,23,24,25,26,27,28,29" || d.text("#page") != "Page 3" {
		t.Errorf("page 3 rows %q", got)
	}
	d.run("previous", d.submit("#prev"), chromedp.WaitVisible(chromedp.CSS("#items")))
	if got := firstKeys(); got != page2 || page2 != "10,11,12,13,14,15,16,17,18,19" {
		t.Errorf("Previous from page 3 shows %q, page 2 showed %q", got, page2)
	}
	d.run("previous again", d.submit("#prev"), chromedp.WaitVisible(chromedp.CSS("#items")))
	if got := firstKeys(); got != "0,1,2,3,4,5,6,7,8,9" || d.eval(`String(!!document.querySelector("#prev"))`) != "false" {
		t.Errorf("back on page 1: %q", got)
	}
	// The card view is remembered in the URL, paging included.
	d.run("cards", d.submit("#view-plain"), chromedp.WaitVisible(chromedp.CSS("ol#items")))
	d.run("cards, next", d.submit("#next"), chromedp.WaitVisible(chromedp.CSS("ol#items")))
	if got := d.text("ol#items"); !strings.Contains(got, `"title": "item 10"`) {
		t.Errorf("card page 2: %s", got)
	}
	// Page size.
	d.run("page size", chromedp.SetValue(chromedp.CSS("#limit"), "25"), chromedp.SetValue(chromedp.CSS("#view"), "grid"),
		d.submit("#query button"), chromedp.WaitVisible(chromedp.CSS("table#items")))
	if got := d.eval(`String(document.querySelectorAll("#items tbody tr").length)`); got != "25" {
		t.Errorf("25 a page shows %s rows", got)
	}

	// The header's box ticks every row, and untick them.
	d.run("select all", chromedp.Click(chromedp.CSS("#select-all")))
	if got := d.eval(`String(document.querySelectorAll("#items tbody input:checked").length)`); got != "25" {
		t.Errorf("select all ticked %s rows", got)
	}
	d.run("select none", chromedp.Click(chromedp.CSS("#select-all")))
	// Bulk delete: select two rows, confirm, back on the page.
	d.run("select", chromedp.Click(chromedp.CSS("#items tbody tr:nth-child(4) input[type=checkbox]")),
		chromedp.Click(chromedp.CSS("#items tbody tr:nth-child(6) input[type=checkbox]")),
		d.submit("#delete-selected"), chromedp.WaitVisible(chromedp.CSS("#doomed")))
	if got := d.text("#doomed"); !strings.Contains(got, `"n":3`) || !strings.Contains(got, `"n":5`) || count() != 30 {
		t.Errorf("the confirmation lists %q (%d items left)", got, count())
	}
	d.run("confirm", d.submit("#confirm"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#msg"); got != "2 items deleted." || count() != 28 || !strings.Contains(d.eval("location.search"), "limit=25") {
		t.Errorf("after the delete: %q, %d items, at %s", got, count(), d.eval("location.search"))
	}
	if got := firstKeys(); strings.Contains(","+got+",", ",3,") || strings.Contains(","+got+",", ",5,") {
		t.Errorf("the deleted rows are still shown: %s", got)
	}
	// Back after the write: the confirmation page again, nothing posted.
	d.run("back after delete", back())
	if got := d.eval("location.protocol"); got != "http:" || count() != 28 {
		t.Errorf("Back after the delete: %s, %d items", got, count())
	}

	// Back after a refused save: the refusal is a GET page.
	d.open(path+"/item", "#item-form")
	d.run("refused save", chromedp.SetValue(chromedp.CSS("#item"), `{"pk": {"S": "shop"}, "title": {"S": "no sort key"}}`),
		d.submit("#save"), chromedp.WaitVisible(chromedp.CSS("#error")))
	d.open(path, "#items")
	d.run("back after a refused save", back(), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := d.eval(`location.protocol + " " + document.querySelector("#item").value`); !strings.HasPrefix(got, "http: ") || !strings.Contains(got, "no sort key") {
		t.Errorf("Back after the refused save: %s", got)
	}

	// Export: the files the links give are the Scan's items.
	d.open(path+"?op=scan", "#export-jsonl")
	fetch := func(sel string) string {
		return d.eval(`(() => { const x = new XMLHttpRequest(); x.open("GET", document.querySelector("` + sel + `").href, false); x.send(); return x.status + "\n" + x.responseText })()`)
	}
	var scan []string
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		o, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range o.Items {
			scan = append(scan, it["n"].(*types.AttributeValueMemberN).Value+"="+it["title"].(*types.AttributeValueMemberS).Value)
		}
	}
	sort.Strings(scan)
	status, body, _ := strings.Cut(fetch("#export-jsonl"), "\n")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		var it map[string]map[string]any
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		got = append(got, fmt.Sprint(it["n"]["N"])+"="+fmt.Sprint(it["title"]["S"]))
	}
	sort.Strings(got)
	if status != "200" || strings.Join(got, ",") != strings.Join(scan, ",") || len(got) != 28 {
		t.Errorf("JSON lines export (%s): %v, the Scan: %v", status, got, scan)
	}
	status, body, _ = strings.Cut(fetch("#export-csv"), "\n")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range rows[1:] {
		got = append(got, r[1]+"="+r[5])
	}
	sort.Strings(got)
	if status != "200" || strings.Join(rows[0], ",") != "pk,n,note,price,tags,title,(other attributes)" || strings.Join(got, ",") != strings.Join(scan, ",") {
		t.Errorf("CSV export (%s): header %v, rows %v", status, rows[0], got)
	}

	// A Query without its partition key says so.
	d.run("empty partition key", chromedp.Click(chromedp.CSS(`input[name=op][value=query]`)),
		d.submit("#query button"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := d.text("#error"); !strings.Contains(got, "A Query needs the partition key value") {
		t.Errorf("empty partition key: %q", got)
	}

	// PartiQL: a SELECT with its pages; a write runs once, Back reruns nothing.
	d.run("partiql", d.submit("#partiql-link"), chromedp.WaitVisible(chromedp.CSS("#stmt")),
		chromedp.SetValue(chromedp.CSS("#plimit"), "10"), d.submit("#run"), chromedp.WaitVisible(chromedp.CSS("#items")))
	if got := d.eval(`String(document.querySelectorAll("#items tbody tr").length)`); got != "10" {
		t.Errorf("PartiQL first page: %s rows", got)
	}
	d.run("partiql next", d.submit("#next"), chromedp.WaitVisible(chromedp.CSS("#items")))
	if got := d.eval(`String(document.querySelectorAll("#items tbody tr").length)`); got != "10" {
		t.Errorf("PartiQL second page: %s rows", got)
	}
	d.run("partiql delete", chromedp.SetValue(chromedp.CSS("#stmt"), `DELETE FROM "`+table+`" WHERE pk = 'shop' AND n = 0`),
		d.submit("#run"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if count() != 27 {
		t.Errorf("after the PartiQL DELETE: %d items", count())
	}
	d.open(path, "#items")
	d.run("back after the PartiQL write", back(), chromedp.WaitVisible(chromedp.CSS("#stmt")))
	if got := d.eval("location.protocol"); got != "http:" || count() != 27 {
		t.Errorf("Back after the PartiQL write: %s, %d items", got, count())
	}

	// Settings: a refusal, then a GSI, TTL and the stream.
	d.open(path, "#add-gsi")
	d.run("gsi without a name", chromedp.SendKeys(chromedp.CSS("#gsi-pk"), "title"), d.submit("#add-gsi-button"), chromedp.WaitVisible(chromedp.CSS("#settings-error")))
	if got := d.text("#settings-error"); got != "A new index needs the index name." || d.eval(`document.querySelector("#gsi-pk").value`) != "title" {
		t.Errorf("gsi without a name: %q", got)
	}
	d.run("gsi", chromedp.SendKeys(chromedp.CSS("#gsi-name"), "by-title"), d.submit("#add-gsi-button"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#indexes"); !strings.Contains(got, "by-title") {
		t.Errorf("indexes after the add: %q", got)
	}
	d.run("ttl", chromedp.SendKeys(chromedp.CSS("#ttl-attr"), "expires"), d.submit("#ttl-on"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#ttl-state"); !strings.Contains(got, "enabled (expires)") {
		t.Errorf("TTL after enabling: %q", got)
	}
	d.run("stream", chromedp.SetValue(chromedp.CSS("#stream-view"), "NEW_AND_OLD_IMAGES"), d.submit("#stream-save"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#facts"); !strings.Contains(got, "NEW_AND_OLD_IMAGES") {
		t.Errorf("facts after the stream: %q", got)
	}
	d.eval(`document.querySelector("#settings").scrollIntoView(); ""`)
	d.shot("console-explorer-settings.png")
	d.run("delete gsi", d.submit("#delete-gsi-by-title"), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		d.submit("#confirm"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#msg"); got != "Index deleted." || strings.Contains(d.text("#indexes"), "by-title") {
		t.Errorf("after the GSI delete: %q", got)
	}
}

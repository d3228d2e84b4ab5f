package explorer

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/console"
)

// bundle is a console with the explorer over a fresh embedded store.
type bundle struct {
	base string
	db   *dynamodb.Client
	op   *http.Client // signed in as the operator
	// tenant is signed in to a realm without the operator areas.
	tenant *http.Client
}

type tokenAuth struct{ cred, id string }

func (a tokenAuth) Authenticate(_ context.Context, cred string) (console.Principal, error) {
	if cred != a.cred {
		return console.Principal{}, errors.New("bad credential")
	}
	return console.Principal{ID: a.id, Name: a.id}, nil
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db := ddb.NewClient(st)
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)),
		Realms: []console.Realm{
			{Kind: "operator", Label: "Operator token", Operator: true, Auth: tokenAuth{"qop_good", "root"}},
			{Kind: "tenant", Label: "Tenant token", Auth: tokenAuth{"tn_good", "alice"}},
		},
		Areas: []console.Area{New(db)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	b := &bundle{base: srv.URL, db: db}
	b.op = b.signIn(t, "operator", "qop_good")
	b.tenant = b.signIn(t, "tenant", "tn_good")
	return b
}

func (b *bundle) signIn(t *testing.T, realm, cred string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	body, _ := b.get(t, hc, "/console/signin")
	m := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no nonce in %s", body)
	}
	resp, err := hc.PostForm(b.base+"/console/signin", url.Values{"nonce": {m[1]}, "realm": {realm}, "credential": {cred}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return hc
}

// get returns the body and status of path.
func (b *bundle) get(t *testing.T, hc *http.Client, path string) (string, int) {
	t.Helper()
	resp, err := hc.Get(b.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}

// post posts form with the CSRF token of the page at from, without
// following the redirect: it returns the status and the Location.
func (b *bundle) post(t *testing.T, from, path string, form url.Values) (int, string) {
	t.Helper()
	page, _ := b.get(t, b.op, from)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf on %s", from)
	}
	form.Set("csrf", m[1])
	hc := *b.op
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.PostForm(b.base+path, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// table creates a table keyed pk (S), n (N) with items: pk "p", n 0..n-1,
// each with the attributes attrs adds.
func (b *bundle) table(t *testing.T, name string, n int, attrs func(i int) Item) {
	t.Helper()
	ctx := context.Background()
	_, err := b.db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("n"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("n"), KeyType: types.KeyTypeRange}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		it := Item{"pk": &types.AttributeValueMemberS{Value: "p"}, "n": &types.AttributeValueMemberN{Value: strconv.Itoa(i)}}
		if attrs != nil {
			for k, v := range attrs(i) {
				it[k] = v
			}
		}
		if _, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
}

var cellRE = regexp.MustCompile(`<a href="/console/explorer/t/[^/]+/item\?key=[^"]+" class="key">([^<]*)</a>`)

// firstCells returns the key column's cells of a grid page.
func firstCells(page string) []string {
	var out []string
	for _, m := range cellRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

var linkRE = regexp.MustCompile(`href="([^"]+)" id="(next|prev|first)"`)

// links returns the pager's links of a page by id, unescaped.
func links(page string) map[string]string {
	out := map[string]string{}
	for _, m := range linkRE.FindAllStringSubmatch(page, -1) {
		out[m[2]] = html.UnescapeString(m[1])
	}
	return out
}

// TestGridPaging pages a Query of 23 items by 10 forward to the end and
// back to the start, each page's rows in order under the key columns.
func TestGridPaging(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 23, func(i int) Item {
		return Item{"title": &types.AttributeValueMemberS{Value: fmt.Sprintf("thing %02d", i)}}
	})
	path := "/console/explorer/t/things"
	page, code := b.get(t, b.op, path+"?op=query&pk=p&limit=10")
	if code != 200 {
		t.Fatalf("first page: %d %s", code, page)
	}
	if !strings.Contains(page, `<th class="key">pk</th><th class="key">n</th><th>title</th>`) {
		t.Errorf("the grid's columns are not pk, n, title: %s", page)
	}
	var seen []string
	pages := []string{page}
	for i := 0; ; i++ {
		if i > 5 {
			t.Fatal("no end to the pages")
		}
		if !strings.Contains(page, fmt.Sprintf(`id="page">Page %d<`, i+1)) {
			t.Errorf("page %d is not numbered so", i+1)
		}
		for _, m := range regexp.MustCompile(`>thing (\d\d)<`).FindAllStringSubmatch(page, -1) {
			seen = append(seen, m[1])
		}
		next, ok := links(page)["next"]
		if !ok {
			break
		}
		page, code = b.get(t, b.op, "/console/explorer/t/things"+next)
		if code != 200 {
			t.Fatalf("page %d: %d %s", i+2, code, page)
		}
		pages = append(pages, page)
	}
	if got := strings.Join(seen, ","); got != "00,01,02,03,04,05,06,07,08,09,10,11,12,13,14,15,16,17,18,19,20,21,22" {
		t.Errorf("forward the pages show %s", got)
	}
	if len(pages) != 3 {
		t.Fatalf("%d pages of 10 for 23 items", len(pages))
	}
	// Back from the last page: each Previous is the page seen before.
	for i := len(pages) - 1; i > 0; i-- {
		prev, ok := links(page)["prev"]
		if !ok {
			t.Fatalf("page %d has no Previous", i+1)
		}
		page, _ = b.get(t, b.op, path+prev)
		if got, want := firstCells(page), firstCells(pages[i-1]); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("Previous from page %d shows %v, page %d showed %v", i+1, got, i, want)
		}
	}
	if _, ok := links(page)["prev"]; ok {
		t.Error("the first page has a Previous link")
	}
}

// TestCursorRefused: a cursor edited by hand, or carried to another
// table or index, is refused with a message, never run.
func TestCursorRefused(t *testing.T) {
	b := setup(t)
	b.table(t, "one", 12, nil)
	b.table(t, "two", 12, nil)
	page, _ := b.get(t, b.op, "/console/explorer/t/one?limit=10")
	next := links(page)["next"]
	if next == "" {
		t.Fatal("no next page")
	}
	u, _ := url.Parse(next)
	cur := u.Query().Get("cur")
	forged := strings.Replace(cur, cur[:4], "AAAA", 1)
	for _, p := range []string{
		"/console/explorer/t/two?limit=10&cur=" + url.QueryEscape(cur),
		"/console/explorer/t/one?limit=10&cur=" + url.QueryEscape(forged),
		"/console/explorer/t/one?limit=10&cur=garbage",
	} {
		body, code := b.get(t, b.op, p)
		if code != 400 || !strings.Contains(body, "This page link is not valid for this table and index") {
			t.Errorf("%s: %d, no refusal", p, code)
		}
	}
	if body, code := b.get(t, b.op, "/console/explorer/t/one"+next); code != 200 || !strings.Contains(body, `id="page">Page 2<`) {
		t.Errorf("the genuine cursor: %d", code)
	}
}

// TestEmptyInputs: a required input left empty is named, not answered
// with "No items.".
func TestEmptyInputs(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 3, nil)
	for _, c := range []struct{ path, want string }{
		{"/console/explorer/t/things?op=query&pk=", "A Query needs the partition key value: enter the value of pk (the partition key of the table), or choose Scan."},
		{"/console/explorer/t/things?op=query&pk=p&skop=%3E&sk=", "The sort key condition &gt; needs a value of n."},
		{"/console/explorer/t/things?op=query&pk=p&skop=between&sk=1&sk2=", "between needs a second value of n (the upper bound)."},
		{"/console/explorer/t/things?op=query&pk=p&skop=nope&sk=1", "Unknown sort key condition"},
		{"/console/explorer/t/things?op=scan&values=%7B%22%3Av%22%3A%7B%22N%22%3A%221%22%7D%7D", "Expression values are given without a filter expression"},
		{"/console/explorer/t/things?index=nope", "The table has no index &#34;nope&#34;."},
	} {
		body, code := b.get(t, b.op, c.path)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d, want the message %q", c.path, code, c.want)
		}
		if strings.Contains(body, "No items") {
			t.Errorf("%s says No items", c.path)
		}
	}
}

// TestBulkDelete selects items, confirms on a GET page, deletes them with
// one POST that redirects back to the page they were on; hostile key
// lists delete nothing.
func TestBulkDelete(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 5, nil)
	b.table(t, "other", 1, nil)
	page, _ := b.get(t, b.op, "/console/explorer/t/things?limit=10")
	refs := regexp.MustCompile(`name="key" value="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 5 {
		t.Fatalf("%d checkboxes for 5 items", len(refs))
	}
	sel := url.Values{"key": {refs[1][1], refs[3][1]}, "back": {"/console/explorer/t/things?limit=10"}}
	confirm, code := b.get(t, b.op, "/console/explorer/t/things/delete-items?"+sel.Encode())
	if code != 200 || !strings.Contains(confirm, "Delete 2 items?") || !strings.Contains(confirm, `{&#34;n&#34;:1,&#34;pk&#34;:&#34;p&#34;}`) {
		t.Fatalf("confirmation: %d %s", code, confirm)
	}
	if n := count(t, b, "things"); n != 5 {
		t.Fatalf("the confirmation page deleted: %d left", n)
	}
	status, loc := b.post(t, "/console/explorer/t/things/delete-items?"+sel.Encode(), "/console/explorer/t/things/delete-items", sel)
	if status != http.StatusSeeOther || loc != "/console/explorer/t/things?limit=10&msg=itemsdeleted&n=2" {
		t.Fatalf("delete answered %d %s", status, loc)
	}
	if body, _ := b.get(t, b.op, loc); !strings.Contains(body, "2 items deleted.") || strings.Join(firstCells(body), ",") != "p,p,p" {
		t.Errorf("after the delete: %v", firstCells(body))
	}
	// Hostile lists: each refused whole, nothing deleted.
	otherKey := encodeKey(Item{"pk": &types.AttributeValueMemberS{Value: "p"}, "n": &types.AttributeValueMemberN{Value: "0"}})
	wrongType := encodeKey(Item{"pk": &types.AttributeValueMemberS{Value: "p"}, "n": &types.AttributeValueMemberS{Value: "0"}})
	extra := encodeKey(Item{"pk": &types.AttributeValueMemberS{Value: "p"}, "n": &types.AttributeValueMemberN{Value: "0"}, "x": &types.AttributeValueMemberS{Value: "y"}})
	many := make([]string, maxSelected+1)
	for i := range many {
		many[i] = otherKey
	}
	for _, c := range []struct {
		name string
		keys []string
		want string
	}{
		{"none", nil, "Select the items to delete first"},
		{"malformed", []string{otherKey, "%%%"}, "is not a key of things"},
		{"wrong type", []string{otherKey, wrongType}, "is not a key of things"},
		{"extra attribute", []string{otherKey, extra}, "is not a key of things"},
		{"too many", many, "At most 100 items are deleted at once; 101 are selected."},
	} {
		form := url.Values{"key": c.keys, "back": {"https://evil.example/"}}
		body, code := b.get(t, b.op, "/console/explorer/t/things/delete-items?"+form.Encode())
		if code != 400 || !strings.Contains(body, c.want) || !strings.Contains(body, `href="/console/explorer/t/things"`) {
			t.Errorf("%s: confirmation %d, want %q", c.name, code, c.want)
		}
		if status, _ := b.post(t, "/console/explorer/t/things", "/console/explorer/t/things/delete-items", form); status != 400 {
			t.Errorf("%s: delete answered %d", c.name, status)
		}
	}
	if n := count(t, b, "things"); n != 3 {
		t.Errorf("the refused deletes left %d items, want 3", n)
	}
	// Another table's name in the path with these keys: its own item.
	if n := count(t, b, "other"); n != 1 {
		t.Errorf("other has %d items", n)
	}
	// A session without the operator realm finds no such page.
	if _, code := b.get(t, b.tenant, "/console/explorer/t/things/delete-items?"+sel.Encode()); code != 404 {
		t.Errorf("a tenant's confirmation page: %d", code)
	}
}

func count(t *testing.T, b *bundle, table string) int {
	t.Helper()
	out, err := b.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

// TestExport exports a Scan of more than one export page as JSON lines
// and CSV: the rows are the Scan's items, CSV cells that would run as a
// formula are quoted, values not scalar are DynamoDB JSON.
func TestExport(t *testing.T) {
	b := setup(t)
	n := exportPage + 20
	b.table(t, "things", n, func(i int) Item {
		it := Item{"title": &types.AttributeValueMemberS{Value: fmt.Sprintf("thing %d", i)}}
		if i == 3 {
			it["title"] = &types.AttributeValueMemberS{Value: "=HYPERLINK(\"http://evil.example\")"}
			it["tags"] = &types.AttributeValueMemberSS{Value: []string{"a"}}
		}
		if i == exportPage+5 { // only on the second page: not in the header
			it["late"] = &types.AttributeValueMemberBOOL{Value: true}
		}
		return it
	})
	resp, err := b.op.Get(b.base + "/console/explorer/t/things/export?op=scan&format=jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != `attachment; filename="things.jsonl"` {
		t.Fatalf("export: %d %v", resp.StatusCode, resp.Header)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	resp.Body.Close()
	var want []string
	p := dynamodb.NewScanPaginator(b.db, &dynamodb.ScanInput{TableName: aws.String("things")})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			want = append(want, compact(itemDDBJSON(it)))
		}
	}
	if len(lines) != n || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("the JSON lines (%d) are not the Scan's %d items", len(lines), len(want))
	}

	resp, err = b.op.Get(b.base + "/console/explorer/t/things/export?op=scan&format=csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "pk,n,tags,title,"+otherColumn {
		t.Errorf("CSV header %s", got)
	}
	if len(rows) != n+1 {
		t.Fatalf("%d CSV rows for %d items", len(rows)-1, n)
	}
	byN := map[string][]string{}
	for _, r := range rows[1:] {
		byN[r[1]] = r
	}
	if r := byN["3"]; r[3] != `'=HYPERLINK("http://evil.example")` || r[2] != `{"SS":["a"]}` {
		t.Errorf("item 3 in CSV: %q", r)
	}
	if r := byN[strconv.Itoa(exportPage+5)]; r[4] != `{"late":{"BOOL":true}}` {
		t.Errorf("the attribute after the header: %q", r)
	}

	// Refusals come before the file starts.
	for _, p := range []string{"?format=xml", "?format=csv&op=query&pk=", "?format=csv&filter=%23title+%3D%3D"} {
		body, code := b.get(t, b.op, "/console/explorer/t/things/export"+p)
		if code != 400 || !strings.Contains(body, "Export refused") {
			t.Errorf("export%s: %d", p, code)
		}
	}
	if _, code := b.get(t, b.tenant, "/console/explorer/t/things/export?format=csv"); code != 404 {
		t.Errorf("a tenant's export: %d", code)
	}
	if _, code := b.get(t, b.op, "/console/explorer/t/nope/export?format=csv"); code != 404 {
		t.Errorf("a missing table's export: %d", code)
	}
}

func TestDefuse(t *testing.T) {
	for in, want := range map[string]string{"=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)", "\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b", "": ""} {
		if got := defuse(in); got != want {
			t.Errorf("defuse(%q) = %q, want %q", in, got, want)
		}
	}
	if got := csvCell(&types.AttributeValueMemberN{Value: "-5"}); got != "-5" {
		t.Errorf("a negative number: %q", got)
	}
}

// TestSettings adds and removes a GSI, turns TTL and the stream on and
// off through the forms; every refusal (empty inputs, the store's own)
// comes back by a redirect to the table page, which shows the message
// and keeps what was typed.
func TestSettings(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 2, func(i int) Item { return Item{"email": &types.AttributeValueMemberS{Value: fmt.Sprintf("u%d@x", i)}} })
	path := "/console/explorer/t/things"
	type step struct {
		name, action string
		form         url.Values
		msg          string // the message the redirect's page shows
		refused      bool
	}
	for _, s := range []step{
		{"gsi without a name", "/gsi", url.Values{"pk": {"email"}, "pktype": {"S"}, "projection": {"ALL"}}, "A new index needs the index name.", true},
		{"gsi without anything", "/gsi", url.Values{"projection": {"ALL"}}, "A new index needs the index name and its partition key.", true},
		{"gsi bad projection", "/gsi", url.Values{"name": {"by-email"}, "pk": {"email"}, "pktype": {"S"}, "projection": {"INCLUDE"}}, "The projection is ALL or KEYS_ONLY.", true},
		{"gsi bad key type", "/gsi", url.Values{"name": {"by-email"}, "pk": {"email"}, "pktype": {"X"}, "projection": {"ALL"}}, "A key attribute&#39;s type is S, N or B.", true},
		{"gsi", "/gsi", url.Values{"name": {"by-email"}, "pk": {"email"}, "pktype": {"S"}, "projection": {"ALL"}}, "Index added", false},
		{"gsi twice", "/gsi", url.Values{"name": {"by-email"}, "pk": {"email"}, "pktype": {"S"}, "projection": {"ALL"}}, "ValidationException", true},
		{"ttl without attribute", "/ttl", url.Values{"enabled": {"true"}}, "TTL needs the name of the attribute", true},
		{"ttl on", "/ttl", url.Values{"attribute": {"expires"}, "enabled": {"true"}}, "TTL enabled.", false},
		{"stream nonsense", "/stream", url.Values{"view": {"ALL"}}, "Choose the stream&#39;s setting", true},
		{"stream off when off", "/stream", url.Values{"view": {"off"}}, "The stream is already off.", true},
		{"stream on", "/stream", url.Values{"view": {"NEW_IMAGE"}}, "Stream setting saved.", false},
		{"stream view change", "/stream", url.Values{"view": {"KEYS_ONLY"}}, "Exception", true},
		{"stream off", "/stream", url.Values{"view": {"off"}}, "Stream setting saved.", false},
		{"delete a missing gsi", "/gsi/delete", url.Values{"index": {"nope"}, "confirm": {"yes"}}, "The table has no global secondary index &#34;nope&#34;.", true},
		{"delete gsi", "/gsi/delete", url.Values{"index": {"by-email"}, "confirm": {"yes"}}, "Index deleted.", false},
		{"ttl off", "/ttl", url.Values{"attribute": {"expires"}, "enabled": {"false"}}, "TTL disabled.", false},
	} {
		status, loc := b.post(t, path, path+s.action, s.form)
		if status != http.StatusSeeOther || !strings.HasPrefix(loc, path+"?") {
			t.Errorf("%s: %d %s, want a redirect to the table page", s.name, status, loc)
			continue
		}
		body, code := b.get(t, b.op, loc)
		if !strings.Contains(body, s.msg) {
			t.Errorf("%s: the page lacks %q", s.name, s.msg)
		}
		if s.refused && (code != 400 || !strings.Contains(body, `id="settings-error"`)) {
			t.Errorf("%s: refused with %d and no settings error", s.name, code)
		}
		if s.refused && s.form.Get("name") != "" && !strings.Contains(body, `value="`+s.form.Get("name")+`"`) {
			t.Errorf("%s: the refused form lost the name typed", s.name)
		}
	}
	// Without confirm=yes a deletion goes to its confirmation, a GET page.
	b.post(t, path, path+"/gsi", url.Values{"name": {"keep"}, "pk": {"email"}, "pktype": {"S"}, "projection": {"KEYS_ONLY"}})
	status, loc := b.post(t, path, path+"/gsi/delete", url.Values{"index": {"keep"}})
	if body, code := b.get(t, b.op, loc); status != http.StatusSeeOther || code != 200 || !strings.Contains(body, "Delete the index keep?") {
		t.Errorf("the confirmation: %d then %d", status, code)
	}
	if _, code := b.get(t, b.op, path+"/gsi/delete?index=nope"); code != 404 {
		t.Errorf("the confirmation of a missing index: %d", code)
	}
	if status, _ := b.post(t, path, path+"/gsi/delete", url.Values{"index": {"keep"}, "confirm": {"yes"}}); status != http.StatusSeeOther {
		t.Errorf("delete keep: %d", status)
	}
	d, err := b.db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("things")})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Table.GlobalSecondaryIndexes) != 0 || (d.Table.StreamSpecification != nil && aws.ToBool(d.Table.StreamSpecification.StreamEnabled)) {
		t.Errorf("after the steps: %+v", d.Table)
	}
	ttl, _ := b.db.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("things")})
	if ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Errorf("TTL is %s", ttl.TimeToLiveDescription.TimeToLiveStatus)
	}
	if _, code := b.get(t, b.op, "/console/explorer/t/nope/ttl"); code != 404 && code != 405 {
		t.Errorf("GET of a settings form: %d", code)
	}
	if status, _ := b.post(t, path, "/console/explorer/t/nope/ttl", url.Values{"attribute": {"x"}, "enabled": {"true"}}); status != 404 {
		t.Errorf("settings of a missing table: %d", status)
	}
}

// TestPartiQL runs a SELECT by GET with NextToken paging; a statement that
// writes runs once, by POST, then redirects; a GET never writes.
func TestPartiQL(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 15, nil)
	const page = "/console/explorer/partiql"
	status, loc := b.post(t, page, page, url.Values{"stmt": {`SELECT * FROM "things" WHERE pk = 'p'`}, "limit": {"10"}})
	if status != http.StatusSeeOther {
		t.Fatalf("a SELECT posted: %d", status)
	}
	body, code := b.get(t, b.op, loc)
	if code != 200 || len(firstCells(body)) != 10 {
		t.Fatalf("first page of the SELECT: %d, %d rows", code, len(firstCells(body)))
	}
	next := links(body)["next"]
	if next == "" {
		t.Fatal("no next page")
	}
	body, _ = b.get(t, b.op, page+next)
	if n := len(firstCells(body)); n != 5 || links(body)["next"] != "" {
		t.Errorf("second page: %d rows, next %q", n, links(body)["next"])
	}
	// The page link is bound to its statement.
	u, _ := url.Parse(next)
	other := url.Values{"stmt": {`SELECT * FROM "things" WHERE pk = 'q'`}, "next": {u.Query().Get("next")}}
	edited := url.Values{"stmt": u.Query()["stmt"], "next": {"eyJrIjp7fX0=~" + strings.SplitN(u.Query().Get("next"), "~", 2)[1]}}
	for _, v := range []url.Values{other, edited} {
		if body, code := b.get(t, b.op, page+"?"+v.Encode()); code != 400 || !strings.Contains(body, "This page link is not valid for this statement") {
			t.Errorf("a carried or edited page link: %d", code)
		}
	}
	// A write by GET (a link, Back) does not run.
	del := `DELETE FROM "things" WHERE pk = 'p' AND n = 0`
	body, _ = b.get(t, b.op, page+"?"+url.Values{"stmt": {del}}.Encode())
	if !strings.Contains(body, `id="unsent"`) || count(t, b, "things") != 15 {
		t.Error("a DELETE by GET ran")
	}
	status, loc = b.post(t, page, page, url.Values{"stmt": {del}})
	if status != http.StatusSeeOther || count(t, b, "things") != 14 {
		t.Fatalf("the DELETE posted: %d, %d items", status, count(t, b, "things"))
	}
	if body, _ := b.get(t, b.op, loc); !strings.Contains(body, "Statement run.") || count(t, b, "things") != 14 {
		t.Error("the page after the write")
	}
	for _, c := range []struct{ stmt, want string }{
		{"   ", "Write a PartiQL statement first"},
		{`INSERT INTO "things" VALUE {'pk': 'p'}`, "ValidationException"},
		{strings.Repeat("x", maxStatement+1), "longer than 8 KB"},
	} {
		status, loc := b.post(t, page, page, url.Values{"stmt": {c.stmt}})
		body, code := b.get(t, b.op, loc)
		if status != http.StatusSeeOther || code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%q: %d then %d, want %q", c.stmt[:min(20, len(c.stmt))], status, code, c.want)
		}
	}
	if body, code := b.get(t, b.op, page+"?stmt="+url.QueryEscape(`SELECT * FROM "nope"`)); code != 400 || !strings.Contains(body, "ResourceNotFoundException") {
		t.Errorf("a SELECT of a missing table: %d", code)
	}
	if _, code := b.get(t, b.tenant, page); code != 404 {
		t.Errorf("a tenant's PartiQL page: %d", code)
	}
}

// TestRefusedSaveRedirects: a refused item save answers with a redirect
// to a GET that shows the message and the text, so Back and reload never
// post again.
func TestRefusedSaveRedirects(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 1, nil)
	form := url.Values{"item": {`{"pk": {"S": "p"}, "note": {"S": "no sort key"}}`}, "format": {"ddb"}}
	status, loc := b.post(t, "/console/explorer/t/things/item", "/console/explorer/t/things/item", form)
	if status != http.StatusSeeOther || !strings.Contains(loc, "flash=") {
		t.Fatalf("refused save: %d %s", status, loc)
	}
	body, code := b.get(t, b.op, loc)
	if code != 400 || !strings.Contains(body, "ValidationException") || !strings.Contains(body, "no sort key") {
		t.Errorf("the page after the refusal: %d", code)
	}
	status, loc = b.post(t, "/console/explorer/", "/console/explorer/", url.Values{"name": {"x"}, "pk": {""}})
	if body, _ := b.get(t, b.op, loc); status != http.StatusSeeOther || !strings.Contains(body, "A table needs a name and a partition key.") || !strings.Contains(body, `value="x"`) {
		t.Errorf("create table without a key: %d", status)
	}
}

// TestFormsGuarded: every form of the explorer is refused without the
// session's CSRF token, and answers 404 to a session without the operator
// realm (with that session's own token), before anything is written.
func TestFormsGuarded(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 3, nil)
	ref := encodeKey(Item{"pk": &types.AttributeValueMemberS{Value: "p"}, "n": &types.AttributeValueMemberN{Value: "0"}})
	home, _ := b.get(t, b.tenant, "/")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(home)
	if m == nil {
		t.Fatal("no csrf on the tenant's home page")
	}
	tenantCSRF := m[1]
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"/console/explorer/", url.Values{"name": {"new"}, "pk": {"id"}, "pktype": {"S"}}},
		{"/console/explorer/t/things/item", url.Values{"item": {`{"pk":{"S":"p"},"n":{"N":"9"}}`}}},
		{"/console/explorer/t/things/item/delete", url.Values{"key": {ref}, "confirm": {"yes"}}},
		{"/console/explorer/t/things/delete-items", url.Values{"key": {ref}}},
		{"/console/explorer/t/things/gsi", url.Values{"name": {"g"}, "pk": {"title"}, "pktype": {"S"}, "projection": {"ALL"}}},
		{"/console/explorer/t/things/ttl", url.Values{"attribute": {"x"}, "enabled": {"true"}}},
		{"/console/explorer/t/things/stream", url.Values{"view": {"NEW_IMAGE"}}},
		{"/console/explorer/partiql", url.Values{"stmt": {`DELETE FROM "things" WHERE pk = 'p' AND n = 1`}}},
		{"/console/explorer/t/things/delete", url.Values{"confirm": {"yes"}}},
	} {
		resp, err := b.op.PostForm(b.base+c.path, c.form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s without CSRF: %d", c.path, resp.StatusCode)
		}
		f := url.Values{"csrf": {tenantCSRF}}
		for k, v := range c.form {
			f[k] = v
		}
		resp, err = b.tenant.PostForm(b.base+c.path, f)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s by a tenant: %d", c.path, resp.StatusCode)
		}
	}
	d, err := b.db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("things")})
	if err != nil || count(t, b, "things") != 3 || len(d.Table.GlobalSecondaryIndexes) != 0 || d.Table.StreamSpecification != nil && aws.ToBool(d.Table.StreamSpecification.StreamEnabled) {
		t.Errorf("a refused form wrote: %v, %d items", err, count(t, b, "things"))
	}
}

// TestDeleteConfirmations: without JavaScript (no confirm=yes) deleting
// an item or a table redirects to a confirmation that is a GET page, so
// Back after the deletion never lands on the answer to a POST.
func TestDeleteConfirmations(t *testing.T) {
	b := setup(t)
	b.table(t, "things", 2, nil)
	ref := encodeKey(Item{"pk": &types.AttributeValueMemberS{Value: "p"}, "n": &types.AttributeValueMemberN{Value: "0"}})
	for _, c := range []struct {
		action string
		form   url.Values
		want   string
	}{
		{"/console/explorer/t/things/item/delete", url.Values{"key": {ref}}, "Delete this item?"},
		{"/console/explorer/t/things/delete", url.Values{}, "Delete table things?"},
	} {
		status, loc := b.post(t, "/console/explorer/t/things", c.action, c.form)
		if status != http.StatusSeeOther {
			t.Errorf("%s without confirm: %d", c.action, status)
			continue
		}
		body, code := b.get(t, b.op, loc)
		if code != 200 || !strings.Contains(body, c.want) || !strings.Contains(body, `name="confirm" value="yes"`) {
			t.Errorf("%s: the confirmation page %d", loc, code)
		}
	}
	if n := count(t, b, "things"); n != 2 {
		t.Fatalf("a confirmation deleted: %d left", n)
	}
	for _, p := range []string{"/console/explorer/t/things/item/delete?key=bogus", "/console/explorer/t/nope/delete", "/console/explorer/t/nope/item/delete?key=" + ref} {
		if _, code := b.get(t, b.op, p); code != 404 {
			t.Errorf("%s: %d", p, code)
		}
	}
	if status, _ := b.post(t, "/console/explorer/t/things", "/console/explorer/t/things/item/delete", url.Values{"key": {ref}, "confirm": {"yes"}}); status != http.StatusSeeOther || count(t, b, "things") != 1 {
		t.Errorf("the confirmed delete: %d, %d left", status, count(t, b, "things"))
	}
}

func TestPageSize(t *testing.T) {
	for in, want := range map[string]int32{"": 25, "x": 25, "-5": 25, "0": 25, "1": 10, "10": 10, "11": 25, "25": 25, "30": 50, "100": 100, "101": 100, "1000000": 100, "99999999999999999999": 25} {
		if got := pageSize(in); got != want {
			t.Errorf("pageSize(%q) = %d, want %d", in, got, want)
		}
	}
}

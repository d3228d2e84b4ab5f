// Command consolebench measures the web console's server time per page
// with 10,000 items behind each page: a store table of 10,000 items for
// the explorer, a check with 10,000 runs of history and a user with many
// checks for the Checks dashboard. It drives internal/console in process
// over the embedded DynamoDB store (ddb.Open, no fsync: the pages only
// read) and times ServeHTTP of each request (p50/p99), then appends a
// section to a Markdown file with the machine and the command.
//
//	go run ./bench/consolebench -n 200 -out bench/RESULTS.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/ddb"
	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/console"
	checksconsole "github.com/quarrydb/quarry/internal/console/checks"
	datashelfconsole "github.com/quarrydb/quarry/internal/console/datashelf"
	"github.com/quarrydb/quarry/internal/console/explorer"
	shelfstore "github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

func main() {
	items := flag.Int("items", 10000, "items in the explorer's table and runs in the history of one check")
	checks := flag.Int("checks", 1000, "checks of the dashboard's user")
	n := flag.Int("n", 200, "requests per page")
	out := flag.String("out", "", "Markdown file to append results to (default: stdout only)")
	exportItems := flag.Int("export-items", 100000, "items of the table the explorer exports whole (0: no export run)")
	flag.Parse()
	if err := run(*items, *checks, *n, *exportItems, *out); err != nil {
		log.Fatal(err)
	}
}

// timer records the server time of each request, by page.
type timer struct {
	h    http.Handler
	mu   sync.Mutex
	page string
	d    map[string][]time.Duration
}

func (t *timer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	t.h.ServeHTTP(w, r)
	el := time.Since(start)
	t.mu.Lock()
	if t.page != "" {
		t.d[t.page] = append(t.d[t.page], el)
	}
	t.mu.Unlock()
}

func run(nItems, nChecks, n, nExport int, out string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "consolebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := ddb.Open(dir, &ddb.Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer db.Close()
	client := ddb.NewClient(db)
	loadBefore := report.LoadAvg()
	setup := time.Now()

	// The explorer's table.
	const table = "bench_items"
	if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}}); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	var batch []types.WriteRequest
	flush := func(tbl string) error {
		if len(batch) == 0 {
			return nil
		}
		reqs := map[string][]types.WriteRequest{tbl: batch}
		for len(reqs) > 0 {
			o, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: reqs})
			if err != nil {
				return fmt.Errorf("batch write: %w", err)
			}
			reqs = o.UnprocessedItems
		}
		batch = batch[:0]
		return nil
	}
	for i := range nItems {
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"pk": ddbitem.S("p" + strconv.Itoa(i%10)), "sk": ddbitem.N(int64(i)), "name": ddbitem.S(fmt.Sprintf("item %d", i)),
			"price": ddbitem.N(int64(i % 997)), "tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		}}})
		if len(batch) == 25 {
			if err := flush(table); err != nil {
				return err
			}
		}
	}
	if err := flush(table); err != nil {
		return err
	}

	// The Checks dashboard's user: nChecks checks, the first with nItems
	// runs of history (one a minute, up to now), the others with one run.
	names, err := tables.EnsureTables(ctx, client, tables.DefaultPrefix)
	if err != nil {
		return err
	}
	st := checksstore.New(client, names, &checksstore.Options{Limits: map[string]int{checksstore.TierFree: 5, checksstore.TierPro: max(nChecks, 10)}})
	u, token, err := st.CreateUser(ctx, "bench@example.com", checksstore.TierPro)
	if err != nil {
		return err
	}
	var ids []string
	for i := range nChecks {
		ck, err := st.CreateCheck(ctx, checksstore.Check{UserID: u.ID, URL: fmt.Sprintf("https://example.com/%d", i), Type: "AVAILABILITY", DelayMs: 60000}, time.Now().Add(time.Hour))
		if err != nil {
			return err
		}
		ids = append(ids, ck.ID)
	}
	now := time.Now()
	putRun := func(id string, at time.Time, up bool) {
		status := "UP"
		if !up {
			status = "DOWN"
		}
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"PK": ddbitem.S(id), "SK": ddbitem.S("RESULT#" + ddbitem.FormatTime(at)),
			"result": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"status": ddbitem.S(status), "responseTime": ddbitem.N(int64(50 + at.Unix()%200))}},
		}}})
	}
	for i := range nItems {
		putRun(ids[0], now.Add(-time.Duration(i)*time.Minute), i%50 != 0)
		if len(batch) == 25 {
			if err := flush(names.Checks); err != nil {
				return err
			}
		}
	}
	for d := range 30 { // the first check's daily rollups (as the scheduler writes them)
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"PK": ddbitem.S(ids[0]), "SK": ddbitem.S("DAY#" + now.AddDate(0, 0, -d).UTC().Format("2006-01-02")),
			"runs": ddbitem.N(1440), "up": ddbitem.N(1411), "responseMs": ddbitem.N(1440 * 150)}}})
		if len(batch) == 25 {
			if err := flush(names.Checks); err != nil {
				return err
			}
		}
	}
	for _, id := range ids[1:] {
		putRun(id, now.Add(-time.Minute), true)
		if len(batch) == 25 {
			if err := flush(names.Checks); err != nil {
				return err
			}
		}
	}
	if err := flush(names.Checks); err != nil {
		return err
	}
	// DataShelf: nItems products in one category (SQLite, the default
	// backend), each with an author and a format.
	ds, err := sqlite.Open(ctx, dir+"/datashelf.db", nil)
	if err != nil {
		return err
	}
	defer ds.Close()
	nav, err := ds.UpsertNavigation(ctx, shelfstore.NavigationInput{Title: "Books", SourceURL: "https://shop.example/books"})
	if err != nil {
		return err
	}
	cat, err := ds.UpsertCategory(ctx, shelfstore.CategoryInput{NavigationID: &nav.ID, Title: "Fiction", SourceURL: "https://shop.example/fiction"})
	if err != nil {
		return err
	}
	var productID string
	for i := range nItems {
		price := float64(100+i%2000) / 100
		p, err := ds.UpsertProduct(ctx, shelfstore.ProductInput{CategoryID: &cat.ID, Title: fmt.Sprintf("Book %05d of the quiet harbour", i),
			SourceURL: fmt.Sprintf("https://shop.example/p/%d", i), Price: &price, Available: i%7 != 0,
			Specs: map[string]any{"author": fmt.Sprintf("Author %d", i%300), "format": []string{"Paperback", "Hardback"}[i%2]}})
		if err != nil {
			return err
		}
		if i == nItems/2 {
			productID = p.ID
		}
	}
	// nItems crawl runs, ended, each with a full log tail; the newest
	// one's page is measured.
	logTail := make([]string, shelfstore.RunLogLines)
	for i := range logTail {
		logTail[i] = fmt.Sprintf("fetched https://shop.example/p/%d: 1 product", i)
	}
	var runID string
	for i := range nItems {
		r, err := ds.StartRun(ctx, shelfstore.NewRun{StartURL: "https://shop.example/", Node: "bench", MaxPages: 100})
		if err != nil {
			return err
		}
		if _, err := ds.EndRun(ctx, r.ID, shelfstore.RunSucceeded, shelfstore.RunProgress{RunCounters: shelfstore.RunCounters{Pages: int64(i), Products: int64(i / 2)}, Log: logTail}, ""); err != nil {
			return err
		}
		runID = r.ID
	}
	shelf := datashelfconsole.Adapt(ds, nil)
	setupTime := time.Since(setup)

	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Areas: []console.Area{explorer.New(client), checksconsole.New(checksconsole.Adapt(st, checksapi.New(st, nil, nil, checksapi.Options{}))), datashelfconsole.New(shelf, shelf)},
		Realms: []console.Realm{
			{Kind: "operator", Label: "Operator token", Operator: true, Auth: console.AuthFunc(func(ctx context.Context, cred string) (console.Principal, error) {
				if cred != "op" {
					return console.Principal{}, errors.New("no")
				}
				return console.Principal{ID: "op", Name: "bench"}, nil
			})},
			{Kind: "checks", Label: "Checks API token", Auth: console.AuthFunc(func(ctx context.Context, cred string) (console.Principal, error) {
				u, err := st.Authenticate(ctx, cred)
				if err != nil {
					return console.Principal{}, err
				}
				return console.Principal{ID: u.ID, Name: u.Email}, nil
			})},
		}})
	if err != nil {
		return err
	}
	tm := &timer{h: c, d: map[string][]time.Duration{}}
	srv := httptest.NewServer(tm)
	defer srv.Close()

	type pg struct{ name, realm, path string }
	pages := []pg{
		{"explorer: tables", "operator", "/console/explorer/"},
		{"explorer: table, Scan first page (25)", "operator", "/console/explorer/t/" + table},
		{"explorer: table, Scan page 3 (cursor)", "operator", ""},
		{"explorer: table, Query pk = p3 desc", "operator", "/console/explorer/t/" + table + "?op=query&pk=p3&order=desc"},
		{"explorer: table, Scan with filter", "operator", "/console/explorer/t/" + table + "?filter=price+%3E+%3Av&values=" + url.QueryEscape(`{":v":{"N":"900"}}`)},
		{"checks: dashboard (" + strconv.Itoa(nChecks) + " checks)", "checks", "/console/checks/"},
		{"checks: check with " + strconv.Itoa(nItems) + " runs (detail: uptimes, strip, chart, history page 1)", "checks", "/console/checks/" + ids[0]},
		{"checks: check history, page 3", "checks", ""},
		{"datashelf: tree", "checks", "/console/datashelf/"},
		{"datashelf: category, first page (" + strconv.Itoa(nItems) + " products)", "checks", "/console/datashelf/c/" + cat.ID},
		{"datashelf: category, page 3 (cursor)", "checks", ""},
		{"datashelf: category, filtered and sorted by price", "checks", "/console/datashelf/c/" + cat.ID + "?format=Hardback&min=5&max=15&sort=price_asc"},
		{"datashelf: category, title search", "checks", "/console/datashelf/c/" + cat.ID + "?q=harbour"},
		{"datashelf: product", "checks", "/console/datashelf/p/" + productID},
		// The explorer's pages of issue #30: indexes 14 on.
		{"explorer: grid, page size 100", "operator", "/console/explorer/t/" + table + "?limit=100"},
		{"explorer: cards (plain JSON), 25", "operator", "/console/explorer/t/" + table + "?view=plain"},
		{"explorer: Scan page 2 (Previous from page 3)", "operator", ""},
		{"explorer: PartiQL SELECT pk = p3, 25 a page", "operator", "/console/explorer/partiql?" + url.Values{"stmt": {`SELECT * FROM "` + table + `" WHERE pk = 'p3'`}, "limit": {"25"}}.Encode()},
		{"explorer: bulk delete confirmation, 25 items", "operator", ""},
		// The crawl runs of issue #30: indexes 19 on.
		{"datashelf: crawl page, runs 1–10 of " + strconv.Itoa(nItems), "operator", "/console/datashelf/crawl"},
		{"datashelf: crawl page, runs 21–30", "operator", "/console/datashelf/crawl?runs=20"},
		{"datashelf: a run's page (its " + strconv.Itoa(shelfstore.RunLogLines) + "-line log)", "operator", "/console/datashelf/runs/" + runID},
	}
	clients := map[string]*http.Client{}
	for realm, cred := range map[string]string{"operator": "op", "checks": token} {
		cl, err := signIn(srv.URL, realm, cred)
		if err != nil {
			return err
		}
		clients[realm] = cl
	}
	// Page 3 of the Scan: follow the Next link twice.
	p3 := pages[1].path
	for range 2 {
		body, err := get(clients["operator"], srv.URL+p3)
		if err != nil {
			return err
		}
		m := regexp.MustCompile(`href="\?([^"]*cur=[^"]*)" id="next"`).FindStringSubmatch(body)
		if m == nil {
			return errors.New("no next page link on the table page")
		}
		p3 = pages[1].path + "?" + strings.ReplaceAll(m[1], "&amp;", "&")
	}
	pages[2].path = p3
	// Previous from page 3, and the confirmation of deleting page 1's rows.
	body, err := get(clients["operator"], srv.URL+p3)
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`href="\?([^"]*cur=[^"]*)" id="prev"`).FindStringSubmatch(body)
	if m == nil {
		return errors.New("no previous page link on page 3")
	}
	pages[16].path = pages[1].path + "?" + strings.ReplaceAll(m[1], "&amp;", "&")
	if body, err = get(clients["operator"], srv.URL+pages[1].path); err != nil {
		return err
	}
	sel := url.Values{"back": {pages[1].path}}
	for _, k := range regexp.MustCompile(`name="key" value="([^"]+)"`).FindAllStringSubmatch(body, 25) {
		sel.Add("key", k[1])
	}
	pages[18].path = pages[1].path + "/delete-items?" + sel.Encode()
	// follow fills a page's path by following a link twice from another.
	follow := func(to, from int, link string) error {
		path := pages[from].path
		for range 2 {
			body, err := get(clients[pages[from].realm], srv.URL+path)
			if err != nil {
				return err
			}
			m := regexp.MustCompile(link).FindStringSubmatch(body)
			if m == nil {
				return fmt.Errorf("no next link on %s", path)
			}
			path = pages[from].path
			if i := strings.IndexByte(path, '?'); i >= 0 {
				path = path[:i]
			}
			path += "?" + strings.ReplaceAll(m[1], "&amp;", "&")
		}
		pages[to].path = path
		return nil
	}
	if err := follow(7, 6, `id="older" href="\?([^"]*)"`); err != nil {
		return err
	}
	if err := follow(10, 9, `href="\?([^"]*)" id="next"`); err != nil {
		return err
	}
	for _, p := range pages {
		cl := clients[p.realm]
		if _, err := get(cl, srv.URL+p.path); err != nil { // warm up
			return fmt.Errorf("%s: %w", p.name, err)
		}
		tm.mu.Lock()
		tm.page = p.name
		tm.mu.Unlock()
		for range n {
			if _, err := get(cl, srv.URL+p.path); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		tm.mu.Lock()
		tm.page = ""
		tm.mu.Unlock()
	}

	var exports []exportRun
	if nExport > 0 {
		small, err := measureExport(ctx, clients["operator"], srv.URL, table, nItems)
		if err != nil {
			return err
		}
		if err := load(ctx, client, exportTable, nExport); err != nil {
			return err
		}
		big, err := measureExport(ctx, clients["operator"], srv.URL, exportTable, nExport)
		if err != nil {
			return err
		}
		exports = []exportRun{small, big}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — console page time (consolebench)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- Machine: %s\n- Load average (1/5/15 min) before: %s, after: %s\n- Command: `%s`\n", report.Machine(), loadBefore, report.LoadAvg(), "go run ./bench/consolebench "+strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "- Setup (not measured, %s): embedded store (ddb.Open, no fsync), in-process ddb.NewClient; a table of %d items (10 partitions); one Checks PRO user with %d checks, the first with %d runs of history (one a minute), the others one run each; DataShelf on SQLite with %d products in one category and %d ended crawl runs, each with a full log tail (the checks and datashelf areas' adapters, as `quarry serve` uses them). Server time is internal/console's ServeHTTP, signed in, over loopback HTTP; %d requests per page after one warm-up.\n\n", setupTime.Round(time.Millisecond), nItems, nChecks, nItems, nItems, nItems, n)
	fmt.Fprintf(&b, "| page | p50 | p99 | max |\n|---|--:|--:|--:|\n")
	for _, p := range pages {
		d := tm.d[p.name]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", p.name, ms(report.Percentile(d, 50)), ms(report.Percentile(d, 99)), ms(d[len(d)-1]))
	}
	if len(exports) > 0 {
		fmt.Fprintf(&b, "\nThe explorer's export of a whole table (Scan, every page, streamed as the browser's download link asks; peak heap is the most the Go heap grew above its size before the export, sampled every 5 ms):\n\n")
		fmt.Fprintf(&b, "| items | format | bytes | time | peak heap growth |\n|--:|---|--:|--:|--:|\n")
		for _, e := range exports {
			for _, f := range e.formats {
				fmt.Fprintf(&b, "| %d | %s | %d | %s | %.1f MB |\n", e.items, f.format, f.bytes, f.time.Round(time.Millisecond), float64(f.peak)/1e6)
			}
		}
	}
	fmt.Print(b.String())
	if out != "" {
		return report.Append(out, b.String())
	}
	return nil
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms" }

// signIn signs in through the form, as a browser does.
func signIn(base, realm, cred string) (*http.Client, error) {
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	body, err := get(cl, base+"/console/signin")
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		return nil, errors.New("sign-in form without a nonce")
	}
	resp, err := cl.PostForm(base+"/console/signin", url.Values{"nonce": {m[1]}, "realm": {realm}, "credential": {cred}})
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/" {
		return nil, fmt.Errorf("sign-in as %s refused (%d)", realm, resp.StatusCode)
	}
	return cl, nil
}

func get(cl *http.Client, u string) (string, error) {
	resp, err := cl.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d", u, resp.StatusCode)
	}
	return string(b), err
}

// exportTable is the table of the big export run.
const exportTable = "bench_export"

// load creates table with n items of about 200 bytes (10 partitions).
func load(ctx context.Context, client *dynamodb.Client, table string, n int) error {
	if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}}); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	batch := make([]types.WriteRequest, 0, 25)
	flush := func() error {
		reqs := map[string][]types.WriteRequest{table: batch}
		for len(reqs) > 0 {
			o, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: reqs})
			if err != nil {
				return fmt.Errorf("batch write: %w", err)
			}
			reqs = o.UnprocessedItems
		}
		batch = batch[:0]
		return nil
	}
	for i := range n {
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"pk": ddbitem.S("p" + strconv.Itoa(i%10)), "sk": ddbitem.N(int64(i)), "name": ddbitem.S(fmt.Sprintf("item %d of the export, with some words to carry", i)),
			"price": ddbitem.N(int64(i % 997)), "tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		}}})
		if len(batch) == 25 || i == n-1 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// exportRun is the export of one table in each format.
type exportRun struct {
	items   int
	formats []exportFormat
}

type exportFormat struct {
	format string
	bytes  int64
	time   time.Duration
	peak   uint64 // the heap's growth above its size before the export
}

// measureExport downloads table's whole Scan in each format through the
// console, sampling the heap while it streams.
func measureExport(ctx context.Context, cl *http.Client, base, table string, items int) (exportRun, error) {
	run := exportRun{items: items}
	for _, format := range []string{"jsonl", "csv"} {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		var peak atomic.Uint64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					if ms.HeapAlloc > before && ms.HeapAlloc-before > peak.Load() {
						peak.Store(ms.HeapAlloc - before)
					}
				}
			}
		}()
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/console/explorer/t/"+table+"/export?op=scan&format="+format, nil)
		resp, err := cl.Do(req)
		if err != nil {
			close(stop)
			return run, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		el := time.Since(start)
		close(stop)
		<-sampled
		if err != nil || resp.StatusCode != http.StatusOK {
			return run, fmt.Errorf("export %s of %s: %d %v", format, table, resp.StatusCode, err)
		}
		run.formats = append(run.formats, exportFormat{format: format, bytes: n, time: el, peak: peak.Load()})
	}
	return run, nil
}

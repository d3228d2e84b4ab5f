package datashelf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
)

// fakeShelf is a catalogue of one category and one product, and a crawl
// control whose crawl is what status says.
type fakeShelf struct {
	status CrawlStatus
	runs   []Run // newest first
	// abortErr is what AbortRun answers for a run of runs.
	abortErr error
}

func (*fakeShelf) Tree(context.Context) ([]Node, error) { return nil, nil }
func (*fakeShelf) Category(_ context.Context, id string) (Category, error) {
	if id != "c1" {
		return Category{}, console.ErrNotFound
	}
	return Category{ID: "c1", Title: "Crime & Thrillers", Products: 1}, nil
}
func (*fakeShelf) Products(context.Context, Filter) (Page, error) {
	return Page{Products: []Product{{ID: "p1", CategoryID: "c1", Title: "The Big Sleep"}}}, nil
}
func (*fakeShelf) Product(_ context.Context, id string) (Product, error) {
	return Product{ID: id, CategoryID: "c1", Title: "The Big Sleep", SourceURL: "https://shop.example/p1"}, nil
}
func (*fakeShelf) Queue(context.Context) ([]QueueRow, error)    { return nil, nil }
func (*fakeShelf) Failures(context.Context, int) ([]Job, error) { return nil, nil }
func (*fakeShelf) Throughput(context.Context, time.Time, time.Duration) ([]ThroughputPoint, error) {
	return nil, nil
}
func (*fakeShelf) Retry(context.Context, []string) (int, error)            { return 0, nil }
func (*fakeShelf) StartCrawl(context.Context, string, int) (string, error) { return "", nil }
func (f *fakeShelf) Crawl() CrawlStatus                                    { return f.status }
func (f *fakeShelf) Runs(_ context.Context, limit, offset int) ([]Run, int, error) {
	return f.runs[min(offset, len(f.runs)):min(offset+limit, len(f.runs))], len(f.runs), nil
}
func (f *fakeShelf) Run(_ context.Context, id string) (Run, error) {
	for _, r := range f.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return Run{}, console.ErrNotFound
}
func (f *fakeShelf) AbortRun(ctx context.Context, id string) (Run, error) {
	r, err := f.Run(ctx, id)
	if err != nil {
		return r, err
	}
	return r, f.abortErr
}
func (*fakeShelf) ExportRun(context.Context, string, string, io.Writer) (int, error) {
	return 0, console.ErrNotFound
}

// serveShelf runs the console with the catalogue of f; get reads a page,
// signed in as an operator when operator is set.
func serveShelf(t *testing.T, f *fakeShelf, operator bool) func(path string) string {
	t.Helper()
	get, _ := serveShelfClient(t, f, operator)
	return get
}

// serveShelfClient is serveShelf that also returns post, which posts a
// form with the session's CSRF token and returns the final page (after
// redirects) and its URL.
func serveShelfClient(t *testing.T, f *fakeShelf, operator bool) (get func(path string) string, post func(path string, form url.Values) (string, string)) {
	t.Helper()
	auth := console.AuthFunc(func(context.Context, string) (console.Principal, error) {
		return console.Principal{ID: "op", Name: "Olga"}, nil
	})
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)),
		Realms: []console.Realm{{Kind: "operator", Label: "Operator token", Operator: true, Auth: auth}},
		Areas:  []console.Area{New(f, f)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	get = func(path string) string {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post = func(path string, form url.Values) (string, string) {
		t.Helper()
		form.Set("csrf", regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(get("/console/datashelf/crawl"))[1])
		resp, err := hc.PostForm(srv.URL+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.Request.URL.RequestURI()
	}
	if operator {
		nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(get("/console/signin"))[1]
		resp, err := hc.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce}, "realm": {"operator"}, "credential": {"x"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	return get, post
}

// TestCrawlStartFailed: a crawl whose start URL failed shows why once,
// without the "Crawl started." of the redirect that started it.
func TestCrawlStartFailed(t *testing.T) {
	cause := errors.New("fetch: HTTP 404")
	msg := crawlError(fmt.Errorf("%w: %s: %w", crawler.ErrSeedFailed, "https://shop.example/en-gb", cause))
	if msg != "The start URL failed: https://shop.example/en-gb: fetch: HTTP 404" {
		t.Errorf("crawlError = %q", msg)
	}
	f := &fakeShelf{status: CrawlStatus{URL: "https://shop.example/en-gb", Started: time.Now().Add(-time.Second), Finished: time.Now(), Error: msg}}
	get := serveShelf(t, f, true)
	page := get("/console/datashelf/crawl?msg=started")
	if strings.Contains(page, "Crawl started.") || !strings.Contains(page, `id="crawl-error">The start URL failed: https://shop.example/en-gb: fetch: HTTP 404<`) {
		t.Errorf("the crawl page after a failed start:\n%s", page)
	}
	// When it finished, relative, with the UTC time on hover.
	if !regexp.MustCompile(`Finished</strong> <time datetime="[^"]+" title="[0-9-]+ [0-9:]+ UTC">just now</time>`).MatchString(page) {
		t.Errorf("the crawl's end is not a relative time:\n%s", page)
	}
	f.status = CrawlStatus{Running: true, URL: "https://shop.example/en-gb", Started: time.Now()}
	if page := get("/console/datashelf/crawl?msg=started"); !strings.Contains(page, `id="msg">Crawl started.<`) {
		t.Errorf("the crawl page while it runs:\n%s", page)
	}
}

// TestCatalogueLayout: the product's breadcrumb names its category, the
// category's filters are one bar above the results, and operators have
// the crawl page in the header (others do not).
func TestCatalogueLayout(t *testing.T) {
	get := serveShelf(t, &fakeShelf{}, false)
	page := get("/console/datashelf/p/p1")
	if !strings.Contains(page, `id="crumb-category">Crime &amp; Thrillers</a>`) {
		t.Errorf("the product's breadcrumb:\n%s", page)
	}
	if strings.Contains(page, "nav-crawl") {
		t.Error("the crawl link is shown signed out")
	}
	page = get("/console/datashelf/c/c1")
	form, results := strings.Index(page, `id="shelf-filter"`), strings.Index(page, `id="products"`)
	if form < 0 || results < form || !strings.Contains(page, `class="card filterbar"`) {
		t.Errorf("the category's filters are not a bar above the results:\n%s", page)
	}
	get = serveShelf(t, &fakeShelf{}, true)
	if page := get("/console/datashelf/"); !strings.Contains(page, `<a href="/console/datashelf/crawl" id="nav-crawl">Crawl</a>`) {
		t.Errorf("an operator's header has no crawl link:\n%s", page)
	}
}

// TestRunsList pages through the crawl page's runs, newest first, both
// ways.
func TestRunsList(t *testing.T) {
	f := &fakeShelf{}
	for i := range 23 {
		f.runs = append(f.runs, Run{ID: fmt.Sprintf("run-%02d", i), State: "succeeded", StartURL: "https://shop.example/", Started: time.Now()})
	}
	f.runs[0].State = "running"
	get := serveShelf(t, f, true)
	tests := []struct {
		query        string
		first, last  string
		shown        string
		newer, older string // the links' queries; "" for none
	}{
		{"", "run-00", "run-09", "1–10 of 23", "", "?runs=10"},
		{"?runs=10", "run-10", "run-19", "11–20 of 23", "?runs=0", "?runs=20"},
		{"?runs=20", "run-20", "run-22", "21–23 of 23", "?runs=10", ""},
		{"?runs=-5", "run-00", "run-09", "1–10 of 23", "", "?runs=10"},
		{"?runs=x", "run-00", "run-09", "1–10 of 23", "", "?runs=10"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			page := get("/console/datashelf/crawl" + tt.query)
			ids := regexp.MustCompile(`href="/console/datashelf/runs/(run-\d+)"`).FindAllStringSubmatch(page, -1)
			if len(ids) == 0 || ids[0][1] != tt.first || ids[len(ids)-1][1] != tt.last || !strings.Contains(page, tt.shown) {
				t.Fatalf("runs shown %v, want %s to %s (%s)", ids, tt.first, tt.last, tt.shown)
			}
			for id, q := range map[string]string{"runs-newer": tt.newer, "runs-older": tt.older} {
				link := regexp.MustCompile(`href="([^"]*)" id="` + id + `"`).FindStringSubmatch(page)
				if (q == "") != (link == nil) || (link != nil && link[1] != q) {
					t.Errorf("%s link %v, want %q", id, link, q)
				}
			}
		})
	}
	if page := get("/console/datashelf/crawl"); !strings.Contains(page, `<td>—</td>`) || !strings.Contains(page, `class="state-running">running<`) {
		t.Errorf("the running run's row:\n%s", page)
	}
}

// TestAbortMessages: after an abort the run's page says what happened,
// whether the abort stopped the run, found it ended, or found it running
// on another node; an abort not yet confirmed asks first.
func TestAbortMessages(t *testing.T) {
	running := Run{ID: "r1", State: "running", Node: "crawler-node-b-7", StartURL: "https://shop.example/", Started: time.Now()}
	tests := []struct {
		name   string
		run    Run
		err    error
		want   string
		status string
	}{
		{"aborted", Run{ID: "r1", State: "aborted", Error: "aborted by an operator", Started: time.Now(), Ended: time.Now()}, nil, `id="msg">Run aborted.<`, "aborted"},
		{"ended", Run{ID: "r1", State: "succeeded", Started: time.Now(), Ended: time.Now()}, ErrRunEnded, "This run had already ended (succeeded): there was nothing to abort.", "succeeded"},
		{"on another node", running, ErrRunElsewhere, "This run runs on crawler-node-b-7, not in this server: abort it on that node", "running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get, post := serveShelfClient(t, &fakeShelf{runs: []Run{tt.run}, abortErr: tt.err}, true)
			page, at := post("/console/datashelf/runs/r1/abort", url.Values{"confirm": {"yes"}})
			if !strings.HasPrefix(at, "/console/datashelf/runs/r1?msg=") || !strings.Contains(page, tt.want) ||
				!strings.Contains(page, `id="run-state" class="state-`+tt.status+`">`) {
				t.Errorf("after the abort, at %s:\n%s", at, page)
			}
			page, at = post("/console/datashelf/runs/r1/abort", url.Values{})
			if at != "/console/datashelf/runs/r1/abort" || !strings.Contains(page, "Abort this crawl?") || !strings.Contains(page, ">Abort crawl</button>") {
				t.Errorf("an abort without confirm=yes, at %s:\n%s", at, page)
			}
			if page := get("/console/datashelf/runs/nope"); !strings.Contains(page, "Not found") {
				t.Errorf("an unknown run:\n%s", page)
			}
		})
	}
}

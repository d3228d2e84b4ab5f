package api_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/api"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// runsEnv is an API whose abort endpoint reaches a crawler.Runner, the
// fixture shop that runner crawls, and a signer of operator requests.
type runsEnv struct {
	st     *sqlite.Store
	runner *crawler.Runner
	shop   string
	h      http.Handler
	secret []byte
	nonce  atomic.Int64
}

func newRunsEnv(t *testing.T, fo fixture.Options) *runsEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ds.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(fixture.New(fo).Handler())
	t.Cleanup(srv.Close)
	f := fetch.New(fetch.Options{Policy: fetch.AllowAllPolicy(), PerHostConcurrency: 8})
	t.Cleanup(f.Close)
	e := &runsEnv{st: st, shop: srv.URL + fixture.Locale, secret: []byte("op-secret")}
	e.runner = crawler.NewRunner(ctx, crawler.Options{Store: st, Fetcher: f, Workers: 4, PollInterval: 5 * time.Millisecond})
	t.Cleanup(e.runner.Stop)
	mux := http.NewServeMux()
	mux.Handle("/datashelf/", http.StripPrefix("/datashelf", api.New(api.Options{Store: st, Runs: e.runner,
		Keys: map[string][]byte{"operator": e.secret}, RateLimit: -1})))
	e.h = mux
	return e
}

// do sends a request, signed by the operator's key when signed is set.
func (e *runsEnv) do(method, target string, signed bool) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/datashelf"+target, nil)
	if signed {
		api.Sign("operator", e.secret, req, nil, time.Now(), fmt.Sprint("n-", e.nonce.Add(1)))
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return w
}

// crawl runs a crawl of the shop to its end and returns its run id.
func (e *runsEnv) crawl(t *testing.T) string {
	t.Helper()
	id, err := e.runner.Start(context.Background(), e.shop, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.runner.Wait()
	return id
}

// TestRunsAPI lists, reads and exports a finished crawl's run over the
// API, and compares the export with the products the API serves.
func TestRunsAPI(t *testing.T) {
	t.Parallel()
	e := newRunsEnv(t, fixture.Options{Products: 30, PerPage: 8, Seed: 3, CrawlDelay: -1})
	id := e.crawl(t)

	w := e.do("GET", "/api/runs", true)
	page := decode[api.RunPage](t, w)
	if w.Code != 200 || page.Total != 1 || len(page.Items) != 1 || page.Items[0].ID != id {
		t.Fatalf("GET /api/runs = %d %s", w.Code, w.Body)
	}
	if r := page.Items[0]; r.State != store.RunSucceeded || r.Products != 30 || r.Pages == 0 || r.EndedAt == nil || r.Log != nil {
		t.Fatalf("listed run = %+v", r)
	}
	w = e.do("GET", "/api/runs/"+id, true)
	run := decode[store.Run](t, w)
	if w.Code != 200 || run.ID != id || len(run.Log) == 0 || !strings.Contains(strings.Join(run.Log, "\n"), "product stored") {
		t.Fatalf("GET /api/runs/{id} = %d %s", w.Code, w.Body)
	}

	// The API's own products, for comparison.
	w = e.do("GET", "/api/products?limit=100", false)
	var served []string
	for _, p := range decode[struct{ Items []store.Product }](t, w).Items {
		served = append(served, p.ID)
	}
	slices.Sort(served)

	w = e.do("GET", "/api/runs/"+id+"/products", true)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/x-ndjson" || !strings.Contains(w.Header().Get("Content-Disposition"), "attachment") {
		t.Fatalf("JSON lines export = %d %v", w.Code, w.Header())
	}
	var lines []string
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		var p store.Product
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, p.ID)
	}
	slices.Sort(lines)
	if !slices.Equal(lines, served) || len(lines) != 30 {
		t.Fatalf("JSON lines export holds %d products, the API serves %d; differ: %v", len(lines), len(served), !slices.Equal(lines, served))
	}

	w = e.do("GET", "/api/runs/"+id+"/products?format=csv", true)
	recs, err := csv.NewReader(w.Body).ReadAll()
	if err != nil || w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV export = %d %v: %v", w.Code, w.Header(), err)
	}
	if !slices.Equal(recs[0], store.ProductColumns) || len(recs) != 31 {
		t.Fatalf("CSV export: header %v and %d rows", recs[0], len(recs)-1)
	}
	var csvIDs []string
	for _, r := range recs[1:] {
		csvIDs = append(csvIDs, r[0])
	}
	slices.Sort(csvIDs)
	if !slices.Equal(csvIDs, served) {
		t.Fatal("the CSV export's products differ from the API's")
	}
}

// TestRunsAPIAbort aborts a slow crawl over the API, then checks what
// the API answers for aborts it cannot do.
func TestRunsAPIAbort(t *testing.T) {
	t.Parallel()
	e := newRunsEnv(t, fixture.Options{Products: 200, Seed: 3, CrawlDelay: -1,
		Faults: fixture.Faults{SlowRate: 1, SlowDelay: 200 * time.Millisecond}})
	id, err := e.runner.Start(context.Background(), e.shop, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w := e.do("GET", "/api/runs/"+id, true); w.Code != 200 || decode[store.Run](t, w).State != store.RunRunning {
		t.Fatalf("the running run: %d %s", w.Code, w.Body)
	}
	w := e.do("POST", "/api/runs/"+id+"/abort", true)
	run := decode[store.Run](t, w)
	if w.Code != 200 || run.State != store.RunAborted || run.EndedAt == nil || run.LastError == nil || *run.LastError != "aborted by an operator" {
		t.Fatalf("abort = %d %s", w.Code, w.Body)
	}
	if s := e.runner.Status(); s.Running {
		t.Fatal("the crawl still runs after the abort answered")
	}
	expectError(t, e.do("POST", "/api/runs/"+id+"/abort", true), http.StatusConflict, "has already ended (aborted)")

	other, err := e.st.StartRun(context.Background(), store.NewRun{StartURL: "https://elsewhere.example/", Node: "node-b"})
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, e.do("POST", "/api/runs/"+other.ID+"/abort", true), http.StatusConflict, "runs on node node-b")
	if r, _ := e.st.GetRun(context.Background(), other.ID); r.State != store.RunRunning {
		t.Fatalf("another node's run after a refused abort: %+v", r)
	}
}

// TestRunsAPIHostile plays clients the run endpoints must refuse.
func TestRunsAPIHostile(t *testing.T) {
	t.Parallel()
	e := newRunsEnv(t, fixture.Options{Products: 4, Seed: 3, CrawlDelay: -1})
	id := e.crawl(t)
	unknown := "00000000-0000-4000-8000-000000000000"
	tests := []struct {
		name           string
		method, target string
		signed         bool
		status         int
		mention        string
	}{
		{"list unsigned", "GET", "/api/runs", false, 401, ""},
		{"get unsigned", "GET", "/api/runs/" + id, false, 401, ""},
		{"abort unsigned", "POST", "/api/runs/" + id + "/abort", false, 401, ""},
		{"export unsigned", "GET", "/api/runs/" + id + "/products", false, 401, ""},
		{"unknown run", "GET", "/api/runs/" + unknown, true, 404, "no crawl run " + unknown},
		{"abort an unknown run", "POST", "/api/runs/" + unknown + "/abort", true, 404, "no crawl run"},
		{"export an unknown run", "GET", "/api/runs/" + unknown + "/products", true, 404, "no crawl run"},
		{"not a UUID", "GET", "/api/runs/1%27%20OR%201=1", true, 400, "id: not a UUID"},
		{"export format", "GET", "/api/runs/" + id + "/products?format=xml", true, 400, "format: must be jsonl or csv"},
		{"unknown parameter", "GET", "/api/runs?state=running", true, 400, "state: unknown parameter"},
		{"limit out of range", "GET", "/api/runs?limit=1000", true, 400, "limit"},
		{"GET on abort", "GET", "/api/runs/" + id + "/abort", true, 405, "use POST"},
		{"DELETE a run", "DELETE", "/api/runs/" + id, true, 405, "use GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectError(t, e.do(tt.method, tt.target, tt.signed), tt.status, tt.mention)
		})
	}
	if r, _ := e.st.GetRun(context.Background(), id); r.State != store.RunSucceeded {
		t.Fatalf("the run after the hostile requests: %+v", r)
	}
}

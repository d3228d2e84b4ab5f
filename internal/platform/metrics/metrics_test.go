package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCountsAndGauges(t *testing.T) {
	r := New()
	live := 3.0
	r.Gauge("wallcrawler_live_sessions", "Browser sessions running in this process.", func() float64 { return live })
	ok := r.Count("checks", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fine") }))
	missing := r.Count("checks", http.NotFoundHandler())
	for i := 0; i < 3; i++ {
		ok.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	missing.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body := w.Body.String()
	for _, want := range []string{
		`quarry_http_requests_total{system="checks",code="2xx"} 3`,
		`quarry_http_requests_total{system="checks",code="4xx"} 1`,
		"# TYPE quarry_wallcrawler_live_sessions gauge\nquarry_wallcrawler_live_sessions 3\n",
		"quarry_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", ct)
	}
}

func TestCountKeepsHijacking(t *testing.T) {
	r := New()
	hijacked := make(chan bool, 1)
	h := r.Count("wallcrawler", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
		hijacked <- err == nil
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	if !<-hijacked {
		t.Fatal("the wrapped handler could not hijack the connection (WebSocket upgrades would break)")
	}
}

func TestCollectorFamilies(t *testing.T) {
	r := New()
	n := 0.0
	r.Collect(func() []Family {
		n++
		return []Family{
			{Name: "ddb_requests_total", Help: "Requests by operation.", Type: "counter", Samples: []Sample{
				{Labels: [][2]string{{"op", "GetItem"}}, Value: 2 * n},
				{Labels: [][2]string{{"op", "PutItem"}, {"type", `a"b`}}, Value: 0.5},
			}},
			{Name: "ddb_tables", Help: "Tables.", Type: "gauge", Samples: []Sample{{Value: 4}}},
		}
	})
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	body := b.String()
	for _, want := range []string{
		"# HELP quarry_ddb_requests_total Requests by operation.\n# TYPE quarry_ddb_requests_total counter\n",
		`quarry_ddb_requests_total{op="GetItem"} 2` + "\n",
		`quarry_ddb_requests_total{op="PutItem",type="a\"b"} 0.5` + "\n",
		"# TYPE quarry_ddb_tables gauge\nquarry_ddb_tables 4\n",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
	// Collectors run at every scrape.
	b.Reset()
	r.Write(&b)
	if !strings.Contains(b.String(), `quarry_ddb_requests_total{op="GetItem"} 4`) {
		t.Fatalf("second scrape:\n%s", b.String())
	}
}

package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape serves r's /metrics and parses the whole exposition.
func scrape(t *testing.T, r *Registry) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", ct)
	}
	body := w.Body.String()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	return body, fams
}

// find returns the sample of family name whose labels include want.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

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
	_, fams := scrape(t, r)
	for class, n := range map[string]float64{"2xx": 3, "4xx": 1} {
		labels := map[string]string{"system": "checks", "code": class}
		if m := find(fams, "quarry_http_requests_total", labels); m.GetCounter().GetValue() != n {
			t.Errorf("requests %s: %v, want %v", class, m, n)
		}
		if m := find(fams, "quarry_http_request_duration_seconds", labels); m.GetHistogram().GetSampleCount() != uint64(n) || len(m.GetHistogram().GetBucket()) == 0 {
			t.Errorf("latency %s: %v, want %v observations", class, m, n)
		}
	}
	if f := fams["quarry_wallcrawler_live_sessions"]; f.GetType() != dto.MetricType_GAUGE || f.GetMetric()[0].GetGauge().GetValue() != 3 {
		t.Errorf("gauge: %v", f)
	}
	want := []string{"quarry_uptime_seconds", "go_goroutines", "go_memstats_heap_inuse_bytes"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_start_time_seconds", "process_resident_memory_bytes")
	}
	for _, name := range want {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

// TestLabelValuesEscaped checks that a label value with a quote, a
// newline and a backslash is escaped as the text format requires.
func TestLabelValuesEscaped(t *testing.T) {
	r := New()
	odd := "a\"b\nc\\d"
	r.Count(odd, http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	r.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "quarry_test_info", Help: "A test.", ConstLabels: prometheus.Labels{"type": odd}}, func() float64 { return 1 }))
	body, fams := scrape(t, r)
	if !strings.Contains(body, `system="a\"b\nc\\d"`) || !strings.Contains(body, `type="a\"b\nc\\d"`) {
		t.Fatalf("label values not escaped:\n%s", body)
	}
	if find(fams, "quarry_http_requests_total", map[string]string{"system": odd, "code": "4xx"}) == nil ||
		find(fams, "quarry_test_info", map[string]string{"type": odd}) == nil {
		t.Fatalf("label values do not round-trip:\n%s", body)
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
	// Counted, not timed: the duration would be the connection's.
	_, fams := scrape(t, r)
	labels := map[string]string{"system": "wallcrawler"}
	if m := find(fams, "quarry_http_requests_total", labels); m.GetCounter().GetValue() != 1 {
		t.Errorf("hijacked request not counted: %v", m)
	}
	if m := find(fams, "quarry_http_request_duration_seconds", labels); m != nil {
		t.Errorf("hijacked request timed: %v", m)
	}
}

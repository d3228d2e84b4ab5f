package main

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrapeMetrics reads addr's /metrics and parses the whole exposition
// with the Prometheus text parser.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", ct)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s/metrics does not parse: %v", addr, err)
	}
	return fams
}

// sample returns the sample of family name whose labels include want, or
// nil.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
next:
	for _, m := range fams[name].GetMetric() {
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

// storeRequests makes a successful ListTables and a GetItem that fails
// with ResourceNotFoundException at the DynamoDB endpoint addr.
func storeRequests(t *testing.T, addr string) {
	t.Helper()
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), RetryMaxAttempts: 1})
	ctx := context.Background()
	if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("missing"), Key: key}); err == nil {
		t.Fatal("GetItem on a missing table succeeded")
	}
}

// checkStoreMetrics checks the store's families after storeRequests.
func checkStoreMetrics(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	if m := sample(fams, "quarry_ddb_request_duration_seconds", map[string]string{"op": "ListTables"}); m.GetHistogram().GetSampleCount() < 1 || len(m.GetHistogram().GetBucket()) == 0 {
		t.Errorf("no ListTables latency observed: %v", m)
	}
	if m := sample(fams, "quarry_ddb_errors_total", map[string]string{"op": "GetItem", "type": "ResourceNotFoundException"}); m.GetCounter().GetValue() != 1 {
		t.Errorf("GetItem errors: %v", m)
	}
	for name, typ := range map[string]dto.MetricType{
		"quarry_ddb_requests_total":             dto.MetricType_COUNTER,
		"quarry_ddb_request_seconds_total":      dto.MetricType_COUNTER,
		"quarry_ddb_request_duration_seconds":   dto.MetricType_HISTOGRAM,
		"quarry_ddb_wal_fsync_duration_seconds": dto.MetricType_HISTOGRAM,
		"quarry_ddb_tables":                     dto.MetricType_GAUGE,
		"quarry_ddb_disk_bytes":                 dto.MetricType_GAUGE,
		"quarry_ddb_block_cache_bytes":          dto.MetricType_GAUGE,
		"quarry_ddb_block_cache_hits_total":     dto.MetricType_COUNTER,
		"quarry_ddb_block_cache_misses_total":   dto.MetricType_COUNTER,
		"quarry_ddb_memtable_bytes":             dto.MetricType_GAUGE,
		"quarry_ddb_flushes_total":              dto.MetricType_COUNTER,
		"quarry_ddb_compactions_total":          dto.MetricType_COUNTER,
		"quarry_ddb_wal_bytes_total":            dto.MetricType_COUNTER,
		"quarry_ddb_corrupt_items_total":        dto.MetricType_COUNTER,
		"quarry_uptime_seconds":                 dto.MetricType_GAUGE,
		"go_goroutines":                         dto.MetricType_GAUGE,
	} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("%s: %v, want a %v", name, f, typ)
		}
	}
	if runtime.GOOS == "linux" && fams["process_start_time_seconds"] == nil {
		t.Error("no process collector")
	}
}

// TestServeMetricsParse scrapes a running `quarry serve`: the whole
// exposition parses, the documented families are there, and the route
// and store-operation histograms have observations after requests.
func TestServeMetricsParse(t *testing.T) {
	t.Parallel()
	api, store := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", t.TempDir()}, noEnv, &logs, &logs)
	}()
	waitFor(t, "both listeners", func() bool {
		return strings.Contains(logs.String(), "listening on "+api) && strings.Contains(logs.String(), "listening on "+store)
	})
	for _, path := range []string{"/datashelf/api/products", "/datashelf/api/products", "/datashelf/api/products?sort=bogus", "/nowhere"} {
		resp, err := http.Get("http://" + api + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	storeRequests(t, store)

	fams := scrapeMetrics(t, api)
	for _, c := range []struct {
		system, code string
		n            uint64
	}{{"datashelf", "2xx", 2}, {"datashelf", "4xx", 1}, {"console", "4xx", 1}} {
		labels := map[string]string{"system": c.system, "code": c.code}
		if m := sample(fams, "quarry_http_requests_total", labels); m.GetCounter().GetValue() != float64(c.n) {
			t.Errorf("requests %v: %v", labels, m)
		}
		if m := sample(fams, "quarry_http_request_duration_seconds", labels); m.GetHistogram().GetSampleCount() != c.n {
			t.Errorf("latency %v: %v", labels, m)
		}
	}
	for name, typ := range map[string]dto.MetricType{
		"quarry_http_requests_total":           dto.MetricType_COUNTER,
		"quarry_http_request_duration_seconds": dto.MetricType_HISTOGRAM,
		"quarry_wallcrawler_live_sessions":     dto.MetricType_GAUGE,
		"quarry_checks_scheduled":              dto.MetricType_GAUGE,
		"quarry_eecar_indexed_parts":           dto.MetricType_GAUGE,
		"quarry_egress_tunnels_total":          dto.MetricType_COUNTER,
		"quarry_egress_requests_total":         dto.MetricType_COUNTER,
		"quarry_egress_refused_total":          dto.MetricType_COUNTER,
		"quarry_egress_failed_total":           dto.MetricType_COUNTER,
		"quarry_egress_bytes_total":            dto.MetricType_COUNTER,
	} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("%s: %v, want a %v", name, f, typ)
		}
	}
	checkStoreMetrics(t, fams)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, logs.String())
	}
}

// TestDDBServeMetricsParse scrapes `quarry ddb serve`'s /metrics.
func TestDDBServeMetricsParse(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ddb", "serve", "--listen", addr, "--data-dir", t.TempDir()}, noEnv, &logs, &logs)
	}()
	waitFor(t, "listening log", func() bool { return strings.Contains(logs.String(), "listening on "+addr) })
	storeRequests(t, addr)
	checkStoreMetrics(t, scrapeMetrics(t, addr))
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, logs.String())
	}
}

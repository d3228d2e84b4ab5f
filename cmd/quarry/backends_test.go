package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// nodeHealth is what /healthz says of the backends.
type nodeHealth struct {
	Status   string `json:"status"`
	Error    string `json:"error"`
	Backends map[string]struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		Since string `json:"since"`
	} `json:"backends"`
}

// getHealth fetches a node's /healthz.
func getHealth(t *testing.T, api string) (int, nodeHealth, string) {
	t.Helper()
	resp, err := http.Get("http://" + api + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var h nodeHealth
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("/healthz: %v: %s", err, body)
	}
	return resp.StatusCode, h, string(body)
}

// waitHealth waits (up to d) for /healthz to answer code, and returns it.
func waitHealth(t *testing.T, api string, code int, d time.Duration) nodeHealth {
	t.Helper()
	start := time.Now()
	for {
		got, h, body := getHealth(t, api)
		if got == code {
			t.Logf("/healthz %d after %s: %s", code, time.Since(start).Round(time.Millisecond), body)
			return h
		}
		if time.Since(start) > d {
			t.Fatalf("/healthz still %d after %s, want %d: %s", got, d, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkDegraded checks a 503 /healthz names failing, and only it.
func checkDegraded(t *testing.T, h nodeHealth, failing string, healthy ...string) {
	t.Helper()
	b, ok := h.Backends[failing]
	if h.Status != "degraded" || !ok || b.OK || b.Error == "" || b.Since == "" {
		t.Errorf("/healthz %+v: want status degraded and %s failing with an error and since", h, failing)
	}
	for _, name := range healthy {
		if !h.Backends[name].OK {
			t.Errorf("/healthz %+v: %s should be healthy", h, name)
		}
	}
}

// TestServeSurvivesDynamoDBOutage stops the shared DynamoDB endpoint under
// a running node: /healthz turns 503 naming dynamodb within seconds while
// DataShelf (on SQLite) keeps answering, and turns 200 again by itself
// once the endpoint is back on the same address.
func TestServeSurvivesDynamoDBOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a store process and a node; skipped in -short mode")
	}
	t.Parallel()
	d := startSharedDDB(t, "", "")
	n := startNode(t, d, "node-a")
	if h := waitHealth(t, n.api, http.StatusOK, 10*time.Second); h.Status != "ok" || !h.Backends["dynamodb"].OK {
		t.Fatalf("/healthz before the outage: %+v", h)
	}

	d.stop()
	h := waitHealth(t, n.api, http.StatusServiceUnavailable, 10*time.Second)
	checkDegraded(t, h, "dynamodb")
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Errorf("DataShelf during the outage: %d %s", code, body)
	}
	if code, _ := wcRequest(t, http.MethodGet, "http://"+n.api+"/metrics", "", ""); code != http.StatusOK {
		t.Errorf("/metrics during the outage: %d", code)
	}

	startSharedDDB(t, d.addr, d.dir)
	h = waitHealth(t, n.api, http.StatusOK, 15*time.Second)
	if h.Status != "ok" || !h.Backends["dynamodb"].OK {
		t.Errorf("/healthz after the outage: %+v", h)
	}
	if testing.Verbose() {
		t.Logf("node logs:\n%s", n.logs.String())
	}
}

// TestServeSurvivesPostgresOutage cuts DataShelf's PostgreSQL off a
// running node (through a proxy that refuses connections): /healthz turns
// 503 naming postgres, DynamoDB stays healthy, and all is well again by
// itself once PostgreSQL answers on the same address.
func TestServeSurvivesPostgresOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a store process and a node; skipped in -short mode")
	}
	t.Parallel()
	base := os.Getenv("QUARRY_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("QUARRY_TEST_POSTGRES_URL is not set (scripts/pg-start.sh starts a server)")
	}
	u := postgresSchemaURL(t, base)
	front := newSwitchProxy(t, u.Host)
	u.Host = front.addr

	d := startSharedDDB(t, "", "")
	n := startNode(t, d, "node-a", "--datashelf-db", u.String())
	if h := waitHealth(t, n.api, http.StatusOK, 10*time.Second); !h.Backends["postgres"].OK || !h.Backends["dynamodb"].OK {
		t.Fatalf("/healthz before the outage: %+v", h)
	}
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Fatalf("DataShelf on PostgreSQL: %d %s", code, body)
	}

	front.close()
	h := waitHealth(t, n.api, http.StatusServiceUnavailable, 10*time.Second)
	checkDegraded(t, h, "postgres", "dynamodb")
	if code, _ := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code < 500 {
		t.Errorf("DataShelf without its database: %d, want a 5xx", code)
	}
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/eecar/", "", ""); code >= 500 {
		t.Errorf("EECAR (DynamoDB only) during PostgreSQL's outage: %d %s", code, body)
	}

	newSwitchProxyOn(t, front.addr, pgHost(t, base))
	h = waitHealth(t, n.api, http.StatusOK, 15*time.Second)
	if h.Status != "ok" || !h.Backends["postgres"].OK {
		t.Errorf("/healthz after the outage: %+v", h)
	}
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Errorf("DataShelf after the outage: %d %s", code, body)
	}
}

// pgHost is the host:port of a PostgreSQL URL.
func pgHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestServeSurvivesS3Outage cuts the blob bucket off a running node on
// the embedded store: /healthz turns 503 naming s3 while the DynamoDB
// systems and DataShelf's listings keep answering, and 200 again once the
// bucket is reachable on the same address.
func TestServeSurvivesS3Outage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node; skipped in -short mode")
	}
	t.Parallel()
	endpoint := s3Bucket(t, "quarry").Endpoint
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	front := newSwitchProxy(t, u.Host)
	api := freeAddr(t)
	vars := map[string]string{
		"QUARRY_BLOB_S3_BUCKET":     "quarry",
		"QUARRY_BLOB_S3_ENDPOINT":   "http://" + front.addr,
		"QUARRY_BLOB_S3_PATH_STYLE": "true",
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", "off", "--data-dir", t.TempDir()}, func(k string) string { return vars[k] }, &logs, &logs)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	waitFor(t, "listener", func() bool { return strings.Contains(logs.String(), "listening on "+api) })
	if h := waitHealth(t, api, http.StatusOK, 10*time.Second); !h.Backends["s3"].OK || !h.Backends["dynamodb"].OK {
		t.Fatalf("/healthz before the outage: %+v", h)
	}

	front.close()
	h := waitHealth(t, api, http.StatusServiceUnavailable, 10*time.Second)
	checkDegraded(t, h, "s3", "dynamodb")
	if code, body := wcRequest(t, http.MethodGet, "http://"+api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Errorf("DataShelf listings during the bucket's outage: %d %s", code, body)
	}

	newSwitchProxyOn(t, front.addr, u.Host)
	if h := waitHealth(t, api, http.StatusOK, 15*time.Second); h.Status != "ok" || !h.Backends["s3"].OK {
		t.Errorf("/healthz after the outage: %+v", h)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr returns a free loopback address for a server the test starts
// later. The port is drawn at random below Linux's ephemeral range
// (32768–60999): a port the kernel hands out for ":0" is also what it hands
// to outgoing connections, and with the tests running in parallel one of
// those could take it between this check and the server's bind.
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrOn(t, "127.0.0.1")
}

// freeAddrOn is freeAddr on the loopback address ip.
func freeAddrOn(t *testing.T, ip string) string {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// waitFor polls cond until it holds, failing the test after a minute: a
// deadline for what should happen, wide enough for a quarry start among
// the package's parallel tests on a loaded 2-core machine (10 s was not).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDDBServeListensAndShutsDown(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"ddb", "serve", "--listen", addr, "--data-dir", t.TempDir()}, func(string) string { return "" }, &logs, &logs)
	}()
	waitFor(t, "listening log", func() bool { return strings.Contains(logs.String(), "listening on "+addr) })

	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
	out, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables over the network: %v", err)
	}
	if len(out.TableNames) != 0 {
		t.Fatalf("tables = %v", out.TableNames)
	}
	// The store's metrics sit beside the wire protocol; the health answer
	// at GET / is unchanged.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metricsBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`quarry_ddb_requests_total{op="ListTables"} 1`, "# TYPE quarry_ddb_wal_bytes_total counter", "quarry_ddb_tables 0"} {
		if !strings.Contains(string(metricsBody), want) {
			t.Fatalf("metrics lack %q:\n%s", want, metricsBody)
		}
	}
	if resp, err := http.Get("http://" + addr + "/"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cancel() // what SIGTERM does
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d: %s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Fatalf("no clean stop in logs: %s", logs.String())
	}
}

func TestServeHealthz(t *testing.T) {
	t.Parallel()
	api, store := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	dataDir := t.TempDir()
	if err := os.Chmod(dataDir, 0o755); err != nil { // as quarry used to create it
		t.Fatal(err)
	}
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", dataDir}, func(string) string { return "" }, &logs, &logs)
	}()
	waitFor(t, "both listeners", func() bool {
		return strings.Contains(logs.String(), "listening on "+api) && strings.Contains(logs.String(), "listening on "+store)
	})
	resp, err := http.Get("http://" + api + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	healthBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz = %d", resp.StatusCode)
	}
	checkHealthConfinement(t, healthBody)
	if !strings.Contains(string(healthBody), `"backends":{"dynamodb":{"ok":true}}`) {
		t.Errorf("/healthz should report the embedded store as the one backend, healthy: %s", healthBody)
	}
	if st, err := os.Stat(dataDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data dir after start: %v %v, want mode 0700", st.Mode(), err)
	}
	if !strings.Contains(logs.String(), "data directory was open to other users: tightened") {
		t.Errorf("no log of the tightened data dir:\n%s", logs.String())
	}
	// DataShelf is mounted at /datashelf on its embedded SQLite store.
	for path, want := range map[string]int{
		"/datashelf/api/products":            200,
		"/datashelf/api/navigation":          200,
		"/datashelf/api/products?sort=bogus": 400,
		"/datashelf/api/scraper/status":      401,
	} {
		resp, err := http.Get("http://" + api + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s = %d %s, want %d JSON", path, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
	// /metrics counts the requests above by system, and the systems' gauges.
	resp, err = http.Get("http://" + api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`quarry_http_requests_total{code="2xx",system="datashelf"} 2`,
		`quarry_http_requests_total{code="4xx",system="datashelf"} 2`,
		"quarry_wallcrawler_live_sessions 0", "quarry_checks_scheduled 0", "quarry_eecar_indexed_parts 0",
		// The systems created their tables in the embedded store at start.
		`quarry_ddb_requests_total{op="CreateTable"}`, "# TYPE quarry_ddb_disk_bytes gauge",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	resp, err = http.Get("http://" + api + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("unknown path = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestBadConfigFailsFast(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	code := run(context.Background(), []string{"serve", "--listen", "nope", "--log-level", "loud"}, func(string) string { return "" }, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "listen") || !strings.Contains(out.String(), "log-level") {
		t.Fatalf("code %d, output %s", code, out.String())
	}
	if code := run(context.Background(), []string{"frobnicate"}, func(string) string { return "" }, &out, &out); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
}

// TestDataShelfCrawlCommand crawls a fixture bookstore with the CLI, then
// reads the products back through `quarry serve`'s DataShelf API.
func TestDataShelfCrawlCommand(t *testing.T) {
	t.Parallel()
	site := fixture.New(fixture.Options{Products: 40, Seed: 7, CrawlDelay: -1})
	srv := httptest.NewServer(site.Handler())
	defer srv.Close()
	dir := t.TempDir()
	var out, errs syncBuffer
	env := func(string) string { return "" }
	// A profile file that only names itself keeps every default selector.
	profile := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(profile, []byte(`{"name": "fixture"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code := run(context.Background(), []string{"datashelf", "crawl", srv.URL + "/en-gb", "--allow-private", "--profile", profile, "--data-dir", dir}, env, &out, &errs)
	if code != 0 {
		t.Fatalf("crawl exit %d: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), "products") {
		t.Fatalf("no final stats line: %q", out.String())
	}
	out = syncBuffer{}
	if code := run(context.Background(), []string{"datashelf", "jobs", "--data-dir", dir}, env, &out, &errs); code != 0 || !strings.Contains(out.String(), "completed") {
		t.Fatalf("jobs exit %d: %s %s", code, out.String(), errs.String())
	}
	// Serve the crawled data.
	api := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var logs syncBuffer
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", "off", "--data-dir", dir}, env, &logs, &logs)
	}()
	waitFor(t, "listener", func() bool { return strings.Contains(logs.String(), "listening on "+api) })
	resp, err := http.Get("http://" + api + "/datashelf/api/products?limit=100")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Items []struct {
			Title     string   `json:"title"`
			ImageURLs []string `json:"image_urls"`
		} `json:"items"`
		Total int `json:"total"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || page.Total != 40 || len(page.Items) != 40 {
		t.Fatalf("products after the crawl: total %d, %d items, %v", page.Total, len(page.Items), err)
	}
	// Images are served by quarry from its blob store.
	for _, p := range page.Items {
		if len(p.ImageURLs) == 0 {
			continue
		}
		img, err := http.Get("http://" + api + p.ImageURLs[0])
		if err != nil {
			t.Fatal(err)
		}
		img.Body.Close()
		if img.StatusCode != 200 {
			t.Fatalf("image %s: %d", p.ImageURLs[0], img.StatusCode)
		}
		break
	}
	cancel()
	<-done
}

// TestWallcrawlerKeys creates a project and a key with the CLI while
// `quarry serve` owns the data directory (the CLI then talks to its DynamoDB
// endpoint), and uses the key against the Wallcrawler API.
func TestWallcrawlerKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	api, store := freeAddr(t), freeAddr(t)
	env := func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", dir}, env, &logs, &logs)
	}()
	waitFor(t, "listeners", func() bool { return strings.Contains(logs.String(), "listening on "+store) })

	cli := func(args ...string) string {
		t.Helper()
		var out, errs syncBuffer
		args = append(args, "--data-dir", dir, "--ddb-listen", store)
		if code := run(context.Background(), args, env, &out, &errs); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs.String())
		}
		return strings.TrimSpace(out.String())
	}
	if out := cli("wallcrawler", "project", "create", "--name", "Acme", "--id", "project_acme", "--concurrency", "3"); !strings.Contains(out, "project_acme") {
		t.Fatalf("project create: %q", out)
	}
	key := cli("wallcrawler", "key", "create", "--project", "project_acme")
	if !strings.HasPrefix(key, "wc_") {
		t.Fatalf("raw key %q", key)
	}
	get := func(key string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+api+"/wallcrawler/v1/projects/project_acme", nil)
		if key != "" {
			req.Header.Set("X-BB-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(key); code != 200 {
		t.Fatalf("with the key: %d", code)
	}
	if code := get(""); code != 401 {
		t.Fatalf("without a key: %d", code)
	}
	if out := cli("wallcrawler", "key", "revoke", "--key", key); out != "revoked" {
		t.Fatalf("revoke: %q", out)
	}
	if code := get(key); code != 401 {
		t.Fatalf("revoked key: %d", code)
	}
	cancel()
	<-done
}

// TestTuneGC checks that quarry raises the collector's target unless the
// operator tuned the collector.
func TestTuneGC(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{nil, gcPercent},
		{map[string]string{"GOGC": "50"}, 100},
		{map[string]string{"GOMEMLIMIT": "1GiB"}, 100},
	} {
		prev := debug.SetGCPercent(100)
		tuneGC(func(k string) string { return tc.env[k] })
		if got := debug.SetGCPercent(prev); got != tc.want {
			t.Errorf("env %v: GC percent %d, want %d", tc.env, got, tc.want)
		}
	}
}

// checkHealthConfinement checks /healthz's report of how Wallcrawler's
// browsers are confined: {"status":"ok","wallcrawler":{...}}; as root with
// Chromium installed, they run as another user, with Chromium's sandbox
// exactly when user namespaces work for that user.
func checkHealthConfinement(t *testing.T, body []byte) {
	t.Helper()
	t.Logf("/healthz: %s", bytes.TrimSpace(body))
	var h struct {
		Status      string `json:"status"`
		Wallcrawler struct {
			Browser     string   `json:"browser"`
			Error       string   `json:"error"`
			BrowserUser string   `json:"browserUser"`
			UID         *uint32  `json:"uid"`
			Switched    bool     `json:"switched"`
			Sandbox     *bool    `json:"sandbox"`
			Warnings    []string `json:"warnings"`
		} `json:"wallcrawler"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "ok" {
		t.Fatalf("/healthz = %s (%v), want status ok", body, err)
	}
	wc := h.Wallcrawler
	if _, err := exec.LookPath("chromium"); err != nil {
		if wc.Browser != "unavailable" || wc.Error == "" {
			t.Errorf("/healthz without chromium: %s", body)
		}
		return
	}
	if wc.BrowserUser == "" || wc.UID == nil || wc.Sandbox == nil {
		t.Fatalf("/healthz lacks the browsers' confinement: %s", body)
	}
	if os.Geteuid() != 0 {
		return
	}
	if *wc.UID == 0 || !wc.Switched {
		t.Errorf("quarry runs as root but its browsers run as %s (uid %d, switched %v)", wc.BrowserUser, *wc.UID, wc.Switched)
	}
	u, err := browser.LookupUser(wc.BrowserUser)
	if err != nil {
		t.Fatal(err)
	}
	if unshare, err := exec.LookPath("unshare"); err == nil {
		cmd := exec.Command(unshare, "-U", "true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}}
		usernsOK := cmd.Run() == nil
		if *wc.Sandbox != usernsOK {
			t.Errorf("/healthz sandbox = %v, but user namespaces work for %s: %v", *wc.Sandbox, u, usernsOK)
		}
	}
	if !*wc.Sandbox && len(wc.Warnings) == 0 {
		t.Errorf("sandbox off without a warning: %s", body)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler"
)

// sdkResult is the JSON line testdata/browserbase_sdk.mjs prints.
type sdkResult struct {
	Step                    string   `json:"step"`
	Error                   string   `json:"error"`
	SessionID               string   `json:"sessionId"`
	CreateStatus            string   `json:"createStatus"`
	HasConnectURL           bool     `json:"hasConnectUrl"`
	Contexts                int      `json:"contexts"`
	GotoStatus              *int     `json:"gotoStatus"`
	Title                   string   `json:"title"`
	DebugPageURLs           []string `json:"debugPageUrls"`
	DebugHasPage            bool     `json:"debugHasPage"`
	DebugHasWsURL           bool     `json:"debugHasWsUrl"`
	UpdateStatus            string   `json:"updateStatus"`
	RetrieveStatus          string   `json:"retrieveStatus"`
	EndedAt                 *string  `json:"endedAt"`
	ListCompletedHasSession bool     `json:"listCompletedHasSession"`
	LogCount                int      `json:"logCount"`
	LogMethods              []string `json:"logMethods"`
	RecordingFrames         int      `json:"recordingFrames"`
	Replays                 *struct {
		Threw      bool   `json:"threw"`
		IsNotFound bool   `json:"isNotFound"`
		Status     int    `json:"status"`
		Message    string `json:"message"`
	} `json:"replays"`
	ProxyBytes     float64 `json:"proxyBytes"`
	BrowserMinutes float64 `json:"browserMinutes"`
	WrongKey       *struct {
		Threw                 bool   `json:"threw"`
		Name                  string `json:"name"`
		IsAuthenticationError bool   `json:"isAuthenticationError"`
		Status                int    `json:"status"`
		Message               string `json:"message"`
	} `json:"wrongKey"`
}

// sdkPeers returns node and the directory holding the Browserbase SDK and
// playwright-core (PEERS_DIR, default <repo>/.cache/peers, as
// scripts/test-deps.sh installs them), skipping the test when one is
// missing, or failing it when QUARRY_REQUIRE_PEERS=1.
func sdkPeers(t *testing.T) (node, peers string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node not found: %v", err)
	}
	peers = os.Getenv("PEERS_DIR")
	if peers == "" {
		peers = filepath.Join("..", "..", ".cache", "peers")
	}
	if peers, err = filepath.Abs(peers); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"@browserbasehq/sdk", "playwright-core"} {
		if _, err := os.Stat(filepath.Join(peers, "node_modules", pkg, "package.json")); err != nil {
			testenv.Missing(t, "npm package %s not installed in %s", pkg, peers)
		}
	}
	testenv.Chromium(t)
	return node, peers
}

// browsersOf lists the processes whose command line mentions dir, other
// than this test process.
func browsersOf(dir string) []string {
	var found []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	self := fmt.Sprintf("/proc/%d/cmdline", os.Getpid())
	for _, p := range paths {
		if p == self {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(data, []byte(dir)) {
			continue
		}
		found = append(found, filepath.Base(filepath.Dir(p))+": "+strings.ReplaceAll(string(bytes.TrimRight(data, "\x00")), "\x00", " "))
	}
	return found
}

// TestBrowserbaseSDK runs the stock @browserbasehq/sdk and Playwright's
// connectOverCDP against `quarry serve` (testdata/browserbase_sdk.mjs): a
// session's whole life, its debug, logs and usage, and a wrong key.
func TestBrowserbaseSDK(t *testing.T) {
	t.Parallel()
	node, peers := sdkPeers(t)
	script, err := filepath.Abs(filepath.Join("testdata", "browserbase_sdk.mjs"))
	if err != nil {
		t.Fatal(err)
	}

	const title = "Wallcrawler SDK fixture ✓"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body><h1>hello</h1></body></html>", title)
	}))
	defer site.Close()
	pageURL := site.URL + "/fixture"

	dir := t.TempDir()
	browserRoot, err := wallcrawler.DefaultBrowserRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	api, store := freeAddr(t), freeAddr(t)
	env := func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		// The fixture site is on loopback: allowed by its address:port
		// alone, the way a user browses a local test site.
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", dir, "--allow-networks", site.Listener.Addr().String()}, env, &logs, &logs)
	}()
	stopped := false
	stop := func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel() // what SIGTERM does
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("quarry serve exit %d", code)
			}
		case <-time.After(60 * time.Second):
			t.Error("quarry serve did not stop within 60s")
		}
	}
	defer stop()
	waitFor(t, "listeners", func() bool {
		return strings.Contains(logs.String(), "listening on "+api) && strings.Contains(logs.String(), "listening on "+store)
	})

	cli := func(args ...string) string {
		t.Helper()
		var out, errs syncBuffer
		args = append(args, "--data-dir", dir, "--ddb-listen", store)
		if code := run(context.Background(), args, env, &out, &errs); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs.String())
		}
		return strings.TrimSpace(out.String())
	}
	const project = "project_demo"
	cli("wallcrawler", "project", "create", "--name", "demo", "--id", project, "--concurrency", "2")
	key := cli("wallcrawler", "key", "create", "--project", project)
	if !strings.HasPrefix(key, "wc_") {
		t.Fatalf("raw key %q", key)
	}

	nctx, ncancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer ncancel()
	cmd := exec.CommandContext(nctx, node, script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"KEY="+key, "BASE_URL=http://"+api+"/wallcrawler", "PROJECT="+project,
		"PAGE_URL="+pageURL, "PEERS_DIR="+peers)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	t.Logf("node output: %s", strings.TrimSpace(stdout.String()))
	if stderr.Len() > 0 {
		t.Logf("node stderr: %s", stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res sdkResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("node %v; no JSON result (%v); stdout %q, stderr %q\nserver logs:\n%s", runErr, err, stdout.String(), stderr.String(), logs.String())
	}
	if runErr != nil {
		t.Errorf("node: %v", runErr)
	}
	if res.Error != "" {
		t.Fatalf("SDK step %s failed: %s\nserver logs:\n%s", res.Step, res.Error, logs.String())
	}

	if res.SessionID == "" || res.CreateStatus != "RUNNING" || !res.HasConnectURL {
		t.Errorf("create: id %q, status %q, connectUrl present %v", res.SessionID, res.CreateStatus, res.HasConnectURL)
	}
	if res.Contexts != 1 {
		t.Errorf("connectOverCDP: %d browser contexts, want the default one", res.Contexts)
	}
	if res.GotoStatus == nil || *res.GotoStatus != 200 {
		t.Errorf("goto status %v", res.GotoStatus)
	}
	if res.Title != title {
		t.Errorf("title %q, want %q", res.Title, title)
	}
	if !res.DebugHasPage || !res.DebugHasWsURL {
		t.Errorf("debug: pages %v (want %s), wsUrl present %v", res.DebugPageURLs, pageURL, res.DebugHasWsURL)
	}
	if res.UpdateStatus != "COMPLETED" && res.UpdateStatus != "RUNNING" {
		t.Errorf("update REQUEST_RELEASE answered status %q", res.UpdateStatus)
	}
	if res.RetrieveStatus != "COMPLETED" || res.EndedAt == nil || *res.EndedAt == "" {
		t.Errorf("retrieve after release: status %q, endedAt %v", res.RetrieveStatus, res.EndedAt)
	}
	if !res.ListCompletedHasSession {
		t.Errorf("sessions.list({status: COMPLETED}) lacks %s", res.SessionID)
	}
	if res.LogCount <= 0 {
		t.Errorf("sessions.logs.list: %d entries", res.LogCount)
	}
	if res.RecordingFrames <= 0 {
		t.Errorf("sessions.recording.retrieve: %d frames", res.RecordingFrames)
	}
	if r := res.Replays; r == nil || !r.Threw || !r.IsNotFound || !strings.Contains(r.Message, "not supported") {
		t.Errorf("sessions.replays.retrieve: %+v, want a NotFoundError saying replays are not supported", r)
	}
	if res.ProxyBytes <= 0 {
		t.Errorf("projects.usage proxyBytes %v, want > 0", res.ProxyBytes)
	}
	if w := res.WrongKey; w == nil || !w.Threw || !w.IsAuthenticationError || w.Status != 401 {
		t.Errorf("wrong key: %+v, want an AuthenticationError with status 401", w)
	}

	stop()
	var left []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		// The browsers live in the default browser dir, outside the data
		// directory, whose path is on their command lines.
		left = append(browsersOf(dir), browsersOf(browserRoot)...)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("%d processes of the data directory left after the server stopped:\n%s", len(left), strings.Join(left, "\n"))
	}
	if t.Failed() {
		t.Logf("server logs:\n%s", logs.String())
	}
}

// docSnippetMarker precedes the js block of docs/wallcrawler.md that
// TestWallcrawlerDocSnippet runs.
const docSnippetMarker = "<!-- sdk snippet:"

// wallcrawlerDocSnippet returns the js block after docSnippetMarker in
// docs/wallcrawler.md.
func wallcrawlerDocSnippet(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "wallcrawler.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), docSnippetMarker)
	if !ok {
		t.Fatalf("docs/wallcrawler.md has no %q marker", docSnippetMarker)
	}
	_, block, ok := strings.Cut(after, "```js\n")
	if !ok {
		t.Fatal("docs/wallcrawler.md has no js block after its snippet marker")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("docs/wallcrawler.md's snippet is not terminated")
	}
	return block
}

// TestWallcrawlerDocSnippet runs docs/wallcrawler.md's SDK and Playwright
// snippet as written, with the test's ports for 8080 and 8090: saved as
// demo.mjs in a scratch folder beside a node_modules of the two packages,
// as the page says to install them. On the demo shop it prints the shop's
// title; on an address the network policy refuses it fails with the 403,
// and in both cases it releases its session (no RUNNING session is left).
func TestWallcrawlerDocSnippet(t *testing.T) {
	t.Parallel()
	node, peers := sdkPeers(t)
	snippet := wallcrawlerDocSnippet(t)
	for _, s := range []string{"127.0.0.1:8080", "127.0.0.1:8090", "project_acme", "process.env.KEY", "finally"} {
		if !strings.Contains(snippet, s) {
			t.Fatalf("the snippet no longer mentions %q; update this test with it:\n%s", s, snippet)
		}
	}
	shop := httptest.NewServer(fixture.New(fixture.Options{Products: 5, Seed: 1, CrawlDelay: -1}).Handler())
	defer shop.Close()
	refused := freeAddr(t) // loopback, not allowed

	dir := t.TempDir()
	api, store := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", dir, "--allow-networks", shop.Listener.Addr().String()}, noEnv, &logs, &logs)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("quarry serve did not stop within a minute")
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	}()
	waitFor(t, "listeners", func() bool {
		return strings.Contains(logs.String(), "listening on "+api) && strings.Contains(logs.String(), "listening on "+store)
	})
	cli := func(args ...string) string {
		t.Helper()
		var out, errs syncBuffer
		if code := run(context.Background(), append(args, "--data-dir", dir), noEnv, &out, &errs); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs.String())
		}
		return strings.TrimSpace(out.String())
	}
	cli("wallcrawler", "project", "create", "--name", "Acme", "--id", "project_acme", "--concurrency", "3")
	key := cli("wallcrawler", "key", "create", "--project", "project_acme")

	running := func() string {
		req, _ := http.NewRequest("GET", "http://"+api+"/wallcrawler/v1/sessions?status=RUNNING", nil)
		req.Header.Set("X-BB-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list []struct {
			ID string `json:"id"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatalf("list sessions: %v", err)
		}
		ids := make([]string, len(list))
		for i, s := range list {
			ids[i] = s.ID
		}
		return strings.Join(ids, " ")
	}

	for _, tt := range []struct {
		name, target string
		ok           bool
		want         string // in stdout when ok, else in stderr
	}{
		{"the demo shop", shop.Listener.Addr().String(), true, "Used Books"},
		{"a refused address", refused, false, "goto: HTTP 403"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scratch := t.TempDir()
			if err := os.Symlink(filepath.Join(peers, "node_modules"), filepath.Join(scratch, "node_modules")); err != nil {
				t.Fatal(err)
			}
			script := strings.NewReplacer("127.0.0.1:8080", api, "127.0.0.1:8090", tt.target).Replace(snippet)
			if err := os.WriteFile(filepath.Join(scratch, "demo.mjs"), []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			nctx, ncancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer ncancel()
			cmd := exec.CommandContext(nctx, node, "demo.mjs")
			cmd.Dir = scratch
			cmd.Env = append(os.Environ(), "KEY="+key, "NODE_PATH=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if tt.ok != (err == nil) {
				t.Fatalf("node demo.mjs: %v, want success %v\nstdout %s\nstderr %s", err, tt.ok, stdout.String(), stderr.String())
			}
			out := stdout.String()
			if !tt.ok {
				out = stderr.String()
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %q:\nstdout %s\nstderr %s", tt.want, stdout.String(), stderr.String())
			}
			if ids := running(); ids != "" {
				t.Errorf("sessions still RUNNING after the snippet: %s", ids)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
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

	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler"
)

// sdkServe is a `quarry serve` for the SDK tests: its API address, data
// and browser directories, a project and a raw key of it.
type sdkServe struct {
	api, dir, browserRoot, project, key string
	logs                                *syncBuffer
	// cli runs a quarry command against the server's store.
	cli func(args ...string) string
}

// startSDKServe runs `quarry serve` with extra flags until the test ends
// and makes a project (concurrency 2) and a key.
func startSDKServe(t *testing.T, extra ...string) *sdkServe {
	t.Helper()
	s := &sdkServe{dir: t.TempDir(), logs: &syncBuffer{}, project: "project_demo"}
	var err error
	if s.browserRoot, err = wallcrawler.DefaultBrowserRoot(s.dir); err != nil {
		t.Fatal(err)
	}
	s.api = freeAddr(t)
	store := freeAddr(t)
	env := func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		args := append([]string{"serve", "--listen", s.api, "--ddb-listen", store, "--data-dir", s.dir}, extra...)
		done <- run(ctx, args, env, s.logs, s.logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("quarry serve exit %d", code)
			}
		case <-time.After(60 * time.Second):
			t.Error("quarry serve did not stop within 60s")
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", s.logs.String())
		}
	})
	waitFor(t, "listeners", func() bool {
		return strings.Contains(s.logs.String(), "listening on "+s.api) && strings.Contains(s.logs.String(), "listening on "+store)
	})
	cli := func(args ...string) string {
		t.Helper()
		var out, errs syncBuffer
		args = append(args, "--data-dir", s.dir, "--ddb-listen", store)
		if code := run(context.Background(), args, env, &out, &errs); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs.String())
		}
		return strings.TrimSpace(out.String())
	}
	s.cli = cli
	cli("wallcrawler", "project", "create", "--name", "demo", "--id", s.project, "--concurrency", "2")
	s.key = cli("wallcrawler", "key", "create", "--project", s.project)
	return s
}

// runNode runs a node script with env added and decodes the JSON line it
// prints last into out.
func runNode(t *testing.T, node, script string, out any, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	t.Logf("node output: %s", strings.TrimSpace(stdout.String()))
	if stderr.Len() > 0 {
		t.Logf("node stderr: %s", stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("node %v; no JSON result (%v); stdout %q, stderr %q", runErr, err, stdout.String(), stderr.String())
	}
	if runErr != nil {
		t.Errorf("node: %v", runErr)
	}
}

// TestBrowserbaseSDKUploads uploads a file with the stock SDK's
// sessions.uploads.create and hands it to a page on loopback through
// Playwright's CDP session, by Browserbase's /tmp/.uploads path; the page
// reads the file's content. Host files outside the session's directories
// are refused (testdata/browserbase_sdk_uploads.mjs).
func TestBrowserbaseSDKUploads(t *testing.T) {
	t.Parallel()
	node, peers := sdkPeers(t)
	script, err := filepath.Abs(filepath.Join("testdata", "browserbase_sdk_uploads.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>upload</title><input type="file" id="f">`)
	}))
	defer site.Close()
	s := startSDKServe(t, "--allow-networks", site.Listener.Addr().String())

	content := "résumé of the tenant " + time.Now().Format(time.RFC3339Nano)
	file := filepath.Join(t.TempDir(), "resume.txt")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Step, Error               string
		UploadMessage, UploadPath string
		ViaBrowserbasePath        string
		AfterRefusals             string
		Refused                   []struct {
			Path    string
			Threw   bool
			Message string
		}
	}
	runNode(t, node, script, &res, "KEY="+s.key, "BASE_URL=http://"+s.api+"/wallcrawler", "PROJECT="+s.project,
		"PAGE_URL="+site.URL+"/", "UPLOAD_FILE="+file, "BROWSER_ROOT="+s.browserRoot, "PEERS_DIR="+peers)
	if res.Error != "" {
		t.Fatalf("SDK step %s failed: %s", res.Step, res.Error)
	}
	if res.UploadMessage != "File uploaded successfully" || res.UploadPath != "/tmp/.uploads/resume.txt" {
		t.Errorf("uploads.create answered message %q path %q", res.UploadMessage, res.UploadPath)
	}
	want := "resume.txt:" + content
	if res.ViaBrowserbasePath != want {
		t.Errorf("the page read %q through /tmp/.uploads, want %q", res.ViaBrowserbasePath, want)
	}
	if len(res.Refused) != 3 {
		t.Errorf("refusals: %+v", res.Refused)
	}
	for _, r := range res.Refused {
		if !r.Threw || !strings.Contains(r.Message, "wallcrawler: DOM.setFileInputFiles refused") {
			t.Errorf("DOM.setFileInputFiles %s: %+v, want the filter's refusal", r.Path, r)
		}
	}
	if res.AfterRefusals != "" {
		t.Errorf("after the refusals the input holds %q", res.AfterRefusals)
	}
}

// TestBrowserbaseSDKProxies creates sessions with proxies through the
// stock SDK (testdata/browserbase_sdk_proxies.mjs): proxies: true is the
// SDK's BadRequestError naming what is supported; a session with an
// external proxy loads a loopback page through it (the proxy sees the
// request with its credentials), and the session the SDK retrieves does
// not show them.
func TestBrowserbaseSDKProxies(t *testing.T) {
	t.Parallel()
	node, peers := sdkPeers(t)
	script, err := filepath.Abs(filepath.Join("testdata", "browserbase_sdk_proxies.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<title>px</title>via=%s", r.Header.Get("X-Via"))
	}))
	defer site.Close()
	up := testenv.NewUpstreamProxy(t, "tenant-proxy")
	s := startSDKServe(t, "--allow-networks", site.Listener.Addr().String()+","+up.Listener.Addr().String())
	password := fmt.Sprint("pw-", time.Now().UnixNano())
	var res struct {
		Step, Error string
		PoolRefused *struct {
			Threw, IsBadRequest bool
			Status              int
			Message             string
		}
		SessionJSON, Body string
	}
	runNode(t, node, script, &res, "KEY="+s.key, "BASE_URL=http://"+s.api+"/wallcrawler", "PROJECT="+s.project,
		"PAGE_URL="+site.URL+"/sdk", "PROXY="+up.Listener.Addr().String(), "PROXY_PASSWORD="+password, "PEERS_DIR="+peers)
	if res.Error != "" {
		t.Fatalf("SDK step %s failed: %s", res.Step, res.Error)
	}
	if p := res.PoolRefused; p == nil || !p.Threw || !p.IsBadRequest || p.Status != 400 || !strings.Contains(p.Message, `"type":"external"`) {
		t.Errorf("proxies: true: %+v, want a BadRequestError naming external proxies", p)
	}
	if res.Body != "via=tenant-proxy" {
		t.Errorf("page body %q, want it loaded through the tenant's proxy", res.Body)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("tenant:"+password))
	if seen := up.SeenText(); !strings.Contains(seen, "GET "+site.URL+"/sdk auth="+auth) {
		t.Errorf("the tenant's proxy saw:\n%s", seen)
	}
	if res.SessionJSON == "" || strings.Contains(res.SessionJSON, password) {
		t.Errorf("retrieved session %s", res.SessionJSON)
	}
}

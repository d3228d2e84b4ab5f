package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// clusterLease is the nodes' --wallcrawler-lease in the cluster tests:
// short, so that a dead node's sessions end within seconds.
const clusterLease = 4 * time.Second

// wcNode is a `quarry serve` child process of a Wallcrawler cluster.
type wcNode struct {
	name string
	*quarryProc
}

// startWallcrawlerCluster runs n `quarry serve` processes (this test
// binary, as quarry) on one shared `quarry ddb serve --credentials`,
// sharing the Wallcrawler secret, each with its own data and browser
// directories, lease clusterLease, and --allow-networks allow.
func startWallcrawlerCluster(t *testing.T, n int, allow string) (*ddbProc, []*wcNode) {
	t.Helper()
	bin := quarryBinary(t)
	d := startSharedDDB(t, "", "")
	// Outside the 0700 temporary tree, so that the browser user (nobody
	// when the test runs as root) can enter it.
	browserRoot, err := os.MkdirTemp("", "quarry-cluster-browsers-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(browserRoot, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if k, _ := browser.KillLeftovers(browserRoot); k > 0 {
			t.Logf("cleanup: killed %d browser processes", k)
		}
		_ = os.RemoveAll(browserRoot)
	})
	// Started together, then awaited together: a node's start is mostly
	// waiting (Chromium's sandbox probe, table checks).
	nodes := make([]*wcNode, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%c", 'a'+i)
		logPath := filepath.Join(t.TempDir(), name+".log")
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		api := freeAddr(t)
		cmd := quarryCommand(bin, "serve", "--data-dir", t.TempDir(), "--listen", api, "--ddb-listen", "off",
			"--dynamodb-endpoint", "http://"+d.addr, "--wallcrawler-secret", clusterWCKey, "--node-id", name,
			"--wallcrawler-lease", clusterLease.String(), "--wallcrawler-lease-renew", "1s", "--allow-networks", allow,
			"--wallcrawler-browser-dir", filepath.Join(browserRoot, name))
		cmd.Stdout, cmd.Stderr = logFile, logFile
		err = cmd.Start()
		logFile.Close()
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		q := &quarryProc{cmd: cmd, api: api, logPath: logPath, done: make(chan struct{})}
		go func() {
			q.waitErr = cmd.Wait()
			close(q.done)
		}()
		t.Cleanup(func() {
			if !q.exited() {
				_ = q.cmd.Process.Kill()
				<-q.done
			}
		})
		nodes[i] = &wcNode{name: name, quarryProc: q}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for _, nd := range nodes {
		for {
			if nd.exited() {
				t.Fatalf("%s exited during start: %v\n%s", nd.name, nd.waitErr, nd.logs())
			}
			resp, err := client.Get("http://" + nd.api + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not healthy within 60s (last error %v)\n%s", nd.name, err, nd.logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, nd := range nodes {
				t.Logf("%s logs:\n%s", nd.name, nd.logs())
			}
		}
	})
	return d, nodes
}

// postSession creates a session through api; it returns the status code
// and body, or an error when no answer came (safe in any goroutine).
func postSession(api, key, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+api+"/wallcrawler/v1/sessions", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-BB-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// TestClusterWallcrawler runs three `quarry serve` processes on one
// shared store endpoint. A session created through node A is driven with
// Playwright's connectOverCDP through B's and then C's address. Project
// concurrency holds cluster-wide: twelve parallel creates spread over the
// three nodes with concurrency 3 give exactly three sessions and nine
// 429s. Then the owner of some of those sessions is killed with SIGKILL:
// the survivors find its lease expired, its sessions become ERROR (each
// ended by exactly one survivor) and their slots are free again, while
// the other nodes' sessions run on.
func TestClusterWallcrawler(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three quarry processes and Chromium; skipped in -short mode")
	}
	t.Parallel()
	testenv.Chromium(t)
	nodeBin, peers := sdkPeers(t)
	total := time.Now()
	const title = "Cluster fixture"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>%s</title></head><body><p id="value"></p>`+
			`<script>document.getElementById('value').textContent = 'computed-' + (6 * 7) + '-' + location.pathname</script></body></html>`, title)
	}))
	defer site.Close()
	d, nodes := startWallcrawlerCluster(t, 3, site.Listener.Addr().String())
	a, b, c := nodes[0], nodes[1], nodes[2]
	t.Logf("three nodes serving after %s", time.Since(total).Round(time.Millisecond))

	t.Run("PlaywrightThroughOtherNodes", func(t *testing.T) {
		clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "pw", "--id", "project_pw", "--concurrency", "1")
		key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_pw")
		code, body := wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/sessions", key, `{}`)
		if code != http.StatusCreated {
			t.Fatalf("create on A: %d %s", code, body)
		}
		sess := decodeSession(t, "create on A", body)
		if !strings.Contains(sess.ConnectURL, a.api) {
			t.Fatalf("connectUrl %q does not point at A (%s)", sess.ConnectURL, a.api)
		}
		viaB := strings.Replace(sess.ConnectURL, a.api, b.api, 1)
		viaC := strings.Replace(sess.ConnectURL, a.api, c.api, 1)

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, nodeBin, filepath.Join("testdata", "cluster_playwright.mjs"))
		cmd.Env = append(os.Environ(), "CONNECT_URLS="+viaB+","+viaC, "PAGE_URL="+site.URL, "PEERS_DIR="+peers)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		if stderr.Len() > 0 {
			t.Logf("node stderr: %s", stderr.String())
		}
		var results []struct {
			Via, Title, Value, Path, Error string
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &results); err != nil || runErr != nil {
			t.Fatalf("node: %v; results %v: %q", runErr, err, stdout.String())
		}
		if len(results) != 2 {
			t.Fatalf("%d results, want 2: %+v", len(results), results)
		}
		for i, want := range []string{b.api, c.api} {
			r := results[i]
			if r.Error != "" {
				t.Errorf("through %s: %s", r.Via, r.Error)
				continue
			}
			hop := fmt.Sprintf("/hop-%d", i)
			if r.Via != want || r.Title != title || r.Value != "computed-42-"+hop || r.Path != hop {
				t.Errorf("through %s: %+v, want via %s, title %q, value %q", r.Via, r, want, title, "computed-42-"+hop)
			}
		}
		// The browser ran on A alone: B and C relayed.
		if metric(t, a.api, "quarry_wallcrawler_live_sessions") != 1 || metric(t, b.api, "quarry_wallcrawler_live_sessions") != 0 ||
			metric(t, c.api, "quarry_wallcrawler_live_sessions") != 0 {
			t.Error("the session's browser should run on A only")
		}
		if code, body := wcRequest(t, http.MethodPost, "http://"+c.api+"/wallcrawler/v1/sessions/"+sess.ID, key, `{"status":"REQUEST_RELEASE"}`); code != http.StatusOK {
			t.Errorf("release through C: %d %s", code, body)
		}
	})

	// Concurrency cluster-wide, then the death of an owner.
	const k, creates = 3, 12
	clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "conc", "--id", "project_conc", "--concurrency", strconv.Itoa(k))
	key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_conc")
	type created struct {
		node *wcNode
		sess crashSession
	}
	var (
		mu      sync.Mutex
		ok      []created
		refused int
		other   []string
		wg      sync.WaitGroup
	)
	start := time.Now()
	for i := range creates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd := nodes[i%len(nodes)]
			code, body, err := postSession(nd.api, key, `{"keepAlive":true}`)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				other = append(other, fmt.Sprintf("%s: %v", nd.name, err))
			case code == http.StatusCreated:
				var s crashSession
				if err := json.Unmarshal(body, &s); err != nil {
					other = append(other, fmt.Sprintf("%s: %v", nd.name, err))
					return
				}
				ok = append(ok, created{nd, s})
			case code == http.StatusTooManyRequests:
				refused++
			default:
				other = append(other, fmt.Sprintf("%s: %d %s", nd.name, code, body))
			}
		}()
	}
	wg.Wait()
	t.Logf("%d parallel creates over 3 nodes, concurrency %d: %d created, %d refused with 429 (%s)", creates, k, len(ok), refused, time.Since(start).Round(time.Millisecond))
	if len(ok) != k || refused != creates-k || len(other) > 0 {
		t.Fatalf("creates: %d created, %d answered 429, others %v; want exactly %d and %d", len(ok), refused, other, k, creates-k)
	}

	// SIGKILL the owner of the first session.
	victim := ok[0].node
	var lost, kept []created
	for _, x := range ok {
		if x.node == victim {
			lost = append(lost, x)
		} else {
			kept = append(kept, x)
		}
	}
	var survivors []*wcNode
	for _, nd := range nodes {
		if nd != victim {
			survivors = append(survivors, nd)
		}
	}
	killed := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	t.Logf("SIGKILLed %s, owner of %d of the %d sessions", victim.name, len(lost), k)

	// Its sessions become ERROR, as every survivor reads them.
	waitForLong(t, 10*clusterLease+30*time.Second, "the dead node's sessions to become ERROR", func() bool {
		for _, x := range lost {
			for _, s := range survivors {
				code, body := wcRequest(t, http.MethodGet, "http://"+s.api+"/wallcrawler/v1/sessions/"+x.sess.ID, key, "")
				if code != http.StatusOK || decodeSession(t, "get", body).Status != "ERROR" {
					return false
				}
			}
		}
		return true
	})
	t.Logf("the dead node's sessions ERROR %s after the SIGKILL (lease %s)", time.Since(killed).Round(time.Millisecond), clusterLease)
	for _, x := range lost {
		code, body := wcRequest(t, http.MethodGet, "http://"+survivors[0].api+"/wallcrawler/v1/sessions/"+x.sess.ID, key, "")
		var got struct {
			Status, EndedAt, ConnectURL, Error string
		}
		if err := json.Unmarshal(body, &got); err != nil || code != http.StatusOK {
			t.Fatalf("get %s: %d %s", x.sess.ID, code, body)
		}
		if got.EndedAt == "" || got.ConnectURL != "" {
			t.Errorf("ended session %s: %s; want endedAt and no connectUrl", x.sess.ID, body)
		}
		// Its connectUrl opens nothing through a survivor.
		via := strings.Replace(x.sess.ConnectURL, victim.api, survivors[0].api, 1)
		if _, resp, err := websocket.Dial(context.Background(), via, nil); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("connect to a dead node's session through %s: %v %v, want 404", survivors[0].name, err, resp)
		}
	}
	for _, x := range kept {
		code, body := wcRequest(t, http.MethodGet, "http://"+survivors[0].api+"/wallcrawler/v1/sessions/"+x.sess.ID, key, "")
		if code != http.StatusOK || decodeSession(t, "get", body).Status != "RUNNING" {
			t.Errorf("%s's session %s after %s died: %d %s, want RUNNING", x.node.name, x.sess.ID, victim.name, code, body)
		}
	}
	// Each of them was ended by exactly one survivor.
	ended := func() float64 {
		return metric(t, survivors[0].api, "quarry_wallcrawler_orphaned_sessions_ended_total") +
			metric(t, survivors[1].api, "quarry_wallcrawler_orphaned_sessions_ended_total")
	}
	waitForLong(t, 10*time.Second, "the survivors' counters", func() bool { return ended() >= float64(len(lost)) })
	if n := ended(); n != float64(len(lost)) {
		t.Errorf("the survivors ended %v sessions of %s, want exactly %d", n, victim.name, len(lost))
	}

	// Their slots are free: exactly as many new sessions fit, through
	// the survivors, and then the project is full again.
	var fresh []created
	for i := range lost {
		s := survivors[i%len(survivors)]
		code, body, err := postSession(s.api, key, `{}`)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("create %d of %d in the freed slots through %s: %d %s %v", i+1, len(lost), s.name, code, body, err)
		}
		fresh = append(fresh, created{s, decodeSession(t, "create", body)})
	}
	for _, s := range survivors {
		if code, body, err := postSession(s.api, key, `{}`); err != nil || code != http.StatusTooManyRequests {
			t.Errorf("create through %s with all %d slots taken: %d %s %v, want 429", s.name, k, code, body, err)
		}
	}
	for _, x := range append(kept, fresh...) {
		if code, body := wcRequest(t, http.MethodPost, "http://"+x.node.api+"/wallcrawler/v1/sessions/"+x.sess.ID, key, `{"status":"REQUEST_RELEASE"}`); code != http.StatusOK {
			t.Errorf("release %s: %d %s", x.sess.ID, code, body)
		}
	}
	t.Logf("total %s", time.Since(total).Round(time.Millisecond))
}

// TestClusterWallcrawlerPartitionedNode cuts node A (in-process) off the
// shared store while its session runs: B, which still reaches the store,
// takes A for dead after the lease and ends the session (ERROR, slot
// freed). When A reaches the store again, it finds its lease taken over
// (having killed the session's browser once a whole lease passed
// without a renewal), and its lease is back.
func TestClusterWallcrawlerPartitionedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two quarry nodes and Chromium; skipped in -short mode")
	}
	t.Parallel()
	testenv.Chromium(t)
	d := startSharedDDB(t, "", "")
	front := newSwitchProxy(t, d.addr)
	lease := []string{"--wallcrawler-lease", clusterLease.String(), "--wallcrawler-lease-renew", "1s"}
	a := startNode(t, &ddbProc{addr: front.addr}, "node-a", lease...)
	b := startNode(t, d, "node-b", lease...)
	clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "part", "--id", "project_part", "--concurrency", "1")
	key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_part")
	code, body := wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/sessions", key, `{"keepAlive":true}`)
	if code != http.StatusCreated {
		t.Fatalf("create on A: %d %s", code, body)
	}
	sess := decodeSession(t, "create", body)

	// The node registry lives in the sessions table: a tenant cannot read
	// it or end it as a session, nor open it as a CDP target.
	for _, m := range []struct{ method, body string }{{http.MethodGet, ""}, {http.MethodPost, `{"status":"REQUEST_RELEASE"}`}} {
		code, body := wcRequest(t, m.method, "http://"+b.api+"/wallcrawler/v1/sessions/wallcrawler%23nodes", key, m.body)
		if code != http.StatusNotFound || strings.Contains(string(body), "node-a") || strings.Contains(string(body), "leaseMs") {
			t.Errorf("%s the node registry as a session: %d %s, want 404 without its content", m.method, code, body)
		}
	}
	signingKey := sess.ConnectURL[strings.Index(sess.ConnectURL, "signingKey=")+len("signingKey="):]
	if _, resp, err := websocket.Dial(context.Background(), "ws://"+b.api+"/wallcrawler/cdp/wallcrawler%23nodes?signingKey="+signingKey, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("CDP to the node registry with another session's signingKey: %v %v, want 401", err, resp)
	}
	if code, body := wcRequest(t, http.MethodGet, "http://"+b.api+"/wallcrawler/v1/sessions", key, ""); code != http.StatusOK || strings.Contains(string(body), "wallcrawler#nodes") {
		t.Errorf("list sessions: %d %s, want 200 without the node registry", code, body)
	}

	cut := time.Now()
	front.silence()
	waitForLong(t, 10*clusterLease+30*time.Second, "B to end the cut-off node's session", func() bool {
		code, body := wcRequest(t, http.MethodGet, "http://"+b.api+"/wallcrawler/v1/sessions/"+sess.ID, key, "")
		return code == http.StatusOK && decodeSession(t, "get", body).Status == "ERROR"
	})
	t.Logf("session ERROR %s after A was cut off (lease %s)", time.Since(cut).Round(time.Millisecond), clusterLease)
	// A has not renewed its lease for a whole lease: it can no longer
	// prove it owns the session, and has killed its browser.
	waitForLong(t, 10*clusterLease+30*time.Second, "A to kill the browser of the session it cannot prove it owns", func() bool {
		return metric(t, a.api, "quarry_wallcrawler_live_sessions") == 0
	})
	// The slot is free: B starts a session in the project (concurrency 1).
	code, body = wcRequest(t, http.MethodPost, "http://"+b.api+"/wallcrawler/v1/sessions", key, `{}`)
	if code != http.StatusCreated {
		t.Fatalf("create on B after A's session ended: %d %s", code, body)
	}
	other := decodeSession(t, "create on B", body)

	front.silent.Store(false) // A reaches the store again
	waitForLong(t, 10*clusterLease+30*time.Second, "A to log that its lease was taken over", func() bool {
		return strings.Contains(a.logs.String(), "lease was taken over")
	})
	if !strings.Contains(a.logs.String(), "lease was taken over") {
		t.Error("A did not log that its lease was taken over")
	}
	// A works again: the session on B is reached through it.
	viaA := strings.Replace(other.ConnectURL, b.api, a.api, 1)
	c := dialCDP(t, viaA)
	s, _ := c.attachPage()
	if got := c.eval(s, "1 + 1"); got != "2" {
		t.Errorf("evaluate through A after its return: %q", got)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	if code, body := wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/sessions/"+other.ID, key, `{"status":"REQUEST_RELEASE"}`); code != http.StatusOK {
		t.Errorf("release through A: %d %s", code, body)
	}
}

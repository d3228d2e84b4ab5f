package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/coder/websocket"
)

// Several `quarry serve` processes (run in-process, each with its own
// data directory and listeners) on one shared DynamoDB endpoint: a
// separate `quarry ddb serve` that demands signed requests.

const (
	clusterKeyID  = "AKIDCLUSTER"
	clusterSecret = "cluster-secret-key"
	clusterWCKey  = "shared-wallcrawler-secret-0123456789"
)

// testAWSEnv is the AWS environment of every test, set once by TestMain:
// the nodes run in-process (and the quarry processes, which inherit it)
// read the DynamoDB and S3 credentials through the AWS SDK's default
// chain, which reads the process's environment. One environment for all
// (the shared stores demand clusterKeyID's signature, the S3 gateways are
// given the same keys) lets the tests run in parallel, which t.Setenv
// forbids; and no key or profile of the machine's user reaches them.
var testAWSEnv = map[string]string{
	"AWS_ACCESS_KEY_ID":           clusterKeyID,
	"AWS_SECRET_ACCESS_KEY":       clusterSecret,
	"AWS_REGION":                  "us-east-1",
	"AWS_EC2_METADATA_DISABLED":   "true",
	"AWS_CONFIG_FILE":             os.DevNull,
	"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
}

// ddbProc is a `quarry ddb serve` run in-process.
type ddbProc struct {
	addr, dir, creds string
	logs             *syncBuffer
	cancel           context.CancelFunc
	done             chan int
}

// startSharedDDB runs `quarry ddb serve --credentials` on addr over dir
// (both fresh when empty); it demands the signature of clusterKeyID, the
// key of every test's AWS environment (testAWSEnv).
func startSharedDDB(t *testing.T, addr, dir string, extra ...string) *ddbProc {
	t.Helper()
	if addr == "" {
		addr = freeAddr(t)
	}
	if dir == "" {
		dir = t.TempDir()
	}
	creds := filepath.Join(dir, "..", filepath.Base(dir)+".credentials")
	if err := os.WriteFile(creds, []byte(clusterKeyID+" "+clusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &ddbProc{addr: addr, dir: dir, creds: creds, logs: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	args := append([]string{"ddb", "serve", "--listen", addr, "--data-dir", dir, "--credentials", creds, "--ddb-sync=false"}, extra...)
	go func() { d.done <- run(ctx, args, noEnv, d.logs, d.logs) }()
	t.Cleanup(d.stop)
	waitFor(t, "ddb serve listening", func() bool { return strings.Contains(d.logs.String(), "listening on "+addr) })
	return d
}

// stop ends the store process (idempotent).
func (d *ddbProc) stop() {
	d.cancel()
	select {
	case <-d.done:
		d.done <- 0 // for the next stop
	case <-time.After(30 * time.Second):
	}
}

// node is a `quarry serve` run in-process on the shared store.
type node struct {
	name, api string
	logs      *syncBuffer
	cancel    context.CancelFunc
	done      chan int
}

// startNode runs `quarry serve` against the shared store and waits until
// its API answers /healthz (any status: a node may report a failing
// system).
func startNode(t *testing.T, d *ddbProc, name string, extra ...string) *node {
	t.Helper()
	n := &node{name: name, api: freeAddr(t), logs: &syncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	args := append([]string{"serve", "--listen", n.api, "--ddb-listen", freeAddr(t), "--data-dir", t.TempDir(),
		"--dynamodb-endpoint", "http://" + d.addr, "--wallcrawler-secret", clusterWCKey, "--node-id", name}, extra...)
	go func() { n.done <- run(ctx, args, noEnv, n.logs, n.logs) }()
	t.Cleanup(func() {
		n.cancel()
		select {
		case <-n.done:
		case <-time.After(90 * time.Second):
			t.Errorf("node %s did not stop within 90s", name)
		}
		if t.Failed() {
			t.Logf("node %s logs:\n%s", name, n.logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case code := <-n.done:
			n.done <- code
			t.Fatalf("node %s exited %d during start:\n%s", name, code, n.logs.String())
		default:
		}
		resp, err := http.Get("http://" + n.api + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not serving within 60s:\n%s", name, n.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return n
}

// clusterCLI runs an administration command against the shared store.
func clusterCLI(t *testing.T, d *ddbProc, args ...string) string {
	t.Helper()
	var out, errs syncBuffer
	args = append(args, "--dynamodb-endpoint", "http://"+d.addr, "--data-dir", t.TempDir())
	if code := run(context.Background(), args, noEnv, &out, &errs); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs.String())
	}
	return strings.TrimSpace(out.String())
}

// metric reads one unlabelled gauge of a node's /metrics.
func metric(t *testing.T, api, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	t.Fatalf("%s: no %s in /metrics", api, name)
	return 0
}

// TestClusterCDPThroughAnyNode creates a session on node A and drives its
// browser through node B: B verifies the signingKey, forwards to A with a
// node-to-node token, and A still filters the commands and counts the
// bytes. A forged node token is refused, and a release sent to B closes
// the browser on A.
func TestClusterCDPThroughAnyNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two quarry nodes and Chromium; skipped in -short mode")
	}
	t.Parallel()
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no chromium (make test installs it)")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>fixture</title><body>FIXTURE %s</body>", r.URL.Path)
	}))
	defer site.Close()
	d := startSharedDDB(t, "", "")
	allow := "--allow-networks=" + site.Listener.Addr().String()
	a := startNode(t, d, "node-a", allow)
	b := startNode(t, d, "node-b", allow)

	clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "cluster", "--id", "project_cluster", "--concurrency", "2")
	key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_cluster")

	code, body := wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/sessions", key, `{}`)
	if code != http.StatusCreated {
		t.Fatalf("create session on A: %d %s", code, body)
	}
	sess := decodeSession(t, "create", body)
	if !strings.Contains(sess.ConnectURL, a.api) {
		t.Fatalf("connectUrl %q does not point at A (%s)", sess.ConnectURL, a.api)
	}
	viaB := strings.Replace(sess.ConnectURL, a.api, b.api, 1)
	if metric(t, a.api, "quarry_wallcrawler_live_sessions") != 1 || metric(t, b.api, "quarry_wallcrawler_live_sessions") != 0 {
		t.Fatal("the browser should run on A only")
	}

	// Forged node-to-node credentials are refused by whichever node gets
	// them: garbage, and the tenant's own signingKey (signed with the
	// shared secret, not the derived node key) in the node header.
	signingKey := viaB[strings.Index(viaB, "signingKey=")+len("signingKey="):]
	for _, forged := range []string{"forged", signingKey} {
		for _, target := range []string{viaB, sess.ConnectURL} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPHeader: http.Header{"X-Quarry-Node-Token": {forged}}})
			cancel()
			if err == nil {
				conn.CloseNow()
				t.Fatalf("a forged node token (%.12s…) was accepted at %s", forged, target)
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("forged node token at %s: %v (response %v), want 401", target, err, resp)
			}
		}
	}
	// A bad signingKey is refused by B itself.
	if _, resp, err := websocket.Dial(context.Background(), strings.Replace(viaB, "signingKey=", "signingKey=x", 1), nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad signingKey through B: %v %v, want 401", err, resp)
	}

	// Raw CDP through B.
	c := dialCDP(t, viaB)
	s, pageID := c.attachPage()
	if got := c.navigate(s, site.URL+"/through-b"); !strings.Contains(got, "FIXTURE /through-b") {
		t.Fatalf("navigation through B: %q", got)
	}
	if got := c.eval(s, "1 + 41"); got != "42" {
		t.Errorf("evaluate through B: %q", got)
	}
	// A's filter still applies to what comes through B.
	if _, err := c.call(s, "Page.navigate", map[string]any{"url": "file:///etc/passwd"}); err == nil || !strings.Contains(err.Error(), "file") {
		t.Errorf("file: navigation through B: %v, want a refusal naming file:", err)
	}
	if !strings.Contains(a.logs.String(), "cdp: filtered") {
		t.Error("A did not log the filtered command")
	}
	if strings.Contains(b.logs.String(), "cdp: filtered") {
		t.Error("B filtered the command itself: it should relay to A, which filters")
	}
	// The page endpoint (DevTools) is forwarded too.
	pc := dialCDP(t, strings.Replace(viaB, "/cdp/"+sess.ID, "/cdp/"+sess.ID+"/page/"+pageID, 1))
	if got := pc.eval("", "location.pathname"); got != "/through-b" {
		t.Errorf("page endpoint through B: %q", got)
	}
	pc.conn.Close(websocket.StatusNormalClosure, "")
	c.conn.Close(websocket.StatusNormalClosure, "")

	// A counted the bytes (at the end of the connection).
	var proxyBytes int64
	waitForLong(t, 20*time.Second, "proxyBytes counted by A", func() bool {
		_, body := wcRequest(t, http.MethodGet, "http://"+b.api+"/wallcrawler/v1/sessions/"+sess.ID, key, "")
		var x struct {
			ProxyBytes int64 `json:"proxyBytes"`
		}
		_ = json.Unmarshal(body, &x)
		proxyBytes = x.ProxyBytes
		return proxyBytes > 0
	})
	t.Logf("proxyBytes %d", proxyBytes)

	// A release sent to B ends the browser on A.
	code, body = wcRequest(t, http.MethodPost, "http://"+b.api+"/wallcrawler/v1/sessions/"+sess.ID, key, `{"status":"REQUEST_RELEASE"}`)
	if code != http.StatusOK {
		t.Fatalf("release through B: %d %s", code, body)
	}
	waitForLong(t, 20*time.Second, "A closes the released browser", func() bool {
		return metric(t, a.api, "quarry_wallcrawler_live_sessions") == 0
	})
	// And the connectUrl no longer opens anything, through either node.
	for _, target := range []string{viaB, sess.ConnectURL} {
		if _, resp, err := websocket.Dial(context.Background(), target, nil); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("connect to a released session at %s: %v %v, want 404", target, err, resp)
		}
	}
}

// waitForLong is waitFor with a chosen bound.
func waitForLong(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestShutdownBoundedWithoutStore stops a node while a session runs and
// its DynamoDB endpoint is gone: it must return within --shutdown-timeout
// plus a margin although its final writes cannot land, and its browser
// must still be closed. "refused": the store process ended (connections
// refused); "silent": the endpoint accepts connections and never answers
// (a blackholed network), which only deadlines can cut short.
func TestShutdownBoundedWithoutStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts quarry and Chromium; skipped in -short mode")
	}
	t.Parallel()
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no chromium (make test installs it)")
	}
	for _, mode := range []string{"refused", "silent"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			d := startSharedDDB(t, "", "")
			front := newSwitchProxy(t, d.addr)
			const shutdownTimeout = 3 * time.Second
			n := startNode(t, &ddbProc{addr: front.addr}, "node-a", "--shutdown-timeout", shutdownTimeout.String())
			clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "s", "--id", "project_s")
			key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_s")
			code, body := wcRequest(t, http.MethodPost, "http://"+n.api+"/wallcrawler/v1/sessions", key, `{"keepAlive":true}`)
			if code != http.StatusCreated {
				t.Fatalf("create session: %d %s", code, body)
			}
			if mode == "refused" {
				d.stop()
				front.close()
			} else {
				front.silence()
			}
			start := time.Now()
			n.cancel()
			select {
			case code := <-n.done:
				n.done <- code
				t.Logf("node stopped %s after its context ended (exit %d)", time.Since(start).Round(time.Millisecond), code)
			case <-time.After(shutdownTimeout + 10*time.Second):
				t.Fatalf("node still running %s after its context ended, with its store gone:\n%s", shutdownTimeout+10*time.Second, n.logs.String())
			}
			if !strings.Contains(n.logs.String(), "browser closed") {
				t.Errorf("the session's browser was not closed:\n%s", n.logs.String())
			}
		})
	}
}

// switchProxy forwards TCP connections to a backend until silenced (then
// it accepts and holds every connection without a byte either way) or
// closed (then connections are refused).
type switchProxy struct {
	addr   string
	ln     net.Listener
	silent atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newSwitchProxy(t *testing.T, backend string) *switchProxy {
	t.Helper()
	return newSwitchProxyOn(t, "127.0.0.1:0", backend)
}

// newSwitchProxyOn is newSwitchProxy listening on addr (a closed proxy's
// address, to bring it back).
func newSwitchProxyOn(t *testing.T, addr, backend string) *switchProxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{addr: ln.Addr().String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			if p.silent.Load() {
				continue // held open, never answered
			}
			go func() {
				b, err := net.Dial("tcp", backend)
				if err != nil {
					c.Close()
					return
				}
				p.mu.Lock()
				p.conns = append(p.conns, b)
				p.mu.Unlock()
				go func() { p.copy(b, c) }()
				p.copy(c, b)
			}()
		}
	}()
	t.Cleanup(p.close)
	return p
}

// copy relays src to dst while the proxy is not silenced.
func (p *switchProxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.silent.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// silence stops relaying: open and new connections get no answer.
func (p *switchProxy) silence() { p.silent.Store(true) }

// close refuses new connections and drops the open ones.
func (p *switchProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestServeOnAlternatorEmulation starts a node on `quarry ddb serve
// --emulate alternator`: Wallcrawler starts (warning that point-in-time
// recovery is missing) and works with delayed stream records, DataShelf
// starts, and Checks and EECAR, which write with transactions, are not
// started, with a message naming the feature and the engine, in the log,
// in /healthz and in their APIs' answers.
func TestServeOnAlternatorEmulation(t *testing.T) {
	t.Parallel()
	d := startSharedDDB(t, "", "", "--emulate", "alternator", "--emulate-stream-delay", "1s")
	// The emulation refuses what Alternator refuses, the way it does.
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + d.addr),
		Credentials: credentials.NewStaticCredentialsProvider(clusterKeyID, clusterSecret, "")})
	_, err := c.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}}},
	}})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "UnknownOperationException" || api.ErrorMessage() != "Unsupported operation TransactWriteItems" {
		t.Fatalf("TransactWriteItems on the emulation: %v, want UnknownOperationException \"Unsupported operation TransactWriteItems\"", err)
	}

	n := startNode(t, d, "node-a")
	resp, err := http.Get("http://" + n.api + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Systems map[string]struct {
			Status   string   `json:"status"`
			Reason   string   `json:"reason"`
			Warnings []string `json:"warnings"`
		} `json:"systems"`
		DynamoDB map[string]any `json:"dynamodb"`
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(body, &health); err != nil {
		t.Fatalf("/healthz: %v: %s", err, body)
	}
	t.Logf("/healthz: %s", body)
	for _, name := range []string{"wallcrawler", "datashelf"} {
		if health.Systems[name].Status != "running" {
			t.Errorf("%s: %+v, want running", name, health.Systems[name])
		}
	}
	if w := strings.Join(health.Systems["wallcrawler"].Warnings, " "); !strings.Contains(w, "point-in-time recovery") || !strings.Contains(w, "Alternator") {
		t.Errorf("wallcrawler warnings %q: want point-in-time recovery named, and the engine", w)
	}
	for _, name := range []string{"checks", "eecar"} {
		s := health.Systems[name]
		if s.Status != "disabled" || !strings.Contains(s.Reason, "transactions (TransactWriteItems)") || !strings.Contains(s.Reason, "Alternator") {
			t.Errorf("%s: %+v, want disabled naming transactions and the engine", name, s)
		}
		if !strings.Contains(n.logs.String(), s.Reason) {
			t.Errorf("%s: the reason is not in the log", name)
		}
	}
	if health.DynamoDB["transactions"] != false || health.DynamoDB["streams"] != true || health.DynamoDB["pointInTimeRecovery"] != false {
		t.Errorf("dynamodb capabilities: %v", health.DynamoDB)
	}
	code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/checks/checks", "", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "does not support transactions") {
		t.Errorf("/checks on a node without Checks: %d %s", code, body)
	}
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Errorf("DataShelf: %d %s", code, body)
	}

	// Wallcrawler works although its stream lags.
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Log("no chromium: session creation not tried")
		return
	}
	clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "alt", "--id", "project_alt")
	key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_alt")
	start := time.Now()
	code, body = wcRequest(t, http.MethodPost, "http://"+n.api+"/wallcrawler/v1/sessions", key, `{}`)
	if code != http.StatusCreated {
		t.Fatalf("create session on the emulation: %d %s", code, body)
	}
	t.Logf("session RUNNING after %s", time.Since(start).Round(time.Millisecond))
	sess := decodeSession(t, "create", body)
	if code, body := wcRequest(t, http.MethodPost, "http://"+n.api+"/wallcrawler/v1/sessions/"+sess.ID, key, `{"status":"REQUEST_RELEASE"}`); code != http.StatusOK {
		t.Errorf("release: %d %s", code, body)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler"
)

// cdpClient is a raw Chrome DevTools Protocol client over one WebSocket:
// what a hostile tenant holds once it has a session's connectUrl.
type cdpClient struct {
	t      *testing.T
	conn   *websocket.Conn
	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan cdpMessage
	events  chan cdpMessage
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func dialCDP(t *testing.T, url string) *cdpClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	conn.SetReadLimit(64 << 20)
	c := &cdpClient{t: t, conn: conn, pending: map[int64]chan cdpMessage{}, events: make(chan cdpMessage, 1024)}
	go func() {
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			var m cdpMessage
			if json.Unmarshal(data, &m) != nil {
				continue
			}
			if m.ID != 0 {
				c.mu.Lock()
				ch := c.pending[m.ID]
				delete(c.pending, m.ID)
				c.mu.Unlock()
				if ch != nil {
					ch <- m
				}
				continue
			}
			select {
			case c.events <- m:
			default:
			}
		}
	}()
	t.Cleanup(func() { conn.CloseNow() })
	return c
}

// call sends one command and waits for its answer.
func (c *cdpClient) call(sessionID, method string, params any) (json.RawMessage, error) {
	c.t.Helper()
	id := c.nextID.Add(1)
	ch := make(chan cdpMessage, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	data, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer", method)
	}
}

// must is call that fails the test on an error.
func (c *cdpClient) must(sessionID, method string, params any) json.RawMessage {
	c.t.Helper()
	res, err := c.call(sessionID, method, params)
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

// attachPage attaches (flattened) to the browser's page target, enables
// its Page and Runtime domains and returns the CDP session id and the
// page's target id.
func (c *cdpClient) attachPage() (sessionID, targetID string) {
	c.t.Helper()
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	_ = json.Unmarshal(c.must("", "Target.getTargets", map[string]any{}), &targets)
	var pageID string
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			pageID = ti.TargetID
		}
	}
	if pageID == "" {
		c.t.Fatalf("no page target: %+v", targets)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(c.must("", "Target.attachToTarget", map[string]any{"targetId": pageID, "flatten": true}), &att)
	c.must(att.SessionID, "Page.enable", map[string]any{})
	c.must(att.SessionID, "Runtime.enable", map[string]any{})
	return att.SessionID, pageID
}

// eval evaluates expr in the page (awaiting a promise) and returns its
// value rendered as a string.
func (c *cdpClient) eval(sessionID, expr string) string {
	c.t.Helper()
	res := c.must(sessionID, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true, "timeout": 20000})
	var out struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	_ = json.Unmarshal(res, &out)
	if out.ExceptionDetails != nil {
		return "exception: " + out.ExceptionDetails.Text
	}
	return fmt.Sprint(out.Result.Value)
}

// navigate loads url in the page and waits for its load event (or an
// error page), returning the body text.
func (c *cdpClient) navigate(sessionID, url string) string {
	c.t.Helper()
	// Drain old events so a stale load event does not count.
	for len(c.events) > 0 {
		<-c.events
	}
	res := c.must(sessionID, "Page.navigate", map[string]any{"url": url})
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	_ = json.Unmarshal(res, &nav)
	if nav.ErrorText == "" {
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case m := <-c.events:
				if m.Method == "Page.loadEventFired" && m.SessionID == sessionID {
					break wait
				}
			case <-deadline:
				c.t.Fatalf("navigate %s: no load event", url)
			}
		}
	}
	return nav.ErrorText + "|" + c.eval(sessionID, "document.body ? document.body.innerText : ''")
}

// hitCounter is a loopback HTTP server that must never be reached.
type hitCounter struct {
	*httptest.Server
	hits atomic.Int64
}

func newHitCounter(t *testing.T, addr string) *hitCounter {
	t.Helper()
	h := &hitCounter{}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprint(w, "CANARY-SECRET")
	}))
	h.Listener.Close()
	h.Listener = ln
	h.Start()
	t.Cleanup(h.Close)
	return h
}

// TestBrowserEgressConfinement plays a tenant that owns its browser through
// the raw CDP connection of its session and tries to reach what the network
// policy refuses: a loopback service on a port that is not allowed, and
// quarry's own API and DynamoDB endpoint, which sit inside an allowed
// network. Navigations, fetch, WebSocket, a Fetch-rewritten request and
// WebRTC must all fail, while the allowed site and another server of the
// allowed network keep working.
func TestBrowserEgressConfinement(t *testing.T) {
	t.Parallel()
	testenv.Chromium(t)
	// The allowed site, by address:port.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>allowed site</title><body>ALLOWED %s</body>", r.URL.Path)
	}))
	defer site.Close()
	// A canary on loopback, on a port the policy does not allow.
	canary := newHitCounter(t, "127.0.0.1:0")
	// quarry listens inside an allowed network (127.0.0.2/32), beside a
	// neighbour that is allowed and reachable, so only the reservation of
	// quarry's own listeners can refuse them.
	neighbour := newHitCounter(t, "127.0.0.2:0")
	api, store := freeAddrOn(t, "127.0.0.2"), freeAddrOn(t, "127.0.0.2")
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var udpPackets atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			udpPackets.Add(1)
		}
	}()

	dir := t.TempDir()
	env := func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", dir,
			"--allow-networks", site.Listener.Addr().String() + ",127.0.0.2/32"}, env, &logs, &logs)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("quarry serve did not stop within 60s")
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
		args = append(args, "--data-dir", dir, "--ddb-listen", store)
		if code := run(context.Background(), args, env, &out, &errs); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs.String())
		}
		return strings.TrimSpace(out.String())
	}
	cli("wallcrawler", "project", "create", "--name", "attacker", "--id", "project_attacker")
	key := cli("wallcrawler", "key", "create", "--project", "project_attacker")
	req, _ := http.NewRequest("POST", "http://"+api+"/wallcrawler/v1/sessions", strings.NewReader(`{}`))
	req.Header.Set("X-BB-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sess struct {
		ID         string `json:"id"`
		ConnectURL string `json:"connectUrl"`
	}
	_ = json.NewDecoder(res.Body).Decode(&sess)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || sess.ConnectURL == "" {
		t.Fatalf("create session: %d %+v", res.StatusCode, sess)
	}

	c := dialCDP(t, sess.ConnectURL)
	s, _ := c.attachPage()

	if got := c.navigate(s, site.URL+"/start"); !strings.Contains(got, "ALLOWED /start") {
		t.Fatalf("the allowed site does not load: %q", got)
	}
	canaryURL := canary.URL + "/secret"
	storeURL := "http://" + store + "/"
	checks := []struct {
		name, got, mustNot string
	}{
		{"navigate to a loopback port that is not allowed", c.navigate(s, canaryURL), "CANARY-SECRET"},
		{"navigate to quarry's API", c.navigate(s, "http://"+api+"/healthz"), `"status"`},
		{"navigate to quarry's DynamoDB endpoint", c.navigate(s, storeURL), "__type"},
		{"navigate to localhost by name", c.navigate(s, strings.Replace(canaryURL, "127.0.0.1", "localhost", 1)), "CANARY-SECRET"},
	}
	c.navigate(s, site.URL+"/attacks")
	checks = append(checks, []struct{ name, got, mustNot string }{
		{"fetch from a page", c.eval(s, fmt.Sprintf(`fetch(%q).then(r => r.text()).catch(e => 'failed: ' + e)`, canaryURL)), "CANARY-SECRET"},
		{"fetch of quarry's DynamoDB endpoint", c.eval(s, fmt.Sprintf(`fetch(%q, {method: 'POST', headers: {'X-Amz-Target': 'DynamoDB_20120810.ListTables', 'Content-Type': 'application/x-amz-json-1.0'}, body: '{}'}).then(r => r.text()).catch(e => 'failed: ' + e)`, storeURL)), "TableNames"},
		{"WebSocket to loopback", c.eval(s, fmt.Sprintf(`new Promise(r => { const w = new WebSocket(%q); w.onopen = () => r('open'); w.onerror = () => r('refused'); setTimeout(() => r('timeout'), 10000); })`, "ws://"+canary.Listener.Addr().String()+"/")), "open"},
	}...)
	// The neighbour in the allowed network is reachable (so the refusals
	// above are the reservation's, not the network's).
	if got := c.eval(s, fmt.Sprintf(`fetch(%q).then(r => r.text()).catch(e => 'failed: ' + e)`, neighbour.URL+"/")); got != "CANARY-SECRET" {
		t.Errorf("fetch of an allowed neighbour: %q", got)
	}
	neighbourHits := neighbour.hits.Load()

	// A navigation to the allowed site, rewritten in flight with the Fetch
	// domain into a DynamoDB Scan of Wallcrawler's sessions (every
	// project's signingKey) and then into the canary.
	c.must(s, "Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": "*rewrite*"}}})
	for len(c.events) > 0 {
		<-c.events
	}
	for _, target := range []string{storeURL, canaryURL} {
		navDone := make(chan string, 1)
		go func() { navDone <- c.navigate(s, site.URL+"/rewrite") }()
		var paused struct {
			RequestID string `json:"requestId"`
		}
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case m := <-c.events:
				if m.Method == "Fetch.requestPaused" {
					_ = json.Unmarshal(m.Params, &paused)
					break wait
				}
				c.events <- m // leave it for navigate
				time.Sleep(5 * time.Millisecond)
			case <-deadline:
				t.Fatal("no Fetch.requestPaused")
			}
		}
		_, err := c.call(s, "Fetch.continueRequest", map[string]any{
			"requestId": paused.RequestID, "url": target, "method": "POST",
			"postData": base64.StdEncoding.EncodeToString([]byte(`{"TableName":"wallcrawler-sessions"}`)),
			"headers":  []map[string]string{{"name": "X-Amz-Target", "value": "DynamoDB_20120810.Scan"}, {"name": "Content-Type", "value": "application/x-amz-json-1.0"}},
		})
		got := <-navDone
		checks = append(checks, struct{ name, got, mustNot string }{"Fetch.continueRequest rewritten to " + target + fmt.Sprintf(" (continue: %v)", err), got, "signingKey"})
		checks = append(checks, struct{ name, got, mustNot string }{"Fetch.continueRequest rewritten to " + target, got, "CANARY-SECRET"})
	}
	c.must(s, "Fetch.disable", map[string]any{})

	// WebRTC: a STUN server on loopback would receive the browser's UDP
	// directly, bypassing the proxy; only proxied transports are allowed.
	rtc := c.eval(s, fmt.Sprintf(`new Promise(async r => {
		const pc = new RTCPeerConnection({iceServers: [{urls: 'stun:%s'}]});
		const cands = [];
		pc.onicecandidate = e => { if (e.candidate) cands.push(e.candidate.candidate); };
		pc.createDataChannel('x');
		await pc.setLocalDescription(await pc.createOffer());
		setTimeout(() => r(JSON.stringify(cands)), 3000);
	})`, udp.LocalAddr().String()))
	if udpPackets.Load() != 0 {
		t.Errorf("WebRTC sent %d UDP packets to a loopback STUN server (candidates %s)", udpPackets.Load(), rtc)
	}
	if strings.Contains(rtc, " udp ") {
		t.Errorf("WebRTC gathered UDP candidates: %s", rtc)
	}

	for _, ck := range checks {
		if strings.Contains(ck.got, ck.mustNot) {
			t.Errorf("%s: the tenant read %q: %q", ck.name, ck.mustNot, ck.got)
		}
	}
	if n := canary.hits.Load(); n != 0 {
		t.Errorf("the loopback canary was reached %d times", n)
	}
	if neighbourHits != 1 {
		t.Errorf("the allowed neighbour was reached %d times, want 1", neighbourHits)
	}
	// The refusals say why and name the flag.
	if got := c.navigate(s, canaryURL); !strings.Contains(got, "--allow-networks") {
		t.Errorf("a refused navigation does not name --allow-networks: %q", got)
	}
	if !bytes.Contains([]byte(logs.String()), []byte("egress: refused")) {
		t.Error("no refusal in the server log")
	}
	// And /metrics counts them.
	mres, err := http.Get("http://" + api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mres.Body)
	mres.Body.Close()
	var refused float64
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "quarry_egress_refused_total "); ok {
			fmt.Sscan(v, &refused)
		}
	}
	if refused < 5 {
		t.Errorf("quarry_egress_refused_total = %v after the attacks, want at least 5", refused)
	}

	// A process in the browser's network namespace (a browser taken over
	// past Chromium's sandbox) reaches none of quarry's listeners, nor
	// the loopback canary, without the proxy in between.
	if os.Geteuid() != 0 {
		return // no namespaces without the privilege; /healthz says so
	}
	root, err := wallcrawler.DefaultBrowserRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	pid := browserPID(t, root)
	for name, addr := range map[string]string{"API": api, "DynamoDB endpoint": store, "canary": canary.Listener.Addr().String()} {
		h, p, _ := net.SplitHostPort(addr)
		cmd := exec.Command("nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", pid), "--", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", h, p))
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("a process in the browser's namespace connected to quarry's %s %s", name, addr)
		} else if !strings.Contains(string(out), "unreachable") && !strings.Contains(string(out), "refused") {
			t.Errorf("nsenter to %s: %v: %s", addr, err, out)
		}
	}
}

// browserPID returns the pid of the main process of a browser working in
// the browser dir root.
func browserPID(t *testing.T, root string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		// The main process is the one started with the pipe switch;
		// its profile is inside the browser dir.
		if err == nil && bytes.Contains(cmdline, []byte("--remote-debugging-pipe")) && bytes.Contains(cmdline, []byte("--user-data-dir="+root+"/")) {
			return pid
		}
	}
	t.Fatalf("no browser runs in %s", root)
	return 0
}

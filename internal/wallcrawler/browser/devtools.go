package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// devtoolsHost is the host of every browser's DevTools URLs. The browsers
// have no DevTools TCP port: their URLs are reached only through the
// browser's HTTPClient, whose connections are socket pairs inside quarry
// (".invalid" never resolves, so a client that dials it any other way
// fails).
const devtoolsHost = "devtools.invalid"

// Limits of the DevTools endpoint.
const (
	// maxPipeMessage bounds one message from the browser (Chromium's own
	// WebSocket server allows 256 MiB).
	maxPipeMessage = 256 << 20
	// maxClientMessage bounds one message from a client.
	maxClientMessage = 64 << 20
	// maxClientBacklog bounds the bytes queued for one client that reads
	// slower than its browser writes; past it the client is disconnected
	// (status 1008), so that one slow reader holds neither memory nor the
	// other clients.
	maxClientBacklog = 256 << 20
	// clientWriteTimeout bounds one write to a client.
	clientWriteTimeout = 30 * time.Second
)

// devtools serves the Chrome DevTools Protocol of one browser started with
// --remote-debugging-pipe: Chromium reads commands from one pipe and
// writes replies and events to another, each message a JSON object ended
// by a NUL byte. devtools multiplexes any number of WebSocket clients
// over that one connection, each in sessions of its own:
//
//   - a client of /devtools/browser/<id> gets a session on the browser
//     target (Target.attachToBrowserTarget), which Chromium treats as a
//     connection of its own: its domains, its auto-attach, the browser
//     contexts it creates and disposes on detach;
//   - a client of /devtools/page/<targetId> gets a flat session on that
//     target (Target.attachToTarget).
//
// A client's messages without a sessionId go to its session; replies and
// events of that session reach it without one, as from Chromium's own
// WebSocket endpoint. The sessions a client attaches to (events
// Target.attachedToTarget, replies carrying a sessionId) are its own:
// another client's messages naming them are answered with an error and
// never reach the browser. The pipe's root session is quarry's own.
type devtools struct {
	id     string // the browser's id: its path is /devtools/browser/<id>
	log    *slog.Logger
	toPipe *os.File // Chromium's fd 3

	wmu sync.Mutex // serializes writes to toPipe

	mu       sync.Mutex
	nextID   int64
	calls    map[int64]chan pipeReply
	sessions map[string]*dtClient // CDP session id → the client it belongs to
	clients  map[*dtClient]struct{}
	closed   bool
	err      error // why the pipe closed

	done chan struct{} // closed when the pipe from Chromium ends
}

// pipeReply is the reply to a command of the root session.
type pipeReply struct {
	result json.RawMessage
	err    error
}

// newDevtools starts reading Chromium's replies from fromPipe (its fd 4).
func newDevtools(id string, toPipe, fromPipe *os.File, log *slog.Logger) *devtools {
	d := &devtools{
		id:       id,
		log:      log,
		toPipe:   toPipe,
		calls:    map[int64]chan pipeReply{},
		sessions: map[string]*dtClient{},
		clients:  map[*dtClient]struct{}{},
		done:     make(chan struct{}),
	}
	go d.read(fromPipe)
	return d
}

// browserPath returns the path of the browser target's endpoint.
func (d *devtools) browserPath() string { return "/devtools/browser/" + d.id }

// read routes every message from Chromium until the pipe ends.
func (d *devtools) read(from *os.File) {
	r := bufio.NewReaderSize(from, 64<<10)
	var err error
	for {
		var msg []byte
		if msg, err = readMessage(r); err != nil {
			break
		}
		d.route(msg)
	}
	_ = from.Close()
	if errors.Is(err, io.EOF) {
		err = errors.New("the browser closed its DevTools pipe")
	}
	d.shut(err)
}

// readMessage reads one NUL-terminated message.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice(0)
		if len(buf)+len(chunk) > maxPipeMessage {
			return nil, fmt.Errorf("a DevTools message over %d MiB", maxPipeMessage>>20)
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// shut fails the pending calls and disconnects every client.
func (d *devtools) shut(err error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed, d.err = true, err
	calls, clients := d.calls, d.clients
	d.calls, d.clients, d.sessions = nil, nil, nil
	d.mu.Unlock()
	for _, ch := range calls {
		ch <- pipeReply{err: err}
	}
	for c := range clients {
		c.end(websocket.StatusGoingAway, "browser closed")
	}
	close(d.done)
}

// Close ends the connection to the browser: pending calls fail and every
// client is disconnected. The browser exits when its pipe closes.
func (d *devtools) Close() error {
	err := d.toPipe.Close()
	d.shut(errors.New("DevTools connection closed"))
	return err
}

// write sends one message to Chromium.
func (d *devtools) write(msg []byte) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), 0)
	_, err := d.toPipe.Write(buf)
	return err
}

// call sends a command on the root session and waits for its reply.
func (d *devtools) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch, err := d.send(method, params)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("cdp %s: %w", method, ctx.Err())
	case <-d.done:
		return nil, fmt.Errorf("cdp %s: %w", method, d.closeErr())
	}
}

// send sends a command on the root session; its reply arrives on the
// returned channel.
func (d *devtools) send(method string, params any) (chan pipeReply, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, fmt.Errorf("cdp %s: %w", method, d.err)
	}
	d.nextID++
	id := d.nextID
	ch := make(chan pipeReply, 1)
	d.calls[id] = ch
	d.mu.Unlock()
	msg, err := json.Marshal(cdpRequest{ID: id, Method: method, Params: params})
	if err == nil {
		err = d.write(msg)
	}
	if err != nil {
		d.mu.Lock()
		if d.calls != nil {
			delete(d.calls, id)
		}
		d.mu.Unlock()
		return nil, fmt.Errorf("cdp %s: %w", method, err)
	}
	return ch, nil
}

// closeErr returns why the pipe closed.
func (d *devtools) closeErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	return errors.New("DevTools connection closed")
}

// pipeMessage is what route reads of a message from Chromium.
type pipeMessage struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"`
	Params struct {
		SessionID string `json:"sessionId"`
	} `json:"params"`
	Result struct {
		SessionID string `json:"sessionId"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// route delivers one message from Chromium: root-session replies to
// their call, session messages to the client owning the session.
func (d *devtools) route(msg []byte) {
	top, err := scanTop(msg)
	if err != nil {
		d.log.Warn("devtools: unreadable message from the browser", "err", err)
		return
	}
	session := top.sessionID()
	// Only the members routing needs are decoded: screenshots and
	// snapshots pass through untouched.
	var m pipeMessage
	if top.id.ok() {
		id, err := strconv.ParseInt(string(msg[top.id.start:top.id.end]), 10, 64)
		if err == nil {
			m.ID = &id
		}
	}
	if top.method.ok() {
		_ = json.Unmarshal(msg[top.method.start:top.method.end], &m.Method)
	}
	if session == "" {
		d.routeRoot(msg, top, m)
		return
	}
	d.mu.Lock()
	c := d.sessions[session]
	if c == nil {
		d.mu.Unlock()
		return // its client is gone
	}
	switch {
	case m.Method == "Target.attachedToTarget" && top.params.ok():
		_ = json.Unmarshal(msg[top.params.start:top.params.end], &m.Params)
		if m.Params.SessionID != "" {
			d.sessions[m.Params.SessionID] = c
		}
	case m.ID != nil && top.result.ok() && c.attaching(session, *m.ID):
		_ = json.Unmarshal(msg[top.result.start:top.result.end], &m.Result)
		if m.Result.SessionID != "" {
			d.sessions[m.Result.SessionID] = c
		}
	}
	if m.Method == "Target.detachedFromTarget" && top.params.ok() {
		_ = json.Unmarshal(msg[top.params.start:top.params.end], &m.Params)
		if m.Params.SessionID != "" && m.Params.SessionID != c.session {
			delete(d.sessions, m.Params.SessionID)
		}
	}
	d.mu.Unlock()
	if session == c.session {
		msg = top.without(msg)
	}
	c.queue(msg)
}

// routeRoot handles a message of the root session: a reply to a call, or
// the end of a client's own session.
func (d *devtools) routeRoot(msg []byte, top members, m pipeMessage) {
	if m.ID != nil {
		if top.errorMember.ok() {
			_ = json.Unmarshal(msg[top.errorMember.start:top.errorMember.end], &m.Error)
		}
		d.mu.Lock()
		ch := d.calls[*m.ID]
		delete(d.calls, *m.ID)
		d.mu.Unlock()
		if ch == nil {
			return
		}
		if m.Error != nil {
			ch <- pipeReply{err: fmt.Errorf("cdp error %d: %s", m.Error.Code, m.Error.Message)}
			return
		}
		var res json.RawMessage
		if top.result.ok() {
			res = append(res, msg[top.result.start:top.result.end]...)
		}
		ch <- pipeReply{result: res}
		return
	}
	if m.Method == "Target.detachedFromTarget" && top.params.ok() {
		_ = json.Unmarshal(msg[top.params.start:top.params.end], &m.Params)
		d.mu.Lock()
		c := d.sessions[m.Params.SessionID]
		d.mu.Unlock()
		if c != nil && c.session == m.Params.SessionID {
			// Its page closed, or the browser detached it.
			c.end(websocket.StatusNormalClosure, "target closed")
		}
	}
}

// ServeHTTP serves the browser's DevTools endpoints: the WebSocket
// endpoints of the browser and of its pages, /json/version and
// /json/list.
func (d *devtools) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	switch p := strings.TrimSuffix(r.URL.Path, "/"); {
	case p == "/json/version":
		v, err := d.call(ctx, "Browser.getVersion", nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var info struct {
			Product         string `json:"product"`
			ProtocolVersion string `json:"protocolVersion"`
			UserAgent       string `json:"userAgent"`
		}
		_ = json.Unmarshal(v, &info)
		writeJSON(w, map[string]string{
			"Browser": info.Product, "Protocol-Version": info.ProtocolVersion, "User-Agent": info.UserAgent,
			"webSocketDebuggerUrl": "ws://" + devtoolsHost + d.browserPath(),
		})
	case p == "/json/list" || p == "/json":
		v, err := d.call(ctx, "Target.getTargets", nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var res struct {
			TargetInfos []struct {
				TargetID string `json:"targetId"`
				Type     string `json:"type"`
				Title    string `json:"title"`
				URL      string `json:"url"`
			} `json:"targetInfos"`
		}
		_ = json.Unmarshal(v, &res)
		list := []map[string]string{}
		for _, t := range res.TargetInfos {
			list = append(list, map[string]string{"id": t.TargetID, "type": t.Type, "title": t.Title, "url": t.URL,
				"webSocketDebuggerUrl": "ws://" + devtoolsHost + "/devtools/page/" + t.TargetID})
		}
		writeJSON(w, list)
	case p == d.browserPath():
		d.serveClient(ctx, w, r, "Target.attachToBrowserTarget", nil)
	case strings.HasPrefix(p, "/devtools/page/") && validTarget(strings.TrimPrefix(p, "/devtools/page/")):
		d.serveClient(ctx, w, r, "Target.attachToTarget", map[string]any{"targetId": strings.TrimPrefix(p, "/devtools/page/"), "flatten": true})
	default:
		http.NotFound(w, r)
	}
}

// validTarget reports whether id looks like a DevTools target id.
func validTarget(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}

// writeJSON writes v as the JSON response.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(v)
}

// serveClient attaches a session for one WebSocket client (method and
// params are the root-session command that makes it) and relays until
// either side ends. A target that cannot be attached is answered 404
// before the upgrade.
func (d *devtools) serveClient(ctx context.Context, w http.ResponseWriter, r *http.Request, method string, params any) {
	res, err := d.call(ctx, method, params)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err == nil {
		err = json.Unmarshal(res, &att)
	}
	if err != nil || att.SessionID == "" {
		http.Error(w, fmt.Sprintf("No such target: %v", err), http.StatusNotFound)
		return
	}
	c := &dtClient{d: d, session: att.SessionID, wake: make(chan struct{}, 1), ended: make(chan struct{}), pending: map[attachKey]struct{}{}}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		http.Error(w, "browser closed", http.StatusBadGateway)
		return
	}
	d.sessions[c.session] = c
	d.clients[c] = struct{}{}
	d.mu.Unlock()
	defer d.detach(c)

	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(maxClientMessage)
	cctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	go func() {
		select {
		case <-c.ended:
		case <-cctx.Done():
		}
		cancel()
	}()
	go c.writeLoop(cctx, conn)
	for {
		typ, msg, err := conn.Read(cctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			_ = conn.Close(websocket.StatusUnsupportedData, "DevTools messages are JSON text")
			return
		}
		if err := c.forward(msg); err != nil {
			_ = conn.Close(websocket.StatusPolicyViolation, err.Error())
			return
		}
	}
}

// detach ends a client: its sessions are forgotten and its browser or
// page session is detached, which disposes of what Chromium ties to it.
func (d *devtools) detach(c *dtClient) {
	c.end(websocket.StatusNormalClosure, "")
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	delete(d.clients, c)
	for s, owner := range d.sessions {
		if owner == c {
			delete(d.sessions, s)
		}
	}
	d.mu.Unlock()
	if ch, err := d.send("Target.detachFromTarget", map[string]string{"sessionId": c.session}); err == nil {
		go func() {
			select {
			case <-ch:
			case <-d.done:
			}
		}()
	}
}

// attachKey names a command a client sent that may create a session.
type attachKey struct {
	session string
	id      int64
}

// dtClient is one WebSocket client of a devtools.
type dtClient struct {
	d       *devtools
	session string // its own session: messages without a sessionId go here

	mu      sync.Mutex
	out     [][]byte // messages waiting to be written to the client
	backlog int
	code    websocket.StatusCode // set once it ends
	reason  string
	pending map[attachKey]struct{} // attach commands awaiting their reply

	wake  chan struct{}
	ended chan struct{}
	once  sync.Once
}

// clientMessage is what forward reads of a client's message.
type clientMessage struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"`
}

// forward sends one message of the client to the browser, in the
// client's session unless it names one of the client's other sessions. A
// message naming a session that is not the client's is answered with
// Chromium's own error and goes no further.
func (c *dtClient) forward(msg []byte) error {
	top, err := scanTop(msg)
	if err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	var m clientMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return fmt.Errorf("not a DevTools command: %w", err)
	}
	session, err := top.sessionString()
	if err != nil {
		return err
	}
	if session == "" {
		// An empty sessionId would name quarry's own root session.
		session = c.session
		msg = withSession(top.without(msg), c.session)
	} else {
		c.d.mu.Lock()
		owner := c.d.sessions[session]
		c.d.mu.Unlock()
		if owner != c {
			reply, _ := json.Marshal(map[string]any{"id": m.ID, "sessionId": session,
				"error": map[string]any{"code": -32001, "message": "Session with given id not found."}})
			c.queue(reply)
			return nil
		}
	}
	if m.ID != nil && (m.Method == "Target.attachToTarget" || m.Method == "Target.attachToBrowserTarget") {
		c.mu.Lock()
		c.pending[attachKey{session, *m.ID}] = struct{}{}
		c.mu.Unlock()
	}
	if err := c.d.write(msg); err != nil {
		return fmt.Errorf("browser unreachable: %w", err)
	}
	return nil
}

// attaching reports, once, whether the reply id of session answers an
// attach command of c.
func (c *dtClient) attaching(session string, id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := attachKey{session, id}
	_, ok := c.pending[k]
	delete(c.pending, k)
	return ok
}

// queue adds a message for the client; a client whose backlog is full is
// disconnected.
func (c *dtClient) queue(msg []byte) {
	c.mu.Lock()
	if c.code != 0 {
		c.mu.Unlock()
		return
	}
	if c.backlog+len(msg) > maxClientBacklog {
		c.mu.Unlock()
		c.end(websocket.StatusPolicyViolation, "client too slow: DevTools backlog full")
		return
	}
	c.out = append(c.out, msg)
	c.backlog += len(msg)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// end marks the client ended with code and reason; its connection closes.
func (c *dtClient) end(code websocket.StatusCode, reason string) {
	c.once.Do(func() {
		c.mu.Lock()
		c.code, c.reason = code, reason
		c.out, c.backlog = nil, 0
		c.mu.Unlock()
		close(c.ended)
	})
}

// writeLoop writes the client's queue until the client ends.
func (c *dtClient) writeLoop(ctx context.Context, conn *websocket.Conn) {
	for {
		c.mu.Lock()
		batch := c.out
		c.out, c.backlog = nil, 0
		c.mu.Unlock()
		for _, msg := range batch {
			wctx, cancel := context.WithTimeout(ctx, clientWriteTimeout)
			err := conn.Write(wctx, websocket.MessageText, msg)
			cancel()
			if err != nil {
				c.end(websocket.StatusGoingAway, "write failed")
				_ = conn.CloseNow()
				return
			}
		}
		select {
		case <-c.wake:
		case <-c.ended:
			c.mu.Lock()
			code, reason := c.code, c.reason
			c.mu.Unlock()
			if code != websocket.StatusNormalClosure || reason != "" {
				_ = conn.Close(code, reason)
			}
			_ = conn.CloseNow()
			return
		case <-ctx.Done():
			return
		}
	}
}

// span is the byte range of a JSON value in a message; end 0 means
// absent.
type span struct{ start, end int }

// ok reports whether the member was present.
func (s span) ok() bool { return s.end > 0 }

// members are the top-level members of a DevTools message that routing
// reads: for each, the range of its value; for sessionId also the range
// of the whole member (key through value).
type members struct {
	id, method, params, result, errorMember span
	session, sessionMember                  span
	msg                                     []byte
}

// sessionID returns the message's top-level sessionId, "" without one
// or when it is not a string.
func (m members) sessionID() string {
	s, _ := m.sessionString()
	return s
}

// sessionString returns the message's top-level sessionId, "" without
// one, and an error when it is not a string.
func (m members) sessionString() (string, error) {
	if !m.session.ok() {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.msg[m.session.start:m.session.end], &s); err != nil {
		return "", errors.New("sessionId is not a string")
	}
	return s, nil
}

// without returns msg without its top-level sessionId member (and the
// comma that separated it).
func (m members) without(msg []byte) []byte {
	if !m.sessionMember.ok() {
		return msg
	}
	start, end := m.sessionMember.start, m.sessionMember.end
	if i := skipSpace(msg, end); i < len(msg) && msg[i] == ',' {
		end = i + 1
	} else {
		j := start - 1
		for j >= 0 && isSpace(msg[j]) {
			j--
		}
		if j >= 0 && msg[j] == ',' {
			start = j
		}
	}
	out := make([]byte, 0, len(msg)-(end-start))
	return append(append(out, msg[:start]...), msg[end:]...)
}

// withSession returns msg, a JSON object without a sessionId member,
// with one of value session.
func withSession(msg []byte, session string) []byte {
	v, _ := json.Marshal(session)
	i := bytes.IndexByte(msg, '{') + 1
	out := make([]byte, 0, len(msg)+len(v)+16)
	out = append(out, msg[:i]...)
	out = append(out, `"sessionId":`...)
	out = append(out, v...)
	if j := skipSpace(msg, i); j < len(msg) && msg[j] != '}' {
		out = append(out, ',')
	}
	return append(out, msg[i:]...)
}

// errScan is returned for a message that is not a JSON object.
var errScan = errors.New("malformed JSON object")

// scanTop finds the top-level members routing needs in msg, a JSON
// object, without decoding the rest.
func scanTop(msg []byte) (members, error) {
	m := members{msg: msg}
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return m, errScan
	}
	i = skipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return m, nil
	}
	for {
		if i >= len(msg) || msg[i] != '"' {
			return m, errScan
		}
		keyStart := i
		keyEnd, err := skipString(msg, i)
		if err != nil {
			return m, err
		}
		key := string(msg[keyStart+1 : keyEnd-1])
		if strings.IndexByte(key, '\\') >= 0 {
			// Chromium reads "session\u0049d" as sessionId too.
			if json.Unmarshal(msg[keyStart:keyEnd], &key) != nil {
				return m, errScan
			}
		}
		i = skipSpace(msg, keyEnd)
		if i >= len(msg) || msg[i] != ':' {
			return m, errScan
		}
		vStart := skipSpace(msg, i+1)
		vEnd, err := skipValue(msg, vStart)
		if err != nil {
			return m, err
		}
		v := span{vStart, vEnd}
		switch key {
		case "id":
			m.id = v
		case "method":
			m.method = v
		case "params":
			m.params = v
		case "result":
			m.result = v
		case "error":
			m.errorMember = v
		case "sessionId":
			if m.session.ok() {
				return m, errors.New("two sessionId members")
			}
			m.session, m.sessionMember = v, span{keyStart, vEnd}
		}
		i = skipSpace(msg, vEnd)
		if i >= len(msg) {
			return m, errScan
		}
		switch msg[i] {
		case ',':
			i = skipSpace(msg, i+1)
		case '}':
			if skipSpace(msg, i+1) != len(msg) {
				return m, errScan
			}
			return m, nil
		default:
			return m, errScan
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	i++
	for {
		j := bytes.IndexAny(b[i:], "\"\\")
		if j < 0 {
			return 0, errScan
		}
		i += j
		if b[i] == '"' {
			return i + 1, nil
		}
		i += 2 // an escape: skip the escaped byte
		if i > len(b) {
			return 0, errScan
		}
	}
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errScan
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errScan
	default:
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
			j++
		}
		if j == i {
			return 0, errScan
		}
		return j, nil
	}
}

// memListener is a net.Listener whose connections are socket pairs made
// by dial: nothing outside the process can connect to it.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr implements net.Listener.
func (l *memListener) Addr() net.Addr { return memAddr{} }

// dial connects to the listener over a new Unix socket pair.
func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("devtools: socket pair: %w", err)
	}
	ours, err := fdConn(fds[0])
	if err != nil {
		_ = syscall.Close(fds[1])
		return nil, err
	}
	theirs, err := fdConn(fds[1])
	if err != nil {
		_ = ours.Close()
		return nil, err
	}
	select {
	case l.conns <- theirs:
		return ours, nil
	case <-l.closed:
	case <-ctx.Done():
	}
	_ = ours.Close()
	_ = theirs.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, errors.New("devtools: the browser is closed")
}

// fdConn makes a net.Conn of a socket file descriptor (which it owns).
func fdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "devtools")
	c, err := net.FileConn(f)
	_ = f.Close() // FileConn duplicated it
	if err != nil {
		return nil, fmt.Errorf("devtools: socket: %w", err)
	}
	return c, nil
}

type memAddr struct{}

func (memAddr) Network() string { return "devtools" }
func (memAddr) String() string  { return devtoolsHost }

// Package cdp is Wallcrawler's authenticating Chrome DevTools Protocol
// proxy: a client (Playwright's connectOverCDP, chromedp, Puppeteer)
// connects to a session's connectUrl with its signingKey, and the proxy
// relays WebSocket messages to the browser target of the session's
// Chromium, counting the bytes and logging command/response pairs. Every
// command from the client first passes a Filter (filter.go), which
// refuses or rewrites the commands that would escape the session's
// confinement.
package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Errors a Resolver returns (wrapped) to choose the HTTP status.
var (
	// ErrUnauthorized: missing, bad, expired or other-session signingKey (401).
	ErrUnauthorized = errors.New("cdp: unauthorized")
	// ErrNotFound: no live browser for the session (404).
	ErrNotFound = errors.New("cdp: session not live")
	// ErrForbidden: a valid credential for another session or page (403).
	ErrForbidden = errors.New("cdp: forbidden")
)

// NodeTokenHeader carries the node-to-node credential of a connection
// one quarry process forwards to the process that owns the session's
// browser (see Request.NodeToken).
const NodeTokenHeader = "X-Quarry-Node-Token"

// Request is one connection to authorize.
type Request struct {
	// SessionID and PageID ("" for the browser target) come from the path.
	SessionID, PageID string
	// SigningKey is the tenant's signingKey JWT.
	SigningKey string
	// NodeToken is the NodeTokenHeader of a connection forwarded by
	// another quarry process ("" from a client). A request that carries
	// one must carry a valid one, and is never forwarded again.
	NodeToken string
}

// Target is where an authorized connection goes and whom to tell.
type Target struct {
	// URL is the browser target's WebSocket URL, or, when Forward is
	// set, the owning node's CDP endpoint for this session.
	URL string
	// HTTPClient dials URL; nil: http.DefaultClient. A local browser's
	// endpoints are reachable only through its own client.
	HTTPClient *http.Client
	// Forward marks a session whose browser runs in another process: the
	// connection is relayed as is to URL, dialled with Header; the owner
	// filters the commands, logs and counts them, so this process does
	// none of it (the Filter cannot be skipped by connecting elsewhere).
	Forward bool
	// Header is sent when dialling URL (the node-to-node credential).
	Header http.Header
	// Project is the id of the session's project: the connection counts
	// against its share (ProxyOptions.Projects).
	Project string
	// DownloadDir is the session's download directory on the host: the
	// only place from which commands may hand files to pages, and where
	// every download goes (see Filter). "" refuses both.
	DownloadDir string
	// UploadDir is the session's upload directory on the host: files there
	// may be handed to pages too, also named as Browserbase names them
	// (BrowserbaseUploadDir). "" for none.
	UploadDir string
	// Log receives command/response pairs; nil disables logging.
	Log *Log
	// Opened is called when a client connection is established; Closed
	// when it ends. Either may be nil.
	Opened, Closed func()
	// Count is called with the bytes relayed (both directions) since the
	// previous call: every few seconds while connected and at the end.
	Count func(bytes int64)
}

// Resolver authorizes a connection to a session and finds its browser.
type Resolver interface {
	// Resolve returns the target of a session's browser (PageID "") or of
	// one of its pages (a DevTools target id).
	Resolve(ctx context.Context, req Request) (Target, error)
}

// Proxy serves /cdp/{sessionId}?signingKey=JWT (the browser target) and
// /cdp/{sessionId}/page/{targetId}?signingKey=JWT (one page, for DevTools).
type Proxy struct {
	res           Resolver
	log           *slog.Logger
	countInterval time.Duration
	maxClients    int
	writeTimeout  time.Duration
	projects      *ProjectConns

	mu      sync.Mutex
	clients map[string]int // session id → connections being set up or relayed
}

// DefaultMaxClients is the default cap on one session's CDP clients.
const DefaultMaxClients = 32

// MaxClientsSetting names the setting of the cap in the 429 message.
const MaxClientsSetting = "--wallcrawler-max-cdp-clients"

// DefaultWriteTimeout is the default bound on writing one message to
// either side of a relay (see ProxyOptions.WriteTimeout).
const DefaultWriteTimeout = 30 * time.Second

// MinWriteRate is the rate, in bytes per second, below which a peer
// falls behind a message's write deadline: a write may take the write
// timeout plus one second per MinWriteRate bytes of the message (the
// listener's --write-timeout allows the same rate).
const MinWriteRate = 64 << 10

// ProxyOptions configures a Proxy. Zero values mean defaults.
type ProxyOptions struct {
	// Logger receives the proxy's errors and refusals; default
	// slog.Default().
	Logger *slog.Logger
	// MaxClients caps the connections open at once to one session, its
	// pages' included: one more is answered 429 before the WebSocket
	// upgrade, so that no tenant can take the process's connections and
	// file descriptors for itself. Default DefaultMaxClients.
	MaxClients int
	// WriteTimeout bounds writing one message to the client or to the
	// browser, plus one second per MinWriteRate bytes of it: a peer that
	// stops reading (its buffers full) fails the write, which ends the
	// relay and frees its goroutines and connections. A connection with
	// nothing to write is never cut, however long it stays quiet.
	// Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Projects caps one project's connections, its sessions' together
	// (shared with the live view); nil: no cap per project.
	Projects *ProjectConns
}

// NewProxy returns a Proxy resolving sessions through res with the
// default options.
func NewProxy(res Resolver, logger *slog.Logger) *Proxy {
	return NewProxyWith(res, ProxyOptions{Logger: logger})
}

// NewProxyWith returns a Proxy resolving sessions through res with o.
func NewProxyWith(res Resolver, o ProxyOptions) *Proxy {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultMaxClients
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return &Proxy{res: res, log: o.Logger, countInterval: 5 * time.Second, maxClients: o.MaxClients, writeTimeout: o.WriteTimeout, projects: o.Projects, clients: map[string]int{}}
}

// acquire takes one of the session's client slots; false when all are
// taken. release gives it back.
func (p *Proxy) acquire(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clients[id] >= p.maxClients {
		return false
	}
	p.clients[id]++
	return true
}

func (p *Proxy) release(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clients[id]--; p.clients[id] <= 0 {
		delete(p.clients, id)
	}
}

// tooMany is the 429 message of a session whose clients are all taken.
func (p *Proxy) tooMany() string {
	return fmt.Sprintf("Too many CDP connections to the session: at most %d at once (%s)", p.maxClients, MaxClientsSetting)
}

// ServeHTTP authorizes and relays one WebSocket connection. The token
// comes from the signingKey query parameter (or an "Authorization: Bearer"
// header).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := r.URL.Path[strings.Index(r.URL.Path, "/cdp/")+len("/cdp/"):]
	id, page, _ := strings.Cut(rest, "/page/")
	if id == "" || strings.Contains(id, "/") || strings.Contains(page, "/") {
		httpError(w, http.StatusNotFound, "Session not found")
		return
	}
	token := r.URL.Query().Get("signingKey")
	if token == "" {
		token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	t, err := p.res.Resolve(r.Context(), Request{SessionID: id, PageID: page, SigningKey: token, NodeToken: r.Header.Get(NodeTokenHeader)})
	switch {
	case errors.Is(err, ErrUnauthorized):
		httpError(w, http.StatusUnauthorized, "Invalid or expired signingKey")
		return
	case errors.Is(err, ErrNotFound):
		httpError(w, http.StatusNotFound, "Session is not running")
		return
	case err != nil:
		p.log.ErrorContext(r.Context(), "cdp: resolve", "session", id, "err", err)
		httpError(w, http.StatusInternalServerError, "Internal server error")
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		httpError(w, http.StatusBadRequest, "Expected a WebSocket upgrade")
		return
	}
	// The session's share of connections: counted here, where every client
	// of the session arrives (those another process forwards among them),
	// and before the upgrade, so that a refusal is an ordinary answer.
	if !p.acquire(id) {
		p.log.WarnContext(r.Context(), "cdp: too many clients for one session", "session", id, "max", p.maxClients)
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, p.tooMany())
		return
	}
	defer p.release(id)
	// The project's share, after the session's: one project cannot take
	// the whole pool of upgraded connections, whatever its sessions.
	if !p.projects.Acquire(t.Project) {
		p.projects.Refuse(r.Context(), w, p.log, t.Project)
		return
	}
	defer p.projects.Release(t.Project)
	// Dial the browser first so a dead browser is an HTTP error, not a
	// WebSocket that closes at once.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
	up, resp, err := websocket.Dial(dctx, t.URL, &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPHeader: t.Header, HTTPClient: t.HTTPClient})
	dcancel()
	if err != nil {
		if t.Forward && resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusNotFound) {
			// The owner's own answer: the session ended, or it refuses.
			p.log.InfoContext(r.Context(), "cdp: owner refused a forwarded connection", "session", id, "status", resp.StatusCode)
			httpError(w, resp.StatusCode, "Session is not running")
			return
		}
		if t.Forward && resp != nil && resp.StatusCode == http.StatusTooManyRequests {
			// The owner counts the session's clients of every process, and
			// its project's connections: its message says which cap.
			p.log.InfoContext(r.Context(), "cdp: owner refused a forwarded connection", "session", id, "status", resp.StatusCode)
			w.Header().Set("Retry-After", "1")
			httpError(w, http.StatusTooManyRequests, ownerMessage(resp, p.tooMany()))
			return
		}
		p.log.WarnContext(r.Context(), "cdp: browser unreachable", "session", id, "forward", t.Forward, "err", err)
		httpError(w, http.StatusBadGateway, "Browser unreachable")
		return
	}
	defer up.CloseNow()
	if page != "" && !t.Forward {
		// The page endpoint reaches any target by id: not the browser's UI.
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		err := checkPage(cctx, up)
		ccancel()
		if err != nil {
			p.log.WarnContext(r.Context(), "cdp: page endpoint refused", "session", id, "page", page, "err", err)
			httpError(w, http.StatusForbidden, "wallcrawler: the target is not a page of the session (browser UI is not reachable)")
			return
		}
	}
	down, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer down.CloseNow()
	up.SetReadLimit(-1)
	down.SetReadLimit(-1)
	if t.Opened != nil {
		t.Opened()
	}
	if t.Closed != nil {
		defer t.Closed()
	}

	var relayed atomic.Int64
	flush := func() {
		if n := relayed.Swap(0); n > 0 && t.Count != nil {
			t.Count(n)
		}
	}
	defer flush()
	ticker := time.NewTicker(p.countInterval)
	defer ticker.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				flush()
			}
		}
	}()

	errc := make(chan error, 2)
	if t.Forward {
		// Relayed unchanged: the owning node filters, logs and counts.
		go func() { errc <- pump(ctx, down, up, p.writeTimeout) }()
		go func() { errc <- pump(ctx, up, down, p.writeTimeout) }()
	} else {
		p.relay(ctx, t, id, down, up, &relayed, errc)
	}
	err = <-errc
	cancel()
	status := websocket.CloseStatus(err)
	if status == -1 {
		status = websocket.StatusGoingAway
	}
	up.Close(websocket.StatusNormalClosure, "")
	down.Close(status, "")
}

// relay starts the filtered, logged relay of a local browser's connection.
func (p *Proxy) relay(ctx context.Context, t Target, id string, down, up *websocket.Conn, relayed *atomic.Int64, errc chan<- error) {
	pending := &pendingMap{m: map[int64]int64{}}
	c := &commands{
		filter: NewFilter(t.DownloadDir, t.UploadDir), log: p.log.With("session", id), n: relayed, writeTimeout: p.writeTimeout,
		request: func(b []byte) { pending.request(t.Log, b) }, response: func(b []byte) { pending.response(t.Log, b) },
	}
	go func() { errc <- c.pump(ctx, down, up) }()
	go func() { errc <- c.answers(ctx, up, down) }()
}

// answers copies the browser's messages (up) to the client (down) through
// the Filter's Observe, which hides browser-UI targets and may have the
// proxy send commands of its own, until either side fails.
func (c *commands) answers(ctx context.Context, up, down *websocket.Conn) error {
	for {
		typ, data, err := up.Read(ctx)
		if err != nil {
			return err
		}
		c.n.Add(int64(len(data)))
		out, send := c.filter.Observe(data)
		for _, cmd := range send {
			c.log.InfoContext(ctx, "cdp: browser UI target detached", "command", string(cmd))
			if err := write(ctx, up, c.writeTimeout, websocket.MessageText, cmd); err != nil {
				return err
			}
		}
		if out == nil {
			continue
		}
		c.response(out)
		if err := write(ctx, down, c.writeTimeout, typ, out); err != nil {
			return err
		}
	}
}

// pump copies messages from src to dst until either fails, each write
// bounded by write.
func pump(ctx context.Context, src, dst *websocket.Conn, timeout time.Duration) error {
	for {
		typ, data, err := src.Read(ctx)
		if err != nil {
			return err
		}
		if err := write(ctx, dst, timeout, typ, data); err != nil {
			return err
		}
	}
}

// write sends one message on c within timeout plus one second per
// MinWriteRate bytes of it. Past that the library closes c: its peer has
// stopped reading, and the relay ends rather than wait on it for ever.
// Reads have no such bound: a client may stay quiet as long as it likes.
func write(ctx context.Context, c *websocket.Conn, timeout time.Duration, typ websocket.MessageType, b []byte) error {
	wctx, cancel := context.WithTimeout(ctx, timeout+time.Duration(len(b))*time.Second/MinWriteRate)
	defer cancel()
	return c.Write(wctx, typ, b)
}

// commands relays the client's messages to the browser through a Filter.
type commands struct {
	filter *Filter
	log    *slog.Logger
	n      *atomic.Int64
	// writeTimeout bounds each write (see write).
	writeTimeout time.Duration
	// request and response observe the commands relayed (or refused) and
	// the answers; they feed the session log.
	request, response func([]byte)
}

// pump copies filtered messages from the client (down) to the browser
// (up), answering refused commands itself, until either side fails.
func (c *commands) pump(ctx context.Context, down, up *websocket.Conn) error {
	for {
		typ, data, err := down.Read(ctx)
		if err != nil {
			return err
		}
		c.n.Add(int64(len(data)))
		v := c.filter.Apply(data)
		if v.Reason != "" {
			c.log.InfoContext(ctx, "cdp: filtered", "method", v.Method, "reason", v.Reason)
		}
		if v.Forward == nil {
			if v.Reply == nil {
				continue
			}
			c.request(data)
			c.response(v.Reply)
			c.n.Add(int64(len(v.Reply)))
			if err := write(ctx, down, c.writeTimeout, websocket.MessageText, v.Reply); err != nil {
				return err
			}
			continue
		}
		c.request(v.Forward)
		if err := write(ctx, up, c.writeTimeout, typ, v.Forward); err != nil {
			return err
		}
	}
}

// pendingMap matches responses to the commands of one connection.
type pendingMap struct {
	mu sync.Mutex
	m  map[int64]int64 // command id → log sequence
}

func (p *pendingMap) request(l *Log, b []byte) {
	if l == nil {
		return
	}
	var m struct {
		ID        *int64          `json:"id"`
		Method    string          `json:"method"`
		SessionID string          `json:"sessionId"`
		Params    json.RawMessage `json:"params"`
	}
	if json.Unmarshal(b, &m) != nil || m.ID == nil || m.Method == "" {
		return
	}
	seq := l.request(time.Now(), m.Method, m.SessionID, m.Params, b)
	p.mu.Lock()
	p.m[*m.ID] = seq
	p.mu.Unlock()
}

func (p *pendingMap) response(l *Log, b []byte) {
	if l == nil || !strings.HasPrefix(string(b[:min(len(b), 16)]), `{"id":`) {
		return // events ({"method":...}) are not logged
	}
	var m struct {
		ID     *int64          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &m) != nil || m.ID == nil {
		return
	}
	p.mu.Lock()
	seq, ok := p.m[*m.ID]
	delete(p.m, *m.ID)
	p.mu.Unlock()
	if !ok {
		return
	}
	res := m.Result
	if res == nil {
		res = m.Error
	}
	l.respond(seq, time.Now(), res, b)
}

// ownerMessage returns the message of the owner's refusal resp when it is
// in Browserbase's error shape, else fallback. (coder/websocket leaves the
// first 1024 bytes of a refused handshake's body readable.)
func ownerMessage(resp *http.Response, fallback string) string {
	var e struct {
		StatusCode int    `json:"statusCode"`
		Message    string `json:"message"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if json.Unmarshal(b, &e) != nil || e.StatusCode != resp.StatusCode || e.Message == "" {
		return fallback
	}
	return e.Message
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"statusCode": status, "error": http.StatusText(status), "message": msg})
}

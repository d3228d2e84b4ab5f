package sessions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/platform/rrweb"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// The DOM recording: rrweb's recorder runs in each page's top frame, in an
// isolated world named domWorld (the page's scripts see neither rrweb nor
// the binding, and rrweb's patched prototypes are that world's), and
// hands each event, as JSON, to the binding domBinding, which CDP delivers
// to the recorder as Runtime.bindingCalled. The page's DOM is shared with
// that world, so whatever the page shows is recorded: the events are
// hostile input, bounded (RecordLimits) and kept in the session's own
// recording. Password fields are masked (rrweb's default); rrweb fetches
// nothing. The recorder's CDP session enables Runtime and Page before it
// adds the binding and the script: without the Page domain the binding is
// missing from the documents a page loads later. Only http: and https:
// documents are recorded: on Chromium's own error page (a navigation it
// refused, such as a redirect to a file: URL) rrweb's recorder leaves the
// renderer unresponsive, to the tenant's commands too, and about:blank
// has nothing to show.
const (
	domBinding = "__quarryDOM"
	domWorld   = "__quarry_recorder"
)

// domScript loads rrweb in a closure (CommonJS-style, so it sets no
// global) and starts its recorder.
var domScript = `(function () {
  if (window.top !== window || typeof ` + domBinding + ` !== "function") return;
  if (location.protocol !== "http:" && location.protocol !== "https:") return;
  var send = ` + domBinding + `;
  var module = { exports: {} }, exports = module.exports;
` + string(rrweb.Script) + `
;
  var rr = module.exports;
  if (!rr || typeof rr.record !== "function") return;
  rr.record({
    emit: function (e) { try { send(JSON.stringify(e)); } catch (_) {} },
    sampling: { mousemove: 100, scroll: 150, input: "last" },
    maskInputOptions: { password: true }
  });
})();
`

// The session inspector's recording: while a session runs, the node that
// owns its browser keeps, on a CDP connection of its own to the browser
// (never the tenant's connection, never through the proxy, so it is
// neither filtered nor counted in proxyBytes), the console messages and
// the network requests of its pages and a low-rate replay of what they
// showed. Everything is bounded (RecordLimits); when the session ends it
// is written beside its CDP log and downloads, as
// <projectId>/<sessionId>/recording.json and …/replay.jpg.

// RecordLimits bound what a session's recording keeps.
type RecordLimits struct {
	// FrameEvery is the replay's period: at most one frame per period,
	// the page's last picture in it (default 1s). Negative: no replay.
	FrameEvery time.Duration
	// MaxFrames and MaxFrameBytes bound the replay (default 600 frames
	// and 8 MiB): past either, every other frame of the recording so far
	// is dropped, so the replay still spans the whole session at a lower
	// rate.
	MaxFrames     int
	MaxFrameBytes int64
	// FrameWidth and FrameHeight bound a frame's size in pixels (default
	// 640×480; the page is scaled down to fit), FrameQuality is its JPEG
	// quality (default 40).
	FrameWidth, FrameHeight, FrameQuality int
	// MaxConsole and MaxNetwork bound the console messages and network
	// requests kept (default 1,000 and 2,000; later ones are counted, not
	// kept).
	MaxConsole, MaxNetwork int
	// MaxDOMEvents and MaxDOMBytes bound the DOM recording's rrweb events
	// of a session (default 20,000 events and 16 MiB of their JSON), and
	// MaxDOMEvent one event (default 4 MiB: a page's full snapshot); an
	// event past a bound is counted, not kept.
	MaxDOMEvents             int
	MaxDOMBytes, MaxDOMEvent int64
}

func (l RecordLimits) withDefaults() RecordLimits {
	if l.FrameEvery == 0 {
		l.FrameEvery = time.Second
	}
	if l.MaxFrames <= 0 {
		l.MaxFrames = 600
	}
	if l.MaxFrameBytes <= 0 {
		l.MaxFrameBytes = 8 << 20
	}
	if l.FrameWidth <= 0 {
		l.FrameWidth = 640
	}
	if l.FrameHeight <= 0 {
		l.FrameHeight = 480
	}
	if l.FrameQuality <= 0 || l.FrameQuality > 100 {
		l.FrameQuality = 40
	}
	if l.MaxConsole <= 0 {
		l.MaxConsole = 1000
	}
	if l.MaxNetwork <= 0 {
		l.MaxNetwork = 2000
	}
	if l.MaxDOMEvents <= 0 {
		l.MaxDOMEvents = 20000
	}
	if l.MaxDOMBytes <= 0 {
		l.MaxDOMBytes = 16 << 20
	}
	if l.MaxDOMEvent <= 0 {
		l.MaxDOMEvent = 4 << 20
	}
	l.MaxDOMEvent = min(l.MaxDOMEvent, l.MaxDOMBytes)
	return l
}

// Longest texts kept in a recording's entries.
const (
	maxConsoleText = 1024
	maxURLText     = 2048
)

// ConsoleEntry is one console message of a page: console.* calls,
// uncaught exceptions and the browser's own messages (Log domain).
type ConsoleEntry struct {
	Time   time.Time `json:"time"`
	PageID string    `json:"pageId"`
	Level  string    `json:"level"`  // log, info, warning, error, debug…
	Source string    `json:"source"` // console, exception, or the Log entry's source (network, security…)
	Text   string    `json:"text"`
	URL    string    `json:"url,omitempty"`
}

// NetworkEntry is one request of a page.
type NetworkEntry struct {
	Time       time.Time `json:"time"` // sent
	PageID     string    `json:"pageId"`
	RequestID  string    `json:"requestId"`
	Method     string    `json:"method"`
	URL        string    `json:"url"`
	Type       string    `json:"type,omitempty"` // Document, Script, XHR…
	Status     int       `json:"status,omitempty"`
	MimeType   string    `json:"mimeType,omitempty"`
	Size       int64     `json:"size"`       // bytes received (encoded, headers included)
	DurationMs float64   `json:"durationMs"` // sent to finished or failed; 0 while pending
	Error      string    `json:"error,omitempty"`
	Done       bool      `json:"done"`

	started float64 // CDP monotonic timestamp, seconds
}

// FrameInfo locates one replay frame in the replay blob.
type FrameInfo struct {
	Time   time.Time `json:"time"`
	PageID string    `json:"pageId"`
	Offset int64     `json:"offset"`
	Length int64     `json:"length"`
}

// DOMEvent is one rrweb event of a page's DOM recording: a meta event
// (type 4: the page's URL and size), a full snapshot (2) or an
// incremental one (3: mutations, input, scroll, mouse), as rrweb's
// recorder emitted it in the page. Data is a JSON object the page wrote:
// hostile input, kept as it is for the tenant's own player.
type DOMEvent struct {
	Timestamp int64           `json:"timestamp"` // milliseconds since the epoch
	PageID    string          `json:"pageId"`
	Type      int             `json:"type"`
	Data      json.RawMessage `json:"data"`
}

// Recording is what the inspector keeps of a session's pages.
type Recording struct {
	Console []ConsoleEntry `json:"console"`
	Network []NetworkEntry `json:"network"`
	Frames  []FrameInfo    `json:"frames"`
	DOM     []DOMEvent     `json:"dom,omitempty"`
	// Dropped counts what the limits left out: console messages, requests
	// and DOM events past their caps, frames thinned out of the replay.
	Dropped struct {
		Console int `json:"console"`
		Network int `json:"network"`
		Frames  int `json:"frames"`
		DOM     int `json:"dom,omitempty"`
	} `json:"dropped"`
	// Error says why nothing could be recorded ("" normally).
	Error string `json:"error,omitempty"`
}

// frame is one kept replay frame.
type frame struct {
	at     time.Time
	pageID string
	jpeg   []byte
}

// recorder records one session's pages on its own CDP connection.
type recorder struct {
	lim    RecordLimits
	log    *slog.Logger
	now    func() time.Time
	cancel context.CancelFunc
	done   chan struct{}
	// ready is closed once the browser answered the recorder's
	// Target.setAutoAttach (the pages open then are being recorded), or
	// the recorder gave up.
	ready     chan struct{}
	readyOnce sync.Once
	attachID  int64 // the Target.setAutoAttach command
	// write sends one command to the browser (the recorder's connection).
	write  func(ctx context.Context, msg []byte) error
	nextID atomic.Int64

	mu       sync.Mutex
	rec      Recording
	frames   []frame
	bytes    int64
	requests map[string]int // session/requestId → index in rec.Network
	pages    map[string]string
	domBytes int64                  // JSON bytes of rec.DOM
	casts    map[string]*screencast // session → its page's screencast
	castCmds map[int64]string       // Page.startScreencast command → session
	lastPage string                 // the session of the page attached last
	shots    map[int64]chan string  // Page.captureScreenshot command → its answer's data
	pending  *frame                 // the newest picture not yet kept
	pendB64  string
	lastKept time.Time
}

// startRecorder connects to browser b and records until stop.
// A failure to connect is kept in the recording's Error.
func startRecorder(parent context.Context, b browser.Browser, lim RecordLimits, now func() time.Time, log *slog.Logger) *recorder {
	ctx, cancel := context.WithCancel(parent)
	r := &recorder{lim: lim.withDefaults(), log: log, now: now, cancel: cancel, done: make(chan struct{}),
		ready: make(chan struct{}), requests: map[string]int{}, pages: map[string]string{}}
	go r.run(ctx, b)
	return r
}

// waitReady waits until the recorder records the browser's pages, or
// gave up, for at most d.
func (r *recorder) waitReady(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.ready:
	case <-ctx.Done():
	case <-t.C:
	}
}

func (r *recorder) setReady() { r.readyOnce.Do(func() { close(r.ready) }) }

func (r *recorder) run(ctx context.Context, b browser.Browser) {
	defer close(r.done)
	defer r.setReady()
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	conn, _, err := websocket.Dial(dctx, b.WebSocketURL(), &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPClient: b.HTTPClient()})
	dcancel()
	if err != nil {
		r.mu.Lock()
		r.rec.Error = "could not connect to the browser: " + err.Error()
		r.mu.Unlock()
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(32 << 20)
	r.write = func(ctx context.Context, msg []byte) error { return conn.Write(ctx, websocket.MessageText, msg) }
	_ = r.send(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true})
	// The pages open now are attached before the browser answers, so the
	// answer makes the recorder ready (answered).
	r.attachID, _ = r.command(ctx, "", "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true,
		"filter": []map[string]any{{"type": "page", "exclude": false}, {"exclude": true}}})
	if r.lim.FrameEvery > 0 {
		go r.tick(ctx)
	}
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		r.handle(ctx, b)
	}
}

// tick keeps the newest picture once per FrameEvery.
func (r *recorder) tick(ctx context.Context) {
	t := time.NewTicker(r.lim.FrameEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.mu.Lock()
			r.keepPendingLocked()
			r.mu.Unlock()
		}
	}
}

func (r *recorder) send(ctx context.Context, sessionID, method string, params any) error {
	_, err := r.command(ctx, sessionID, method, params)
	return err
}

// command sends one command and returns its id, which the browser's
// answer carries.
func (r *recorder) command(ctx context.Context, sessionID, method string, params any) (int64, error) {
	id := r.nextID.Add(1)
	return id, r.commandWith(ctx, id, sessionID, method, params)
}

// commandWith sends one command with id, taken from r.nextID.
func (r *recorder) commandWith(ctx context.Context, id int64, sessionID, method string, params any) error {
	if params == nil {
		params = map[string]any{}
	}
	m := map[string]any{"id": id, "method": method, "params": params}
	if sessionID != "" {
		m["sessionId"] = sessionID
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return r.write(wctx, b)
}

// event is the part of a CDP message the recorder reads: an event
// (Method set) or the answer to one of its commands (ID set, Error when
// it failed).
type event struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// recorderEvents are the handlers of the CDP events the recorder reads,
// by method; other events are ignored.
var recorderEvents = map[string]func(*recorder, context.Context, event){
	"Target.attachedToTarget":   (*recorder).attached,
	"Target.detachedFromTarget": (*recorder).detached,
	"Page.screencastFrame":      (*recorder).screencastFrame,
	"Runtime.consoleAPICalled":  (*recorder).consoleAPICalled,
	"Runtime.exceptionThrown":   (*recorder).exceptionThrown,
	"Log.entryAdded":            (*recorder).logEntryAdded,
	"Network.requestWillBeSent": (*recorder).requestWillBeSent,
	"Network.responseReceived":  (*recorder).responseReceived,
	"Network.loadingFinished":   (*recorder).loadingFinished,
	"Network.loadingFailed":     (*recorder).loadingFailed,
	"Runtime.bindingCalled":     (*recorder).bindingCalled,
	"Page.frameNavigated":       (*recorder).frameNavigated,
}

// handle dispatches one message of the browser: an event to its
// handler, an answer to answered.
func (r *recorder) handle(ctx context.Context, b []byte) {
	var ev event
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	if ev.Method == "" {
		if ev.ID != 0 {
			r.answered(ctx, ev)
		}
		return
	}
	if h := recorderEvents[ev.Method]; h != nil {
		h(r, ctx, ev)
	}
}

// answered reads the browser's answer to one of the recorder's commands:
// Target.setAutoAttach's makes the recorder ready; a Page.startScreencast
// the browser refused is sent again (screencast).
func (r *recorder) answered(ctx context.Context, ev event) {
	if ev.ID == r.attachID {
		r.setReady()
	}
	r.mu.Lock()
	if shot, ok := r.shots[ev.ID]; ok {
		delete(r.shots, ev.ID)
		r.mu.Unlock()
		var res struct {
			Data string `json:"data"`
		}
		_ = json.Unmarshal(ev.Result, &res)
		shot <- res.Data // buffered: the one answer
		return
	}
	sid, ok := r.castCmds[ev.ID]
	delete(r.castCmds, ev.ID)
	cs := r.casts[sid]
	if !ok || cs == nil || cs.pending != ev.ID {
		r.mu.Unlock()
		return
	}
	cs.pending = 0
	again := false
	if ev.Error != nil {
		// The page was between documents when the browser took the
		// command (a navigation to another site swaps the page's
		// renderer: "Not attached to an active page"). Started again at
		// once when a document committed since it was sent, else at the
		// next commit (frameNavigated).
		cs.retry = cs.starts < maxScreencastStarts
		again = cs.retry && cs.commits != cs.sentAt
		if r.log != nil {
			r.log.Debug("wallcrawler: screencast did not start", "err", ev.Error.Message, "again", cs.retry)
		}
	}
	r.mu.Unlock()
	if again {
		r.startScreencast(ctx, sid)
	}
}

// attached starts recording a page the browser attached to: its console,
// log and network events, and its screencast when there is a replay.
func (r *recorder) attached(ctx context.Context, ev event) {
	var p struct {
		SessionID  string `json:"sessionId"`
		TargetInfo struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfo"`
	}
	if json.Unmarshal(ev.Params, &p) != nil || p.TargetInfo.Type != "page" {
		return
	}
	r.mu.Lock()
	r.pages[p.SessionID] = p.TargetInfo.TargetID
	r.lastPage = p.SessionID
	r.mu.Unlock()
	for _, method := range []string{"Runtime.enable", "Log.enable", "Network.enable"} {
		_ = r.send(ctx, p.SessionID, method, nil)
	}
	_ = r.send(ctx, p.SessionID, "Page.enable", nil)
	// The screencast before the DOM script: the script's first run
	// (runImmediately) keeps the page busy while it compiles rrweb (a
	// second and more on a loaded host), and a screencast asked for after
	// it was taken up only once the tenant's first navigation had begun,
	// when the browser refuses it (screencast).
	if r.lim.FrameEvery > 0 {
		r.startScreencast(ctx, p.SessionID)
	}
	// Runtime and Page enabled, then the binding, then the script that
	// takes it, for the page's later documents and (runImmediately) the
	// one it shows now: a page the tenant created with its URL may have
	// loaded it before the recorder attached.
	_ = r.send(ctx, p.SessionID, "Runtime.addBinding", map[string]any{"name": domBinding, "executionContextName": domWorld})
	_ = r.send(ctx, p.SessionID, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": domScript, "worldName": domWorld, "runImmediately": true})
}

// maxScreencastStarts bounds how often the recorder starts a page's
// screencast (its first start and the restarts after a failure).
const maxScreencastStarts = 8

// screencast is the recorder's state of one page's screencast. A page
// with Page.startScreencast pending or failed has no replay frames: the
// command fails while the page is between two documents (the renderer
// of a cross-site navigation, the about:blank of a new page to the
// tenant's first URL, is not active yet), so a failed start is retried
// once a document committed.
type screencast struct {
	pending int64 // the Page.startScreencast awaiting its answer, 0 if none
	commits int   // the page's top-frame documents committed so far
	sentAt  int   // commits when pending was sent
	starts  int   // Page.startScreencast commands sent
	retry   bool  // the last start failed: start again at the next commit
}

// startScreencast sends Page.startScreencast for the page of session sid.
func (r *recorder) startScreencast(ctx context.Context, sid string) {
	id, err := r.command(ctx, sid, "Page.startScreencast", map[string]any{"format": "jpeg", "quality": r.lim.FrameQuality,
		"maxWidth": r.lim.FrameWidth, "maxHeight": r.lim.FrameHeight, "everyNthFrame": 1})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.casts == nil {
		r.casts, r.castCmds = map[string]*screencast{}, map[int64]string{}
	}
	cs := r.casts[sid]
	if cs == nil {
		cs = &screencast{}
		r.casts[sid] = cs
	}
	cs.starts++
	cs.retry = false
	if err != nil {
		return
	}
	cs.pending, cs.sentAt = id, cs.commits
	r.castCmds[id] = sid
}

// frameNavigated counts a page's committed top-frame documents and
// starts again a screencast that failed to start.
func (r *recorder) frameNavigated(ctx context.Context, ev event) {
	var p struct {
		Frame struct {
			ParentID string `json:"parentId"`
		} `json:"frame"`
	}
	if json.Unmarshal(ev.Params, &p) != nil || p.Frame.ParentID != "" {
		return
	}
	r.mu.Lock()
	cs := r.casts[ev.SessionID]
	again := false
	if cs != nil {
		cs.commits++
		again = cs.retry && cs.pending == 0
	}
	r.mu.Unlock()
	if again {
		r.startScreencast(ctx, ev.SessionID)
	}
}

// detached forgets the page of a CDP session that ended.
func (r *recorder) detached(_ context.Context, ev event) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(ev.Params, &p)
	r.mu.Lock()
	delete(r.pages, p.SessionID)
	delete(r.casts, p.SessionID)
	if r.lastPage == p.SessionID {
		r.lastPage = ""
		for sid := range r.pages {
			r.lastPage = sid
			break
		}
	}
	r.mu.Unlock()
}

// screencastFrame acknowledges a frame and makes it the newest picture,
// kept at once when no frame was kept within FrameEvery.
func (r *recorder) screencastFrame(ctx context.Context, ev event) {
	var p struct {
		Data      string `json:"data"`
		SessionID int64  `json:"sessionId"`
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	_ = r.send(ctx, ev.SessionID, "Page.screencastFrameAck", map[string]any{"sessionId": p.SessionID})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = &frame{at: r.now(), pageID: r.pages[ev.SessionID]}
	r.pendB64 = p.Data
	if r.lastKept.IsZero() || r.now().Sub(r.lastKept) >= r.lim.FrameEvery {
		r.keepPendingLocked()
	}
}

// consoleAPICalled records a console.* call, its arguments joined by
// spaces (strings as they are, other values as JSON or their description).
func (r *recorder) consoleAPICalled(_ context.Context, ev event) {
	var p struct {
		Type string `json:"type"`
		Args []struct {
			Type        string          `json:"type"`
			Value       json.RawMessage `json:"value"`
			Description string          `json:"description"`
		} `json:"args"`
		Timestamp float64 `json:"timestamp"` // ms since the epoch
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	parts := make([]string, 0, len(p.Args))
	for _, a := range p.Args {
		var s string
		switch {
		case a.Type == "string" && json.Unmarshal(a.Value, &s) == nil:
		case len(a.Value) > 0:
			s = string(a.Value)
		default:
			s = a.Description
		}
		parts = append(parts, s)
	}
	r.console(ConsoleEntry{Time: msTime(p.Timestamp, r.now()), PageID: r.page(ev.SessionID), Level: p.Type, Source: "console", Text: strings.Join(parts, " ")})
}

// exceptionThrown records an uncaught exception as an error message.
func (r *recorder) exceptionThrown(_ context.Context, ev event) {
	var p struct {
		Timestamp        float64 `json:"timestamp"`
		ExceptionDetails struct {
			Text      string `json:"text"`
			URL       string `json:"url"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	text := p.ExceptionDetails.Text
	if d := p.ExceptionDetails.Exception.Description; d != "" {
		text += " " + d
	}
	r.console(ConsoleEntry{Time: msTime(p.Timestamp, r.now()), PageID: r.page(ev.SessionID), Level: "error", Source: "exception", Text: text, URL: p.ExceptionDetails.URL})
}

// logEntryAdded records one of the browser's own messages (Log domain).
func (r *recorder) logEntryAdded(_ context.Context, ev event) {
	var p struct {
		Entry struct {
			Source    string  `json:"source"`
			Level     string  `json:"level"`
			Text      string  `json:"text"`
			URL       string  `json:"url"`
			Timestamp float64 `json:"timestamp"`
		} `json:"entry"`
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	e := p.Entry
	r.console(ConsoleEntry{Time: msTime(e.Timestamp, r.now()), PageID: r.page(ev.SessionID), Level: e.Level, Source: e.Source, Text: e.Text, URL: e.URL})
}

// requestWillBeSent records a request (past MaxNetwork, counts it). A
// request id seen before is a redirect: the earlier hop ends here.
func (r *recorder) requestWillBeSent(_ context.Context, ev event) {
	var p struct {
		RequestID string  `json:"requestId"`
		Timestamp float64 `json:"timestamp"`
		WallTime  float64 `json:"wallTime"` // seconds since the epoch
		Type      string  `json:"type"`
		Request   struct {
			URL    string `json:"url"`
			Method string `json:"method"`
		} `json:"request"`
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	at := r.now()
	if p.WallTime > 0 {
		at = time.UnixMicro(int64(p.WallTime * 1e6)).UTC()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := ev.SessionID + "/" + p.RequestID
	if i, ok := r.requests[k]; ok && !r.rec.Network[i].Done {
		r.rec.Network[i].Done = true
		r.rec.Network[i].DurationMs = (p.Timestamp - r.rec.Network[i].started) * 1000
	}
	if len(r.rec.Network) >= r.lim.MaxNetwork {
		r.rec.Dropped.Network++
		delete(r.requests, k)
		return
	}
	r.requests[k] = len(r.rec.Network)
	r.rec.Network = append(r.rec.Network, NetworkEntry{Time: at, PageID: r.pages[ev.SessionID], RequestID: p.RequestID,
		Method: p.Request.Method, URL: cut(p.Request.URL, maxURLText), Type: p.Type, started: p.Timestamp})
}

// responseReceived records a request's status and MIME type.
func (r *recorder) responseReceived(_ context.Context, ev event) {
	var p struct {
		RequestID string `json:"requestId"`
		Response  struct {
			Status   int    `json:"status"`
			MimeType string `json:"mimeType"`
		} `json:"response"`
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	r.request(ev.SessionID, p.RequestID, func(e *NetworkEntry) { e.Status, e.MimeType = p.Response.Status, cut(p.Response.MimeType, 100) })
}

// loadingFinished ends a request with its size and duration.
func (r *recorder) loadingFinished(_ context.Context, ev event) {
	var p struct {
		RequestID         string  `json:"requestId"`
		Timestamp         float64 `json:"timestamp"`
		EncodedDataLength float64 `json:"encodedDataLength"`
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	r.request(ev.SessionID, p.RequestID, func(e *NetworkEntry) {
		e.Done, e.Size, e.DurationMs = true, int64(p.EncodedDataLength), (p.Timestamp-e.started)*1000
	})
}

// loadingFailed ends a request with its error ("canceled" when cancelled
// without one).
func (r *recorder) loadingFailed(_ context.Context, ev event) {
	var p struct {
		RequestID string  `json:"requestId"`
		Timestamp float64 `json:"timestamp"`
		ErrorText string  `json:"errorText"`
		Canceled  bool    `json:"canceled"`
	}
	if json.Unmarshal(ev.Params, &p) != nil {
		return
	}
	r.request(ev.SessionID, p.RequestID, func(e *NetworkEntry) {
		e.Done, e.Error, e.DurationMs = true, cut(p.ErrorText, 200), (p.Timestamp-e.started)*1000
		if p.Canceled && e.Error == "" {
			e.Error = "canceled"
		}
	})
}

// bindingCalled keeps one rrweb event the recording script sent: only a
// meta event, a full or an incremental snapshot, whose data is a JSON
// object, within the DOM bounds; a timestamp more than a minute from the
// recorder's clock is replaced by the clock's.
func (r *recorder) bindingCalled(_ context.Context, ev event) {
	var p struct {
		Name    string `json:"name"`
		Payload string `json:"payload"`
	}
	if json.Unmarshal(ev.Params, &p) != nil || p.Name != domBinding {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if int64(len(p.Payload)) > r.lim.MaxDOMEvent || len(r.rec.DOM) >= r.lim.MaxDOMEvents || r.domBytes+int64(len(p.Payload)) > r.lim.MaxDOMBytes {
		r.rec.Dropped.DOM++
		return
	}
	var e struct {
		Type      int             `json:"type"`
		Timestamp float64         `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if json.Unmarshal([]byte(p.Payload), &e) != nil || e.Type < 2 || e.Type > 4 || len(e.Data) == 0 || e.Data[0] != '{' {
		return
	}
	at := msTime(e.Timestamp, now)
	if d := at.Sub(now); d > time.Minute || d < -time.Minute {
		at = now
	}
	r.rec.DOM = append(r.rec.DOM, DOMEvent{Timestamp: at.UnixMilli(), PageID: r.pages[ev.SessionID], Type: e.Type, Data: e.Data})
	r.domBytes += int64(len(e.Data))
}

func msTime(ms float64, fallback time.Time) time.Time {
	if ms <= 0 {
		return fallback
	}
	return time.UnixMicro(int64(ms * 1000)).UTC()
}

func (r *recorder) page(sessionID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pages[sessionID]
}

func (r *recorder) console(e ConsoleEntry) {
	e.Text, e.URL = cut(e.Text, maxConsoleText), cut(e.URL, maxURLText)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rec.Console) >= r.lim.MaxConsole {
		r.rec.Dropped.Console++
		return
	}
	r.rec.Console = append(r.rec.Console, e)
}

func (r *recorder) request(sessionID, requestID string, f func(*NetworkEntry)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.requests[sessionID+"/"+requestID]; ok {
		f(&r.rec.Network[i])
	}
}

// keepPendingLocked adds the newest picture to the replay, thinning the
// replay when it passes a bound. r.mu must be held.
func (r *recorder) keepPendingLocked() {
	if r.pending == nil {
		return
	}
	f := *r.pending
	r.pending = nil
	jpeg, err := base64.StdEncoding.DecodeString(r.pendB64)
	r.pendB64 = ""
	if err != nil || int64(len(jpeg)) > r.lim.MaxFrameBytes/4 {
		r.rec.Dropped.Frames++
		return
	}
	f.jpeg = jpeg
	r.frames = append(r.frames, f)
	r.bytes += int64(len(jpeg))
	r.lastKept = f.at
	for len(r.frames) > r.lim.MaxFrames || r.bytes > r.lim.MaxFrameBytes {
		// Drop every other frame but the newest.
		kept := r.frames[:0]
		r.bytes = 0
		for i, x := range r.frames {
			if i%2 == 1 && i != len(r.frames)-1 {
				r.rec.Dropped.Frames++
				continue
			}
			kept = append(kept, x)
			r.bytes += int64(len(x.jpeg))
		}
		clear(r.frames[len(kept):])
		r.frames = kept
	}
}

// lastPictureWait bounds how long a session's end waits for lastPicture.
const lastPictureWait = 2 * time.Second

// lastPicture asks the page attached last for its picture, and keeps it
// as the replay's frame, when the screencast kept none: a session
// shorter than the screencast's start (refused, then started again only
// at the page's next document), or whose page never painted since,
// still has its last picture. It waits at most d for the answer, and
// not at all when the recorder has no connection.
func (r *recorder) lastPicture(d time.Duration) {
	select {
	case <-r.ready: // r.write is set before ready is closed
	default:
		return
	}
	r.mu.Lock()
	sid := r.lastPage
	r.mu.Unlock()
	if sid == "" || r.write == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	shot := make(chan string, 1)
	// The command's id is taken before it is sent, so that its answer,
	// read by the recorder's loop, finds its channel.
	id := r.nextID.Add(1)
	r.mu.Lock()
	if r.shots == nil {
		r.shots = map[int64]chan string{}
	}
	r.shots[id] = shot
	r.mu.Unlock()
	if err := r.commandWith(ctx, id, sid, "Page.captureScreenshot", map[string]any{"format": "jpeg", "quality": r.lim.FrameQuality}); err != nil {
		r.mu.Lock()
		delete(r.shots, id)
		r.mu.Unlock()
		return
	}
	select {
	case data := <-shot:
		if data == "" {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.frames) == 0 && r.pending == nil {
			r.pending, r.pendB64 = &frame{at: r.now(), pageID: r.pages[sid]}, data
			r.keepPendingLocked()
		}
	case <-ctx.Done():
	case <-r.done:
	}
}

// snapshot returns the recording so far and its replay blob.
func (r *recorder) snapshot() (Recording, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.rec
	rec.Console = append([]ConsoleEntry{}, r.rec.Console...)
	rec.Network = append([]NetworkEntry{}, r.rec.Network...)
	rec.DOM = append([]DOMEvent(nil), r.rec.DOM...)
	replay := make([]byte, 0, r.bytes)
	rec.Frames = make([]FrameInfo, 0, len(r.frames))
	for _, f := range r.frames {
		rec.Frames = append(rec.Frames, FrameInfo{Time: f.at, PageID: f.pageID, Offset: int64(len(replay)), Length: int64(len(f.jpeg))})
		replay = append(replay, f.jpeg...)
	}
	return rec, replay
}

// stop keeps the last picture, ends the recording and returns it.
func (r *recorder) stop() (Recording, []byte) {
	r.mu.Lock()
	r.keepPendingLocked()
	none := len(r.frames) == 0 && r.lim.FrameEvery > 0
	r.mu.Unlock()
	if none {
		r.lastPicture(lastPictureWait)
	}
	r.cancel()
	<-r.done
	return r.snapshot()
}

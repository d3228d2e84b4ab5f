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

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

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

// Recording is what the inspector keeps of a session's pages.
type Recording struct {
	Console []ConsoleEntry `json:"console"`
	Network []NetworkEntry `json:"network"`
	Frames  []FrameInfo    `json:"frames"`
	// Dropped counts what the limits left out: console messages and
	// requests past their caps, frames thinned out of the replay.
	Dropped struct {
		Console int `json:"console"`
		Network int `json:"network"`
		Frames  int `json:"frames"`
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
	conn   *websocket.Conn
	nextID atomic.Int64

	mu       sync.Mutex
	rec      Recording
	frames   []frame
	bytes    int64
	requests map[string]int // session/requestId → index in rec.Network
	pages    map[string]string
	pending  *frame // the newest picture not yet kept
	pendB64  string
	lastKept time.Time
}

// startRecorder connects to browser b and records until stop.
// A failure to connect is kept in the recording's Error.
func startRecorder(parent context.Context, b browser.Browser, lim RecordLimits, now func() time.Time, log *slog.Logger) *recorder {
	ctx, cancel := context.WithCancel(parent)
	r := &recorder{lim: lim.withDefaults(), log: log, now: now, cancel: cancel, done: make(chan struct{}),
		requests: map[string]int{}, pages: map[string]string{}}
	go r.run(ctx, b)
	return r
}

func (r *recorder) run(ctx context.Context, b browser.Browser) {
	defer close(r.done)
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
	r.conn = conn
	_ = r.send(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true})
	_ = r.send(ctx, "", "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true,
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
	if params == nil {
		params = map[string]any{}
	}
	m := map[string]any{"id": r.nextID.Add(1), "method": method, "params": params}
	if sessionID != "" {
		m["sessionId"] = sessionID
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return r.conn.Write(wctx, websocket.MessageText, b)
}

// event is the part of a CDP event the recorder reads.
type event struct {
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
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
}

// handle dispatches one message of the browser to its event's handler.
func (r *recorder) handle(ctx context.Context, b []byte) {
	var ev event
	if json.Unmarshal(b, &ev) != nil || ev.Method == "" {
		return
	}
	if h := recorderEvents[ev.Method]; h != nil {
		h(r, ctx, ev)
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
	r.mu.Unlock()
	for _, method := range []string{"Runtime.enable", "Log.enable", "Network.enable"} {
		_ = r.send(ctx, p.SessionID, method, nil)
	}
	if r.lim.FrameEvery > 0 {
		_ = r.send(ctx, p.SessionID, "Page.startScreencast", map[string]any{"format": "jpeg", "quality": r.lim.FrameQuality,
			"maxWidth": r.lim.FrameWidth, "maxHeight": r.lim.FrameHeight, "everyNthFrame": 1})
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

// snapshot returns the recording so far and its replay blob.
func (r *recorder) snapshot() (Recording, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.rec
	rec.Console = append([]ConsoleEntry{}, r.rec.Console...)
	rec.Network = append([]NetworkEntry{}, r.rec.Network...)
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
	r.mu.Unlock()
	r.cancel()
	<-r.done
	return r.snapshot()
}

package live

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// Messages to the viewer: a binary message is one JPEG frame; a text
// message is JSON, {"type":"meta","width":W,"height":H} (the page's size in
// CSS pixels, sent before the first frame and whenever it changes) or
// {"type":"mode","viewOnly":B} (sent first).
//
// Messages from the viewer are JSON text messages (see input); a view-only
// viewer's are read and dropped.

// DefaultWriteTimeout is the default of Options.WriteTimeout.
const DefaultWriteTimeout = 10 * time.Second

// serveSocket relays the screencast of g's page to one viewer.
func (h *Handler) serveSocket(w http.ResponseWriter, r *http.Request, sessionID string, g sessions.LiveGrant) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
	up, _, err := websocket.Dial(dctx, g.Target.URL, &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPHeader: g.Target.Header, HTTPClient: g.Target.HTTPClient})
	dcancel()
	if err != nil {
		h.opts.Logger.WarnContext(r.Context(), "live: browser unreachable", "session", sessionID, "err", err)
		http.Error(w, "Browser unreachable", http.StatusBadGateway)
		return
	}
	defer up.CloseNow()
	// The token authorizes the socket (no cookie does), so the Origin of
	// the page embedding the viewer does not matter.
	down, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer down.CloseNow()
	up.SetReadLimit(64 << 20)
	down.SetReadLimit(64 << 10)
	if g.Target.Opened != nil {
		g.Target.Opened()
	}
	if g.Target.Closed != nil {
		defer g.Target.Closed()
	}
	c := &viewer{up: up, down: down, viewOnly: g.ViewOnly, timeout: h.opts.WriteTimeout}
	if err := c.sendJSON(ctx, map[string]any{"type": "mode", "viewOnly": g.ViewOnly}); err != nil {
		return
	}
	if err := c.call(ctx, "Page.startScreencast", map[string]any{"format": "jpeg", "quality": h.opts.JPEGQuality, "everyNthFrame": 1}); err != nil {
		return
	}
	errc := make(chan error, 2)
	go func() { errc <- c.frames(ctx) }()
	go func() { errc <- c.input(ctx) }()
	err = <-errc
	cancel()
	if websocket.CloseStatus(err) == -1 && !errors.Is(err, context.Canceled) {
		h.opts.Logger.DebugContext(r.Context(), "live: viewer ended", "session", sessionID, "err", err)
	}
	_ = up.Close(websocket.StatusNormalClosure, "")
	_ = down.Close(websocket.StatusGoingAway, "the page or the session ended")
}

// viewer is one viewer's pair of connections.
type viewer struct {
	up, down *websocket.Conn
	viewOnly bool
	timeout  time.Duration // bounds each write, to either side
	nextID   atomic.Int64
	upMu     sync.Mutex // serializes writes to up
	downMu   sync.Mutex // serializes writes to down
	w, h     float64    // the last size sent
}

// call sends a CDP command without waiting for its response.
func (c *viewer) call(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{c.nextID.Add(1), method, params})
	if err != nil {
		return err
	}
	c.upMu.Lock()
	defer c.upMu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.up.Write(wctx, websocket.MessageText, b)
}

func (c *viewer) sendJSON(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.send(ctx, websocket.MessageText, b)
}

func (c *viewer) send(ctx context.Context, typ websocket.MessageType, b []byte) error {
	c.downMu.Lock()
	defer c.downMu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.down.Write(wctx, typ, b)
}

// frames relays screencast frames from the page to the viewer until the
// page's connection ends. A frame is acknowledged once the viewer has it,
// so a slow viewer slows its own screencast down instead of queueing.
func (c *viewer) frames(ctx context.Context) error {
	for {
		_, b, err := c.up.Read(ctx)
		if err != nil {
			return err
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Data      string `json:"data"`
				SessionID int64  `json:"sessionId"`
				Metadata  struct {
					DeviceWidth  float64 `json:"deviceWidth"`
					DeviceHeight float64 `json:"deviceHeight"`
				} `json:"metadata"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Method {
		case "Page.screencastFrame":
			jpeg, err := base64.StdEncoding.DecodeString(m.Params.Data)
			if err != nil {
				continue
			}
			md := m.Params.Metadata
			if md.DeviceWidth != c.w || md.DeviceHeight != c.h {
				c.w, c.h = md.DeviceWidth, md.DeviceHeight
				if err := c.sendJSON(ctx, map[string]any{"type": "meta", "width": c.w, "height": c.h}); err != nil {
					return err
				}
			}
			if err := c.send(ctx, websocket.MessageBinary, jpeg); err != nil {
				return err
			}
			if err := c.call(ctx, "Page.screencastFrameAck", map[string]any{"sessionId": m.Params.SessionID}); err != nil {
				return err
			}
		case "Inspector.detached", "Inspector.targetCrashed":
			return errors.New("live: the page is gone")
		}
	}
}

// inputMsg is one input message from the viewer. T selects the kind:
// "mouse" (Type mousePressed, mouseReleased or mouseMoved at X, Y with
// Button, Buttons and ClickCount), "wheel" (DX, DY at X, Y), "key" (Type
// keyDown, keyUp, rawKeyDown or char with Key, Code, Text and KeyCode) or
// "resize" (Width, Height). Modifiers is CDP's bit field (Alt 1, Ctrl 2,
// Meta 4, Shift 8). Coordinates are the page's CSS pixels.
type inputMsg struct {
	T          string  `json:"t"`
	Type       string  `json:"type"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
	Button     string  `json:"button"`
	Buttons    int     `json:"buttons"`
	ClickCount int     `json:"clickCount"`
	DX         float64 `json:"dx"`
	DY         float64 `json:"dy"`
	Key        string  `json:"key"`
	Code       string  `json:"code"`
	Text       string  `json:"text"`
	KeyCode    int     `json:"keyCode"`
	Modifiers  int     `json:"modifiers"`
	Width      int     `json:"width"`
	Height     int     `json:"height"`
}

// input turns the viewer's messages into CDP input commands (only these,
// with fields checked), until the viewer goes.
func (c *viewer) input(ctx context.Context) error {
	for {
		_, b, err := c.down.Read(ctx)
		if err != nil {
			return err
		}
		var m inputMsg
		if c.viewOnly || json.Unmarshal(b, &m) != nil {
			continue
		}
		method, params := translate(m)
		if method == "" {
			continue
		}
		if err := c.call(ctx, method, params); err != nil {
			return err
		}
	}
}

// translate returns the CDP command of an input message, or "" for one
// that is not valid.
func translate(m inputMsg) (string, map[string]any) {
	mods := m.Modifiers & 15
	inRange := func(v float64) bool { return v >= -1e5 && v <= 1e5 }
	switch m.T {
	case "mouse":
		switch m.Type {
		case "mousePressed", "mouseReleased", "mouseMoved":
		default:
			return "", nil
		}
		switch m.Button {
		case "none", "left", "middle", "right", "back", "forward":
		case "":
			m.Button = "none"
		default:
			return "", nil
		}
		if !inRange(m.X) || !inRange(m.Y) || m.ClickCount < 0 || m.ClickCount > 3 {
			return "", nil
		}
		return "Input.dispatchMouseEvent", map[string]any{"type": m.Type, "x": m.X, "y": m.Y,
			"button": m.Button, "buttons": m.Buttons & 31, "clickCount": m.ClickCount, "modifiers": mods}
	case "wheel":
		if !inRange(m.X) || !inRange(m.Y) || !inRange(m.DX) || !inRange(m.DY) {
			return "", nil
		}
		return "Input.dispatchMouseEvent", map[string]any{"type": "mouseWheel", "x": m.X, "y": m.Y,
			"deltaX": m.DX, "deltaY": m.DY, "modifiers": mods}
	case "key":
		switch m.Type {
		case "keyDown", "keyUp", "rawKeyDown", "char":
		default:
			return "", nil
		}
		if len(m.Key) > 32 || len(m.Code) > 32 || len(m.Text) > 8 || m.KeyCode < 0 || m.KeyCode > 255 {
			return "", nil
		}
		p := map[string]any{"type": m.Type, "key": m.Key, "code": m.Code, "modifiers": mods,
			"windowsVirtualKeyCode": m.KeyCode, "nativeVirtualKeyCode": m.KeyCode}
		if m.Text != "" {
			p["text"], p["unmodifiedText"] = m.Text, m.Text
		}
		return "Input.dispatchKeyEvent", p
	case "resize":
		if m.Width < 100 || m.Height < 100 || m.Width > 4096 || m.Height > 4096 {
			return "", nil
		}
		return "Emulation.setDeviceMetricsOverride", map[string]any{"width": m.Width, "height": m.Height,
			"deviceScaleFactor": 0, "mobile": false}
	}
	return "", nil
}

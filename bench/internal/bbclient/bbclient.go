// Package bbclient is the Wallcrawler client the benchmarks share
// (bench/wallcrawlerbench, bench/clusterwc): the Browserbase-style REST
// call with an API key, and a minimal sequential CDP client over the
// session's WebSocket.
package bbclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// Call sends a JSON request (body nil: none) with the API key in
// X-BB-API-Key, checks the status is want and decodes the answer into out
// (nil: not decoded).
func Call(ctx context.Context, hc *http.Client, method, url, key string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-BB-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// CDP is a minimal sequential CDP client: one call at a time, events kept
// until asked for.
type CDP struct {
	ws     *websocket.Conn
	next   int
	events []Msg
}

// Msg is a CDP message: an answer (ID set) or an event (Method set).
type Msg struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	// At is when it was read.
	At time.Time `json:"-"`
}

// Dial opens a CDP connection to url (a session's connectUrl or a
// browser's WebSocket URL).
func Dial(ctx context.Context, url string) (*CDP, error) {
	return DialWith(ctx, nil, url)
}

// DialWith is Dial through client (nil: http.DefaultClient), such as a
// local browser's own HTTPClient.
func DialWith(ctx context.Context, client *http.Client, url string) (*CDP, error) {
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPClient: client})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	return &CDP{ws: ws}, nil
}

// Close closes the connection.
func (c *CDP) Close() { _ = c.ws.Close(websocket.StatusNormalClosure, "") }

// read reads the next message, keeping it when it is an event.
func (c *CDP) read(ctx context.Context) (Msg, error) {
	var m Msg
	if err := wsjson.Read(ctx, c.ws, &m); err != nil {
		return Msg{}, err
	}
	m.At = time.Now()
	if m.Method != "" {
		c.events = append(c.events, m)
	}
	return m, nil
}

// Call sends method (to the flat session sessionID; "" the browser) and
// returns its result.
func (c *CDP) Call(ctx context.Context, sessionID, method string, params any) (json.RawMessage, error) {
	c.next++
	id := c.next
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	if err := wsjson.Write(ctx, c.ws, msg); err != nil {
		return nil, err
	}
	for {
		m, err := c.read(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if m.ID == id {
			if m.Error != nil {
				return nil, fmt.Errorf("%s: CDP error %d: %s", method, m.Error.Code, m.Error.Message)
			}
			return m.Result, nil
		}
	}
}

// ClearEvents drops the events kept so far.
func (c *CDP) ClearEvents() { c.events = c.events[:0] }

// WaitEvent returns once method has arrived for sessionID.
func (c *CDP) WaitEvent(ctx context.Context, sessionID, method string) error {
	for {
		for i, e := range c.events {
			if e.Method == method && e.SessionID == sessionID {
				c.events = append(c.events[:i], c.events[i+1:]...)
				return nil
			}
		}
		if _, err := c.read(ctx); err != nil {
			return fmt.Errorf("waiting for %s: %w", method, err)
		}
	}
}

// NextEvent returns the oldest event not yet taken, reading one when none
// is kept.
func (c *CDP) NextEvent(ctx context.Context) (Msg, error) {
	for len(c.events) == 0 {
		if _, err := c.read(ctx); err != nil {
			return Msg{}, err
		}
	}
	m := c.events[0]
	c.events = c.events[1:]
	return m, nil
}

// Load attaches to the browser's first page (creating one when there is
// none), navigates it to url, waits for its load event and returns its
// title.
func (c *CDP) Load(ctx context.Context, url string) (string, error) {
	sessionID, err := c.AttachPage(ctx)
	if err != nil {
		return "", err
	}
	if _, err := c.Call(ctx, sessionID, "Page.enable", nil); err != nil {
		return "", err
	}
	c.ClearEvents()
	raw, err := c.Call(ctx, sessionID, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return "", err
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := json.Unmarshal(raw, &nav); err == nil && nav.ErrorText != "" {
		//lint:ignore ST1005 the message starts with the name of the DevTools protocol method that failed
		return "", fmt.Errorf("Page.navigate: %s", nav.ErrorText)
	}
	if err := c.WaitEvent(ctx, sessionID, "Page.loadEventFired"); err != nil {
		return "", err
	}
	raw, err = c.Call(ctx, sessionID, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true})
	if err != nil {
		return "", err
	}
	var ev struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return "", err
	}
	return ev.Result.Value, nil
}

// AttachPage attaches (flat) to the browser's first page target, creating
// one when there is none, and returns the CDP session id.
func (c *CDP) AttachPage(ctx context.Context) (string, error) {
	raw, err := c.Call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		return "", err
	}
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &targets); err != nil {
		return "", err
	}
	targetID := ""
	for _, t := range targets.TargetInfos {
		if t.Type == "page" {
			targetID = t.TargetID
			break
		}
	}
	if targetID == "" {
		raw, err := c.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
		if err != nil {
			return "", err
		}
		var created struct {
			TargetID string `json:"targetId"`
		}
		if err := json.Unmarshal(raw, &created); err != nil {
			return "", err
		}
		targetID = created.TargetID
	}
	raw, err = c.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true})
	if err != nil {
		return "", err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &att); err != nil {
		return "", err
	}
	return att.SessionID, nil
}

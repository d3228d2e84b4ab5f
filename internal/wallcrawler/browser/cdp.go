package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// cdpRequest is one CDP command message.
type cdpRequest struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// cdpResponse is a CDP message: a command result or an event.
type cdpResponse struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// cdpCall sends one CDP command to the target at wsURL on a short-lived
// websocket and returns its result. When expectReply is false it returns as
// soon as the command is written or the connection drops afterwards (used for
// Browser.close, whose reply may never arrive).
func cdpCall(ctx context.Context, wsURL, method string, params any, expectReply bool) (json.RawMessage, error) {
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("cdp %s: dial: %w", method, err)
	}
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(8 << 20)
	if err := wsjson.Write(ctx, conn, cdpRequest{ID: 1, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("cdp %s: write: %w", method, err)
	}
	for {
		var resp cdpResponse
		if err := wsjson.Read(ctx, conn, &resp); err != nil {
			if !expectReply {
				return nil, nil
			}
			return nil, fmt.Errorf("cdp %s: read: %w", method, err)
		}
		if resp.ID != 1 {
			continue // an event
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("cdp %s: error %d: %s", method, resp.Error.Code, resp.Error.Message)
		}
		return resp.Result, nil
	}
}

// Call sends one CDP command to the target at wsURL (a browser's
// WebSocketURL, say) on a short-lived WebSocket and returns its result.
func Call(ctx context.Context, wsURL, method string, params any) (json.RawMessage, error) {
	return cdpCall(ctx, wsURL, method, params, true)
}

// cdpHold sends one CDP command on a new websocket and, on success, keeps
// the connection open: Chromium resets per-session state such as the download
// behavior when the DevTools session that set it disconnects. The returned
// connection drains incoming messages in the background until it is closed.
func cdpHold(ctx context.Context, wsURL, method string, params any) (*websocket.Conn, error) {
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("cdp %s: dial: %w", method, err)
	}
	conn.SetReadLimit(8 << 20)
	if err := wsjson.Write(ctx, conn, cdpRequest{ID: 1, Method: method, Params: params}); err != nil {
		_ = conn.CloseNow()
		return nil, fmt.Errorf("cdp %s: write: %w", method, err)
	}
	for {
		var resp cdpResponse
		if err := wsjson.Read(ctx, conn, &resp); err != nil {
			_ = conn.CloseNow()
			return nil, fmt.Errorf("cdp %s: read: %w", method, err)
		}
		if resp.ID != 1 {
			continue
		}
		if resp.Error != nil {
			_ = conn.CloseNow()
			return nil, fmt.Errorf("cdp %s: error %d: %s", method, resp.Error.Code, resp.Error.Message)
		}
		break
	}
	go func() {
		for {
			if _, _, err := conn.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return conn, nil
}

// versionInfo is the part of /json/version this package uses.
type versionInfo struct {
	Browser              string `json:"Browser"`
	WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
}

// fetchVersion GETs http://addr/json/version.
func fetchVersion(ctx context.Context, client *http.Client, addr string) (versionInfo, error) {
	var v versionInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "http", Host: addr, Path: "/json/version"}).String(), nil)
	if err != nil {
		return v, fmt.Errorf("json/version: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return v, fmt.Errorf("json/version: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return v, fmt.Errorf("json/version: read: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("json/version: status %s", resp.Status)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("json/version: decode: %w", err)
	}
	if v.WebSocketDebuggerURL == "" {
		return v, fmt.Errorf("json/version: no webSocketDebuggerUrl")
	}
	return v, nil
}

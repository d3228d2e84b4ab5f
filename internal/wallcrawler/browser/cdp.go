package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

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

// Call sends one CDP command to the browser target of b on a
// short-lived WebSocket and returns its result.
func Call(ctx context.Context, b Browser, method string, params any) (json.RawMessage, error) {
	return CallURL(ctx, b.HTTPClient(), b.WebSocketURL(), method, params)
}

// CallURL sends one CDP command to the target at wsURL, dialled with
// client (nil: http.DefaultClient), on a short-lived WebSocket and
// returns its result.
func CallURL(ctx context.Context, client *http.Client, wsURL, method string, params any) (json.RawMessage, error) {
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: client})
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

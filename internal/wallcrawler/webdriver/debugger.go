package webdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// debugger is the DevTools HTTP endpoint a session's chromedriver attaches
// to (its goog:chromeOptions.debuggerAddress), served on the browser
// network's loopback, where only the browser's own processes and the
// driver can reach it. /json/version and /json/list describe the browser
// and its pages with WebSocket URLs of this endpoint; those WebSockets are
// handed to the CDP proxy as connections of the session with its
// signingKey, so the driver's commands pass the proxy's filter, caps and
// counts like any client's.
type debugger struct {
	session, key string
	addr         string // host:port of this endpoint
	b            browser.Browser
	cdp          http.Handler
}

// browserPath is the path of the browser target's WebSocket here.
const browserPath = "/devtools/browser/wallcrawler"

func (g *debugger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/json/version":
		v, err := g.version(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		writeJSON(w, v)
	case p == "/json/list" || p == "/json":
		var list []map[string]any
		if err := g.fetch(r.Context(), "/json/list", &list); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		pages := []map[string]any{}
		for _, t := range list {
			id, _ := t["id"].(string)
			if t["type"] != "page" || !validID(id) {
				continue // the browser's own UI is not the driver's
			}
			t["webSocketDebuggerUrl"] = "ws://" + g.addr + "/devtools/page/" + id
			pages = append(pages, t)
		}
		writeJSON(w, pages)
	case p == browserPath:
		g.relay(w, r, "/cdp/"+g.session)
	case strings.HasPrefix(p, "/devtools/page/") && validID(strings.TrimPrefix(p, "/devtools/page/")):
		g.relay(w, r, "/cdp/"+g.session+"/page/"+strings.TrimPrefix(p, "/devtools/page/"))
	default:
		http.NotFound(w, r)
	}
}

// relay hands a WebSocket request to the CDP proxy as one of the session's
// clients, on path.
func (g *debugger) relay(w http.ResponseWriter, r *http.Request, path string) {
	out := r.Clone(r.Context())
	out.URL.Path, out.URL.RawPath, out.URL.RawQuery = path, "", ""
	out.Header.Set("Authorization", "Bearer "+g.key)
	g.cdp.ServeHTTP(w, out)
}

// version returns the browser's /json/version as Chromium writes it,
// chromedriver reading every field, with this endpoint's WebSocket URL.
func (g *debugger) version(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := browser.Call(ctx, g.b, "Browser.getVersion", nil)
	if err != nil {
		return nil, err
	}
	var v struct {
		Product, Revision, UserAgent, JSVersion, ProtocolVersion string
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("webdriver: browser version: %w", err)
	}
	return map[string]string{
		"Browser": v.Product, "Protocol-Version": v.ProtocolVersion, "User-Agent": v.UserAgent,
		"V8-Version": v.JSVersion, "WebKit-Version": "537.36 (" + v.Revision + ")",
		"webSocketDebuggerUrl": "ws://" + g.addr + browserPath,
	}, nil
}

// fetch reads a DevTools JSON endpoint of the browser into v.
func (g *debugger) fetch(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://devtools.invalid"+path, nil)
	if err != nil {
		return err
	}
	res, err := g.b.HTTPClient().Do(req)
	if err != nil {
		return fmt.Errorf("webdriver: browser %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("webdriver: browser %s: %s", path, res.Status)
	}
	return json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(v)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(v)
}

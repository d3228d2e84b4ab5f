package webdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
)

// TestNewSessionBody: whatever a client asks for, the driver gets the
// standard capabilities it asked for and one goog:chromeOptions, the
// attach to the session's browser; bodies that are not W3C are refused.
func TestNewSessionBody(t *testing.T) {
	const attach = `"goog:chromeOptions":{"debuggerAddress":"127.0.0.1:9"}`
	for _, c := range []struct {
		name, in, want, err string
	}{
		{"empty", ``, `{"capabilities":{"alwaysMatch":{` + attach + `},"firstMatch":[{}]}}`, ""},
		{"standard kept", `{"capabilities":{"alwaysMatch":{"browserName":"chrome","pageLoadStrategy":"eager","timeouts":{"implicit":5}}}}`,
			`{"capabilities":{"alwaysMatch":{"browserName":"chrome",` + attach + `,"pageLoadStrategy":"eager","timeouts":{"implicit":5}},"firstMatch":[{}]}}`, ""},
		{"binary, args, extensions, own debugger dropped",
			`{"capabilities":{"alwaysMatch":{"goog:chromeOptions":{"binary":"/bin/sh","args":["--no-sandbox"],"extensions":["UEs="],"debuggerAddress":"10.0.0.1:9222"}}}}`,
			`{"capabilities":{"alwaysMatch":{` + attach + `},"firstMatch":[{}]}}`, ""},
		{"vendor, proxy and BiDi dropped", `{"capabilities":{"alwaysMatch":{"proxy":{"proxyType":"manual","httpProxy":"10.0.0.1:3128"},"webSocketUrl":true,"se:cdp":"ws://x","goog:loggingPrefs":{"browser":"ALL"}}}}`,
			`{"capabilities":{"alwaysMatch":{` + attach + `},"firstMatch":[{}]}}`, ""},
		{"firstMatch filtered", `{"capabilities":{"firstMatch":[{"goog:chromeOptions":{"binary":"/bin/sh"},"browserName":"chrome"},{"platformName":"linux"}]}}`,
			`{"capabilities":{"alwaysMatch":{` + attach + `},"firstMatch":[{"browserName":"chrome"},{"platformName":"linux"}]}}`, ""},
		{"legacy desiredCapabilities", `{"desiredCapabilities":{"browserName":"chrome","chromeOptions":{"binary":"/bin/sh"}}}`,
			`{"capabilities":{"alwaysMatch":{"browserName":"chrome",` + attach + `},"firstMatch":[{}]}}`, ""},
		{"not JSON", `{"capabilities":`, "", "must be a JSON object"},
		{"alwaysMatch not an object", `{"capabilities":{"alwaysMatch":[1]}}`, "", "must be a JSON object"},
		{"too many firstMatch", `{"capabilities":{"firstMatch":[` + strings.Repeat(`{},`, 64) + `{}]}}`, "", "at most 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := newSessionBody([]byte(c.in), "127.0.0.1:9")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(c.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// resolver is a Resolver with one session, "sess_a", whose key is "key-a".
type resolver struct {
	b    browser.Browser
	keys []string // the keys it was asked about
}

func (r *resolver) WebDriverBrowser(_ context.Context, id, key string) (browser.Browser, error) {
	r.keys = append(r.keys, key)
	switch {
	case key != "key-a":
		return nil, fmt.Errorf("%w: bad key", cdp.ErrUnauthorized)
	case id != "sess_a":
		return nil, fmt.Errorf("%w: token of another session", cdp.ErrUnauthorized)
	case r.b == nil:
		return nil, fmt.Errorf("%w: not here", cdp.ErrNotFound)
	}
	return r.b, nil
}

func (r *resolver) WebDriverOwner(context.Context, string) (string, string, error) {
	return "", "", cdp.ErrNotFound
}

func (r *resolver) VerifyWebDriverNode(token, _ string) error {
	if token != "node-ok" {
		return cdp.ErrUnauthorized
	}
	return nil
}

// plainBrowser runs no sidecars (not Chromium's).
type plainBrowser struct{ browser.Browser }

// hostBrowser shares the host's network.
type hostBrowser struct {
	browser.Browser
	browser.Sidecars
}

func (hostBrowser) IsolatedNetwork() bool { return false }

// TestServeRefusals: each request the endpoint refuses before any driver
// runs, with the W3C error shape and a message saying what to fix.
func TestServeRefusals(t *testing.T) {
	for _, c := range []struct {
		name, driver, path string
		b                  browser.Browser
		header             http.Header
		status             int
		code, msg          string
	}{
		{"no key", "", "/webdriver/sess_a/session", plainBrowser{}, nil, 401, "unknown error", "X-BB-Signing-Key"},
		{"wrong key", "", "/webdriver/sess_a/session", plainBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-b"}}, 401, "unknown error", "signingKey"},
		{"key of another session", "", "/webdriver/sess_b/session", plainBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-a"}}, 401, "unknown error", "signingKey"},
		{"bad session id", "", "/webdriver/sess%20a/session", plainBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-a"}}, 404, "invalid session id", "no such session"},
		{"not a WebDriver command", "", "/webdriver/sess_a/shutdown", plainBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-a"}}, 404, "unknown command", "/shutdown"},
		{"forged node token", "", "/webdriver/sess_a/session", plainBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-a"}, "X-Quarry-Node-Token": {"forged"}}, 401, "unknown error", "node-to-node"},
		{"new session spelt otherwise", "", "/webdriver/sess_a/session/", plainBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-a"}}, 404, "unknown command", "/session/"},
		{"climbing out of /session", "", "/webdriver/sess_a/session/../shutdown", plainBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-a"}}, 404, "unknown command", "/shutdown"},
		{"session not running", "", "/webdriver/sess_a/session", nil, http.Header{"X-Bb-Signing-Key": {"key-a"}}, 404, "invalid session id", "not running"},
		{"no chromedriver", "/nonexistent/chromedriver", "/webdriver/sess_a/session", plainBrowser{}, http.Header{"Authorization": {"Bearer key-a"}}, 503, "session not created", "chromium-driver"},
		{"not Chromium", "", "/webdriver/sess_a/session", plainBrowser{}, http.Header{"Authorization": {"Basic " + "eDprZXktYQ=="}}, 503, "session not created", "network namespace"},
		{"host network", "", "/webdriver/sess_a/session", hostBrowser{}, http.Header{"X-Bb-Signing-Key": {"key-a"}}, 503, "session not created", "CAP_SYS_ADMIN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			driver := c.driver
			if driver == "" {
				driver = "/bin/true" // found, never started by these requests
			}
			s := New(&resolver{b: c.b}, Options{Driver: driver, CDP: http.NotFoundHandler()})
			defer s.Close()
			req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(`{"capabilities":{}}`))
			for k, v := range c.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			var e struct {
				Value struct{ Error, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != c.status || e.Value.Error != c.code || !strings.Contains(e.Value.Message, c.msg) {
				t.Fatalf("%d %s, want %d %s saying %q", rec.Code, rec.Body, c.status, c.code, c.msg)
			}
		})
	}
}

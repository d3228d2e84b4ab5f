package webdriver

import (
	"encoding/json"
	"errors"
	"fmt"
)

// allowedCaps are the capabilities a client may ask for in a new
// WebDriver session: the W3C standard ones that change how the driver
// treats the attached browser, nothing that picks a browser binary,
// arguments, extensions, a profile, a proxy or a BiDi socket. Every other
// capability (goog:chromeOptions, vendor extensions, proxy, webSocketUrl)
// is dropped.
var allowedCaps = map[string]bool{
	"browserName":               true,
	"browserVersion":            true,
	"platformName":              true,
	"acceptInsecureCerts":       true,
	"pageLoadStrategy":          true,
	"timeouts":                  true,
	"unhandledPromptBehavior":   true,
	"strictFileInteractability": true,
	"setWindowRect":             true,
}

// errCapabilities marks a new-session body that is not a W3C one.
var errCapabilities = errors.New("webdriver: invalid new session request")

// newSessionBody returns the body of a client's New Session request as
// quarry forwards it to the driver: the allowed capabilities of its
// alwaysMatch and firstMatch entries (W3C "capabilities", or the legacy
// "desiredCapabilities" when there is none), with one goog:chromeOptions
// that only attaches to the session's browser at debuggerAddress. A body
// that is not a JSON object, or whose capabilities are not shaped as W3C
// says, is refused (errCapabilities).
func newSessionBody(body []byte, debuggerAddress string) ([]byte, error) {
	var req struct {
		Capabilities *struct {
			AlwaysMatch map[string]json.RawMessage   `json:"alwaysMatch"`
			FirstMatch  []map[string]json.RawMessage `json:"firstMatch"`
		} `json:"capabilities"`
		Desired map[string]json.RawMessage `json:"desiredCapabilities"`
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: the body must be a JSON object {\"capabilities\": {\"alwaysMatch\": {...}, \"firstMatch\": [{...}]}}: %v", errCapabilities, err)
	}
	always := req.Desired
	var first []map[string]json.RawMessage
	if req.Capabilities != nil {
		always, first = req.Capabilities.AlwaysMatch, req.Capabilities.FirstMatch
	}
	if len(first) > 64 {
		return nil, fmt.Errorf("%w: at most 64 firstMatch entries", errCapabilities)
	}
	out := map[string]any{}
	for k, v := range always {
		if allowedCaps[k] {
			out[k] = v
		}
	}
	out["goog:chromeOptions"] = map[string]any{"debuggerAddress": debuggerAddress}
	firsts := []map[string]json.RawMessage{}
	for _, m := range first {
		f := map[string]json.RawMessage{}
		for k, v := range m {
			if _, dup := out[k]; allowedCaps[k] && !dup {
				f[k] = v
			}
		}
		firsts = append(firsts, f)
	}
	if len(firsts) == 0 {
		firsts = append(firsts, map[string]json.RawMessage{})
	}
	return json.Marshal(map[string]any{"capabilities": map[string]any{"alwaysMatch": out, "firstMatch": firsts}})
}

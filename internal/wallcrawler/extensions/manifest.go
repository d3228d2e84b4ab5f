package extensions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Manifest is what Wallcrawler reads of an extension's manifest.json.
type Manifest struct {
	Name    string
	Version string
}

// allowedPermissions are the API permissions an extension may ask for
// (permissions and optional_permissions). Each works within what the
// tenant already controls through CDP: its own pages, tabs, cookies and
// storage, with every connection still leaving through the egress proxy
// and its network policy. Anything else is refused, so that a permission
// Chromium adds later is refused until it is judged.
var allowedPermissions = map[string]bool{
	"activeTab": true, "alarms": true, "background": true, "bookmarks": true,
	"browsingData": true, "clipboardRead": true, "clipboardWrite": true,
	"contentSettings": true, "contextMenus": true, "cookies": true,
	"declarativeContent": true, "declarativeNetRequest": true,
	"declarativeNetRequestFeedback": true, "declarativeNetRequestWithHostAccess": true,
	"downloads": true, "favicon": true, "fontSettings": true, "history": true,
	"idle": true, "notifications": true, "offscreen": true, "pageCapture": true,
	"readingList": true, "scripting": true, "search": true, "sessions": true,
	"sidePanel": true, "storage": true, "tabGroups": true, "tabs": true,
	"topSites": true, "tts": true, "ttsEngine": true, "unlimitedStorage": true,
	"userScripts": true, "webNavigation": true, "webRequest": true,
	"webRequestAuthProvider": true,
}

// refusedPermissions says why the permissions that would cross
// Wallcrawler's confinement are refused; every permission outside
// allowedPermissions is refused too, with a general reason.
var refusedPermissions = map[string]string{
	"proxy":                  "it changes the browser's proxy, the one way out through the network policy",
	"debugger":               "it gives the extension a DevTools channel that bypasses Wallcrawler's CDP filter",
	"nativeMessaging":        "it starts programs on the host",
	"webRequestBlocking":     "it rewrites traffic in flight below the network policy's view (and Manifest V3 does not grant it)",
	"privacy":                "it changes the browser's network settings (WebRTC IP handling)",
	"management":             "it disables or uninstalls other extensions",
	"dns":                    "it resolves host names outside the egress proxy",
	"processes":              "it discloses the host's processes",
	"desktopCapture":         "it captures the host's screen",
	"gcm":                    "it connects to a push service outside the egress proxy",
	"identity":               "it signs in to accounts of the host's browser",
	"webAuthenticationProxy": "it answers WebAuthn requests on the host's behalf",
}

// refusedPrefixes refuse whole families of permissions.
var refusedPrefixes = map[string]string{
	"enterprise.": "it reads the host device's identity and keys",
	"system.":     "it discloses the host's hardware",
}

// checkPermission returns nil when perm is allowed, else an ErrInvalid
// naming it and why it is refused.
func checkPermission(field, perm string) error {
	if allowedPermissions[perm] {
		return nil
	}
	if why, ok := refusedPermissions[perm]; ok {
		return fmt.Errorf("%w: %s: permission %q is not allowed: %s", ErrInvalid, field, perm, why)
	}
	for prefix, why := range refusedPrefixes {
		if strings.HasPrefix(perm, prefix) {
			return fmt.Errorf("%w: %s: permission %q is not allowed: %s", ErrInvalid, field, perm, why)
		}
	}
	if isMatchPattern(perm) {
		return fmt.Errorf("%w: %s: %q is a host pattern: Manifest V3 lists hosts in host_permissions", ErrInvalid, field, perm)
	}
	return fmt.Errorf("%w: %s: permission %q is not on this server's list of allowed permissions", ErrInvalid, field, perm)
}

// isMatchPattern reports whether s looks like a host match pattern.
func isMatchPattern(s string) bool {
	return s == "<all_urls>" || strings.Contains(s, "://")
}

// checkHostPattern refuses a host pattern that reaches the host's files
// (file://): Wallcrawler loads extensions without file access.
func checkHostPattern(field, pattern string) error {
	scheme, _, ok := strings.Cut(pattern, "://")
	if ok && strings.EqualFold(scheme, "file") {
		return fmt.Errorf("%w: %s: %q is not allowed: extensions get no access to the host's files", ErrInvalid, field, pattern)
	}
	return nil
}

// parseManifest validates a Manifest V3 manifest.json: a JSON object with
// manifest_version 3, a name, a version of one to four dot-separated
// integers (0 to 65535), permissions within the allowlist and no file://
// host patterns.
func parseManifest(data []byte) (Manifest, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return Manifest{}, fmt.Errorf("%w: manifest.json is not a JSON object", ErrInvalid)
	}
	var mv json.Number
	if err := json.Unmarshal(raw["manifest_version"], &mv); err != nil || mv.String() != "3" {
		return Manifest{}, fmt.Errorf("%w: manifest.json: manifest_version must be 3 (Manifest V2 extensions no longer run in Chromium)", ErrInvalid)
	}
	var m Manifest
	if err := json.Unmarshal(raw["name"], &m.Name); err != nil || strings.TrimSpace(m.Name) == "" {
		return Manifest{}, fmt.Errorf("%w: manifest.json: name must be a non-empty string", ErrInvalid)
	}
	if err := json.Unmarshal(raw["version"], &m.Version); err != nil || !validVersion(m.Version) {
		return Manifest{}, fmt.Errorf("%w: manifest.json: version must be one to four dot-separated integers from 0 to 65535, like \"1.0.2\"", ErrInvalid)
	}
	for _, field := range []string{"permissions", "optional_permissions"} {
		perms, err := stringList(raw, field)
		if err != nil {
			return Manifest{}, err
		}
		for _, p := range perms {
			if err := checkPermission(field, p); err != nil {
				return Manifest{}, err
			}
		}
	}
	for _, field := range []string{"host_permissions", "optional_host_permissions"} {
		hosts, err := stringList(raw, field)
		if err != nil {
			return Manifest{}, err
		}
		for _, h := range hosts {
			if err := checkHostPattern(field, h); err != nil {
				return Manifest{}, err
			}
		}
	}
	if err := checkContentScripts(raw["content_scripts"]); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// checkContentScripts refuses file:// patterns in content_scripts'
// matches.
func checkContentScripts(data json.RawMessage) error {
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	var scripts []map[string]json.RawMessage
	if err := json.Unmarshal(data, &scripts); err != nil {
		return fmt.Errorf("%w: manifest.json: content_scripts must be a list of objects", ErrInvalid)
	}
	for i, s := range scripts {
		field := "content_scripts[" + strconv.Itoa(i) + "].matches"
		matches, err := stringList(s, "matches")
		if err != nil {
			return fmt.Errorf("%w: manifest.json: %s must be a list of strings", ErrInvalid, field)
		}
		for _, m := range matches {
			if err := checkHostPattern(field, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// stringList reads the optional list of strings raw[field].
func stringList(raw map[string]json.RawMessage, field string) ([]string, error) {
	data, ok := raw[field]
	if !ok || string(data) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%w: manifest.json: %s must be a list of strings", ErrInvalid, field)
	}
	return slices.Clip(list), nil
}

// validVersion reports whether v is one to four dot-separated integers
// from 0 to 65535 without leading zeros, as Chromium requires.
func validVersion(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 5 || (len(p) > 1 && p[0] == '0') {
			return false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 || strings.ContainsAny(p, "+-") {
			return false
		}
	}
	return true
}

package console

import (
	"regexp"
	"strings"
	"testing"
)

// TestStylesheetDarkModeAndFocus: the stylesheet follows the system's
// dark setting through its colour variables (no light surface left hard
// coded outside them), and never hides keyboard focus.
func TestStylesheetDarkModeAndFocus(t *testing.T) {
	b, err := staticFS.ReadFile("static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	dark := strings.Index(css, "@media (prefers-color-scheme: dark)")
	if dark < 0 || !strings.Contains(css[dark:], "--bg:") || !strings.Contains(css[dark:], "--field:") {
		t.Error("no dark palette under prefers-color-scheme: dark")
	}
	if !regexp.MustCompile(`:focus-visible\s*\{[^}]*outline:\s*3px solid`).MatchString(css) {
		t.Error("no visible focus ring")
	}
	if regexp.MustCompile(`outline:\s*(none|0)\b`).MatchString(css) {
		t.Error("a rule hides the focus outline")
	}
	// Light surfaces are variables, so that the dark palette reaches them.
	for _, m := range regexp.MustCompile(`background:\s*(#f[0-9a-f]{2,5})\b`).FindAllStringSubmatch(css, -1) {
		t.Errorf("hard-coded light background %s", m[1])
	}
}

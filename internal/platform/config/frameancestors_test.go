package config

import "testing"

func TestCheckFrameAncestors(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{
		{"", true},
		{"*", true},
		{"'none'", true},
		{"'self'", true},
		{"'self' https://app.example.com", true},
		{"https://*.example.com:8443 http://127.0.0.1:3000", true},
		{"https:", true},
		{"'none' 'self'", false},
		{"https://app.example.com; script-src *", false},
		{"https://a.example,https://b.example", false},
		{"'unsafe-inline'", false},
		{"app.example.com", false},
		{"https://app.example.com/path", false},
		{"javascript:alert(1)", false},
		{"https://u@app.example.com", false},
		{"   ", false},
	} {
		if err := checkFrameAncestors(c.v); (err == nil) != c.ok {
			t.Errorf("checkFrameAncestors(%q) = %v, want ok=%v", c.v, err, c.ok)
		}
	}
}

package sessions_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/platform/origin"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// connectUrl and uploadUrl take their origin from --public-url, else the
// request's Host; forged X-Forwarded-* headers count only from a trusted
// proxy. Through the real API and Chromium: the connectUrl the client gets
// (when it points at the test server) opens the browser.
func TestPublicOrigin(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	elsewhere := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	forged := []string{"X-Forwarded-Host", "evil.example:1234", "X-Forwarded-Proto", "https"}
	tests := []struct {
		name      string
		public    string
		trusted   []netip.Prefix
		hdr       []string
		want      string // origin of both URLs; "" = the test server's own
		connectOK bool   // the connectUrl reaches the test server
	}{
		{"no resolver settings, forged headers ignored", "", nil, forged, "", true},
		{"untrusted client, forged headers ignored", "", elsewhere, forged, "", true},
		{"trusted proxy, headers used", "", loopback, forged, "https://evil.example:1234", false},
		{"public URL", "https://browsers.example.com/base", loopback, forged, "https://browsers.example.com/base", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := origin.New(tt.public, tt.trusted)
			if err != nil {
				t.Fatal(err)
			}
			st := newStackWith(t, 1, sessions.Options{}, stackOptions{Origin: res})
			want := tt.want
			if want == "" {
				want = st.srv.URL
			}
			var c struct {
				UploadURL string `json:"uploadUrl"`
			}
			if code := st.call(t, "POST", "/v1/contexts", map[string]any{}, &c, tt.hdr...); code != http.StatusCreated {
				t.Fatalf("create context: %d", code)
			}
			if !strings.HasPrefix(c.UploadURL, want+"/wallcrawler/uploads/") {
				t.Fatalf("uploadUrl %s, want origin %s", c.UploadURL, want)
			}
			var s sessionJSON
			if code := st.call(t, "POST", "/v1/sessions", map[string]any{}, &s, tt.hdr...); code != http.StatusCreated {
				t.Fatalf("create session: %d", code)
			}
			defer st.release(t, s.ID)
			wantWS := "ws" + strings.TrimPrefix(want, "http") + "/wallcrawler/cdp/" + s.ID + "?"
			if !strings.HasPrefix(s.ConnectURL, wantWS) {
				t.Fatalf("connectUrl %s, want prefix %s", s.ConnectURL, wantWS)
			}
			if tt.connectOK {
				connect(t, s.ConnectURL)
			} else if u, _ := url.Parse(s.ConnectURL); strings.Contains(st.srv.URL, u.Host) {
				t.Fatalf("connectUrl %s points at the test server", s.ConnectURL)
			}
		})
	}
}

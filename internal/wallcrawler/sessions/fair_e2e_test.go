package sessions_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// TestCDPClientsPerSession: a tenant opening more CDP connections to its
// own session than the cap (32) gets 429 in Browserbase's error shape,
// before any upgrade; the connections under the cap work, and a slot
// freed is taken again.
func TestCDPClientsPerSession(t *testing.T) {
	st := newStack(t, 2, sessions.Options{})
	s := st.create(t, nil)
	conns := make([]*rawCDP, 32)
	for i := range conns {
		conns[i] = dialCDP(t, s.ConnectURL)
	}
	var v struct{ Product string }
	conns[0].ok("", "Browser.getVersion", "", &v)
	conns[31].ok("", "Browser.getVersion", "", &v)
	if !strings.Contains(v.Product, "Chrome") {
		t.Fatalf("Browser.getVersion: product %q", v.Product)
	}

	check429 := func(u string) {
		t.Helper()
		code, body := testenv.RawUpgrade(t, u)
		var e struct {
			StatusCode int    `json:"statusCode"`
			Error      string `json:"error"`
			Message    string `json:"message"`
		}
		if code != http.StatusTooManyRequests || json.Unmarshal(body, &e) != nil || e.StatusCode != 429 || e.Error != "Too Many Requests" ||
			!strings.Contains(e.Message, "32") || !strings.Contains(e.Message, "--wallcrawler-max-cdp-clients") {
			t.Fatalf("33rd connection: %d %s, want 429 in shape naming the cap and its setting", code, body)
		}
	}
	check429(s.ConnectURL)
	// A page's DevTools connection is a client of the same session.
	targetID, _ := conns[1].newPage()
	pu, _ := url.Parse(s.ConnectURL)
	pu.Path += "/page/" + targetID
	check429(pu.String())

	// Another session of the same tenant has its own share.
	other := st.create(t, nil)
	dialCDP(t, other.ConnectURL).ok("", "Browser.getVersion", "", &v)

	// A connection that ends gives its slot back.
	conns[5].c.CloseNow()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := testenv.RawUpgrade(t, s.ConnectURL)
		if code == http.StatusSwitchingProtocols {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after closing one connection: %d, want 101", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conns[31].ok("", "Browser.getVersion", "", &v)
}

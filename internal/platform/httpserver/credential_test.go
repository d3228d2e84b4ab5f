package httpserver

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRequestsPerCredential plays a tenant that holds slow requests with
// one token: past its cap its next request is answered 429 at once,
// whatever header carries the token, while another token, a request
// without one, and the same token once a request finished are served.
func TestRequestsPerCredential(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	})
	addr := startLimited(t, h, Limits{ReadHeaderTimeout: 5 * time.Second, MaxConns: 64, MaxRequestsPerCredential: 2})
	do := func(path string, header ...string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { do("/slow", "Authorization", "Bearer chk_tenant_a") })
		<-started
	}
	for _, tt := range []struct {
		name   string
		header []string
		want   int
	}{
		{"the same token, a third request", []string{"Authorization", "Bearer chk_tenant_a"}, http.StatusTooManyRequests},
		{"another token", []string{"Authorization", "Bearer chk_tenant_b"}, http.StatusOK},
		{"an API key", []string{"X-BB-API-Key", "bb_live_b"}, http.StatusOK},
		{"no credential", nil, http.StatusOK},
	} {
		code, body := do("/", tt.header...)
		if code != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, code, body, tt.want)
		}
		if code == http.StatusTooManyRequests && !strings.Contains(body, "--max-requests-per-credential") {
			t.Errorf("%s: the refusal %q does not name the flag", tt.name, body)
		}
	}
	close(release)
	wg.Wait()
	if code, body := do("/", "Authorization", "Bearer chk_tenant_a"); code != http.StatusOK {
		t.Errorf("the token once its requests finished: %d %s", code, body)
	}
}

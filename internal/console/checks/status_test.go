package checks

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// publicBackend serves one user's one check, DOWN because the network
// policy refused where a redirect pointed.
type publicBackend struct {
	Backend // the methods the public page does not call
	now     time.Time
}

const refusedRun = "fetch: address blocked: 10.9.8.7:8443 is a private address (allow it with --allow-networks=10.9.8.7:8443) (redirect to https://internal.example:8443/admin/secret-path)"

func (b publicBackend) StatusPageUser(_ context.Context, token string) (string, error) {
	if token != "tok" {
		return "", console.ErrNotFound
	}
	return "u1", nil
}

func (b publicBackend) StatusPage(context.Context, string) (StatusPage, error) {
	return StatusPage{Enabled: true, Token: "tok"}, nil
}

func (b publicBackend) Incidents(context.Context, string) ([]Incident, error) { return nil, nil }

func (b publicBackend) Checks(context.Context, string, Filter) ([]Check, error) {
	return []Check{{ID: "c1", URL: "https://shop.example/health", Type: "AVAILABILITY", Status: "ACTIVE", LastStatus: "DOWN"}}, nil
}

func (b publicBackend) Runs(context.Context, string, string, int) ([]Run, error) {
	return []Run{{At: b.now.Add(-time.Minute), Up: false, Error: refusedRun}, {At: b.now.Add(-2 * time.Minute), Up: true}}, nil
}

func (b publicBackend) Days(context.Context, string, string, time.Time) ([]Day, error) {
	return nil, nil
}

// TestPublicStatusPageHidesErrors: the public status page names the
// check's host and the class of a failure, never the error, which here
// names a private address, a port and a path the owner did not publish.
func TestPublicStatusPageHidesErrors(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now },
		Areas: []console.Area{New(publicBackend{now: now})}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/console/status/tok")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "shop.example") {
		t.Fatalf("status page: %d\n%s", resp.StatusCode, page)
	}
	for _, secret := range []string{"10.9.8.7", "8443", "secret-path", "internal.example", "allow-networks"} {
		if strings.Contains(page, secret) {
			t.Errorf("the public status page shows %q", secret)
		}
	}
	if !strings.Contains(page, "DOWN: refused by the network policy") {
		t.Errorf("the public status page does not say why the run was down in a class:\n%s", page)
	}
}

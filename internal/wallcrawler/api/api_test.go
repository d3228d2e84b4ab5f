package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/wallcrawler/api"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

type usageFunc func(ctx context.Context, projectID string) (api.Usage, error)

func (f usageFunc) ProjectUsage(ctx context.Context, id string) (api.Usage, error) { return f(ctx, id) }

type bundle struct {
	store      *auth.Store
	p1, p2, p3 auth.Project
	key        string // may use p1 (primary) and p2
	key3       string // may use p3 only
}

func setup(t *testing.T, opts *api.Options) (*httptest.Server, *bundle) {
	t.Helper()
	ctx := context.Background()
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	client := ddb.NewClient(s)
	names, err := tables.EnsureTables(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	st := auth.New(client, names, nil)
	b := &bundle{store: st}
	for i, p := range []*auth.Project{&b.p1, &b.p2, &b.p3} {
		if *p, err = st.CreateProject(ctx, auth.CreateProjectInput{Name: []string{"one", "two", "three"}[i], Concurrency: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if b.key, _, err = st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: b.p1.ID, ProjectIDs: []string{b.p2.ID}}); err != nil {
		t.Fatal(err)
	}
	if b.key3, _, err = st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: b.p3.ID}); err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &api.Options{}
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	mux.Handle("/wallcrawler/", http.StripPrefix("/wallcrawler", api.New(st, opts)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, b
}

// get performs a GET with the given headers and decodes the JSON body.
func get(t *testing.T, srv *httptest.Server, path string, hdr map[string]string, into any) int {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+"/wallcrawler"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("%s: content type %q", path, ct)
	}
	body, _ := io.ReadAll(resp.Body)
	if into != nil {
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
	}
	return resp.StatusCode
}

type apiError struct {
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Message    string `json:"message"`
}

type project struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	OwnerID        string `json:"ownerId"`
	DefaultTimeout int    `json:"defaultTimeout"`
	Concurrency    int    `json:"concurrency"`
	CreatedAt      string `json:"createdAt"`
	UpdatedAt      string `json:"updatedAt"`
}

func wantError(t *testing.T, srv *httptest.Server, path string, hdr map[string]string, status int) {
	t.Helper()
	var e apiError
	if got := get(t, srv, path, hdr, &e); got != status {
		t.Fatalf("GET %s %v: status %d, want %d", path, hdr, got, status)
	}
	if e.StatusCode != status || e.Error != http.StatusText(status) || e.Message == "" {
		t.Fatalf("GET %s: error body %+v", path, e)
	}
}

func TestAuthFailures(t *testing.T) {
	t.Parallel()
	srv, b := setup(t, nil)
	wantError(t, srv, "/v1/projects", nil, 401)
	wantError(t, srv, "/v1/projects", map[string]string{"X-BB-API-Key": "wc_wrong"}, 401)
	wantError(t, srv, "/v1/projects/"+b.p1.ID, map[string]string{"x-wc-api-key": b.key + "x"}, 401)
	// A project the key may not use, in either header family: 403.
	wantError(t, srv, "/v1/projects", map[string]string{"X-BB-API-Key": b.key, "x-bb-project-id": b.p3.ID}, 403)
	wantError(t, srv, "/v1/projects", map[string]string{"x-wc-api-key": b.key, "x-wc-project-id": b.p3.ID}, 403)
	// Another tenant's project in the path: 404.
	wantError(t, srv, "/v1/projects/"+b.p3.ID, map[string]string{"X-BB-API-Key": b.key}, 404)
	wantError(t, srv, "/v1/projects/"+b.p3.ID+"/usage", map[string]string{"X-BB-API-Key": b.key}, 404)
	wantError(t, srv, "/v1/nothing", map[string]string{"X-BB-API-Key": b.key}, 404)

	ctx := context.Background()
	// Inactive project: 403 when selected.
	if err := b.store.SetProjectStatus(ctx, b.p2.ID, auth.StatusInactive); err != nil {
		t.Fatal(err)
	}
	wantError(t, srv, "/v1/projects", map[string]string{"X-BB-API-Key": b.key, "x-bb-project-id": b.p2.ID}, 403)
	if err := b.store.SetProjectStatus(ctx, b.p3.ID, auth.StatusInactive); err != nil {
		t.Fatal(err)
	}
	wantError(t, srv, "/v1/projects", map[string]string{"X-BB-API-Key": b.key3}, 403)
	// Revoked key: 401.
	if err := b.store.RevokeKey(ctx, b.key); err != nil {
		t.Fatal(err)
	}
	wantError(t, srv, "/v1/projects", map[string]string{"X-BB-API-Key": b.key}, 401)
}

func TestProjects(t *testing.T) {
	t.Parallel()
	srv, b := setup(t, nil)
	hdr := map[string]string{"X-BB-API-Key": b.key}
	var list []project
	if got := get(t, srv, "/v1/projects", hdr, &list); got != 200 {
		t.Fatalf("status %d", got)
	}
	if len(list) != 2 || list[0].ID != b.p1.ID || list[1].ID != b.p2.ID {
		t.Fatalf("projects = %+v", list)
	}
	var p project
	if got := get(t, srv, "/v1/projects/"+b.p2.ID, map[string]string{"x-wc-api-key": b.key}, &p); got != 200 {
		t.Fatalf("status %d", got)
	}
	if p.ID != b.p2.ID || p.Name != "two" || p.Concurrency != 2 || p.DefaultTimeout != 3600 || p.CreatedAt == "" || p.UpdatedAt == "" {
		t.Fatalf("project = %+v", p)
	}
	var u map[string]any
	if got := get(t, srv, "/v1/projects/"+b.p1.ID+"/usage", hdr, &u); got != 200 {
		t.Fatalf("status %d", got)
	}
	if len(u) != 2 || u["browserMinutes"] != 0.0 || u["proxyBytes"] != 0.0 {
		t.Fatalf("usage = %v", u)
	}
}

func TestUsageSource(t *testing.T) {
	t.Parallel()
	srv, b := setup(t, &api.Options{Usage: usageFunc(func(_ context.Context, id string) (api.Usage, error) {
		if id == "" {
			return api.Usage{}, errors.New("no project")
		}
		return api.Usage{BrowserMinutes: 2.5, ProxyBytes: 1234}, nil
	})})
	var u api.Usage
	if got := get(t, srv, "/v1/projects/"+b.p1.ID+"/usage", map[string]string{"X-BB-API-Key": b.key}, &u); got != 200 {
		t.Fatalf("status %d", got)
	}
	if u.BrowserMinutes != 2.5 || u.ProxyBytes != 1234 {
		t.Fatalf("usage = %+v", u)
	}
}

func TestServerErrorShape(t *testing.T) {
	t.Parallel()
	srv, b := setup(t, &api.Options{Usage: usageFunc(func(context.Context, string) (api.Usage, error) {
		return api.Usage{}, errors.New("boom")
	})})
	wantError(t, srv, "/v1/projects/"+b.p1.ID+"/usage", map[string]string{"X-BB-API-Key": b.key}, 500)
}

package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/wallcrawler/api"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/extensions"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// ctxClock is a settable test clock.
type ctxClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *ctxClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *ctxClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// ctxEnv is a server with the API under /wallcrawler/ and the signed
// uploads under /blobs/, as a deployment mounts them.
type ctxEnv struct {
	srv      *httptest.Server
	contexts *contexts.Store
	blobs    *blob.Dir
	clock    *ctxClock
	p1, p2   auth.Project // key may use both, p1 primary
	p3       auth.Project // key3 only
	key      string
	key3     string

	// contexts are capped at 3 a project; extensions are served too, with
	// archives capped at 64 KiB and 3 a project.
	extensions *extensions.Store
}

func setupContexts(t *testing.T) *ctxEnv {
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
	e := &ctxEnv{clock: &ctxClock{t: time.Date(2026, 5, 6, 7, 8, 9, 123_456_789, time.UTC)}}
	for i, p := range []*auth.Project{&e.p1, &e.p2, &e.p3} {
		if *p, err = st.CreateProject(ctx, auth.CreateProjectInput{Name: []string{"one", "two", "three"}[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if e.key, _, err = st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: e.p1.ID, ProjectIDs: []string{e.p2.ID}}); err != nil {
		t.Fatal(err)
	}
	if e.key3, _, err = st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: e.p3.ID}); err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e.blobs = blobs
	e.contexts = contexts.New(client, names, blobs, &contexts.Options{Now: e.clock.now, MaxPerProject: 3})
	e.extensions = extensions.New(blobs, &extensions.Options{Now: e.clock.now, MaxZipBytes: 64 << 10, MaxPerProject: 3, TempDir: t.TempDir()})
	signer := blob.NewSigner([]byte("test secret"), "/blobs/", e.clock.now)
	h := api.New(st, &api.Options{
		Contexts:   e.contexts,
		Extensions: e.extensions,
		Uploads:    signer,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	mux := http.NewServeMux()
	mux.Handle("/wallcrawler/", http.StripPrefix("/wallcrawler", h))
	mux.Handle("/blobs/", signer.HandlerWith(blobs, blob.HandlerOptions{MaxBytes: 1 << 20, Allow: e.contexts.AllowUpload}))
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// call sends method path (under /wallcrawler) with key and body, and
// returns the status and the raw body.
func (e *ctxEnv) call(t *testing.T, method, path, key, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+"/wallcrawler"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(api.HeaderBBAPIKey, key)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNoContent {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s: content type %q", method, path, ct)
		}
	}
	return resp.StatusCode, b
}

type contextUpload struct {
	ID                       string  `json:"id"`
	UploadURL                string  `json:"uploadUrl"`
	PublicKey                *string `json:"publicKey"`
	CipherAlgorithm          string  `json:"cipherAlgorithm"`
	InitializationVectorSize *int    `json:"initializationVectorSize"`
}

// create posts body and decodes the 201 answer.
func (e *ctxEnv) create(t *testing.T, key, body string) contextUpload {
	t.Helper()
	status, b := e.call(t, "POST", "/v1/contexts", key, body)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/contexts %s: %d %s", body, status, b)
	}
	var out contextUpload
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	e.checkUpload(t, out)
	return out
}

func (e *ctxEnv) checkUpload(t *testing.T, u contextUpload) {
	t.Helper()
	if !regexp.MustCompile(`^ctx_[0-9a-f]{32}$`).MatchString(u.ID) ||
		u.PublicKey == nil || *u.PublicKey != "" || u.CipherAlgorithm != "NONE" ||
		u.InitializationVectorSize == nil || *u.InitializationVectorSize != 0 ||
		!strings.HasPrefix(u.UploadURL, e.srv.URL+"/blobs/") || !strings.Contains(u.UploadURL, "/"+u.ID+"/profile.tar.gz?expires=") {
		t.Fatalf("upload answer %+v", u)
	}
}

// wantCtxError checks a Browserbase-shaped error answer.
func wantCtxError(t *testing.T, status int, b []byte, wantStatus int, msg string) {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("%d %s: %v", status, b, err)
	}
	if status != wantStatus || e.StatusCode != wantStatus || e.Error != http.StatusText(wantStatus) || !strings.Contains(e.Message, msg) {
		t.Fatalf("answer %d %s, want %d with %q", status, b, wantStatus, msg)
	}
}

func profileArchive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func upload(t *testing.T, e *ctxEnv, rawURL string, data []byte) int {
	t.Helper()
	req, err := http.NewRequest("PUT", rawURL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestContextsFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupContexts(t)

	// Create with no body: the key's primary project.
	up := e.create(t, e.key, "")
	if !strings.HasPrefix(up.UploadURL, e.srv.URL+"/blobs/"+e.p1.ID+"/"+up.ID+"/profile.tar.gz?") {
		t.Fatalf("uploadUrl %s", up.UploadURL)
	}

	// GET: the Browserbase shape, no name when none was given.
	status, b := e.call(t, "GET", "/v1/contexts/"+up.ID, e.key, "")
	if status != http.StatusOK {
		t.Fatalf("GET: %d %s", status, b)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	wantTime := "2026-05-06T07:08:09.123Z"
	if len(raw) != 4 || raw["id"] != up.ID || raw["projectId"] != e.p1.ID || raw["createdAt"] != wantTime || raw["updatedAt"] != wantTime {
		t.Fatalf("GET = %s", b)
	}

	// Upload a profile through the signed URL; Restore finds it.
	if got := upload(t, e, up.UploadURL, profileArchive(t, map[string]string{"Default/Cookies": "jar"})); got != http.StatusOK {
		t.Fatalf("upload: %d", got)
	}
	c, err := e.contexts.Get(ctx, e.p1.ID, up.ID)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if ok, err := e.contexts.Restore(ctx, c, dir); err != nil || !ok {
		t.Fatalf("Restore = %v, %v", ok, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "Default", "Cookies")); err != nil || string(data) != "jar" {
		t.Fatalf("restored Cookies = %q, %v", data, err)
	}

	// PUT: a new upload URL, updatedAt touched.
	e.clock.add(2 * time.Second)
	status, b = e.call(t, "PUT", "/v1/contexts/"+up.ID, e.key, "")
	if status != http.StatusOK {
		t.Fatalf("PUT: %d %s", status, b)
	}
	var up2 contextUpload
	if err := json.Unmarshal(b, &up2); err != nil {
		t.Fatal(err)
	}
	e.checkUpload(t, up2)
	if up2.ID != up.ID || up2.UploadURL == up.UploadURL {
		t.Fatalf("PUT = %+v (create gave %+v)", up2, up)
	}
	if _, b = e.call(t, "GET", "/v1/contexts/"+up.ID, e.key, ""); !strings.Contains(string(b), `"updatedAt":"2026-05-06T07:08:11.123Z"`) ||
		!strings.Contains(string(b), `"createdAt":"`+wantTime+`"`) {
		t.Fatalf("GET after PUT = %s", b)
	}
	// The first URL is still valid for its 15 minutes; then it expires.
	e.clock.add(15*time.Minute - time.Second)
	if got := upload(t, e, up.UploadURL, profileArchive(t, nil)); got != http.StatusForbidden {
		t.Fatalf("expired upload: %d", got)
	}
	if got := upload(t, e, up2.UploadURL, profileArchive(t, map[string]string{"Default/Cookies": "jar 2"})); got != http.StatusOK {
		t.Fatalf("second upload: %d", got)
	}

	// Another tenant sees nothing and can change nothing.
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		status, b := e.call(t, method, "/v1/contexts/"+up.ID, e.key3, "")
		wantCtxError(t, status, b, http.StatusNotFound, "Context not found")
	}

	// DELETE: 204, then gone, archive included.
	status, b = e.call(t, "DELETE", "/v1/contexts/"+up.ID, e.key, "")
	if status != http.StatusNoContent || len(b) != 0 {
		t.Fatalf("DELETE: %d %s", status, b)
	}
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		status, b := e.call(t, method, "/v1/contexts/"+up.ID, e.key, "")
		wantCtxError(t, status, b, http.StatusNotFound, "Context not found")
	}
	if ok, err := e.contexts.Restore(ctx, c, t.TempDir()); ok || err != nil {
		t.Fatalf("Restore after DELETE = %v, %v", ok, err)
	}
}

func TestContextsCreate(t *testing.T) {
	t.Parallel()
	e := setupContexts(t)
	tests := []struct {
		name    string
		key     string
		body    string
		status  int
		project string // of the created context
		ctxName string
		msg     string // of the error
	}{
		{name: "empty object", key: e.key, body: `{}`, status: 201, project: e.p1.ID},
		{name: "named", key: e.key, body: `{"name":"login"}`, status: 201, project: e.p1.ID, ctxName: "login"},
		{name: "second project, unknown fields", key: e.key, body: `{"projectId":"` + e.p2.ID + `","name":"x","persist":true,"extra":{"a":1}}`, status: 201, project: e.p2.ID, ctxName: "x"},
		{name: "primary project explicit", key: e.key3, body: `{"projectId":"` + e.p3.ID + `"}`, status: 201, project: e.p3.ID},
		{name: "other tenant's project", key: e.key, body: `{"projectId":"` + e.p3.ID + `"}`, status: 404, msg: "Project not found"},
		{name: "unknown project", key: e.key, body: `{"projectId":"proj_nope"}`, status: 404, msg: "Project not found"},
		{name: "malformed", key: e.key, body: `{"projectId":`, status: 400, msg: "Invalid JSON"},
		{name: "wrong type", key: e.key, body: `{"name":3}`, status: 400, msg: "Invalid JSON"},
		{name: "not an object", key: e.key, body: `[1]`, status: 400, msg: "Invalid JSON"},
		{name: "too large", key: e.key, body: `{"name":"` + strings.Repeat("x", 100<<10) + `"}`, status: 413, msg: "too large"},
		{name: "no key", body: `{}`, status: 401, msg: "API key"},
		{name: "bad key", key: e.key + "x", body: `{}`, status: 401, msg: "API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := e.call(t, "POST", "/v1/contexts", tt.key, tt.body)
			if tt.status != http.StatusCreated {
				wantCtxError(t, status, b, tt.status, tt.msg)
				return
			}
			if status != tt.status {
				t.Fatalf("%d %s", status, b)
			}
			var up contextUpload
			if err := json.Unmarshal(b, &up); err != nil {
				t.Fatal(err)
			}
			e.checkUpload(t, up)
			c, err := e.contexts.Get(context.Background(), tt.project, up.ID)
			if err != nil || c.Name != tt.ctxName || c.Status != contexts.StatusCreated {
				t.Fatalf("stored %+v, %v", c, err)
			}
			// The key reaches it whichever of its projects it lives in.
			var got struct {
				ProjectID string `json:"projectId"`
				Name      string `json:"name"`
			}
			status, b = e.call(t, "GET", "/v1/contexts/"+up.ID, tt.key, "")
			if err := json.Unmarshal(b, &got); err != nil || status != 200 || got.ProjectID != tt.project || got.Name != tt.ctxName {
				t.Fatalf("GET: %d %s", status, b)
			}
		})
	}
}

func TestContextsUnauthenticated(t *testing.T) {
	t.Parallel()
	e := setupContexts(t)
	up := e.create(t, e.key, "")
	tests := []struct{ method, path string }{
		{"POST", "/v1/contexts"},
		{"GET", "/v1/contexts/" + up.ID},
		{"PUT", "/v1/contexts/" + up.ID},
		{"DELETE", "/v1/contexts/" + up.ID},
	}
	for _, tt := range tests {
		status, b := e.call(t, tt.method, tt.path, "", "")
		wantCtxError(t, status, b, http.StatusUnauthorized, "API key")
	}
	// Still there.
	if status, _ := e.call(t, "GET", "/v1/contexts/"+up.ID, e.key, ""); status != http.StatusOK {
		t.Fatalf("GET: %d", status)
	}
}

func TestContextsUnknown(t *testing.T) {
	t.Parallel()
	e := setupContexts(t)
	for _, id := range []string{"ctx_00000000000000000000000000000000", "nope"} {
		status, b := e.call(t, "GET", "/v1/contexts/"+id, e.key, "")
		wantCtxError(t, status, b, http.StatusNotFound, "Context not found")
	}
}

func TestContextsDisabled(t *testing.T) {
	t.Parallel()
	srv, b := setup(t, nil)
	req, err := http.NewRequest("POST", srv.URL+"/wallcrawler/v1/contexts", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderBBAPIKey, b.key)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST /v1/contexts without a contexts store: %d", resp.StatusCode)
	}
}

// putBody PUTs body to rawURL and returns the status and the decoded JSON
// answer.
func putBody(t *testing.T, e *ctxEnv, rawURL string, body io.Reader) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequest("PUT", rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("PUT answer: %v", err)
	}
	return resp.StatusCode, out
}

// A context's upload URL dies with the context: after DELETE it answers
// 404 and stores nothing, and an upload still streaming in when the
// context is deleted is refused and its archive removed.
func TestContextUploadURLDiesWithContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupContexts(t)
	archive := profileArchive(t, map[string]string{"Default/Cookies": "jar"})
	restored := func(t *testing.T, id string) bool {
		t.Helper()
		// The archive key is known even once the context is gone.
		c := contexts.Context{ID: id, ProjectID: e.p1.ID}
		ok, err := e.contexts.Restore(ctx, c, filepath.Join(t.TempDir(), "p"))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	t.Run("after delete", func(t *testing.T) {
		up := e.create(t, e.key, "")
		if got := upload(t, e, up.UploadURL, archive); got != http.StatusOK {
			t.Fatalf("upload: %d", got)
		}
		if status, b := e.call(t, "DELETE", "/v1/contexts/"+up.ID, e.key, ""); status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", status, b)
		}
		status, body := putBody(t, e, up.UploadURL, bytes.NewReader(archive))
		if status != http.StatusNotFound || !strings.Contains(body["error"], "no longer exists") {
			t.Fatalf("upload after DELETE: %d %v, want 404", status, body)
		}
		if restored(t, up.ID) {
			t.Fatal("the deleted context's archive was written again")
		}
	})

	t.Run("delete while uploading", func(t *testing.T) {
		up := e.create(t, e.key, "")
		pr, pw := io.Pipe()
		type answer struct {
			status int
			body   map[string]string
		}
		done := make(chan answer, 1)
		go func() {
			status, body := putBody(t, e, up.UploadURL, pr)
			done <- answer{status, body}
		}()
		// Half the archive is in the store's temporary file (so the
		// upload passed its first check), then the context is deleted,
		// then the rest arrives.
		if _, err := pw.Write(archive[:len(archive)/2]); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(e.blobs.Root, e.p1.ID, up.ID, ".tmp-*")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if m, _ := filepath.Glob(tmp); len(m) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the upload never reached the store")
			}
		}
		if status, b := e.call(t, "DELETE", "/v1/contexts/"+up.ID, e.key, ""); status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", status, b)
		}
		if _, err := pw.Write(archive[len(archive)/2:]); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		a := <-done
		if a.status != http.StatusNotFound || !strings.Contains(a.body["error"], "no longer exists") {
			t.Fatalf("racing upload: %d %v, want 404", a.status, a.body)
		}
		if restored(t, up.ID) {
			t.Fatal("the racing upload's archive survived the DELETE")
		}
	})
}

// TestContextsQuota creates past a project's context cap (3 here), one
// by one and then 12 at once: the cap holds under concurrent creates, a
// refusal is 403 with what to do, another project still creates, and a
// delete makes room again.
func TestContextsQuota(t *testing.T) {
	t.Parallel()
	e := setupContexts(t)
	var ids []string
	for range 3 {
		ids = append(ids, e.create(t, e.key, "").ID)
	}
	status, b := e.call(t, "POST", "/v1/contexts", e.key, "")
	wantCtxError(t, status, b, http.StatusForbidden, "This project has 3 contexts, the most allowed: delete one (DELETE /v1/contexts/{id})")

	var wg sync.WaitGroup
	var created atomic.Int32
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, b := e.call(t, "POST", "/v1/contexts", e.key3, "")
			switch status {
			case http.StatusCreated:
				created.Add(1)
			case http.StatusForbidden:
			default:
				t.Errorf("concurrent create: %d %s", status, b)
			}
		}()
	}
	wg.Wait()
	if n := created.Load(); n != 3 {
		t.Fatalf("%d of 12 concurrent creates passed a cap of 3", n)
	}

	if status, b := e.call(t, "DELETE", "/v1/contexts/"+ids[0], e.key, ""); status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", status, b)
	}
	e.create(t, e.key, "")
	status, b = e.call(t, "POST", "/v1/contexts", e.key, "")
	wantCtxError(t, status, b, http.StatusForbidden, "This project has 3 contexts")
}

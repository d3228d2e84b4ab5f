package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler/api"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// uploadsEnv serves the API with the given blob store and Uploader and
// returns its URL (API under /wallcrawler) and an API key.
func uploadsEnv(t *testing.T, blobs blob.Store, up blob.Uploader) (string, string) {
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
	p, err := st.CreateProject(ctx, auth.CreateProjectInput{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	h := api.New(st, &api.Options{
		Contexts: contexts.New(client, names, blobs, nil),
		Uploads:  up,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv := httptest.NewServer(http.StripPrefix("/wallcrawler", h))
	t.Cleanup(srv.Close)
	return srv.URL + "/wallcrawler", key
}

func postContext(t *testing.T, base, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/contexts", strings.NewReader(`{}`))
	req.Header.Set(api.HeaderBBAPIKey, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// With an S3 store, uploadUrl is a presigned PutObject URL of the bucket,
// and the archive PUT there is the context's blob.
func TestContextUploadToS3(t *testing.T) {
	srv := testenv.StartS3(t, "wc-blobs")
	store, err := blob.NewS3(context.Background(), blob.S3Options{
		Bucket: "wc-blobs", Prefix: "wallcrawler/", Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true,
		Credentials: srv.Credentials(),
	})
	if err != nil {
		t.Fatal(err)
	}
	base, key := uploadsEnv(t, store, store)

	status, out := postContext(t, base, key)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/contexts: %d %v", status, out)
	}
	id, _ := out["id"].(string)
	u, _ := out["uploadUrl"].(string)
	pu, err := url.Parse(u)
	if err != nil || !strings.HasPrefix(u, srv.Endpoint+"/wc-blobs/wallcrawler/") || pu.Query().Get("X-Amz-Signature") == "" {
		t.Fatalf("uploadUrl %q", u)
	}
	archive := []byte("not really a tar.gz")
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(archive))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT uploadUrl: %s", resp.Status)
	}
	projectAndRest := strings.TrimPrefix(pu.Path, "/wc-blobs/wallcrawler/")
	if !strings.HasSuffix(projectAndRest, "/"+id+"/profile.tar.gz") {
		t.Fatalf("object path %q does not name context %s", pu.Path, id)
	}
	rc, err := store.Get(context.Background(), projectAndRest)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, archive) {
		t.Fatalf("stored %q", got)
	}
}

type failingUploader struct{}

func (failingUploader) UploadURL(context.Context, string, string, time.Duration) (string, error) {
	return "", errors.New("presign failed")
}

// An Uploader error is a server error, not an empty uploadUrl.
func TestContextUploadURLError(t *testing.T) {
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base, key := uploadsEnv(t, blobs, failingUploader{})
	status, out := postContext(t, base, key)
	if status != http.StatusInternalServerError || out["statusCode"] != float64(500) {
		t.Fatalf("POST /v1/contexts with a failing Uploader: %d %v", status, out)
	}
}

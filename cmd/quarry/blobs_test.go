package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/testenv"
)

// s3Bucket starts versitygw (a real S3 gateway) on loopback with bucket
// created, whose keys are those of the tests' AWS environment (testAWSEnv).
func s3Bucket(t *testing.T, bucket string) *testenv.S3Server {
	t.Helper()
	srv := newS3(t, bucket)
	srv.Start(t)
	srv.CreateBucket(t)
	return srv
}

// newS3 is testenv.NewS3 (not started) with the keys of the tests' AWS
// environment (testAWSEnv), which quarry reads S3 credentials from.
func newS3(t *testing.T, bucket string) *testenv.S3Server {
	t.Helper()
	srv := testenv.NewS3(t, bucket)
	srv.AccessKey, srv.SecretKey = clusterKeyID, clusterSecret
	if srv.Region != testAWSEnv["AWS_REGION"] {
		t.Fatalf("S3 gateway region %q, the tests' AWS environment's %q", srv.Region, testAWSEnv["AWS_REGION"])
	}
	return srv
}

// wholeBucket reads the bucket without a prefix.
func wholeBucket(t *testing.T, srv *testenv.S3Server, bucket string) *blob.S3 {
	t.Helper()
	s, err := blob.NewS3(context.Background(), blob.S3Options{
		Bucket: bucket, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true,
		Credentials: srv.Credentials(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readBlob(t *testing.T, s blob.Store, key string) string {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

func TestOpenBlobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := config.Defaults()
	c.DataDir = t.TempDir()
	local := filepath.Join(c.DataDir, "eecar", "blobs")
	st, up, err := blob.Open(ctx, c.Blobs(), "eecar", local)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := st.(*blob.Dir); !ok || d.Root != local || up != nil {
		t.Fatalf("default: %T %+v, uploader %v", st, st, up)
	}

	srv := s3Bucket(t, "quarry")
	endpoint := srv.Endpoint
	c.BlobS3Bucket, c.BlobS3Endpoint, c.BlobS3PathStyle = "quarry", endpoint, true
	st, up, err = blob.Open(ctx, c.Blobs(), "eecar", local)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*blob.S3); !ok || up == nil {
		t.Fatalf("with a bucket: %T, uploader %v", st, up)
	}
	if err := st.Put(ctx, "images/x.jpg", strings.NewReader("jpeg")); err != nil {
		t.Fatal(err)
	}
	if got := readBlob(t, wholeBucket(t, srv, "quarry"), "eecar/images/x.jpg"); got != "jpeg" {
		t.Fatalf("eecar/images/x.jpg = %q", got)
	}

	c.BlobS3Bucket = "missing"
	if _, _, err := blob.Open(ctx, c.Blobs(), "eecar", local); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing bucket: %v", err)
	}
}

// With --blob-s3-bucket, `quarry serve` starts with every system's blobs
// in the bucket, and a Wallcrawler context's uploadUrl is a presigned URL
// of the bucket under wallcrawler/.
func TestServeWithS3Blobs(t *testing.T) {
	t.Parallel()
	srv := s3Bucket(t, "quarry")
	endpoint := srv.Endpoint
	dir := t.TempDir()
	api, store := freeAddr(t), freeAddr(t)
	vars := map[string]string{
		"QUARRY_BLOB_S3_BUCKET":     "quarry",
		"QUARRY_BLOB_S3_ENDPOINT":   endpoint,
		"QUARRY_BLOB_S3_PATH_STYLE": "true",
	}
	env := func(k string) string { return vars[k] }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", dir}, env, &logs, &logs)
	}()
	waitFor(t, "listeners", func() bool {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, logs.String())
		default:
		}
		return strings.Contains(logs.String(), "listening on "+api)
	})
	cli := func(args ...string) string {
		t.Helper()
		var out, errs syncBuffer
		args = append(args, "--data-dir", dir, "--ddb-listen", store)
		if code := run(context.Background(), args, env, &out, &errs); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs.String())
		}
		return strings.TrimSpace(out.String())
	}
	cli("wallcrawler", "project", "create", "--name", "Acme", "--id", "project_acme")
	key := cli("wallcrawler", "key", "create", "--project", "project_acme")

	req, _ := http.NewRequest(http.MethodPost, "http://"+api+"/wallcrawler/v1/contexts", strings.NewReader(`{}`))
	req.Header.Set("X-BB-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID        string `json:"id"`
		UploadURL string `json:"uploadUrl"`
	}
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(created.UploadURL, endpoint+"/quarry/wallcrawler/project_acme/"+created.ID+"/") {
		t.Fatalf("POST /v1/contexts: %d %+v", resp.StatusCode, created)
	}
	req, _ = http.NewRequest(http.MethodPut, created.UploadURL, bytes.NewReader([]byte("archive")))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT uploadUrl: %s", resp.Status)
	}
	if got := readBlob(t, wholeBucket(t, srv, "quarry"), "wallcrawler/project_acme/"+created.ID+"/profile.tar.gz"); got != "archive" {
		t.Fatalf("archive = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "wallcrawler", "blobs")); !os.IsNotExist(err) {
		t.Fatalf("local blob directory created with S3 configured: %v", err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, logs.String())
	}
}

func TestServeMissingBucketFailsFast(t *testing.T) {
	t.Parallel()
	srv := s3Bucket(t, "quarry")
	endpoint := srv.Endpoint
	var out syncBuffer
	args := []string{"serve", "--listen", freeAddr(t), "--ddb-listen", freeAddr(t), "--data-dir", t.TempDir(),
		"--blob-s3-bucket", "nope", "--blob-s3-endpoint", endpoint, "--blob-s3-path-style"}
	if code := run(context.Background(), args, func(string) string { return "" }, &out, &out); code != 1 || !strings.Contains(out.String(), "nope") {
		t.Fatalf("code %d, output %s", code, out.String())
	}
}

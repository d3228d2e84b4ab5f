package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/testenv"
)

// clusterS3 starts versitygw with the cluster's AWS keys (the nodes read
// both the DynamoDB and the S3 credentials from the one AWS environment,
// testAWSEnv) and bucket created, and returns it with the serve flags that
// put every system's blobs in it.
func clusterS3(t *testing.T, bucket string) (*testenv.S3Server, []string) {
	t.Helper()
	srv := s3Bucket(t, bucket)
	return srv, []string{"--blob-s3-bucket", bucket, "--blob-s3-endpoint", srv.Endpoint, "--blob-s3-path-style"}
}

// TestClusterContextThroughS3: a Wallcrawler context persisted by a
// session on node A (its profile archived to the shared S3 bucket) is
// restored in a session on node B, which shares nothing with A but the
// store and the bucket: B's browser sends the cookie A's browser got.
func TestClusterContextThroughS3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two quarry nodes, an S3 gateway and Chromium; skipped in -short mode")
	}
	t.Parallel()
	testenv.Chromium(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "quarry", Value: "set-on-a", Path: "/", MaxAge: 3600})
		}
		cookie := "none"
		if c, err := r.Cookie("quarry"); err == nil {
			cookie = c.Value
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>fixture</title><body>cookie=%s</body>", cookie)
	}))
	defer site.Close()
	d := startSharedDDB(t, "", "")
	srv, s3flags := clusterS3(t, "quarry-cluster")
	flags := append([]string{"--allow-networks=" + site.Listener.Addr().String()}, s3flags...)
	a := startNode(t, d, "node-a", flags...)
	b := startNode(t, d, "node-b", flags...)

	clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "ctx", "--id", "project_ctx", "--concurrency", "2")
	key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_ctx")

	code, body := wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/contexts", key, `{}`)
	if code != http.StatusCreated {
		t.Fatalf("create context on A: %d %s", code, body)
	}
	var ctxRec struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &ctxRec); err != nil || ctxRec.ID == "" {
		t.Fatalf("context: %v %s", err, body)
	}
	withContext := func(persist bool) string {
		return fmt.Sprintf(`{"browserSettings":{"context":{"id":%q,"persist":%t}}}`, ctxRec.ID, persist)
	}

	// On A: the browser gets a persistent cookie; the release archives
	// the profile to the bucket before it answers.
	code, body = wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/sessions", key, withContext(true))
	if code != http.StatusCreated {
		t.Fatalf("create session on A: %d %s", code, body)
	}
	sa := decodeSession(t, "create on A", body)
	if !strings.Contains(sa.ConnectURL, a.api) {
		t.Fatalf("connectUrl %q does not point at A", sa.ConnectURL)
	}
	c := dialCDP(t, sa.ConnectURL)
	s, _ := c.attachPage()
	if got := c.navigate(s, site.URL+"/set"); !strings.Contains(got, "cookie=none") {
		t.Fatalf("first visit on A: %q", got)
	}
	if got := c.navigate(s, site.URL+"/check"); !strings.Contains(got, "cookie=set-on-a") {
		t.Fatalf("the cookie on A: %q", got)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	if code, body := wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/sessions/"+sa.ID, key, `{"status":"REQUEST_RELEASE"}`); code != http.StatusOK {
		t.Fatalf("release on A: %d %s", code, body)
	}
	archive := "wallcrawler/project_ctx/" + ctxRec.ID + "/profile.tar.gz"
	head, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(archive)})
	if err != nil || aws.ToInt64(head.ContentLength) == 0 {
		t.Fatalf("profile archive %s in the bucket after the release: %v", archive, err)
	}

	// On B: a session with the context starts from that archive.
	code, body = wcRequest(t, http.MethodPost, "http://"+b.api+"/wallcrawler/v1/sessions", key, withContext(false))
	if code != http.StatusCreated {
		t.Fatalf("create session on B: %d %s", code, body)
	}
	sb := decodeSession(t, "create on B", body)
	if !strings.Contains(sb.ConnectURL, b.api) {
		t.Fatalf("connectUrl %q does not point at B", sb.ConnectURL)
	}
	c = dialCDP(t, sb.ConnectURL)
	s, _ = c.attachPage()
	if got := c.navigate(s, site.URL+"/check"); !strings.Contains(got, "cookie=set-on-a") {
		t.Fatalf("B's browser with the context: %q, want the cookie set on A", got)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	if code, body := wcRequest(t, http.MethodPost, "http://"+b.api+"/wallcrawler/v1/sessions/"+sb.ID, key, `{"status":"REQUEST_RELEASE"}`); code != http.StatusOK {
		t.Fatalf("release on B: %d %s", code, body)
	}

}

package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/testenv"
)

// Nodes that start while a backend is down: they serve what does not
// need it, say in /healthz what is missing, and bring the waiting systems
// up by themselves once the backend answers.

// degradedHealth is /healthz's view of the systems.
type degradedHealth struct {
	Systems map[string]struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"systems"`
}

func systemsOf(t *testing.T, api string) degradedHealth {
	t.Helper()
	_, _, body := getHealth(t, api)
	var h degradedHealth
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// checkSystems checks the status of each named system in /healthz.
func checkSystems(t *testing.T, api string, want map[string]string) {
	t.Helper()
	h := systemsOf(t, api)
	for name, status := range want {
		if got := h.Systems[name]; got.Status != status || (status == "waiting" && got.Reason == "") {
			t.Errorf("system %s: %+v, want %s", name, got, status)
		}
	}
}

// serveProc is a `quarry serve` run in-process.
type serveProc struct {
	api    string
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

// startServeProc runs `quarry serve` with args and the environment vars
// (embedded store unless args say otherwise), and waits until it answers
// /healthz (any status). It is stopped at cleanup.
func startServeProc(t *testing.T, vars map[string]string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{api: freeAddr(t), logs: &syncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	args = append([]string{"serve", "--listen", p.api, "--ddb-listen", "off", "--data-dir", t.TempDir()}, args...)
	go func() { p.done <- run(ctx, args, func(k string) string { return vars[k] }, p.logs, p.logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop within 60s")
		}
		if t.Failed() {
			t.Logf("logs:\n%s", p.logs.String())
		}
	})
	waitForLong(t, 60*time.Second, "serve answering /healthz", func() bool {
		select {
		case code := <-p.done:
			p.done <- code
			t.Fatalf("serve exited %d during start:\n%s", code, p.logs.String())
		default:
		}
		resp, err := http.Get("http://" + p.api + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return p
}

// TestServeStartsWithoutDynamoDB starts a node while its external
// DynamoDB endpoint is down: it serves DataShelf, /healthz is 503 naming
// dynamodb with the three DynamoDB systems waiting, their APIs answer 503
// with the reason; once the endpoint is up, the systems start by
// themselves, /healthz is 200 and Wallcrawler's API works.
func TestServeStartsWithoutDynamoDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a store process and a node; skipped in -short mode")
	}
	t.Parallel()
	d := startSharedDDB(t, "", "")
	d.stop()
	n := startNode(t, d, "node-a")

	h := waitHealth(t, n.api, http.StatusServiceUnavailable, 10*time.Second)
	checkDegraded(t, h, "dynamodb")
	checkSystems(t, n.api, map[string]string{"wallcrawler": "waiting", "checks": "waiting", "eecar": "waiting", "datashelf": "running"})
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Errorf("DataShelf while DynamoDB is down: %d %s", code, body)
	}
	code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/wallcrawler/v1/projects", "any", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "waiting for its backend") {
		t.Errorf("Wallcrawler while DynamoDB is down: %d %s, want 503 saying it waits", code, body)
	}

	startSharedDDB(t, d.addr, d.dir)
	waitHealth(t, n.api, http.StatusOK, 60*time.Second)
	checkSystems(t, n.api, map[string]string{"wallcrawler": "running", "checks": "running", "eecar": "running", "datashelf": "running"})
	clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "late", "--id", "project_late")
	key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_late")
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/wallcrawler/v1/projects/project_late", key, ""); code != http.StatusOK {
		t.Errorf("Wallcrawler once DynamoDB is up: %d %s", code, body)
	}
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/eecar/me", "", ""); code != http.StatusUnauthorized {
		t.Errorf("EECAR once DynamoDB is up, unauthenticated: %d %s, want 401", code, body)
	}
}

// TestServeStopsWhileWaiting stops a node (as SIGTERM does) while its
// systems still wait for an unreachable DynamoDB endpoint: it exits
// cleanly, within --shutdown-timeout.
func TestServeStopsWhileWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node; skipped in -short mode")
	}
	t.Parallel()
	d := startSharedDDB(t, "", "")
	d.stop()
	n := startNode(t, d, "node-a", "--shutdown-timeout", "3s")
	waitHealth(t, n.api, http.StatusServiceUnavailable, 10*time.Second)
	checkSystems(t, n.api, map[string]string{"wallcrawler": "waiting"})
	n.cancel()
	select {
	case code := <-n.done:
		n.done <- code
		if code != 0 {
			t.Fatalf("exit %d: %s", code, n.logs.String())
		}
	case <-time.After(30 * time.Second): // far beyond the 3 s it is given
		t.Fatalf("serve did not stop while its systems waited:\n%s", n.logs.String())
	}
}

// TestServeStartsWithoutPostgres starts a node whose DataShelf database
// refuses connections: the DynamoDB systems serve, /healthz is 503 naming
// postgres with DataShelf waiting; once PostgreSQL answers, DataShelf
// starts by itself and its API works.
func TestServeStartsWithoutPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node; skipped in -short mode")
	}
	t.Parallel()
	u := postgresSchemaURL(t, testenv.PostgresURL(t))
	front := newSwitchProxy(t, u.Host)
	pgAddr := u.Host
	u.Host = front.addr
	front.close()

	n := startServeProc(t, nil, "--datashelf-db", u.String())
	h := waitHealth(t, n.api, http.StatusServiceUnavailable, 10*time.Second)
	checkDegraded(t, h, "postgres", "dynamodb")
	checkSystems(t, n.api, map[string]string{"datashelf": "waiting", "wallcrawler": "running", "checks": "running", "eecar": "running"})
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusServiceUnavailable {
		t.Errorf("DataShelf without its database: %d %s, want 503", code, body)
	}
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/eecar/me", "", ""); code != http.StatusUnauthorized {
		t.Errorf("EECAR while PostgreSQL is down, unauthenticated: %d %s, want 401", code, body)
	}

	newSwitchProxyOn(t, front.addr, pgAddr)
	waitHealth(t, n.api, http.StatusOK, 60*time.Second)
	checkSystems(t, n.api, map[string]string{"datashelf": "running"})
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Errorf("DataShelf once PostgreSQL answers: %d %s", code, body)
	}
}

// TestServeStartsWithoutS3 starts a node whose S3 endpoint is down: Checks
// (which keeps no blobs) serves, the systems with blobs wait, /healthz is
// 503 naming s3; once the gateway runs and has the bucket, they start by
// themselves.
func TestServeStartsWithoutS3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and an S3 gateway; skipped in -short mode")
	}
	t.Parallel()
	srv := newS3(t, "quarry-late")
	n := startServeProc(t, nil, "--blob-s3-bucket", srv.Bucket, "--blob-s3-endpoint", srv.Endpoint, "--blob-s3-path-style")
	h := waitHealth(t, n.api, http.StatusServiceUnavailable, 10*time.Second)
	checkDegraded(t, h, "s3", "dynamodb")
	checkSystems(t, n.api, map[string]string{"checks": "running", "wallcrawler": "waiting", "eecar": "waiting", "datashelf": "waiting"})

	srv.Start(t)
	srv.CreateBucket(t)
	waitHealth(t, n.api, http.StatusOK, 60*time.Second)
	checkSystems(t, n.api, map[string]string{"checks": "running", "wallcrawler": "running", "eecar": "running", "datashelf": "running"})
	if code, body := wcRequest(t, http.MethodGet, "http://"+n.api+"/datashelf/api/products", "", ""); code != http.StatusOK {
		t.Errorf("DataShelf once S3 answers: %d %s", code, body)
	}
}

// TestServeStopsDuringStartAttempt stops a node (as SIGTERM does) while
// its first start attempt waits on a DynamoDB endpoint that accepts
// connections and never answers: the attempt is abandoned and the node
// exits cleanly within --shutdown-timeout, not after the SDK's timeouts
// (30 s per attempt).
func TestServeStopsDuringStartAttempt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node; skipped in -short mode")
	}
	t.Parallel()
	silent, err := net.Listen("tcp", freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	args := []string{"serve", "--listen", freeAddr(t), "--ddb-listen", "off", "--data-dir", t.TempDir(),
		"--dynamodb-endpoint", "http://" + silent.Addr().String(), "--shutdown-timeout", "3s"}
	go func() { done <- run(ctx, args, noEnv, &logs, &logs) }()
	select {
	case <-accepted:
	case code := <-done:
		t.Fatalf("serve exited %d before reaching the endpoint: %s", code, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve never connected to the endpoint: %s", logs.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, logs.String())
		}
	case <-time.After(20 * time.Second): // the SDK alone would hold it 30 s
		t.Fatalf("serve did not stop during its start attempt:\n%s", logs.String())
	}
}

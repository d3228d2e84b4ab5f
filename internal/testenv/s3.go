package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// VersitygwVersion is the versitygw release scripts/test-deps.sh installs
// into $PEERS_DIR/bin.
const VersitygwVersion = "v1.8.0"

// versitygwInstallWait bounds how long a test waits for the versitygw
// build that scripts/test-deps.sh started in the background.
const versitygwInstallWait = 10 * time.Minute

// PeersDir returns $PEERS_DIR, or else <module root>/.cache/peers, where
// scripts/test-deps.sh installs the peers.
func PeersDir() string {
	if d := os.Getenv("PEERS_DIR"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".cache", "peers")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Versitygw returns the versitygw binary (the S3 gateway the S3 tests run):
// $QUARRY_VERSITYGW when set, else $PEERS_DIR/bin/versitygw, else
// versitygw on PATH. While scripts/test-deps.sh is still building it in
// the background (its marker file $PEERS_DIR/bin/versitygw.installing
// names the builder's pid), it waits for the build, up to a few minutes.
// When there is none it calls Missing.
func Versitygw(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("QUARRY_VERSITYGW"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			Missing(t, "QUARRY_VERSITYGW=%s: %v", p, err)
		}
		return path
	}
	bin := filepath.Join(PeersDir(), "bin")
	installed := filepath.Join(bin, "versitygw")
	marker := filepath.Join(bin, "versitygw.installing")
	deadline := time.Now().Add(versitygwInstallWait)
	logged := false
	for {
		if _, err := os.Stat(installed); err == nil {
			return installed
		}
		if !installing(marker) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw: still being built by scripts/test-deps.sh after %s (see %s)", versitygwInstallWait, filepath.Join(bin, "versitygw.log"))
		}
		if !logged {
			t.Logf("versitygw: waiting for the build scripts/test-deps.sh started (%s)", marker)
			logged = true
		}
		time.Sleep(250 * time.Millisecond)
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	msg := fmt.Sprintf("versitygw (S3 gateway) not found in %s nor on PATH", bin)
	if log, err := os.ReadFile(filepath.Join(bin, "versitygw.log")); err == nil && len(log) > 0 {
		msg += "; its build log ends: " + tail(string(log), 600)
	}
	Missing(t, "%s", msg)
	return ""
}

// installing reports whether the marker names a live process that is
// scripts/test-deps.sh's builder (named versitygw-build: a pid may have
// been reused since).
func installing(marker string) bool {
	b, err := os.ReadFile(marker)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && strings.Contains(string(cmdline), "versitygw-build")
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// S3Server is a versitygw S3 gateway on a loopback port with a posix
// backend directory, run for one test. It checks signatures and presigned
// URLs' expiry as AWS S3 does.
type S3Server struct {
	// Endpoint is the gateway's base URL, http://127.0.0.1:PORT.
	Endpoint string
	// Bucket exists once Start has returned (created by StartS3).
	Bucket string
	// AccessKey and SecretKey are the gateway's root account.
	AccessKey, SecretKey string
	// Region signs the requests.
	Region string
	// Dir is the posix backend: one directory per bucket.
	Dir string

	bin  string
	addr string
	logf string
	cmd  *exec.Cmd
	exit chan struct{}
}

// NewS3 prepares a gateway for bucket on a free loopback port, with its
// own keys (which the caller may replace before Start) and a directory
// under t.TempDir(), without starting it (Start does; a test of an
// unreachable S3 starts it late; CreateBucket creates the bucket). It is stopped at
// cleanup. A missing versitygw binary is reported with Missing.
func NewS3(t testing.TB, bucket string) *S3Server {
	t.Helper()
	bin := Versitygw(t)
	tmp := t.TempDir()
	s := &S3Server{
		Bucket:    bucket,
		AccessKey: "quarrytest" + strconv.Itoa(rand.IntN(1e6)),
		SecretKey: "secret-" + strconv.FormatUint(rand.Uint64(), 36),
		Region:    "us-east-1",
		Dir:       filepath.Join(tmp, "root"),
		bin:       bin,
		addr:      freeLoopback(t),
		logf:      filepath.Join(tmp, "versitygw.log"),
	}
	s.Endpoint = "http://" + s.addr
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartS3 starts a gateway (NewS3, Start) and creates bucket in it.
func StartS3(t testing.TB, bucket string) *S3Server {
	t.Helper()
	s := NewS3(t, bucket)
	s.Start(t)
	s.CreateBucket(t)
	return s
}

// CreateBucket creates s.Bucket in the running gateway.
func (s *S3Server) CreateBucket(t testing.TB) {
	t.Helper()
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("versitygw: create bucket %s: %v", s.Bucket, err)
	}
}

// Start runs the gateway and waits until it answers HTTP. It may be called
// again after Stop (same port, same directory: the buckets survive).
func (s *S3Server) Start(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		t.Fatal("versitygw: already started")
	}
	logFile, err := os.OpenFile(s.logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "--port", s.addr, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region, "--quiet", "posix", s.Dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("versitygw: %v", err)
	}
	s.cmd, s.exit = cmd, make(chan struct{})
	go func(exit chan struct{}) { cmd.Wait(); close(exit) }(s.exit)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-s.exit:
			s.cmd = nil
			t.Fatalf("versitygw exited at start: %s", s.log())
		default:
		}
		resp, err := client.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw not answering on %s: %v; log: %s", s.addr, err, s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop terminates the gateway (SIGTERM, then SIGKILL after 5 s) and waits
// for it; the endpoint is then unreachable. It does nothing when stopped.
func (s *S3Server) Stop() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exit:
	case <-time.After(5 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exit
	}
	s.cmd = nil
}

func (s *S3Server) log() string {
	b, _ := os.ReadFile(s.logf)
	return tail(string(b), 2000)
}

// Credentials returns the gateway's root keys as a credentials provider.
func (s *S3Server) Credentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")
}

// Client returns an S3 client of the gateway (path-style).
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       s.Region,
		Credentials:  s.Credentials(),
		UsePathStyle: true,
	})
}

// freeLoopback returns a free 127.0.0.1 address with a port below the
// ephemeral range (so that it cannot collide with outgoing connections).
func freeLoopback(t testing.TB) string {
	t.Helper()
	var last error
	for range 200 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			last = err
			continue
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	t.Fatalf("no free loopback port: %v", last)
	return ""
}

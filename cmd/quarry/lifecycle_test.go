package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/adminsock"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// TestServeFailedStartLeavesNothing starts `quarry serve` with a warm
// pool and a part that fails after Wallcrawler started (the API port
// taken; DataShelf's PostgreSQL failing once a warm browser runs), and
// checks that everything already started was stopped before serve
// returned: no browser of the browser dir, the egress proxy's and the
// DynamoDB endpoint's ports closed, the admin socket removed, and the
// store's lock released (a second serve on the data directory starts).
func TestServeFailedStartLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium; skipped in -short mode")
	}
	t.Parallel()
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skipf("chromium not on PATH: %v", err)
	}
	tests := []struct {
		name string
		// setup returns the extra arguments, and what the test does
		// while serve starts (given its browser dir).
		setup func(t *testing.T) (args []string, during func(browserDir string))
		want  string // in serve's error
	}{
		{
			name: "API port taken",
			setup: func(t *testing.T) ([]string, func(string)) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ln.Close() })
				return []string{"--listen", ln.Addr().String()}, nil
			},
			want: "address already in use (another quarry running? choose another with --listen ADDR)",
		},
		{
			name: "DataShelf PostgreSQL fails",
			setup: func(t *testing.T) ([]string, func(string)) {
				// A server that accepts and says nothing until a warm
				// browser runs, then refuses the login as PostgreSQL
				// does (an answer, not an outage: serve does not wait
				// for it): the failure comes with Wallcrawler fully
				// started.
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ln.Close() })
				var mu sync.Mutex
				var conns []net.Conn
				refusing := false
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						mu.Lock()
						if refusing {
							refusePostgresLogin(c)
						} else {
							conns = append(conns, c)
						}
						mu.Unlock()
					}
				}()
				during := func(browserDir string) {
					waitLong(t, "a warm browser", 60*time.Second, func() bool {
						pids, _ := browser.Leftovers(browserDir)
						return len(pids) > 0
					})
					mu.Lock()
					defer mu.Unlock()
					refusing = true
					for _, c := range conns {
						refusePostgresLogin(c)
					}
				}
				url := "postgres://quarry@" + ln.Addr().String() + "/quarry?sslmode=disable&connect_timeout=90"
				return []string{"--datashelf-db", url, "--listen", freeAddr(t)}, during
			},
			want: "datashelf",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// Outside the 0700 temporary tree: the browser user (nobody
			// when the test runs as root) must enter it.
			browserDir, err := os.MkdirTemp("", "quarry-lifecycle-browsers-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if n, _ := browser.KillLeftovers(browserDir); n > 0 {
					t.Logf("cleanup: killed %d processes of %s", n, browserDir)
				}
				_ = os.RemoveAll(browserDir)
			})
			extra, during := tt.setup(t)
			ddbAddr := freeAddr(t)
			args := append([]string{"serve", "--data-dir", dir, "--ddb-listen", ddbAddr, "--wallcrawler-pool", "1",
				"--wallcrawler-browser-dir", browserDir, "--log-level", "debug", "--shutdown-timeout", "20s"}, extra...)
			var logs syncBuffer
			done := make(chan int, 1)
			go func() { done <- run(context.Background(), args, noEnv, &logs, &logs) }()
			if during != nil {
				during(browserDir)
			}
			select {
			case code := <-done:
				if code == 0 {
					t.Fatalf("serve succeeded:\n%s", logs.String())
				}
			case <-time.After(90 * time.Second):
				t.Fatalf("serve did not return:\n%s", logs.String())
			}
			out := logs.String()
			if !strings.Contains(out, tt.want) {
				t.Fatalf("serve's error lacks %q:\n%s", tt.want, out)
			}
			// Everything serve started is stopped by the time it returned.
			if pids, err := browser.Leftovers(browserDir); err != nil || len(pids) > 0 {
				t.Errorf("browsers left running: %v %v", pids, err)
			}
			m := regexp.MustCompile(`msg="egress proxy" .*addr=(\S+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no egress proxy address in the logs:\n%s", out)
			}
			for _, addr := range []string{m[1], ddbAddr} {
				if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					c.Close()
					t.Errorf("%s still accepts connections", addr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, adminsock.SocketName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("admin socket left: %v", err)
			}
			if entries, _ := os.ReadDir(filepath.Join(browserDir, "browsers")); len(entries) > 0 {
				t.Errorf("browser work dirs left: %v", entries)
			}
			// The store's lock is released: a second serve starts.
			api := freeAddr(t)
			ctx, cancel := context.WithCancel(context.Background())
			var logs2 syncBuffer
			done2 := make(chan int, 1)
			go func() {
				done2 <- run(ctx, []string{"serve", "--data-dir", dir, "--listen", api, "--ddb-listen", "off",
					"--wallcrawler-browser-dir", browserDir}, noEnv, &logs2, &logs2)
			}()
			waitLong(t, "the second serve", 30*time.Second, func() bool {
				select {
				case code := <-done2:
					t.Fatalf("second serve exited %d:\n%s", code, logs2.String())
				default:
				}
				return strings.Contains(logs2.String(), "listening on "+api)
			})
			cancel()
			if code := <-done2; code != 0 {
				t.Fatalf("second serve exited %d:\n%s", code, logs2.String())
			}
		})
	}
}

// refusePostgresLogin answers a PostgreSQL client's startup message with
// the ErrorResponse of a failed password check, and closes the connection.
func refusePostgresLogin(c net.Conn) {
	var fields []byte
	for _, f := range []struct {
		code byte
		v    string
	}{{'S', "FATAL"}, {'V', "FATAL"}, {'C', "28P01"}, {'M', "password authentication failed for user \"quarry\""}} {
		fields = append(append(append(fields, f.code), f.v...), 0)
	}
	fields = append(fields, 0)
	msg := append([]byte{'E'}, byte((len(fields)+4)>>24), byte((len(fields)+4)>>16), byte((len(fields)+4)>>8), byte(len(fields)+4))
	_, _ = c.Write(append(msg, fields...))
	c.Close()
}

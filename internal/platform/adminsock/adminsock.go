// Package adminsock is the admin channel: `quarry serve` listens on a Unix
// socket inside its data directory and serves its store there without
// signature checks. The data directory is mode 0700, so only its owner
// reaches the socket: the file system is the authentication. An
// administration command given --data-dir D opens D's store itself when
// no process holds it, or talks to the process that holds it through D's
// socket; it never guesses a TCP address, so it cannot write into another
// quarry by mistake.
package adminsock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/platform/awsclient"
)

// SocketName is the admin channel's socket, in the data directory.
const SocketName = "admin.sock"

// maxSunPath is the longest path a Unix socket address holds on Linux
// (sun_path is 108 bytes, with its terminating NUL).
const maxSunPath = 107

// withSocketAddr calls fn with an address for the socket name in dir that
// fits a Unix socket address: the path itself when short enough, else the
// same file reached through /proc/self/fd/N of an open descriptor of dir.
func withSocketAddr(dir, name string, fn func(addr string) error) error {
	path := filepath.Join(dir, name)
	if len(path) <= maxSunPath {
		return fn(path)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name))
}

// Serve serves h on dataDir's admin socket until the returned
// stop is called, which closes the socket and removes its file. The
// caller MUST hold the data directory (its store is open), so a socket
// left by a crashed process can be replaced.
func Serve(dataDir string, h http.Handler, log *slog.Logger) (stop func(context.Context) error, err error) {
	path := filepath.Join(dataDir, SocketName)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("admin channel: remove stale %s: %w", path, err)
	}
	var ln net.Listener
	err = withSocketAddr(dataDir, SocketName, func(addr string) (err error) {
		ln, err = net.Listen("unix", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("admin channel: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("admin channel: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(ln) }()
	log.Debug("admin channel", "socket", path)
	return func(ctx context.Context) error {
		// The store closes next: requests still in flight when ctx ends
		// are cut off rather than left running against it.
		err := srv.Shutdown(ctx)
		if err != nil {
			_ = srv.Close()
		}
		_ = ln.Close()
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return err
	}, nil
}

// Client returns a DynamoDB client of the store of the quarry process
// that holds dataDir, through its admin channel. It fails, naming the
// directory, when no process answers there. Its requests go through
// awsclient.PlainBodyClient, which keeps net/http from closing the
// channel's connection under a response: with one attempt that would
// report as failed a write the store has applied.
func Client(ctx context.Context, dataDir, region string) (*dynamodb.Client, error) {
	path := filepath.Join(dataDir, SocketName)
	dial := func(ctx context.Context, _, _ string) (conn net.Conn, err error) {
		err = withSocketAddr(dataDir, SocketName, func(addr string) (err error) {
			var d net.Dialer
			conn, err = d.DialContext(ctx, "unix", addr)
			return err
		})
		return conn, err
	}
	client := dynamodb.New(dynamodb.Options{
		Region:       region,
		BaseEndpoint: aws.String("http://quarry-admin"),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   awsclient.PlainBodies(&http.Client{Transport: &http.Transport{DialContext: dial, DisableCompression: true}}),
		// One attempt: a channel that does not answer will not start to.
		RetryMaxAttempts: 1,
	})
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := client.ListTables(pctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
		return nil, fmt.Errorf("the data directory %s is in use by another quarry process, which does not answer on its admin channel %s (is it a quarry older than this one, or stopping?): %w", dataDir, path, err)
	}
	return client, nil
}

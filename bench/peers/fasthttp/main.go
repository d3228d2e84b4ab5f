// Command ddbfasthttp serves a quarry DynamoDB store (package ddb) through
// github.com/valyala/fasthttp instead of net/http: the trial of a leaner
// HTTP layer for the store's endpoint (issue #19). It opens the store as
// `quarry ddb serve` does (fsync on commit unless -sync=false) and hands
// each request's method, path, Host, X-Amz-Target and body to
// Store.ServeTrustedWire, which checks no signature: it serves loopback
// benchmarks and the compatibility suite, nothing else.
//
// It is its own Go module (bench/peers/fasthttp/go.mod, with a replace of
// quarry to the repository root) so that fasthttp never enters quarry's
// go.mod. bench/run.sh starts it with FASTHTTP_TARGET=1:
//
//	go run . -listen 127.0.0.1:8020 -data-dir /tmp/ddb-fasthttp
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/quarrydb/quarry/ddb"
)

// maxBody is the largest body read: one byte over DynamoDB's 16 MB, so
// that the store, not fasthttp, answers a body over the limit.
const maxBody = 16<<20 + 1

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ddbfasthttp:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("ddbfasthttp", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8020", "loopback host:port to serve on")
	dir := fs.String("data-dir", "", "the store's data directory (required)")
	sync := fs.Bool("sync", true, "fsync each commit (false: like `quarry ddb serve --ddb-sync=false`)")
	region := fs.String("region", "us-east-1", "the region the store reports")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-data-dir is required")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	store, err := ddb.Open(*dir, &ddb.Options{Region: *region, Logger: log, NoSync: !*sync})
	if err != nil {
		return err
	}
	defer store.Close()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &fasthttp.Server{
		Handler:               handler(store),
		MaxRequestBodySize:    maxBody,
		ReadTimeout:           5 * time.Minute,
		WriteTimeout:          5 * time.Minute,
		IdleTimeout:           2 * time.Minute,
		NoDefaultServerHeader: true,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown()
	}()
	log.Info("listening on "+ln.Addr().String(), "server", "ddb-fasthttp")
	return srv.Serve(ln)
}

// handler serves the store's wire protocol from fasthttp's request.
func handler(store *ddb.Store) fasthttp.RequestHandler {
	return func(c *fasthttp.RequestCtx) {
		req := ddb.WireRequest{
			Method: string(c.Method()),
			Path:   string(c.Path()),
			Host:   string(c.Host()),
			Target: string(c.Request.Header.Peek("X-Amz-Target")),
			Body:   c.PostBody(),
		}
		store.ServeTrustedWire(&req, func(a ddb.WireAnswer) {
			c.SetStatusCode(a.Status)
			c.Response.Header.SetContentType(a.ContentType)
			c.Response.Header.Set("X-Amzn-Requestid", a.RequestID)
			if a.CRC32 != "" {
				c.Response.Header.Set("X-Amz-Crc32", a.CRC32)
			}
			c.SetBody(a.Body)
		})
	}
}

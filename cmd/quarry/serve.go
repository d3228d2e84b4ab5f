package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/sigv4"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/httpserver"
	"github.com/quarrydb/quarry/internal/platform/metrics"
)

func newLogger(c *config.Config, w io.Writer) *slog.Logger {
	lvl, _ := config.ParseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStore opens the embedded store in dir, creating dir (mode 0700) when
// missing.
func openStore(dir string, c *config.Config, log *slog.Logger) (*ddb.Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	opts := &ddb.Options{Region: c.Region, Logger: log, TTLInterval: c.TTLInterval, NoSync: !c.DDBSync, CacheBytes: int64(c.DDBCacheMB) << 20, SyncInterval: c.DDBSyncInterval}
	if c.Credentials != "" {
		creds, err := sigv4.LoadCredentials(c.Credentials)
		if err != nil {
			return nil, err
		}
		opts.Credentials = creds
		log.Info("request signing required", "keys", len(creds))
	}
	return ddb.Open(dir, opts)
}

// cmdServe runs `quarry serve`: the HTTP API and the store's endpoint.
func cmdServe(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("quarry serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c, err := config.Load(fs, args, getenv, config.Defaults(), nil)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	if err := secureDataDir(c.DataDir, log); err != nil {
		return err
	}
	policy, err := networkPolicy(ctx, c, log)
	if err != nil {
		return err
	}
	client, store, closeStore, err := dynamoClient(ctx, c, log, false)
	if err != nil {
		return err
	}
	defer closeStore()
	if store != nil {
		// Administration commands given this data directory reach this
		// process here, never through a guessed address.
		stopAdmin, err := serveAdminChannel(c.DataDir, store.TrustedHandler(), log)
		if err != nil {
			return err
		}
		defer stopAdmin()
	}
	streams, err := streamsClient(ctx, c, store)
	if err != nil {
		return err
	}
	wc, err := startWallcrawler(ctx, c, client, streams, store != nil, policy, log)
	if err != nil {
		return err
	}
	ck, err := startChecks(ctx, c, client, policy, log)
	if err != nil {
		return err
	}
	ee, err := startEECAR(ctx, c, client, streams, store != nil, policy, log)
	if err != nil {
		return err
	}
	wcCtx, stopWC := context.WithCancel(ctx)
	wcDone := make(chan struct{})
	ckDone := make(chan struct{})
	go func() { defer close(wcDone); wc.run(wcCtx, log) }()
	go func() { defer close(ckDone); ck.run(wcCtx, log) }()
	eeDone := make(chan struct{})
	go func() { defer close(eeDone); ee.run(wcCtx, log) }()
	defer func() {
		stopWC()
		<-wcDone
		<-ckDone
		<-eeDone
		sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout+15*time.Second)
		defer cancel()
		wc.stop(sctx) // before the store closes: sessions end with a final write
	}()

	ds, blobs, err := openDataShelf(ctx, c)
	if err != nil {
		return err
	}
	defer ds.Close()
	dsHandler, err := dataShelfHandler(c, ds, blobs, log)
	if err != nil {
		return err
	}

	reg := metrics.New()
	reg.Gauge("wallcrawler_live_sessions", "Browser sessions running in this process.", func() float64 { return float64(wc.manager.Live()) })
	reg.Gauge("checks_scheduled", "ACTIVE checks in this process's schedule.", func() float64 { return float64(ck.sched.Len()) })
	reg.Gauge("eecar_indexed_parts", "Parts in this process's search index.", func() float64 { return float64(ee.market.Index().Len()) })
	if store != nil {
		reg.Collect(storeFamilies(store))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpserver.HealthDetails(nil, func() map[string]any {
		return map[string]any{"wallcrawler": wc.health()}
	}))
	mux.Handle("GET /metrics", reg)
	mux.Handle("/datashelf/", reg.Count("datashelf", boundedIDs(dsHandler, dataShelfError)))
	mux.Handle("/wallcrawler/", reg.Count("wallcrawler", boundedIDs(wc.handler, browserbaseError)))
	mux.Handle(uploadPrefix, reg.Count("wallcrawler", boundedIDs(wc.uploads, plainError)))
	mux.Handle("/checks/", reg.Count("checks", boundedIDs(ck.handler, plainError)))
	mux.Handle("/eecar/", reg.Count("eecar", boundedIDs(ee.handler, plainError)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]string{"error": "not found: " + r.URL.Path})
	})
	servers := []*httpserver.Server{{Name: "api", Addr: c.Listen, Handler: mux, Logger: log, Limits: limits(c, c.MaxConns)}}
	if c.DDBListen != "off" && store != nil {
		servers = append(servers, &httpserver.Server{Name: "ddb", Addr: c.DDBListen, Handler: store.Handler(), Logger: log,
			Limits: limits(c, c.DDBMaxConns), BusyBody: ddbBusyBody})
	}
	// Once bound, one banner says what runs where.
	ready := func(servers []*httpserver.Server) {
		dataDir, err := filepath.Abs(c.DataDir)
		if err != nil {
			dataDir = c.DataDir
		}
		f := bannerFacts{c: c, dataDir: dataDir, embedded: store != nil, wc: wc, policy: policy,
			api: servers[0].BoundAddr(), dataShelfB: blobPlace(c, "datashelf", filepath.Join(dataDir, "blobs"))}
		if len(servers) > 1 {
			f.ddb = servers[1].BoundAddr()
		}
		if store != nil {
			f.adminSock = filepath.Join(dataDir, adminSocketName)
		}
		printBanner(c, log, stderr, startBanner(f))
	}
	return serveAll(ctx, c, log, servers, ready)
}

// secureDataDir creates the data directory with mode 0700, or takes the
// group's and others' access away from an existing one that quarry owns
// (its files include secrets, and Wallcrawler's browsers run as another
// user who must not enter it). A directory quarry does not own, or a
// shared sticky one such as /tmp, is left alone with a warning.
func secureDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	perm := st.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid != uint32(os.Geteuid()) || st.Mode()&os.ModeSticky != 0 {
		log.Warn("data directory is open to other users and not quarry's to tighten: its files may be read by them, Wallcrawler's browsers included",
			"dir", dir, "mode", fmt.Sprintf("%04o", perm))
		return nil
	}
	if err := os.Chmod(dir, perm&^0o077); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	log.Warn("data directory was open to other users: tightened", "dir", dir, "from", fmt.Sprintf("%04o", perm), "to", fmt.Sprintf("%04o", perm&^0o077))
	return nil
}

// cmdDDBServe runs `quarry ddb serve`: the store alone.
func cmdDDBServe(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("quarry ddb serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := config.Defaults()
	base.Listen = "127.0.0.1:8000"
	base.DataDir = "./data/ddb"
	c, err := config.Load(fs, args, getenv, base, []string{"listen", "data-dir", "log-level", "log-format", "region", "shutdown-timeout", "ttl-interval", "ddb-sync", "ddb-sync-interval", "ddb-cache-mb", "credentials",
		"read-header-timeout", "read-timeout", "idle-timeout", "ddb-max-conns"})
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	store, err := openStore(c.DataDir, c, log)
	if err != nil {
		return err
	}
	defer store.Close()
	return serveAll(ctx, c, log, []*httpserver.Server{{Name: "ddb", Addr: c.Listen, Handler: ddbHandler(store), Logger: log,
		Limits: limits(c, c.DDBMaxConns), BusyBody: ddbBusyBody}}, nil)
}

// ddbBusyBody is the DynamoDB endpoint's answer (with status 503) to a
// connection over --ddb-max-conns, in DynamoDB's error shape; SDKs retry it.
const ddbBusyBody = `{"__type":"com.amazonaws.dynamodb.v20120810#ServiceUnavailableException","message":"too many connections"}`

// limits are a listener's timeouts (shared by both listeners) and its
// connection cap.
func limits(c *config.Config, maxConns int) httpserver.Limits {
	return httpserver.Limits{ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout, IdleTimeout: c.IdleTimeout, MaxConns: maxConns}
}

// serveAll binds every server, calls ready (when not nil) once all are
// bound, serves until ctx ends or one fails, then shuts them all down
// gracefully.
func serveAll(ctx context.Context, c *config.Config, log *slog.Logger, servers []*httpserver.Server, ready func([]*httpserver.Server)) error {
	for _, s := range servers {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	if ready != nil {
		ready(servers)
	}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.Serve() }()
	}
	var first error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case first = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil {
			errs = append(errs, err)
		}
	}
	if first != nil {
		errs = append([]error{first}, errs...)
	}
	if len(errs) == 0 {
		log.Info("stopped")
	}
	return errors.Join(errs...)
}

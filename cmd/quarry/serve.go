package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	// Each DynamoDB system starts only when the endpoint offers what it
	// needs; the others start regardless, and /healthz says which is off
	// and why.
	caps := probeCapabilities(ctx, c, client, streams)
	systems := map[string]any{}
	reasons := map[string]string{}
	refuse := func(name, why string) {
		log.Error(why, "system", name)
		systems[name] = map[string]any{"status": "disabled", "reason": why}
		reasons[name] = why
	}
	var wc *wallcrawler
	if why := caps.missing("Wallcrawler", "streams", "ttl"); why != "" {
		refuse("wallcrawler", why)
	} else {
		if wc, err = startWallcrawler(ctx, c, client, streams, store != nil, policy, log); err != nil {
			return err
		}
		st := map[string]any{"status": "running"}
		if !caps.PITR {
			warning := fmt.Sprintf("point-in-time recovery is not available on %s: Wallcrawler's tables are not protected by it; back them up by the engine's own means", caps.Engine)
			log.Warn(warning, "system", "wallcrawler")
			st["warnings"] = []string{warning}
		}
		systems["wallcrawler"] = st
	}
	var ck *checks
	if why := caps.missing("Checks", "transactions"); why != "" {
		refuse("checks", why)
	} else {
		if ck, err = startChecks(ctx, c, client, policy, log); err != nil {
			return err
		}
		systems["checks"] = map[string]any{"status": "running"}
	}
	var ee *eecar
	if why := caps.missing("EECAR", "transactions", "streams"); why != "" {
		refuse("eecar", why)
	} else {
		if ee, err = startEECAR(ctx, c, client, streams, store != nil, policy, log); err != nil {
			return err
		}
		systems["eecar"] = map[string]any{"status": "running"}
	}
	// Shutdown has one deadline, --shutdown-timeout after the signal: the
	// listeners' drain and Wallcrawler's final writes share it, so a node
	// whose DynamoDB endpoint went away still stops in time.
	var shutdownAt atomic.Int64
	context.AfterFunc(ctx, func() { shutdownAt.Store(time.Now().UnixNano()) })
	wcCtx, stopWC := context.WithCancel(ctx)
	var running sync.WaitGroup
	for _, sys := range []interface {
		run(context.Context, *slog.Logger)
	}{wc, ck, ee} {
		if isNil(sys) {
			continue
		}
		running.Add(1)
		go func() { defer running.Done(); sys.run(wcCtx, log) }()
	}
	defer func() {
		stopWC()
		running.Wait()
		if wc == nil {
			return
		}
		deadline := time.Now().Add(c.ShutdownTimeout)
		if at := shutdownAt.Load(); at != 0 {
			// At least a second for the final writes, even when the
			// listeners' drain took the whole timeout.
			deadline = time.Unix(0, at).Add(c.ShutdownTimeout)
			deadline = later(deadline, time.Now().Add(time.Second))
		}
		sctx, cancel := context.WithDeadline(context.Background(), deadline)
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
	systems["datashelf"] = map[string]any{"status": "running"}
	backends := startBackendHealth(ctx, c, client, ds, blobs, log) // /healthz's "backends"
	defer backends.Stop()

	reg := metrics.New()
	reg.Gauge("wallcrawler_live_sessions", "Browser sessions running in this process.", func() float64 {
		if wc == nil {
			return 0
		}
		return float64(wc.manager.Live())
	})
	reg.Gauge("checks_scheduled", "ACTIVE checks in this process's schedule.", func() float64 {
		if ck == nil {
			return 0
		}
		return float64(ck.sched.Len())
	})
	reg.Gauge("eecar_indexed_parts", "Parts in this process's search index.", func() float64 {
		if ee == nil {
			return 0
		}
		return float64(ee.market.Index().Len())
	})
	if wc != nil {
		reg.Collect(egressFamilies(wc.egress))
	}
	if store != nil {
		reg.Collect(storeFamilies(store))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpserver.HealthDetails(backends.Check, func() map[string]any {
		d := map[string]any{"systems": systems, "dynamodb": caps.health(), "backends": backends.Report()}
		if wc != nil {
			d["wallcrawler"] = wc.health()
		}
		return d
	}))
	mux.Handle("GET /metrics", reg)
	mux.Handle("/datashelf/", reg.Count("datashelf", boundedIDs(dsHandler, dataShelfError)))
	if wc != nil {
		mux.Handle("/wallcrawler/", reg.Count("wallcrawler", boundedIDs(wc.handler, browserbaseError)))
		mux.Handle(uploadPrefix, reg.Count("wallcrawler", boundedIDs(wc.uploads, plainError)))
	} else {
		mux.Handle("/wallcrawler/", reg.Count("wallcrawler", disabledSystem(reasons["wallcrawler"])))
	}
	if ck != nil {
		mux.Handle("/checks/", reg.Count("checks", boundedIDs(ck.handler, plainError)))
	} else {
		mux.Handle("/checks/", reg.Count("checks", disabledSystem(reasons["checks"])))
	}
	if ee != nil {
		mux.Handle("/eecar/", reg.Count("eecar", boundedIDs(ee.handler, plainError)))
	} else {
		mux.Handle("/eecar/", reg.Count("eecar", disabledSystem(reasons["eecar"])))
	}
	mux.Handle("/", consoleHandler(ctx, c, client, systems, ck, log)) // the web console; other paths a JSON 404
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

// isNil reports whether an interface holds a nil pointer (a system that
// did not start).
func isNil(v any) bool {
	switch x := v.(type) {
	case *wallcrawler:
		return x == nil
	case *checks:
		return x == nil
	case *eecar:
		return x == nil
	}
	return v == nil
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
		"read-header-timeout", "read-timeout", "idle-timeout", "ddb-max-conns", "emulate", "emulate-stream-delay"})
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	store, err := openStore(c.DataDir, c, log)
	if err != nil {
		return err
	}
	defer store.Close()
	handler, err := emulation(c.Emulate, c.EmulateStreamDelay, ddbHandler(store))
	if err != nil {
		return err
	}
	if c.Emulate != "" {
		log.Warn("emulating another engine's gaps", "emulate", c.Emulate, "stream_delay", c.EmulateStreamDelay)
	}
	return serveAll(ctx, c, log, []*httpserver.Server{{Name: "ddb", Addr: c.Listen, Handler: handler, Logger: log,
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

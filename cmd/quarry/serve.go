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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/sigv4"
	datashelfconsole "github.com/quarrydb/quarry/internal/console/datashelf"
	datashelfstore "github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
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

// warnUnknownEnv logs a warning for each QUARRY_* variable of environ
// that is no setting's (a misspelt one would otherwise be silently
// ignored). environ is the process's: getenv cannot list variables.
func warnUnknownEnv(log *slog.Logger, environ []string) {
	for _, w := range config.UnknownEnv(environ) {
		log.Warn(w)
	}
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
//
// A system whose backend (the DynamoDB endpoint, PostgreSQL, the S3
// bucket) does not answer at start waits for it in the background and
// starts by itself when it answers, while the rest serves and /healthz
// says what waits (deferred.go); a backend that answers with a refusal
// (a missing bucket, bad credentials) stops the start as before.
//
// One lifecycle owns everything it starts. On a signal, when a running
// part fails, or when a part fails to start, the lifecycle stops what has
// started in the reverse order of the start, within --shutdown-timeout
// (Wallcrawler's final writes get at least a second more):
//
//  1. the API listener, then the DynamoDB endpoint's (stop accepting,
//     drain the requests in flight);
//  2. the backend health prober;
//  3. each system, in the reverse of its start (a system that started
//     late stops in its place all the same; one still waiting stops
//     waiting): DataShelf's store; EECAR's stream follower (and its
//     webhooks in flight), then its webhook connections; Checks'
//     scheduler and alert dispatcher, then its prober; Wallcrawler's
//     session reaper and stream notifier, then its sessions (each ends
//     with a final write, so before the store closes, and closes its
//     browser), the warm pool's browsers, the egress proxy (its port
//     closes), the browsers' files;
//  4. the admin channel (its socket file is removed);
//  5. the embedded store (its lock is released: another process may open
//     the data directory).
func cmdServe(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("quarry serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c, err := config.Load(fs, args, getenv, config.Defaults(), nil)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	warnUnknownEnv(log, os.Environ())
	if err := secureDataDir(c.DataDir, log); err != nil {
		return err
	}
	policy, err := networkPolicy(ctx, c, log)
	if err != nil {
		return err
	}
	lc := newLifecycle(ctx, log)
	if err := startServe(lc, c, policy, log, stderr); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		if serr := lc.shutdown(sctx); serr != nil {
			log.Warn("stopping what had started", "err", serr)
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Asked to stop (SIGTERM) while a start attempt waited
			// for a backend: a stop, not a failure.
			log.Info("stopped during start", "err", err)
			return nil
		}
		return err
	}
	return waitAndShutdown(ctx, lc, c, log)
}

// waitAndShutdown waits until ctx ends or a running part of lc fails, then
// stops lc within --shutdown-timeout.
func waitAndShutdown(ctx context.Context, lc *lifecycle, c *config.Config, log *slog.Logger) error {
	<-lc.Context().Done()
	if ctx.Err() != nil {
		log.Info("shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := lc.shutdown(sctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// startServe starts the parts of `quarry serve`, in the order cmdServe
// lists, handing each to lc as it starts.
func startServe(lc *lifecycle, c *config.Config, policy *fetch.Policy, log *slog.Logger, stderr io.Writer) error {
	ctx := lc.Context()
	client, store, closeStore, err := dynamoClient(ctx, c, log, false)
	if err != nil {
		return err
	}
	lc.onStop("store", func(context.Context) error { closeStore(); return nil })
	if store != nil {
		// Administration commands given this data directory reach this
		// process here, never through a guessed address.
		stopAdmin, err := serveAdminChannel(c.DataDir, store.TrustedHandler(), log)
		if err != nil {
			return err
		}
		lc.onStop("admin channel", stopAdmin)
	}
	streams, err := streamsClient(ctx, c, store)
	if err != nil {
		return err
	}
	// Each system starts now when its backends answer, else waits for them
	// in the background and starts when they do (deferred.go); each DynamoDB
	// system only when the endpoint offers what it needs. /healthz says
	// which is waiting or off, and why.
	caps := &capsProbe{c: c, client: client, streams: streams}
	reg := metrics.New()
	var (
		wcP atomic.Pointer[wallcrawler]
		ckP atomic.Pointer[checks]
		eeP atomic.Pointer[eecar]
		dsP atomic.Pointer[datashelfstore.Store]
	)
	var crawlsP atomic.Pointer[datashelfconsole.Crawls] // crawls started from the console
	wcSlot, ckSlot, eeSlot, dsSlot, consoleSlot := newSlot("wallcrawler"), newSlot("checks"), newSlot("eecar"), newSlot("datashelf"), newSlot("console")
	slots := []*slot{wcSlot, ckSlot, eeSlot, dsSlot}
	running := map[string]any{"status": "running"}
	// --systems: the systems not named are not started on this node; their
	// slots answer 503 naming the flag.
	enabled, err := c.SystemSet()
	if err != nil {
		return err
	}
	start := func(sl *slot, fn systemStart) error {
		if !enabled[sl.name] {
			sl.disable(notOnThisNode(c, sl.name))
			return nil
		}
		return startSystem(lc, sl, log, fn)
	}
	if err := start(wcSlot, func(ctx context.Context, sub *lifecycle) (map[string]http.Handler, map[string]any, error) {
		k, err := caps.get(ctx)
		if err != nil {
			return nil, nil, err
		}
		if why := k.missing("Wallcrawler", "streams", "ttl"); why != "" {
			return nil, nil, disabledError{why}
		}
		wc, err := startWallcrawler(ctx, sub, c, client, streams, store != nil, policy, log)
		if err != nil {
			return nil, nil, err
		}
		st := map[string]any{"status": "running"}
		if !k.PITR {
			warning := fmt.Sprintf("point-in-time recovery is not available on %s: Wallcrawler's tables are not protected by it; back them up by the engine's own means", k.Engine)
			log.Warn(warning, "system", "wallcrawler")
			st["warnings"] = []string{warning}
		}
		sub.goRun("wallcrawler background work", func(ctx context.Context) error { wc.run(ctx, log); return nil }, nil)
		reg.Register(newEgressCollector(wc.egress))
		wcP.Store(wc)
		return map[string]http.Handler{
			"/wallcrawler/": boundedIDs(wc.handler, browserbaseError),
			uploadPrefix:    boundedIDs(wc.uploads, plainError),
		}, st, nil
	}); err != nil {
		return err
	}
	if err := start(ckSlot, func(ctx context.Context, sub *lifecycle) (map[string]http.Handler, map[string]any, error) {
		k, err := caps.get(ctx)
		if err != nil {
			return nil, nil, err
		}
		if why := k.missing("Checks", "transactions"); why != "" {
			return nil, nil, disabledError{why}
		}
		ck, err := startChecks(ctx, sub, c, client, policy, log)
		if err != nil {
			return nil, nil, err
		}
		sub.goRun("checks background work", func(ctx context.Context) error { ck.run(ctx, log); return nil }, nil)
		ckP.Store(ck)
		return map[string]http.Handler{"/checks/": boundedIDs(ck.handler, plainError)}, running, nil
	}); err != nil {
		return err
	}
	if err := start(eeSlot, func(ctx context.Context, sub *lifecycle) (map[string]http.Handler, map[string]any, error) {
		k, err := caps.get(ctx)
		if err != nil {
			return nil, nil, err
		}
		if why := k.missing("EECAR", "transactions", "streams"); why != "" {
			return nil, nil, disabledError{why}
		}
		ee, err := startEECAR(ctx, sub, c, client, streams, store != nil, policy, log)
		if err != nil {
			return nil, nil, err
		}
		sub.goRun("eecar background work", func(ctx context.Context) error { ee.run(ctx, log); return nil }, nil)
		eeP.Store(ee)
		return map[string]http.Handler{"/eecar/": boundedIDs(ee.handler, plainError)}, running, nil
	}); err != nil {
		return err
	}
	if err := start(dsSlot, func(ctx context.Context, sub *lifecycle) (map[string]http.Handler, map[string]any, error) {
		ds, blobs, err := openDataShelf(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		sub.onStop("datashelf store", func(context.Context) error { return ds.Close() })
		h, err := dataShelfHandler(c, ds, blobs, log)
		if err != nil {
			return nil, nil, err
		}
		crawls, err := consoleCrawls(ctx, c, ds, blobs, log)
		if err != nil {
			return nil, nil, err
		}
		sub.onStop("console crawls", func(context.Context) error { crawls.Stop(); return nil })
		crawlsP.Store(crawls)
		dsP.Store(&ds)
		return map[string]http.Handler{"/datashelf/": boundedIDs(h, dataShelfError)}, running, nil
	}); err != nil {
		return err
	}
	// The console, once the systems it shows have started (it needs the
	// DynamoDB endpoint itself).
	if err := startSystem(lc, consoleSlot, log, func(ctx context.Context, sub *lifecycle) (map[string]http.Handler, map[string]any, error) {
		for _, sl := range slots {
			if sl.isWaiting() {
				return nil, nil, errNotYet
			}
		}
		systems := map[string]any{}
		for _, sl := range slots {
			systems[sl.name] = sl.health()
		}
		var ds datashelfstore.Store
		if p := dsP.Load(); p != nil {
			ds = *p
		}
		h, err := newConsole(ctx, c, client, consoleSystems{health: systems, checks: ckP.Load(), shelf: ds, crawls: crawlsP.Load(), eecar: eeP.Load(), wc: wcP.Load()}, log)
		if err != nil && unreachable(err) {
			return nil, nil, err
		}
		if err != nil {
			log.Error("console disabled", "err", err)
			return map[string]http.Handler{"/": consoleUnavailable(err)}, running, nil
		}
		return map[string]http.Handler{"/": h}, running, nil
	}); err != nil {
		return err
	}

	// /healthz's "backends": probed from the start, also while the systems
	// that need them wait.
	pgPing := func(ctx context.Context) error {
		if p := dsP.Load(); p != nil {
			return (*p).Ping(ctx)
		}
		return pingPostgres(ctx, c.DataShelfDB)
	}
	var s3Ping func(context.Context) error
	if c.BlobS3Bucket != "" {
		s3, err := newS3Blobs(ctx, c, "datashelf")
		if err != nil {
			return err
		}
		s3Ping = s3.Ping
	}
	backends := startBackendHealth(ctx, c, client, pgPing, s3Ping, log)
	lc.onStop("backend health prober", func(context.Context) error { backends.Stop(); return nil })

	reg.Gauge("wallcrawler_live_sessions", "Browser sessions running in this process.", func() float64 {
		wc := wcP.Load()
		if wc == nil {
			return 0
		}
		return float64(wc.manager.Live())
	})
	registerLeaseMetrics(reg, wcP.Load)
	reg.Gauge("checks_scheduled", "ACTIVE checks in this process's schedule.", func() float64 {
		ck := ckP.Load()
		if ck == nil {
			return 0
		}
		return float64(ck.sched.Len())
	})
	reg.Gauge("eecar_indexed_parts", "Parts in this process's search index.", func() float64 {
		ee := eeP.Load()
		if ee == nil {
			return 0
		}
		return float64(ee.market.Index().Len())
	})
	if store != nil {
		reg.Register(newStoreCollector(store))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpserver.HealthDetails(func(ctx context.Context) error {
		if err := backends.Check(ctx); err != nil {
			return err
		}
		return waitingOf(slots)
	}, func() map[string]any {
		systems := map[string]any{}
		for _, sl := range slots {
			systems[sl.name] = sl.health()
		}
		d := map[string]any{"systems": systems, "dynamodb": caps.health(), "backends": backends.Report()}
		if wc := wcP.Load(); wc != nil {
			d["wallcrawler"] = wc.health()
		}
		return d
	}))
	mux.Handle("GET /metrics", reg)
	mux.Handle("/datashelf/", reg.Count("datashelf", dsSlot.route("/datashelf/")))
	mux.Handle("/wallcrawler/", reg.Count("wallcrawler", wcSlot.route("/wallcrawler/")))
	mux.Handle(uploadPrefix, reg.Count("wallcrawler", wcSlot.route(uploadPrefix)))
	mux.Handle("/checks/", reg.Count("checks", ckSlot.route("/checks/")))
	mux.Handle("/eecar/", reg.Count("eecar", eeSlot.route("/eecar/")))
	mux.Handle("/", reg.Count("console", consoleSlot.route("/"))) // the web console; other paths a JSON 404
	// Both listeners are bound before either serves, so that the banner
	// (which names their addresses) comes before their "listening on" logs.
	var ddbSrv *httpserver.Server
	if c.DDBListen != "off" && store != nil {
		ddbSrv = &httpserver.Server{Name: "ddb", Addr: c.DDBListen, Handler: store.Handler(), Logger: log,
			Limits: limits(c, c.DDBMaxConns), Busy: ddbBusy()}
		if err := ddbSrv.Listen(); err != nil {
			return err
		}
	}
	api := &httpserver.Server{Name: "api", Addr: c.Listen, Handler: mux, Logger: log, Limits: limits(c, c.MaxConns)}
	if err := api.Listen(); err != nil {
		if ddbSrv != nil {
			_ = ddbSrv.Close()
		}
		return err
	}
	// Once bound, one banner says what runs where.
	dataDir, err := filepath.Abs(c.DataDir)
	if err != nil {
		dataDir = c.DataDir
	}
	f := bannerFacts{c: c, dataDir: dataDir, embedded: store != nil, wc: wcP.Load(), policy: policy, enabled: enabled,
		api: api.BoundAddr(), dataShelfB: blobPlace(c, "datashelf", filepath.Join(dataDir, "blobs"))}
	if ddbSrv != nil {
		f.ddb = ddbSrv.BoundAddr()
	}
	if store != nil {
		f.adminSock = filepath.Join(dataDir, adminSocketName)
	}
	printBanner(c, log, stderr, startBanner(f))
	if ddbSrv != nil {
		serveIn(lc, ddbSrv)
	}
	serveIn(lc, api)
	return nil
}

// notOnThisNode is the reason a system left out of --systems gives, in
// /healthz and in its API's 503.
func notOnThisNode(c *config.Config, name string) string {
	return fmt.Sprintf("%s is not started on this node: --systems %s (%s) does not name it; send its requests to a node that runs it",
		name, c.Systems, config.EnvName("systems"))
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
		"read-header-timeout", "read-timeout", "idle-timeout", "write-timeout", "ddb-max-conns", "emulate", "emulate-stream-delay"})
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	warnUnknownEnv(log, os.Environ())
	store, err := openStore(c.DataDir, c, log)
	if err != nil {
		return err
	}
	handler, err := emulation(c.Emulate, c.EmulateStreamDelay, ddbHandler(store))
	if err != nil {
		store.Close()
		return err
	}
	if c.Emulate != "" {
		log.Warn("emulating another engine's gaps", "emulate", c.Emulate, "stream_delay", c.EmulateStreamDelay)
	}
	lc := newLifecycle(ctx, log)
	lc.onStop("store", func(context.Context) error { return store.Close() })
	if err := listen(lc, &httpserver.Server{Name: "ddb", Addr: c.Listen, Handler: handler, Logger: log,
		Limits: limits(c, c.DDBMaxConns), Busy: ddbBusy()}); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		_ = lc.shutdown(sctx)
		return err
	}
	return waitAndShutdown(ctx, lc, c, log)
}

// ddbBusy is the DynamoDB endpoint's answer (with status 503) to a
// connection over --ddb-max-conns: the store's own (ddb.BusyAnswer), in
// DynamoDB's error shape and with its checksum; SDKs retry it.
func ddbBusy() *httpserver.BusyAnswer {
	h, body := ddb.BusyAnswer()
	return &httpserver.BusyAnswer{Header: h, Body: body}
}

// limits are a listener's timeouts (shared by both listeners) and its
// connection cap.
func limits(c *config.Config, maxConns int) httpserver.Limits {
	return httpserver.Limits{ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout, IdleTimeout: c.IdleTimeout, WriteTimeout: c.WriteTimeout, MaxConns: maxConns}
}

// listen binds s and serves it in lc (see serveIn).
func listen(lc *lifecycle, s *httpserver.Server) error {
	if err := s.Listen(); err != nil {
		return err
	}
	serveIn(lc, s)
	return nil
}

// serveIn serves s, already bound, in lc: a listener that fails stops the
// process; at shutdown it stops accepting and drains its requests.
func serveIn(lc *lifecycle, s *httpserver.Server) {
	lc.goRun(s.Name+" listener", func(context.Context) error { return s.Serve() }, s.Shutdown)
}

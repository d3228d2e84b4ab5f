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
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/emulate"
	"github.com/quarrydb/quarry/ddb/sigv4"
	"github.com/quarrydb/quarry/internal/platform/adminsock"
	"github.com/quarrydb/quarry/internal/platform/awsclient"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/datadir"
	"github.com/quarrydb/quarry/internal/platform/ddbtable"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/health"
	"github.com/quarrydb/quarry/internal/platform/httpserver"
	"github.com/quarrydb/quarry/internal/platform/lifecycle"
	"github.com/quarrydb/quarry/internal/platform/metrics"
	"github.com/quarrydb/quarry/internal/platform/origin"
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
// says what waits (platform/lifecycle); a backend that answers with a refusal
// (a missing bucket, bad credentials) stops the start.
//
// One lifecycle owns everything it starts. On a signal, when a running
// part fails, or when a part fails to start, the lifecycle stops what has
// started in the reverse order of the start, within --shutdown-timeout
// (Wallcrawler's final writes get at least a second more):
//
//  1. the API listener, then the DynamoDB endpoint's (stop accepting,
//     drain the requests in flight);
//  2. the backend health prober;
//  3. the console;
//  4. each system (its Run, then its Close), in the reverse of its start
//     (a system that started late stops in its place all the same; one
//     still waiting stops waiting): DataShelf's crawl started from the
//     console or the API (its run recorded as aborted), then its store;
//     EECAR's stream follower (and its webhooks in flight), then its
//     webhook connections; Checks'
//     scheduler and alert dispatcher, then its prober; Wallcrawler's
//     session reaper and stream notifier, then its sessions (each ends
//     with a final write, so before the store closes, and closes its
//     browser), the warm pool's browsers, the egress proxy (its port
//     closes), the browsers' files;
//  5. the admin channel (its socket file is removed);
//  6. the embedded store (its lock is released: another process may open
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
	if err := datadir.Secure(c.DataDir, log); err != nil {
		return err
	}
	policy, err := c.ServePolicy(ctx, log)
	if err != nil {
		return err
	}
	lc := lifecycle.New(ctx, log)
	if err := startServe(lc, c, policy, log, stderr); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		if serr := lc.Shutdown(sctx); serr != nil {
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
func waitAndShutdown(ctx context.Context, lc *lifecycle.Lifecycle, c *config.Config, log *slog.Logger) error {
	<-lc.Context().Done()
	if ctx.Err() != nil {
		log.Info("shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := lc.Shutdown(sctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// startServe starts the parts of `quarry serve`, in the order cmdServe
// lists, handing each to lc as it starts.
func startServe(lc *lifecycle.Lifecycle, c *config.Config, policy *fetch.Policy, log *slog.Logger, stderr io.Writer) error {
	ctx := lc.Context()
	// The systems' own successful calls stand in for the store's health
	// probe while they come often enough (startBackendHealth).
	answers := &health.Answers{}
	client, store, closeStore, err := dynamoClient(ctx, c, log, false, awsclient.NoteAnswers(func() { answers.Note(time.Now()) }))
	if err != nil {
		return err
	}
	lc.OnStop("store", func(context.Context) error { closeStore(); return nil })
	if store != nil {
		// Administration commands given this data directory reach this
		// process here, never through a guessed address.
		stopAdmin, err := adminsock.Serve(c.DataDir, store.TrustedHandler(), log)
		if err != nil {
			return err
		}
		lc.OnStop("admin channel", stopAdmin)
	}
	streams, err := streamsClient(ctx, c, store)
	if err != nil {
		return err
	}
	enabled, err := c.SystemSet()
	if err != nil {
		return err
	}
	// Validated with the configuration: cannot fail here.
	orig, err := origin.Parse(c.PublicURL, c.TrustedProxies)
	if err != nil {
		return err
	}
	s := &serving{c: c, client: client, answers: answers, streams: streams, embedded: store != nil, policy: policy, origin: orig, log: log,
		caps: &ddbtable.CapsProbe{Endpoint: c.DynamoDBEndpoint, Client: client, Streams: streams}, reg: metrics.New()}
	if store != nil {
		s.streamChanges = store.StreamChanges
	}
	// Each system starts now when its backends answer, else waits for them
	// in the background and starts when they do; each DynamoDB system only
	// when the endpoint offers what it needs. /healthz says which is
	// waiting or off, and why. The console starts once the systems it
	// shows have.
	for _, sys := range s.systems() {
		sl := lifecycle.NewSlot(sys.name)
		s.slots = append(s.slots, sl)
		if !enabled[sys.name] {
			sl.Disable(notOnThisNode(c, sys.name))
			continue
		}
		if err := lifecycle.StartSystem(lc, sl, log, s.starter(sys)); err != nil {
			return err
		}
	}
	consoleSlot := lifecycle.NewSlot("console")
	if err := lifecycle.StartSystem(lc, consoleSlot, log, s.startConsole); err != nil {
		return err
	}
	backends, err := s.startBackendHealth(ctx)
	if err != nil {
		return err
	}
	lc.OnStop("backend health prober", func(context.Context) error { backends.Stop(); return nil })
	s.registerMetrics(store)
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpserver.HealthDetails(func(context.Context) (map[string]any, error) {
		report, err := backends.Snapshot() // the status and the backends it names, read at once
		if err == nil {
			err = lifecycle.Waiting(s.slots)
		}
		d := s.details() // wallcrawler: how its browsers are confined
		d["systems"], d["dynamodb"], d["backends"] = s.health(), s.caps.Health(), report
		return d, err
	}))
	mux.Handle("GET /metrics", s.reg)
	for _, sl := range s.slots {
		for _, pattern := range routePatterns[sl.Name()] {
			mux.Handle(pattern, s.reg.Count(sl.Name(), sl.Route(pattern)))
		}
	}
	mux.Handle("/", s.reg.Count("console", consoleSlot.Route("/"))) // the web console; other paths a JSON 404
	return listenAndBanner(lc, s, mux, store, enabled, stderr)
}

// listenAndBanner binds the API listener (and the DynamoDB endpoint's,
// when the embedded store serves one), prints the start banner, and
// serves both in lc. Both listeners are bound before either serves, so
// that the banner (which names their addresses) comes before their
// "listening on" logs.
func listenAndBanner(lc *lifecycle.Lifecycle, s *serving, mux http.Handler, store *ddb.Store, enabled map[string]bool, stderr io.Writer) error {
	c, log := s.c, s.log
	var ddbSrv *httpserver.Server
	if c.DDBListen != "off" && store != nil {
		ddbSrv = &httpserver.Server{Name: "ddb", Addr: c.DDBListen, Flag: "--ddb-listen", Handler: store.Handler(), Logger: log,
			Limits: limits(c, c.DDBMaxConns), Busy: ddbBusy()}
		if err := ddbSrv.Listen(); err != nil {
			return err
		}
	}
	apiLimits := limits(c, c.MaxConns)
	apiLimits.MaxUpgradedConns = c.MaxUpgradedConns // WebSockets: CDP, live view
	apiLimits.MaxConnsPerClient = c.MaxConnsPerClient
	apiLimits.MaxRequestsPerCredential = c.MaxRequestsPerCredential
	apiLimits.SharedClient = s.origin.TrustedAddr
	api := &httpserver.Server{Name: "api", Addr: c.Listen, Flag: "--listen", Handler: mux, Logger: log, Limits: apiLimits}
	if err := api.Listen(); err != nil {
		if ddbSrv != nil {
			_ = ddbSrv.Close()
		}
		return err
	}
	dataDir, err := filepath.Abs(c.DataDir)
	if err != nil {
		dataDir = c.DataDir
	}
	f := bannerFacts{c: c, dataDir: dataDir, embedded: store != nil, wc: s.wc.Load(), policy: s.policy, enabled: enabled,
		api: api.BoundAddr(), dataShelfB: blobPlace(c, "datashelf", filepath.Join(dataDir, "blobs"))}
	if ddbSrv != nil {
		f.ddb = ddbSrv.BoundAddr()
	}
	if store != nil {
		f.adminSock = filepath.Join(dataDir, adminsock.SocketName)
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
	handler, err := emulate.Handler(c.Emulate, c.EmulateStreamDelay, metrics.StoreHandler(store))
	if err != nil {
		store.Close()
		return err
	}
	if c.Emulate != "" {
		log.Warn("emulating another engine's gaps", "emulate", c.Emulate, "stream_delay", c.EmulateStreamDelay)
	}
	lc := lifecycle.New(ctx, log)
	lc.OnStop("store", func(context.Context) error { return store.Close() })
	if err := listen(lc, &httpserver.Server{Name: "ddb", Addr: c.Listen, Flag: "--listen", Handler: handler, Logger: log,
		Limits: limits(c, c.DDBMaxConns), Busy: ddbBusy()}); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		_ = lc.Shutdown(sctx)
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
func listen(lc *lifecycle.Lifecycle, s *httpserver.Server) error {
	if err := s.Listen(); err != nil {
		return err
	}
	serveIn(lc, s)
	return nil
}

// serveIn serves s, already bound, in lc: a listener that fails stops the
// process; at shutdown it stops accepting and drains its requests.
func serveIn(lc *lifecycle.Lifecycle, s *httpserver.Server) {
	lc.Go(s.Name+" listener", func(context.Context) error { return s.Serve() }, s.Shutdown)
}

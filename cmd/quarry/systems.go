package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/checks"
	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/datashelf"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/eecar"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/ddbtable"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/health"
	"github.com/quarrydb/quarry/internal/platform/lifecycle"
	"github.com/quarrydb/quarry/internal/platform/metrics"
	"github.com/quarrydb/quarry/internal/platform/origin"
	"github.com/quarrydb/quarry/internal/wallcrawler"
)

// system is what `quarry serve` needs of a started system: its handlers
// by mux pattern, its background work (run until its context ends), how
// to stop it once that work has returned, and the details /healthz adds
// under its name (nil: none).
type system interface {
	Routes() map[string]http.Handler
	Run(ctx context.Context) error
	Close(ctx context.Context) error
	Health() map[string]any
}

// systemDef is one system as startServe starts it.
type systemDef struct {
	name string
	// label names the system in messages; needs are the DynamoDB features
	// it needs ("transactions", "streams", "ttl"); nil: no DynamoDB.
	label string
	needs []string
	// start assembles the system and returns it with its /healthz status.
	start func(ctx context.Context) (system, map[string]any, error)
}

// routePatterns are the mux patterns of each system's routes: each
// answers 503 with the reason until its system has started.
var routePatterns = map[string][]string{
	"datashelf":   {"/datashelf/"},
	"wallcrawler": {"/wallcrawler/", wallcrawler.UploadPrefix},
	"checks":      {"/checks/"},
	"eecar":       {"/eecar/"},
}

// serving is what startServe shares with the systems it starts: the
// backends, and each system once it has started (nil until then).
type serving struct {
	c        *config.Config
	client   *dynamodb.Client
	answers  *health.Answers // when client's calls last succeeded
	streams  *dynamodbstreams.Client
	embedded bool // the embedded store, in this process
	// streamChanges wakes stream readers of the embedded store (nil when
	// the store is another process).
	streamChanges func(streamArn string) <-chan struct{}
	policy        *fetch.Policy
	origin        *origin.Resolver // --public-url and --trusted-proxies
	log           *slog.Logger
	caps          *ddbtable.CapsProbe
	reg           *metrics.Registry
	slots         []*lifecycle.Slot // the systems', in start order
	started       sync.Map          // name → system, once started

	wc atomic.Pointer[wallcrawler.System]
	ck atomic.Pointer[checks.System]
	ee atomic.Pointer[eecar.System]
	ds atomic.Pointer[datashelf.System]
}

// systems lists the systems in start order (the reverse of their stop).
func (s *serving) systems() []systemDef {
	return []systemDef{
		{name: "wallcrawler", label: "Wallcrawler", needs: []string{"streams", "ttl"}, start: s.startWallcrawler},
		{name: "checks", label: "Checks", needs: []string{"transactions"}, start: s.startChecks},
		{name: "eecar", label: "EECAR", needs: []string{"transactions", "streams"}, start: s.startEECAR},
		{name: "datashelf", label: "DataShelf", start: s.startDataShelf},
	}
}

// starter returns the start attempt of sys: refused when the DynamoDB
// endpoint lacks a feature it needs; else the system is assembled, its
// background work runs in sub and it is closed after that work, at stop.
func (s *serving) starter(sys systemDef) lifecycle.StartFunc {
	return func(ctx context.Context, sub *lifecycle.Lifecycle) (map[string]http.Handler, map[string]any, error) {
		if sys.needs != nil {
			k, err := s.caps.Get(ctx)
			if err != nil {
				return nil, nil, err
			}
			if why := k.Missing(sys.label, sys.needs...); why != "" {
				return nil, nil, lifecycle.Disabled{Reason: why}
			}
		}
		started, status, err := sys.start(ctx)
		if err != nil {
			return nil, nil, err
		}
		sub.OnStop(sys.name, started.Close)
		sub.Go(sys.name+" background work", started.Run, nil)
		s.started.Store(sys.name, started)
		return started.Routes(), status, nil
	}
}

// running is a started system's /healthz status.
func running() map[string]any { return map[string]any{"status": "running"} }

func (s *serving) startWallcrawler(ctx context.Context) (system, map[string]any, error) {
	c := s.c
	blobs, uploader, err := blob.Open(ctx, c.Blobs(), "wallcrawler", filepath.Join(c.DataDir, "wallcrawler", "blobs"))
	if err != nil {
		return nil, nil, err
	}
	if host, _, _ := net.SplitHostPort(c.Listen); c.DynamoDBEndpoint != "" && c.AdvertiseURL == "" && (host == "" || net.ParseIP(host).IsUnspecified()) {
		s.log.Warn("--listen is a wildcard address: set --advertise-url so that the other processes can forward CDP connections here", "listen", c.Listen)
	}
	wcfg := c.Wallcrawler
	wcfg.MaxConnsPerProject = c.WallcrawlerConnsPerProject()
	wc, err := wallcrawler.New(ctx, wcfg, wallcrawler.Deps{DynamoDB: s.client, Streams: s.streams, StreamChanges: s.streamChanges, Blobs: blobs, Uploader: uploader,
		DataDir: c.DataDir, NodeID: nodeID(c), AdvertiseURL: advertiseURL(c), Origin: s.origin, Policy: s.policy, Logger: s.log})
	if err != nil {
		return nil, nil, err
	}
	st := running()
	if k, _ := s.caps.Get(ctx); !k.PITR {
		warning := fmt.Sprintf("point-in-time recovery is not available on %s: Wallcrawler's tables are not protected by it; back them up by the engine's own means", k.Engine)
		s.log.Warn(warning, "system", "wallcrawler")
		st["warnings"] = []string{warning}
	}
	s.reg.Register(metrics.NewEgressCollector(wc.Egress()))
	s.wc.Store(wc)
	return wc, st, nil
}

func (s *serving) startChecks(ctx context.Context) (system, map[string]any, error) {
	ck, err := checks.New(ctx, s.c.Checks, checks.Deps{DynamoDB: s.client, Policy: s.policy, NodeID: s.c.NodeID, Logger: s.log})
	if err != nil {
		return nil, nil, err
	}
	s.ck.Store(ck)
	return ck, running(), nil
}

func (s *serving) startEECAR(ctx context.Context) (system, map[string]any, error) {
	blobs, _, err := blob.Open(ctx, s.c.Blobs(), "eecar", filepath.Join(s.c.DataDir, "eecar", "blobs"))
	if err != nil {
		return nil, nil, err
	}
	ee, err := eecar.New(ctx, s.c.EECAR, eecar.Deps{DynamoDB: s.client, Streams: s.streams, StreamChanges: s.streamChanges, Blobs: blobs, Policy: s.policy, Logger: s.log})
	if err != nil {
		return nil, nil, err
	}
	s.ee.Store(ee)
	return ee, running(), nil
}

func (s *serving) startDataShelf(ctx context.Context) (system, map[string]any, error) {
	blobs, _, err := blob.Open(ctx, s.c.Blobs(), "datashelf", dataShelfBlobDir(s.c))
	if err != nil {
		return nil, nil, err
	}
	ds, err := datashelf.New(ctx, s.c.DataShelf, datashelf.Deps{DataDir: s.c.DataDir, Blobs: blobs, Logger: s.log, Policy: s.policy, Version: version})
	if err != nil {
		return nil, nil, err
	}
	s.ds.Store(ds)
	return ds, running(), nil
}

// details returns the /healthz details of the started systems that have
// any, by name.
func (s *serving) details() map[string]any {
	d := map[string]any{}
	s.started.Range(func(name, sys any) bool {
		if h := sys.(system).Health(); h != nil {
			d[name.(string)] = h
		}
		return true
	})
	return d
}

// health returns each system's /healthz status.
func (s *serving) health() map[string]any {
	systems := map[string]any{}
	for _, sl := range s.slots {
		systems[sl.Name()] = sl.Health()
	}
	return systems
}

// startConsole starts the web console once no system waits for its
// backends (it needs the DynamoDB endpoint itself). A console that cannot
// start for another reason answers 503 with it.
func (s *serving) startConsole(ctx context.Context, sub *lifecycle.Lifecycle) (map[string]http.Handler, map[string]any, error) {
	for _, sl := range s.slots {
		if sl.IsWaiting() {
			return nil, nil, lifecycle.ErrNotYet
		}
	}
	h, err := newConsole(ctx, sub, s)
	if err != nil && lifecycle.Unreachable(err) {
		return nil, nil, err
	}
	if err != nil {
		s.log.Error("console disabled", "err", err)
		return map[string]http.Handler{"/": console.Unavailable(err)}, running(), nil
	}
	return map[string]http.Handler{"/": h}, running(), nil
}

// startBackendHealth starts the prober of /healthz's "backends", from the
// start, also while the systems that need them wait.
func (s *serving) startBackendHealth(ctx context.Context) (*health.Checker, error) {
	pgPing := func(ctx context.Context) error {
		if ds := s.ds.Load(); ds != nil {
			return ds.Ping(ctx)
		}
		return postgres.Ping(ctx, s.c.DataShelf.DB)
	}
	var s3Ping func(context.Context) error
	if s.c.BlobS3Bucket != "" {
		s3, err := blob.OpenS3(ctx, s.c.Blobs(), "datashelf")
		if err != nil {
			return nil, err
		}
		s3Ping = s3.Ping
	}
	return startBackendHealth(ctx, s.c, s.client, s.answers, pgPing, s3Ping, s.log), nil
}

// registerMetrics adds the systems' gauges to /metrics (zero while a
// system has not started) and the embedded store's figures.
func (s *serving) registerMetrics(store *ddb.Store) {
	gauge := func(name, help string, f func() float64) { s.reg.Gauge(name, help, f) }
	gauge("wallcrawler_live_sessions", "Browser sessions running in this process.", func() float64 {
		if wc := s.wc.Load(); wc != nil {
			return float64(wc.Sessions().Live())
		}
		return 0
	})
	wallcrawler.RegisterLeaseMetrics(s.reg, s.wc.Load)
	gauge("checks_scheduled", "ACTIVE checks in this process's schedule.", func() float64 {
		if ck := s.ck.Load(); ck != nil {
			return float64(ck.Scheduled())
		}
		return 0
	})
	gauge("eecar_indexed_parts", "Parts in this process's search index.", func() float64 {
		if ee := s.ee.Load(); ee != nil {
			return float64(ee.Indexed())
		}
		return 0
	})
	if store != nil {
		s.reg.Register(metrics.NewStoreCollector(store))
	}
}

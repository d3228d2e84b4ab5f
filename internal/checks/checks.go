// Package checks is the Checks system: web monitors per user, run on a
// schedule with tier limits. New assembles its parts (tables, store,
// prober, scheduler, alert dispatcher, API) from the configuration; the
// caller mounts Routes, runs Run until it stops, then calls Close.
//
// The parts live in subpackages: tables (the USER and CHECK tables),
// store, probe (availability, keyword and eBay runs), scheduler (claim
// ahead, give back on stop), alert (webhook and email) and api.
package checks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/checks/alert"
	"github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// Deps are what Checks takes from the process that runs it.
type Deps struct {
	// DynamoDB is the client of the store holding the USER and CHECK
	// tables.
	DynamoDB *dynamodb.Client
	// Policy is the one network policy: every target and webhook is
	// connected to under it.
	Policy *fetch.Policy
	// NodeID names this process among those sharing the store (empty:
	// the host name); the scheduler's leases carry it.
	NodeID string
	// Logger logs the system's work (default: discard).
	Logger *slog.Logger
}

// System is a running Checks.
type System struct {
	api     *api.Handler
	store   *store.Store
	sched   *scheduler.Scheduler
	alerts  *alert.Dispatcher
	prober  *probe.Prober
	handler http.Handler
	log     *slog.Logger
}

// OpenStore opens Checks' store, creating its tables when missing: the
// store of the administration commands and of the console.
func OpenStore(ctx context.Context, cfg config.Checks, client *dynamodb.Client) (*store.Store, error) {
	names, err := tables.EnsureTables(ctx, client, cfg.TablePrefix)
	if err != nil {
		return nil, err
	}
	return store.New(client, names, &store.Options{Limits: map[string]int{store.TierFree: cfg.FreeLimit, store.TierPro: cfg.ProLimit}}), nil
}

// New creates Checks' tables when missing and assembles the API, the
// scheduler and the alert dispatcher. Nothing runs until Run.
func New(ctx context.Context, cfg config.Checks, deps Deps) (*System, error) {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("system", "checks")
	st, err := OpenStore(ctx, cfg, deps.DynamoDB)
	if err != nil {
		return nil, err
	}
	fo := fetch.Options{UserAgent: "quarry-checks/1 (+https://github.com/quarrydb/quarry)", Policy: deps.Policy}
	prober := probe.New(probe.Options{Fetch: fo})
	aopts := alert.Options{Logger: log, HTTPClient: fetch.New(fo).Client(), OnResult: scheduler.RecordDeliveries(st, log), CurrentTarget: scheduler.CurrentTarget(st),
		OnChannelResult: scheduler.RecordChannelDeliveries(st, log)}
	if cfg.SMTP != "" {
		aopts.SMTP = &alert.SMTPConfig{Addr: cfg.SMTP, From: cfg.SMTPFrom, Username: cfg.SMTPUser, Password: cfg.SMTPPassword}
	}
	// A delivered alert leaves the outbox through the scheduler that
	// queued it (made below).
	var sched *scheduler.Scheduler
	aopts.OnDone = func(a alert.Alert) { sched.AlertDone(a) }
	dispatcher := alert.New(aopts)
	retention := cfg.Retention
	if retention == 0 {
		retention = -1 // no history
	}
	sched = scheduler.New(st, prober, dispatcher, scheduler.Options{Owner: leaseOwner(deps.NodeID), RunTimeout: cfg.RunTimeout, Retention: retention, Concurrency: cfg.MaxInflight, Logger: log})
	h := api.New(st, prober, sched, api.Options{MinDelay: cfg.MinInterval, EmailEnabled: aopts.SMTP != nil, Channels: dispatcher, Logger: log})
	return &System{api: h, store: st, sched: sched, alerts: dispatcher, prober: prober, handler: http.StripPrefix("/checks", h), log: log}, nil
}

// leaseOwner names this process in the checks' leases: the node id
// (distinct per process sharing a store) or the host name, then the pid
// and a random suffix, so that two schedulers never share a name.
func leaseOwner(nodeID string) string {
	owner := nodeID
	if owner == "" {
		owner, _ = os.Hostname()
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	return owner + "-" + fmt.Sprint(os.Getpid()) + "-" + hex.EncodeToString(suffix[:])
}

// Routes returns the system's handlers by mux pattern: the API at
// /checks/.
func (s *System) Routes() map[string]http.Handler {
	return map[string]http.Handler{"/checks/": jsonhttp.BoundedIDs(s.handler, jsonhttp.Error)}
}

// Run runs the scheduler and the alert dispatcher until ctx ends. A stop
// lets runs already started finish and record themselves (scheduler's
// StopGrace).
func (s *System) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.alerts.Run(ctx); err != nil {
			s.log.Error("checks: alert dispatcher stopped", "err", err)
		}
	}()
	if err := s.sched.Run(ctx); err != nil {
		s.log.Error("checks: scheduler stopped", "err", err)
	}
	<-done
	return nil
}

// Health returns nil: /healthz says nothing more of Checks.
func (s *System) Health() map[string]any { return nil }

// Close closes the prober's connections; call it after Run has returned.
func (s *System) Close(context.Context) error {
	s.prober.Close()
	return nil
}

// API returns the HTTP API, which the console's Checks area drives.
func (s *System) API() *api.Handler { return s.api }

// Store returns the system's store.
func (s *System) Store() *store.Store { return s.store }

// Scheduled returns the number of ACTIVE checks in this process's
// schedule.
func (s *System) Scheduled() int { return s.sched.Len() }

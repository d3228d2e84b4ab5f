// Package eecar is the EECAR system: a B2B marketplace for used EV parts
// on one DynamoDB table. New assembles its parts (the table, the search
// index, watches, webhooks, API) from the configuration; the caller mounts
// Routes, runs Run (the table's stream follower) until it stops, then
// calls Close.
//
// The parts live in subpackages: store (the single table), embed (the
// vectors), search (vectors, BM25 and quantities), market (parts, needs,
// watches, proposals), notify (webhooks) and api.
package eecar

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/quarrydb/quarry/ddb/consumer"
	"github.com/quarrydb/quarry/internal/eecar/api"
	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/notify"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// Deps are what EECAR takes from the process that runs it.
type Deps struct {
	// DynamoDB and Streams are the clients of the store holding
	// eecar-parts-table and of its stream.
	DynamoDB *dynamodb.Client
	Streams  *dynamodbstreams.Client
	// StreamChanges, set when the store runs in this process
	// ((*ddb.Store).StreamChanges), wakes the stream follower when the
	// table changes, so the index is current as soon as a write commits
	// and an idle stream is read only every consumer.ChangesPollInterval;
	// nil: the stream is polled every 250ms.
	StreamChanges func(streamArn string) <-chan struct{}
	// Blobs holds the part images.
	Blobs blob.Store
	// Policy is the one network policy: every webhook is connected to
	// under it.
	Policy *fetch.Policy
	// Logger logs the system's work (default: discard).
	Logger *slog.Logger
}

// System is a running EECAR.
type System struct {
	handler http.Handler
	store   *store.Store
	market  *market.Market
	hooks   *notify.Webhooks
	fetcher *fetch.Fetcher
	client  *dynamodb.Client
	streams *dynamodbstreams.Client
	poll    time.Duration
	changes func(streamArn string) <-chan struct{}
	log     *slog.Logger
}

// OpenStore opens EECAR's store, creating eecar-parts-table when missing:
// the store of the administration commands and of the console.
func OpenStore(ctx context.Context, cfg config.EECAR, client *dynamodb.Client) (*store.Store, error) {
	table, err := store.EnsureTable(ctx, client, cfg.TablePrefix)
	if err != nil {
		return nil, err
	}
	return store.New(client, table, nil), nil
}

// New creates eecar-parts-table when missing, loads the search index and
// the active watches, and assembles the API. Nothing runs until Run.
func New(ctx context.Context, cfg config.EECAR, deps Deps) (*System, error) {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("system", "eecar")
	st, err := OpenStore(ctx, cfg, deps.DynamoDB)
	if err != nil {
		return nil, err
	}
	fetcher := fetch.New(fetch.Options{Policy: deps.Policy})
	hooks := notify.New(st, fetcher.Client(), log)
	opts := market.Options{Logger: log, Notify: hooks.Notify, ImageQuota: cfg.ImageQuota}
	if cfg.ImageQuota == 0 {
		opts.ImageQuota = -1 // no bound
	}
	if cfg.EmbeddingsURL != "" {
		opts.Embedder = embed.NewOpenAI(cfg.EmbeddingsURL, cfg.EmbeddingsKey, cfg.EmbeddingsModel, cfg.EmbeddingsDim, nil)
	}
	m := market.New(st, deps.Blobs, opts)
	if err := m.Load(ctx); err != nil {
		fetcher.Close()
		return nil, fmt.Errorf("eecar: load: %w", err)
	}
	poll := 250 * time.Millisecond
	if deps.StreamChanges != nil {
		poll = consumer.ChangesPollInterval
	}
	return &System{
		handler: http.StripPrefix("/eecar", api.New(m, log, api.WithWebhookCheck(fetcher.Validate))),
		store:   st, market: m, hooks: hooks, fetcher: fetcher, client: deps.DynamoDB, streams: deps.Streams, poll: poll, changes: deps.StreamChanges, log: log,
	}, nil
}

// Routes returns the system's handlers by mux pattern: the API at /eecar/.
func (s *System) Routes() map[string]http.Handler {
	return map[string]http.Handler{"/eecar/": jsonhttp.BoundedIDs(s.handler, jsonhttp.Error)}
}

// Run follows the table's stream (the search index, watch triggers) and
// sweeps the webhook outbox until ctx ends, then waits for the webhooks in
// flight.
func (s *System) Run(ctx context.Context) error {
	swept := make(chan struct{})
	go func() { defer close(swept); s.hooks.Run(ctx) }()
	defer func() { <-swept }()
	err := s.market.Follow(ctx, s.client, s.streams, consumer.Options{
		PollInterval: s.poll, Changes: s.changes, RetryBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second,
		OnError: func(err error) { s.log.Warn("eecar: stream", "err", err) },
	})
	if err != nil && ctx.Err() == nil {
		s.log.Error("eecar: stream follower stopped", "err", err)
	}
	s.hooks.Wait()
	return nil
}

// Health returns nil: /healthz says nothing more of EECAR.
func (s *System) Health() map[string]any { return nil }

// Close closes the webhooks' connections; call it after Run has returned.
func (s *System) Close(context.Context) error {
	s.fetcher.Close()
	return nil
}

// Store returns the system's store (companies, keys, parts).
func (s *System) Store() *store.Store { return s.store }

// Market returns the marketplace, which the console's EECAR area drives.
func (s *System) Market() *market.Market { return s.market }

// Indexed returns the number of parts in this process's search index.
func (s *System) Indexed() int { return s.market.Index().Len() }

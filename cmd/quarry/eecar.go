package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/quarrydb/quarry/ddb/consumer"
	eecarapi "github.com/quarrydb/quarry/internal/eecar/api"
	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/notify"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

const eecarUsage = `usage:
  quarry eecar company create --name N [--industry I]   (prints the company's API key once)
  quarry eecar key create --company ID                   (issues another API key)
  quarry eecar key revoke --key K                        (the key stops working at once, console sessions included)
`

// cmdEECAR runs EECAR's administration commands.
func cmdEECAR(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, eecarUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("quarry eecar "+args[0]+" "+args[1], flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "company name")
	industry := fs.String("industry", "", "company industry")
	companyID := fs.String("company", "", "company id")
	rawKey := fs.String("key", "", "the API key to revoke")
	c, err := config.Load(fs, args[2:], getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "eecar-table-prefix", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	switch what := args[0] + " " + args[1]; {
	case what != "company create" && what != "key create" && what != "key revoke":
		fmt.Fprint(stderr, eecarUsage)
		return errUsage
	case what == "company create" && strings.TrimSpace(*name) == "":
		return errors.New(`eecar company create: --name is required (e.g. --name "Seoul EV Recycling")`)
	case what == "key create" && *companyID == "":
		return errors.New("eecar key create: --company is required: the company's id, co_… (printed by company create)")
	case what == "key revoke" && *rawKey == "":
		return errors.New("eecar key revoke: --key is required: the key itself, ek_… (only its hash is stored, so it cannot be listed)")
	}
	client, _, closeFn, err := dynamoClient(ctx, c, newLogger(c, stderr), true)
	if err != nil {
		return err
	}
	defer closeFn()
	table, err := store.EnsureTable(ctx, client, c.EECARTablePrefix)
	if err != nil {
		return err
	}
	st := store.New(client, table, nil)
	switch args[0] + " " + args[1] {
	case "company create":
		co, key, err := st.CreateCompany(ctx, *name, *industry)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "company %s (%s); only the key's hash is stored, so this is the only time it is shown:\n", co.ID, co.Name)
		fmt.Fprintln(stdout, key)
	case "key create":
		key, err := st.NewKey(ctx, *companyID)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, key)
	case "key revoke":
		if err := st.RevokeKey(ctx, *rawKey); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "key revoked")
	default:
		fmt.Fprint(stderr, eecarUsage)
		return errUsage
	}
	return nil
}

// eecar is the running EECAR system.
type eecar struct {
	handler http.Handler // mounted at /eecar/
	market  *market.Market
	hooks   *notify.Webhooks
	client  *dynamodb.Client
	streams *dynamodbstreams.Client
	poll    time.Duration
}

// startEECAR creates eecar-parts-table when missing, loads the search
// index and the active watches, and returns the API; lc closes the
// webhooks' connections at shutdown.
func startEECAR(ctx context.Context, lc *lifecycle, c *config.Config, client *dynamodb.Client, streams *dynamodbstreams.Client, embedded bool, policy *fetch.Policy, log *slog.Logger) (*eecar, error) {
	log = log.With("system", "eecar")
	table, err := store.EnsureTable(ctx, client, c.EECARTablePrefix)
	if err != nil {
		return nil, err
	}
	blobs, _, err := openBlobs(ctx, c, "eecar", filepath.Join(c.DataDir, "eecar", "blobs"))
	if err != nil {
		return nil, err
	}
	st := store.New(client, table, nil)
	fetcher := fetch.New(fetch.Options{Policy: policy})
	lc.onStop("eecar webhooks", func(context.Context) error { fetcher.Close(); return nil })
	hooks := notify.New(st, fetcher.Client(), log)
	opts := market.Options{Logger: log, Notify: hooks.Notify, ImageQuota: c.EECARImageQuota}
	if c.EECARImageQuota == 0 {
		opts.ImageQuota = -1 // no bound
	}
	if c.EECAREmbeddingsURL != "" {
		opts.Embedder = embed.NewOpenAI(c.EECAREmbeddingsURL, c.EECAREmbeddingsKey, c.EECAREmbeddingsModel, c.EECAREmbeddingsDim, nil)
	}
	m := market.New(st, blobs, opts)
	if err := m.Load(ctx); err != nil {
		return nil, fmt.Errorf("eecar: load: %w", err)
	}
	poll := 250 * time.Millisecond
	if embedded {
		poll = 100 * time.Millisecond // in-process, but idle polling is not free
	}
	e := &eecar{market: m, hooks: hooks, client: client, streams: streams, poll: poll}
	e.handler = http.StripPrefix("/eecar", eecarapi.New(m, log, eecarapi.WithWebhookCheck(fetcher.Validate)))
	return e, nil
}

// run follows the table's stream (index, watch triggers) until ctx ends.
func (e *eecar) run(ctx context.Context, log *slog.Logger) {
	err := e.market.Follow(ctx, e.client, e.streams, consumer.Options{
		PollInterval: e.poll, RetryBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second,
		OnError: func(err error) { log.Warn("eecar: stream", "err", err) },
	})
	if err != nil && ctx.Err() == nil {
		log.Error("eecar: stream follower stopped", "err", err)
	}
	e.hooks.Wait()
}

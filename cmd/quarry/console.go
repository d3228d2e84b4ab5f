package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/console"
	checksconsole "github.com/quarrydb/quarry/internal/console/checks"
	datashelfconsole "github.com/quarrydb/quarry/internal/console/datashelf"
	eecarconsole "github.com/quarrydb/quarry/internal/console/eecar"
	"github.com/quarrydb/quarry/internal/console/explorer"
	"github.com/quarrydb/quarry/internal/console/operators"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	datashelfstore "github.com/quarrydb/quarry/internal/datashelf/store"
	eecarstore "github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	wcauth "github.com/quarrydb/quarry/internal/wallcrawler/auth"
	wctables "github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// consoleKeyName is the file, in the data directory, holding the key that
// signs the console's session cookies.
const consoleKeyName = "console.key"

// consoleKey reads the console's session key from the data directory,
// creating it (32 random bytes, mode 0600) on first use.
func consoleKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, consoleKeyName)
	key, err := os.ReadFile(path)
	if err == nil && len(key) >= 32 {
		return key, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("console key: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("console key: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("console key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("console key: %w", err)
	}
	return key, nil
}

// consoleUnavailable answers in place of a console that could not start:
// 503 with the reason at the console's paths, a JSON 404 elsewhere.
func consoleUnavailable(err error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, msg := http.StatusServiceUnavailable, "console unavailable: "+err.Error()
		if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/console/") {
			status, msg = http.StatusNotFound, "not found: "+r.URL.Path
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	})
}

func newConsole(ctx context.Context, c *config.Config, client *dynamodb.Client, systems map[string]any, ck *checks, ds datashelfstore.Store, crawls *datashelfconsole.Crawls, ee *eecar, log *slog.Logger, extras ...consoleExtra) (*console.Console, error) {
	key, err := consoleKey(c.DataDir)
	if err != nil {
		return nil, err
	}
	ops := operators.New(client, operators.DefaultTable)
	if err := ops.EnsureTable(ctx); err != nil {
		return nil, err
	}
	running := func(name string) bool {
		st, _ := systems[name].(map[string]any)
		return st["status"] == "running"
	}
	opts := console.Options{Key: key, Areas: []console.Area{explorer.New(client)}, Logger: log,
		Realms: []console.Realm{{Kind: "operator", Label: "Operator token", Operator: true, Auth: operatorAuth{ops}}}}
	if running("checks") && ck != nil {
		st, err := checksStore(ctx, c, client)
		if err != nil {
			return nil, err
		}
		opts.Realms = append(opts.Realms, checksconsole.Realm(st))
		opts.Areas = append(opts.Areas, checksconsole.New(checksconsole.Adapt(st, ck.api)))
	}
	if ds != nil {
		shelf := datashelfconsole.Adapt(ds, crawls)
		opts.Areas = append(opts.Areas, datashelfconsole.New(shelf, shelf))
	}
	if running("eecar") {
		table, err := eecarstore.EnsureTable(ctx, client, c.EECARTablePrefix)
		if err != nil {
			return nil, err
		}
		st := eecarstore.New(client, table, nil)
		opts.Realms = append(opts.Realms, eecarconsole.Realm(st))
		if ee != nil {
			opts.Areas = append(opts.Areas, eecarconsole.New(eecarconsole.Adapt(ee.market)))
		}
	}
	if running("wallcrawler") {
		names, err := wctables.EnsureTables(ctx, client, c.WallcrawlerTablePrefix)
		if err != nil {
			return nil, err
		}
		st := wcauth.New(client, names, nil)
		opts.Realms = append(opts.Realms, console.Realm{Kind: "wallcrawler", Label: "Wallcrawler API key", Auth: wcRealm{st}})
	}
	for _, x := range extras {
		if err := x(ctx, &opts); err != nil {
			return nil, err
		}
	}
	return console.New(opts)
}

// operatorAuth signs operators in with their tokens; a revoked token ends
// its sessions at their next request.
type operatorAuth struct{ st *operators.Store }

func (a operatorAuth) Authenticate(ctx context.Context, cred string) (console.Principal, error) {
	t, err := a.st.Authenticate(ctx, cred)
	if err != nil {
		return console.Principal{}, err
	}
	return console.Principal{ID: t.ID, Name: t.Name}, nil
}

func (a operatorAuth) Valid(ctx context.Context, id string) error {
	_, err := a.st.Get(ctx, id)
	return err
}

// consoleCrawls runs the crawls started on the console's crawl page in
// this process, as `quarry datashelf crawl` would (the network policy,
// robots.txt, the World of Books profile), until ctx ends or Stop.
func consoleCrawls(ctx context.Context, c *config.Config, ds datashelfstore.Store, blobs blob.Store, log *slog.Logger) (*datashelfconsole.Crawls, error) {
	fo := crawler.FetchOptions(version)
	policy, err := c.NetworkPolicy()
	if err != nil {
		return nil, err
	}
	fo.Policy = policy
	return datashelfconsole.NewCrawls(ctx, crawler.Options{Store: ds, Fetcher: fetch.New(fo), Blobs: blobs, Logger: log.With("system", "datashelf")}), nil
}

const adminUsage = `usage:
  quarry admin token create --name NAME   (prints a console operator token once)
  quarry admin token list
  quarry admin token revoke --id ID       (the first 8 or more digits of the id list prints)
`

// cmdAdmin runs `quarry admin`: the console's operator tokens, through the
// data directory's admin channel when quarry serve holds it.
func cmdAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "token" {
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("quarry admin token "+args[1], flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "who or what the token is for")
	id := fs.String("id", "", "the token's id, or its first 8 or more digits")
	c, err := config.Load(fs, args[2:], getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	switch args[1] {
	case "create", "list", "revoke":
	default:
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	if args[1] == "create" && *name == "" {
		return errors.New("admin token create: --name is required (e.g. --name alice)")
	}
	if args[1] == "revoke" && *id == "" {
		return errors.New("admin token revoke: --id is required (see quarry admin token list)")
	}
	client, _, closeFn, err := dynamoClient(ctx, c, newLogger(c, stderr), true)
	if err != nil {
		return err
	}
	defer closeFn()
	st := operators.New(client, operators.DefaultTable)
	if err := st.EnsureTable(ctx); err != nil {
		return err
	}
	switch args[1] {
	case "create":
		secret, t, err := st.Create(ctx, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "operator token %s for %s; only its hash is stored, so this is the only time it is shown:\n", t.Short(), t.Name)
		fmt.Fprintln(stdout, secret)
	case "list":
		ts, err := st.List(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			fmt.Fprintf(stdout, "%s  %s  %s\n", t.Short(), t.Created.Format(time.RFC3339), t.Name)
		}
	case "revoke":
		n, err := st.Revoke(ctx, *id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("admin token revoke: no token %s", *id)
		}
		fmt.Fprintf(stdout, "revoked %d token(s)\n", n)
	}
	return nil
}

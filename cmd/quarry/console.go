package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/quarrydb/quarry/internal/console"
	checksconsole "github.com/quarrydb/quarry/internal/console/checks"
	datashelfconsole "github.com/quarrydb/quarry/internal/console/datashelf"
	eecarconsole "github.com/quarrydb/quarry/internal/console/eecar"
	"github.com/quarrydb/quarry/internal/console/explorer"
	"github.com/quarrydb/quarry/internal/console/operators"
	wcconsole "github.com/quarrydb/quarry/internal/console/wallcrawler"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/datadir"
	"github.com/quarrydb/quarry/internal/platform/lifecycle"
)

// consoleKeyName is the file, in the data directory, holding the key that
// signs the console's session cookies.
const consoleKeyName = "console.key"

// newConsole returns the console of what s has started, its session key
// read from (or made in) the data directory; the crawls started from its
// crawl page run under sub.
func newConsole(ctx context.Context, sub *lifecycle.Lifecycle, s *serving) (*console.Console, error) {
	key, err := datadir.Key(filepath.Join(s.c.DataDir, consoleKeyName))
	if err != nil {
		return nil, err
	}
	realms, areas, err := consoleAreas(ctx, sub, s)
	if err != nil {
		return nil, err
	}
	return console.New(console.Options{Key: key, Realms: realms, Areas: areas, Logger: s.log, TrustedProxy: s.origin.Trusted})
}

// consoleAreas returns the credentials the console accepts (operator
// tokens, and each running system's own) and its areas (the store
// explorer, and the pages of each system running in this process), in the
// sign-in form's and the header's order.
func consoleAreas(ctx context.Context, sub *lifecycle.Lifecycle, s *serving) ([]console.Realm, []console.Area, error) {
	client, health := s.client, s.health()
	ops := operators.New(client, operators.DefaultTable)
	if err := ops.EnsureTable(ctx); err != nil {
		return nil, nil, err
	}
	realms := []console.Realm{operators.Realm(ops)}
	areas := []console.Area{explorer.New(client)}
	running := func(name string) bool {
		st, _ := health[name].(map[string]any)
		return st["status"] == "running"
	}
	if ck := s.ck.Load(); running("checks") && ck != nil {
		// Checks API tokens start with chk_ (internal/checks/store's
		// token format): the sign-in form infers the realm from it.
		ckRealm := checksconsole.Realm(ck.Store())
		ckRealm.Prefix, ckRealm.Home = "chk_", "/console/checks/"
		realms = append(realms, ckRealm)
		areas = append(areas, checksconsole.New(checksconsole.Adapt(ck.Store(), ck.API())))
	}
	if ds := s.ds.Load(); ds != nil {
		shelf := datashelfconsole.Adapt(ds.Store(), ds.Runner())
		areas = append(areas, datashelfconsole.New(shelf, shelf))
	}
	if ee := s.ee.Load(); running("eecar") && ee != nil {
		realms = append(realms, eecarconsole.Realm(ee.Store()))
		areas = append(areas, eecarconsole.New(eecarconsole.Adapt(ee.Market())))
	}
	if wc := s.wc.Load(); running("wallcrawler") && wc != nil {
		realms = append(realms, wcconsole.Realm(wc.Auth()))
		areas = append(areas, wcconsole.New(wcconsole.Adapt(wc.Auth(), wc.Sessions(), wc.Contexts())))
	}
	return realms, areas, nil
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

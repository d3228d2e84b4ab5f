package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/quarrydb/quarry/internal/checks"
	"github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/importer"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// errImportStopped is the exit of an import that stopped at the user's
// tier limit: some checks were not created.
var errImportStopped = errors.New("checks import: stopped at the user's check limit (or a suspended account); the checks listed as not created were not")

// cmdChecksImport runs `quarry checks import`: it creates a user's checks
// from a Gatus configuration or an Uptime Kuma backup through the API's
// handler (so with the API's validation, network policy and tier limit),
// and reports what it could not carry over.
func cmdChecksImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quarry checks import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("user", "", "the email address of the user whose checks are created")
	from := fs.String("from", "", "the file's format: gatus (a configuration, YAML) or uptime-kuma (a backup, JSON)")
	dryRun := fs.Bool("dry-run", false, "report what would be created and what cannot be carried over, creating nothing")
	file, rest := importFile(args)
	c, err := config.Load(fs, rest, getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "checks-table-prefix", "checks-free-limit", "checks-pro-limit",
			"checks-min-interval", "allow-networks", "checks-allow-networks", "listen", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	if *email == "" || file == "" {
		fmt.Fprint(stderr, checksUsage)
		return fmt.Errorf("%w: checks import needs --user and a file", errUsage)
	}
	format := strings.ToLower(*from)
	if format != "gatus" && format != "uptime-kuma" {
		return fmt.Errorf("checks import: --from %q: want gatus or uptime-kuma", *from)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("checks import: %w", err)
	}
	var plan importer.Plan
	if format == "gatus" {
		plan, err = importer.FromGatus(data, c.Checks.MinInterval)
	} else {
		plan, err = importer.FromKuma(data, c.Checks.MinInterval)
	}
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	policy, err := c.ServePolicy(ctx, log)
	if err != nil {
		return err
	}
	client, _, closeFn, err := dynamoClient(ctx, c, log, true)
	if err != nil {
		return err
	}
	defer closeFn()
	st, err := checks.OpenStore(ctx, c.Checks, client)
	if err != nil {
		return err
	}
	u, err := st.UserByEmail(ctx, *email)
	if err != nil {
		return fmt.Errorf("checks import: user %s: %w", *email, err)
	}
	prober := probe.New(probe.Options{Fetch: fetch.Options{Policy: policy}})
	defer prober.Close()
	// No scheduler here: a running quarry serve picks the new checks up
	// at its next refresh, as it does checks created by another process.
	h := api.New(st, prober, nil, api.Options{MinDelay: c.Checks.MinInterval, Logger: log})
	sum, err := importer.Apply(ctx, h, u.ID, plan,
		importer.Options{DryRun: *dryRun, Validator: prober, Room: u.CheckLimit - u.CheckCount}, stdout)
	if err != nil {
		return err
	}
	if sum.Stopped {
		return errImportStopped
	}
	return nil
}

// importFile takes the file, the one argument that is neither a flag nor
// a flag's value, out of args. Every flag of the import takes a value
// except --dry-run.
func importFile(args []string) (file string, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) && file == "" {
				file = args[i+1]
			}
			return file, rest
		case strings.HasPrefix(a, "-") && len(a) > 1:
			rest = append(rest, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && name != "dry-run" && name != "h" && name != "help" && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
		case file == "":
			file = a
		default:
			rest = append(rest, a) // config.Load refuses it by name
		}
	}
	return file, rest
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/platform/config"
	wcapi "github.com/quarrydb/quarry/internal/wallcrawler/api"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

const wallcrawlerUsage = `usage:
  quarry wallcrawler project create --name N [--concurrency C] [--id ID] [--timeout SECONDS]
  quarry wallcrawler key create --project P [--also P2,P3] [--name LABEL]
  quarry wallcrawler key revoke (--key RAW | --project P --id KEY_ID)
`

// cmdWallcrawler runs Wallcrawler's administration commands.
func cmdWallcrawler(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, wallcrawlerUsage)
		return errUsage
	}
	what := args[0] + " " + args[1]
	fs := flag.NewFlagSet("quarry wallcrawler "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "project name, or key label")
	concurrency := fs.Int("concurrency", 0, "maximum concurrent sessions of the project (default 1)")
	id := fs.String("id", "", "project id (create), or key id (revoke)")
	timeout := fs.Int("timeout", 0, "default session timeout in seconds (default 3600)")
	project := fs.String("project", "", "project id")
	also := fs.String("also", "", "comma-separated further projects the key may use")
	rawKey := fs.String("key", "", "the raw API key to revoke")
	c, err := config.Load(fs, args[2:], getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "wallcrawler-table-prefix", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	client, _, closeFn, err := dynamoClient(ctx, c, log, true)
	if err != nil {
		return err
	}
	defer closeFn()
	names, err := tables.EnsureTables(ctx, client, c.WallcrawlerTablePrefix)
	if err != nil {
		return err
	}
	st := auth.New(client, names, nil)
	switch what {
	case "project create":
		p, err := st.CreateProject(ctx, auth.CreateProjectInput{ID: *id, Name: *name, Concurrency: *concurrency, DefaultTimeout: *timeout})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "project %s (%s): concurrency %d, default timeout %ds\n", p.ID, p.Name, p.Concurrency, p.DefaultTimeout)
	case "key create":
		var extra []string
		for _, p := range strings.Split(*also, ",") {
			if p = strings.TrimSpace(p); p != "" {
				extra = append(extra, p)
			}
		}
		raw, k, err := st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: *project, ProjectIDs: extra, Name: *name})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "key %s for project %s; only its SHA-256 hash is stored, so this is the only time the key is shown:\n", k.ID, k.ProjectID)
		fmt.Fprintln(stdout, raw)
	case "key revoke":
		switch {
		case *rawKey != "":
			err = st.RevokeKey(ctx, *rawKey)
		case *project != "" && *id != "":
			err = st.RevokeKeyByID(ctx, *project, *id)
		default:
			fmt.Fprint(stderr, wallcrawlerUsage)
			return errUsage
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "revoked")
	default:
		fmt.Fprint(stderr, wallcrawlerUsage)
		return errUsage
	}
	return nil
}

// wallcrawlerHandler creates Wallcrawler's tables when missing and returns
// its API, to be mounted at /wallcrawler.
func wallcrawlerHandler(ctx context.Context, c *config.Config, client *dynamodb.Client, log *slog.Logger) (http.Handler, error) {
	names, err := tables.EnsureTables(ctx, client, c.WallcrawlerTablePrefix)
	if err != nil {
		return nil, fmt.Errorf("wallcrawler: %w", err)
	}
	h := wcapi.New(auth.New(client, names, nil), &wcapi.Options{Logger: log.With("system", "wallcrawler")})
	return http.StripPrefix("/wallcrawler", h), nil
}

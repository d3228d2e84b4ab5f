package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

const wallcrawlerUsage = `usage:
  quarry wallcrawler project create --name N [--concurrency C] [--id ID] [--timeout SECONDS] [--owner O] [--tier T]
  quarry wallcrawler project update --id ID [--name N] [--concurrency C] [--timeout SECONDS] [--owner O] [--tier T] [--status ACTIVE|INACTIVE]
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
	id := fs.String("id", "", "project id (create, update), or key id (revoke)")
	owner := fs.String("owner", "", "the project's ownerId, an external owner identifier (update: \"\" removes it)")
	tier := fs.String("tier", "", "the project's billingTier (update: \"\" removes it)")
	status := fs.String("status", "", "the project's status: ACTIVE, or INACTIVE (no new sessions)")
	timeout := fs.Int("timeout", 0, "default session timeout in seconds (default 3600)")
	project := fs.String("project", "", "project id")
	also := fs.String("also", "", "comma-separated further projects the key may use")
	rawKey := fs.String("key", "", "the raw API key to revoke")
	c, err := config.Load(fs, args[2:], getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "wallcrawler-table-prefix", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	// Required flags are checked before the store is opened, and named as
	// the command line spells them.
	switch {
	case what != "project create" && what != "project update" && what != "key create" && what != "key revoke":
		fmt.Fprint(stderr, wallcrawlerUsage)
		return errUsage
	case what == "project create" && *name == "":
		return errors.New("wallcrawler project create: --name is required (e.g. --name Acme)")
	case what == "project update" && *id == "":
		return errors.New("wallcrawler project update: --id is required: the id of the project to change (e.g. --id project_acme)")
	case what == "project create" && *status != "":
		return errors.New("wallcrawler project create: a new project is ACTIVE; use project update --status to change it")
	case what == "key create" && *project == "":
		return errors.New("wallcrawler key create: --project is required: the id of the project the key may use (e.g. --project project_acme)")
	case what == "key revoke" && *rawKey == "" && (*project == "" || *id == ""):
		return errors.New("wallcrawler key revoke: --key RAW_KEY is required, or --project P with --id KEY_ID")
	}
	log := newLogger(c, stderr)
	client, _, closeFn, err := dynamoClient(ctx, c, log, true)
	if err != nil {
		return err
	}
	defer closeFn()
	names, err := tables.EnsureTables(ctx, client, c.Wallcrawler.TablePrefix)
	if err != nil {
		return err
	}
	st := auth.New(client, names, nil)
	switch what {
	case "project create":
		p, err := st.CreateProject(ctx, auth.CreateProjectInput{ID: *id, Name: *name, Concurrency: *concurrency, DefaultTimeout: *timeout,
			OwnerID: *owner, BillingTier: *tier})
		if err != nil {
			return err
		}
		printProject(stdout, p)
	case "project update":
		in := projectUpdate(fs, name, owner, tier, status, concurrency, timeout)
		p, err := st.UpdateProject(ctx, *id, in)
		if err != nil {
			return fmt.Errorf("wallcrawler project update: %w", err)
		}
		printProject(stdout, p)
	case "key create":
		raw, k, err := st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: *project, ProjectIDs: splitList(*also), Name: *name})
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

// projectUpdate returns the change of project update: only the flags
// given on the command line change the project.
func projectUpdate(fs *flag.FlagSet, name, owner, tier, status *string, concurrency, timeout *int) auth.UpdateProjectInput {
	var in auth.UpdateProjectInput
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "name":
			in.Name = name
		case "owner":
			in.OwnerID = owner
		case "tier":
			in.BillingTier = tier
		case "status":
			up := strings.ToUpper(*status)
			in.Status = &up
		case "concurrency":
			in.Concurrency = concurrency
		case "timeout":
			in.DefaultTimeout = timeout
		}
	})
	return in
}

// splitList returns the non-empty trimmed items of a comma-separated list.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// printProject writes the one-line summary project create and update print.
func printProject(w io.Writer, p auth.Project) {
	fmt.Fprintf(w, "project %s (%s): %s, concurrency %d, default timeout %ds", p.ID, p.Name, p.Status, p.Concurrency, p.DefaultTimeout)
	if p.OwnerID != "" {
		fmt.Fprintf(w, ", owner %s", p.OwnerID)
	}
	if p.BillingTier != "" {
		fmt.Fprintf(w, ", billing tier %s", p.BillingTier)
	}
	fmt.Fprintln(w)
}

// advertiseURL is the base URL the other processes reach this one's API
// at: --advertise-url, else http://<--listen>.
func advertiseURL(c *config.Config) string {
	if c.AdvertiseURL != "" {
		return strings.TrimSuffix(c.AdvertiseURL, "/")
	}
	return "http://" + c.Listen
}

// nodeID is --node-id, or when it is not set the host name and the first
// 6 hex digits of the SHA-256 of the absolute data directory: distinct for
// two processes on one machine (which would otherwise take each other's
// lease and sessions for their own), the same for a restart of the same
// process (which then ends what its previous run left at once).
func nodeID(c *config.Config) string {
	if c.NodeID != "" {
		return c.NodeID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	data, err := filepath.Abs(c.DataDir)
	if err != nil {
		data = c.DataDir
	}
	sum := sha256.Sum256([]byte(data))
	return host + "-" + hex.EncodeToString(sum[:3])
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/checks/alert"
	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

const checksUsage = `usage:
  quarry checks user create --email E [--tier FREE|PRO]   (prints the user's API token once)
  quarry checks user suspend --email E
  quarry checks user activate --email E
  quarry checks user tier --email E --tier FREE|PRO
  quarry checks user token --email E                        (issues another API token)
`

// checksStore opens Checks' store (creating its tables when missing).
func checksStore(ctx context.Context, c *config.Config, client *dynamodb.Client) (*store.Store, error) {
	names, err := tables.EnsureTables(ctx, client, c.ChecksTablePrefix)
	if err != nil {
		return nil, err
	}
	return store.New(client, names, &store.Options{Limits: map[string]int{store.TierFree: c.ChecksFreeLimit, store.TierPro: c.ChecksProLimit}}), nil
}

// cmdChecks runs Checks' administration commands.
func cmdChecks(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "user" {
		fmt.Fprint(stderr, checksUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("quarry checks user "+args[1], flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "the user's email address")
	tier := fs.String("tier", "", "FREE or PRO")
	c, err := config.Load(fs, args[2:], getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "checks-table-prefix", "checks-free-limit", "checks-pro-limit", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	switch args[1] {
	case "create", "suspend", "activate", "tier", "token":
	default:
		fmt.Fprint(stderr, checksUsage)
		return errUsage
	}
	if *email == "" {
		return fmt.Errorf("checks user %s: --email is required (e.g. --email me@example.com)", args[1])
	}
	if args[1] == "tier" && *tier == "" {
		return errors.New("checks user tier: --tier is required: FREE or PRO")
	}
	client, _, closeFn, err := dynamoClient(ctx, c, newLogger(c, stderr), true)
	if err != nil {
		return err
	}
	defer closeFn()
	st, err := checksStore(ctx, c, client)
	if err != nil {
		return err
	}
	if args[1] == "create" {
		u, token, err := st.CreateUser(ctx, *email, *tier)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "user %s (%s, %s, checkLimit %d); only the token's hash is stored, so this is the only time it is shown:\n", u.ID, u.Email, u.Tier, u.CheckLimit)
		fmt.Fprintln(stdout, token)
		return nil
	}
	u, err := st.UserByEmail(ctx, *email)
	if err != nil {
		return err
	}
	switch args[1] {
	case "suspend":
		u, err = st.SetUserStatus(ctx, u.ID, store.UserSuspended)
	case "activate":
		u, err = st.SetUserStatus(ctx, u.ID, store.UserActive)
	case "tier":
		u, err = st.SetTier(ctx, u.ID, *tier)
	case "token":
		token, err := st.NewToken(ctx, u.ID)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, token)
		return nil
	default:
		fmt.Fprint(stderr, checksUsage)
		return errUsage
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "user %s (%s): %s, %s, checkLimit %d\n", u.ID, u.Email, u.Status, u.Tier, u.CheckLimit)
	return nil
}

// checks is the running Checks system.
type checks struct {
	handler http.Handler // mounted at /checks/
	api     *checksapi.Handler
	sched   *scheduler.Scheduler
	alerts  *alert.Dispatcher
}

// startChecks creates Checks' tables when missing and assembles the API,
// the scheduler and the alert dispatcher; lc closes the prober's
// connections at shutdown.
func startChecks(ctx context.Context, lc *lifecycle, c *config.Config, client *dynamodb.Client, policy *fetch.Policy, log *slog.Logger) (*checks, error) {
	log = log.With("system", "checks")
	st, err := checksStore(ctx, c, client)
	if err != nil {
		return nil, err
	}
	fo := fetch.Options{UserAgent: "quarry-checks/1 (+https://github.com/quarrydb/quarry)", Policy: policy}
	prober := probe.New(probe.Options{Fetch: fo})
	lc.onStop("checks prober", func(context.Context) error { prober.Close(); return nil })
	aopts := alert.Options{Logger: log, HTTPClient: fetch.New(fo).Client(), OnResult: scheduler.RecordDeliveries(st, log), CurrentTarget: scheduler.CurrentTarget(st)}
	if c.ChecksSMTP != "" {
		aopts.SMTP = &alert.SMTPConfig{Addr: c.ChecksSMTP, From: c.ChecksSMTPFrom, Username: c.ChecksSMTPUser, Password: c.ChecksSMTPPassword}
	}
	dispatcher := alert.New(aopts)
	// The owner names this process in the checks' leases: the node id
	// (distinct per process sharing a store) or the host and pid, with a
	// random suffix so that two schedulers never share a name.
	owner := c.NodeID
	if owner == "" {
		owner, _ = os.Hostname()
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	owner += "-" + fmt.Sprint(os.Getpid()) + "-" + hex.EncodeToString(suffix[:])
	retention := c.ChecksRetention
	if retention == 0 {
		retention = -1 // no history
	}
	sched := scheduler.New(st, prober, dispatcher, scheduler.Options{Owner: owner, RunTimeout: c.ChecksRunTimeout, Retention: retention, Logger: log})
	h := checksapi.New(st, prober, sched, checksapi.Options{MinDelay: c.ChecksMinInterval, EmailEnabled: aopts.SMTP != nil, Logger: log})
	return &checks{handler: http.StripPrefix("/checks", h), api: h, sched: sched, alerts: dispatcher}, nil
}

// run runs the scheduler and the alert dispatcher until ctx ends.
func (k *checks) run(ctx context.Context, log *slog.Logger) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := k.alerts.Run(ctx); err != nil {
			log.Error("checks: alert dispatcher stopped", "err", err)
		}
	}()
	if err := k.sched.Run(ctx); err != nil {
		log.Error("checks: scheduler stopped", "err", err)
	}
	<-done
}

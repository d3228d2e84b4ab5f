package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/quarrydb/quarry/internal/checks"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/config"
)

const checksUsage = `usage:
  quarry checks user create --email E [--tier FREE|PRO]   (prints the user's API token once)
  quarry checks user suspend --email E
  quarry checks user activate --email E
  quarry checks user tier --email E --tier FREE|PRO
  quarry checks user token --email E                        (issues another API token)
  quarry checks import --user E --from gatus|uptime-kuma [--dry-run] FILE
                                                            (creates the user's checks from a Gatus
                                                            configuration or an Uptime Kuma backup)
`

// cmdChecks runs Checks' administration commands.
func cmdChecks(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "import" {
		return cmdChecksImport(ctx, args[1:], getenv, stdout, stderr)
	}
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
	st, err := checks.OpenStore(ctx, c.Checks, client)
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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/quarrydb/quarry/internal/eecar"
	"github.com/quarrydb/quarry/internal/platform/config"
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
	st, err := eecar.OpenStore(ctx, c.EECAR, client)
	if err != nil {
		return err
	}
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

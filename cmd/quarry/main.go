// Command quarry runs quarry's systems and its embedded DynamoDB-compatible
// store. See `quarry help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

const usage = `quarry — DataShelf, Wallcrawler, EECAR and Checks in one program.

Usage:
  quarry serve [flags]        run the HTTP API and the embedded DynamoDB endpoint
  quarry ddb serve [flags]    run only the DynamoDB-compatible store
  quarry datashelf crawl URL  crawl a bookshop into DataShelf (live progress; exits when the queue drains)
  quarry datashelf demo       serve a demo bookshop on loopback and crawl it into DataShelf
  quarry datashelf jobs       print DataShelf's job queue statistics
  quarry datashelf maintain|export|check
                              DataShelf's maintenance (ANALYZE, VACUUM, REINDEX),
                              product/category export (CSV or JSON Lines) and
                              integrity checks (exit 1 on findings)
  quarry wallcrawler project create|project update|key create|key revoke
                              administer Wallcrawler's projects and API keys
  quarry checks user create|suspend|activate|tier|token
                              administer Checks' users and their API tokens
  quarry eecar company create|key create
                              administer EECAR's companies and their API keys
  quarry admin token create|list|revoke
                              administer the console's operator tokens
  quarry version [--json]     print the version, commit and build date

Run "quarry <command> -h" for a command's flags. Every flag can also be set
with its QUARRY_* environment variable; flags win.
`

func main() {
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// gcPercent is quarry's GOGC. The store keeps its data off the Go heap
// (Pebble's block cache and memtables), so the live heap can be small and,
// at Go's default of 100, the collector then runs after every few megabytes
// of request garbage. Measured: an in-process SDK GetItem in a small
// process, 74 µs at 100 and 35 µs at 200 (BenchmarkInProcessClient); `quarry
// ddb serve` under ddbbench, 5–10 % less CPU per request; the Checks
// scheduler (2,000 checks every 10 s, fsync-bound), no change. The price is
// a heap of up to three times the live heap instead of two.
const gcPercent = 200

// tuneGC sets the collector's target to gcPercent unless the operator
// tuned the collector with GOGC or GOMEMLIMIT.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" && getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], getenv, stderr)
	case "ddb":
		if len(args) < 2 || args[1] != "serve" {
			fmt.Fprint(stderr, "usage: quarry ddb serve [--listen ADDR] [--data-dir DIR]\n")
			return 2
		}
		err = cmdDDBServe(ctx, args[2:], getenv, stderr)
	case "wallcrawler":
		err = cmdWallcrawler(ctx, args[1:], getenv, stdout, stderr)
	case "checks":
		err = cmdChecks(ctx, args[1:], getenv, stdout, stderr)
	case "eecar":
		err = cmdEECAR(ctx, args[1:], getenv, stdout, stderr)
	case "admin":
		err = cmdAdmin(ctx, args[1:], getenv, stdout, stderr)
	case "datashelf":
		err = cmdDataShelf(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version":
		err = cmdVersion(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "quarry: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, errUsage) {
		return 2 // the usage is already printed
	}
	if err != nil {
		// One line per problem (configuration errors come all at once).
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, "quarry:", line)
		}
		return 1
	}
	return 0
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/config"
)

// errCheckFailed is returned by `quarry datashelf check` when a check found
// rows (exit status 1).
var errCheckFailed = errors.New("datashelf check: integrity problems found")

// cmdDataShelfAdmin runs `quarry datashelf maintain|export|check`, the
// original design's maintenance, backup and data-validation operations, on
// the store that `quarry serve` and `crawl` use.
func cmdDataShelfAdmin(ctx context.Context, sub string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quarry datashelf "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ops, table, format, out *string
	switch sub {
	case "maintain":
		ops = fs.String("ops", "analyze,vacuum,reindex", "maintenance operations to run, in order (analyze, vacuum, reindex)")
	case "export":
		table = fs.String("table", store.ExportProduct, "table to export: product or category")
		format = fs.String("format", store.FormatCSV, "output format: csv (header line, like COPY … CSV HEADER) or jsonl (one JSON object per line)")
		out = fs.String("out", "", "write to this file (created atomically) instead of stdout")
	}
	c, err := config.Load(fs, args, getenv, config.Defaults(), dataShelfStoreFlags)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, dataShelfUsage)
		return errUsage
	}
	// Validate the flags before opening (and perhaps migrating) the store.
	var maintOps []store.MaintenanceOp
	switch sub {
	case "maintain":
		for _, name := range strings.Split(*ops, ",") {
			op, err := store.ParseMaintenanceOp(strings.TrimSpace(name))
			if err != nil {
				return fmt.Errorf("--ops: %w", err)
			}
			maintOps = append(maintOps, op)
		}
	case "export":
		if *table != store.ExportProduct && *table != store.ExportCategory {
			return fmt.Errorf("--table %q: want product or category", *table)
		}
		if *format != store.FormatCSV && *format != store.FormatJSONL {
			return fmt.Errorf("--format %q: want csv or jsonl", *format)
		}
	}
	st, err := datashelf.OpenStore(ctx, c.DataShelf, c.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	admin, ok := st.(store.Admin)
	if !ok {
		return fmt.Errorf("datashelf %s: the %T store has no maintenance operations", sub, st)
	}
	switch sub {
	case "maintain":
		return dataShelfMaintain(ctx, admin, maintOps, stdout)
	case "export":
		return dataShelfExport(ctx, admin, *table, *format, *out, stdout, stderr)
	default:
		return dataShelfCheck(ctx, admin, stdout)
	}
}

func dataShelfMaintain(ctx context.Context, admin store.Admin, ops []store.MaintenanceOp, stdout io.Writer) error {
	steps, err := admin.Maintain(ctx, ops)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, st := range steps {
		fmt.Fprintf(tw, "%s\t%s\n", st.Statement, st.Took.Round(100*time.Microsecond))
	}
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("datashelf maintain: %w", err)
	}
	return nil
}

// dataShelfExport streams the table to stdout or, with --out, to a
// temporary file renamed over FILE once complete (a failed export leaves
// no partial backup behind).
func dataShelfExport(ctx context.Context, admin store.Admin, table, format, out string, stdout, stderr io.Writer) error {
	if out == "" {
		n, err := store.Export(ctx, admin, table, format, stdout)
		if err != nil {
			return fmt.Errorf("datashelf export: %w", err)
		}
		fmt.Fprintf(stderr, "exported %d %s rows\n", n, table)
		return nil
	}
	n, err := store.ExportFile(ctx, admin, table, format, out)
	if err != nil {
		return fmt.Errorf("datashelf export: %w", err)
	}
	fmt.Fprintf(stderr, "exported %d %s rows to %s\n", n, table, out)
	return nil
}

// dataShelfCheck prints one line per integrity check and the offending
// rows' examples; it returns errCheckFailed when any check found rows.
func dataShelfCheck(ctx context.Context, admin store.Admin, stdout io.Writer) error {
	findings, err := admin.CheckIntegrity(ctx)
	if err != nil {
		return fmt.Errorf("datashelf check: %w", err)
	}
	problems := 0
	for _, f := range findings {
		if f.Count == 0 {
			fmt.Fprintf(stdout, "ok      %s\n", f.Check)
			continue
		}
		problems += f.Count
		fmt.Fprintf(stdout, "FAILED  %s: %d rows\n", f.Check, f.Count)
		for _, ex := range f.Examples {
			fmt.Fprintf(stdout, "        %s\n", ex)
		}
		if f.Count > len(f.Examples) {
			fmt.Fprintf(stdout, "        … and %d more\n", f.Count-len(f.Examples))
		}
	}
	if problems > 0 {
		return fmt.Errorf("%w: %d rows", errCheckFailed, problems)
	}
	return nil
}

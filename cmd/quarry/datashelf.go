package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/extract"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// openDataShelf opens DataShelf's store and its blob store (locally
// <data-dir>/blobs, where DataShelf has always kept them, rather than
// <data-dir>/datashelf/blobs), for the datashelf commands.
func openDataShelf(ctx context.Context, c *config.Config) (store.Store, blob.Store, error) {
	blobs, _, err := blob.Open(ctx, c.Blobs(), "datashelf", dataShelfBlobDir(c))
	if err != nil {
		return nil, nil, err
	}
	s, err := datashelf.OpenStore(ctx, c.DataShelf, c.DataDir)
	if err != nil {
		return nil, nil, err
	}
	return s, blobs, nil
}

// dataShelfBlobDir is where DataShelf keeps its blobs without S3.
func dataShelfBlobDir(c *config.Config) string { return filepath.Join(c.DataDir, "blobs") }

// dataShelfUsage lists the datashelf subcommands.
const dataShelfUsage = `usage: quarry datashelf crawl [flags] URL
       quarry datashelf demo [--shop-listen ADDR] [--products N] [--exit] [flags]
       quarry datashelf jobs [flags]
       quarry datashelf maintain [--ops analyze,vacuum,reindex] [flags]
       quarry datashelf export [--table product|category] [--format csv|jsonl] [--out FILE] [flags]
       quarry datashelf check [flags]
`

// dataShelfStoreFlags are the configuration flags every datashelf
// subcommand accepts.
var dataShelfStoreFlags = []string{"data-dir", "datashelf-db", "log-level", "log-format", "region", "blob-s3-bucket", "blob-s3-endpoint", "blob-s3-region", "blob-s3-path-style", "allow-networks"}

// cmdDataShelf runs `quarry datashelf crawl|demo|jobs|maintain|export|check`.
func cmdDataShelf(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, dataShelfUsage)
		return errUsage
	}
	switch args[0] {
	case "crawl", "jobs":
	case "demo":
		return cmdDataShelfDemo(ctx, args[1:], getenv, stderr)
	case "maintain", "export", "check":
		return cmdDataShelfAdmin(ctx, args[0], args[1:], getenv, stdout, stderr)
	default:
		fmt.Fprint(stderr, dataShelfUsage)
		return errUsage
	}
	sub := args[0]
	fs := flag.NewFlagSet("quarry datashelf "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxPages := fs.Int("max-pages", 0, "stop after this many pages (0: until the queue drains)")
	workers := fs.Int("workers", 4, "concurrent crawl workers")
	lease := fs.Duration("lease", crawler.DefaultLease, "job lease: jobs left running by a crashed crawler are taken over once it expires")
	allowPrivate := fs.Bool("allow-private", false, "deprecated: use --allow-networks all (or, better, --allow-networks 127.0.0.1:PORT)")
	profileFile := fs.String("profile", "", "JSON file of CSS selectors describing the site (default: World of Books)")
	refreshAge := fs.Duration("refresh-age", crawler.DefaultRefreshAge, "products scraped more recently than this are not fetched again")
	shopifyJSON := fs.Bool("shopify-json", false, "read products and collection listings from Shopify's JSON endpoints (when the profile says the site is a Shopify store)")
	var startURL string
	rest := args[1:]
	if sub == "crawl" { // the URL may come before or after the flags
		if n := len(rest); n > 0 && isHTTPURL(rest[0]) {
			startURL, rest = rest[0], rest[1:]
		} else if n > 0 && isHTTPURL(rest[n-1]) {
			startURL, rest = rest[n-1], rest[:n-1]
		}
	}
	c, err := config.Load(fs, rest, getenv, config.Defaults(), dataShelfStoreFlags)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	st, blobs, err := openDataShelf(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	if sub == "jobs" {
		stats, err := st.QueueStats(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATUS\tTYPE\tCOUNT\tAVG ATTEMPTS\tOLDEST\tNEWEST")
		for _, s := range stats {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%s\t%s\n", s.Status, s.Type, s.Count, s.AvgAttempts, s.OldestJob.Format(time.RFC3339), s.NewestJob.Format(time.RFC3339))
		}
		return tw.Flush()
	}
	if startURL == "" {
		fmt.Fprint(stderr, "usage: quarry datashelf crawl [flags] URL\n")
		return errUsage
	}
	profile := extract.WorldOfBooks()
	if *profileFile != "" {
		f, err := os.Open(*profileFile)
		if err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		profile, err = extract.LoadProfile(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	fo := crawler.FetchOptions(version)
	if fo.Policy, err = c.NetworkPolicy(); err != nil {
		return err
	}
	if *allowPrivate {
		fmt.Fprintln(stderr, "warning: --allow-private is deprecated: use --allow-networks all, or --allow-networks HOST:PORT for one local site")
		fo.Policy = fetch.AllowAllPolicy()
	}
	fetcher := fetch.New(fo)
	defer fetcher.Close()
	interactive := isTerminal(stderr)
	last := time.Now()
	stats, err := crawler.Crawl(ctx, crawler.Options{
		Store: st, Fetcher: fetcher, Blobs: blobs, Profile: profile, RefreshAge: *refreshAge, ShopifyJSON: *shopifyJSON, Workers: *workers, MaxPages: *maxPages, Lease: *lease, Logger: log,
		Progress: func(s crawler.Stats) {
			if interactive {
				fmt.Fprintf(stderr, "\r\033[K%s", s.String())
			} else if time.Since(last) >= 5*time.Second {
				fmt.Fprintln(stderr, s.String())
				last = time.Now()
			}
		},
	}, startURL)
	if interactive {
		fmt.Fprintln(stderr)
	}
	fmt.Fprintln(stdout, stats.String())
	return err
}

// errUsage is returned after a usage message was printed.
var errUsage = errors.New("usage")

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

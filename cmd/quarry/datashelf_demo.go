package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/extract"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/platform/adminsock"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/httpserver"
)

// demoShopListen is where `quarry datashelf demo` serves its bookshop by
// default: loopback, beside quarry serve's 8080 and 8000.
const demoShopListen = "127.0.0.1:8090"

// demoStatusPath is the demo's own page on the shop's listener: 503 while
// the crawl runs, then what was crawled and where to look, as JSON. A
// script waits for the crawl with curl --retry on it.
const demoStatusPath = "/demo.json"

// demoStatus is the JSON of demoStatusPath once the crawl is done.
type demoStatus struct {
	Shop      string `json:"shop"`
	Products  int64  `json:"products"`
	Pages     int64  `json:"pages"`
	Failures  int64  `json:"failures"`
	API       string `json:"api"`
	Catalogue string `json:"catalogue"`
}

// cmdDataShelfDemo runs `quarry datashelf demo`: it serves the fixture
// bookshop (internal/datashelf/fixture, the site the crawler's tests use)
// on loopback, crawls it into DataShelf's store, the same one quarry serve
// and `quarry datashelf crawl` use (--data-dir, --datashelf-db; SQLite is
// shared between processes), says where to look, and keeps the shop up
// as a local target for Checks and Wallcrawler until ctx ends, or exits
// at once with --exit. Everything it reports goes to stderr, like serve's
// banner; the status page is the machine-readable form.
func cmdDataShelfDemo(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("quarry datashelf demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shopListen := fs.String("shop-listen", demoShopListen, "address the demo bookshop listens on (loopback; quarry serve reaches it with --allow-networks ADDR)")
	products := fs.Int("products", 50, "number of products in the demo bookshop")
	exit := fs.Bool("exit", false, "exit once the crawl is done instead of keeping the shop up")
	c, err := config.Load(fs, args, getenv, config.Defaults(), append([]string{"listen", "public-url"}, dataShelfStoreFlags...))
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: quarry datashelf demo takes only flags", fs.Arg(0))
	}
	if *products < 1 {
		return fmt.Errorf("--products %d: want at least 1", *products)
	}
	log := newLogger(c, stderr)
	st, blobs, err := openDataShelf(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()

	site := fixture.New(fixture.Options{Products: *products, Seed: 1, CrawlDelay: -1})
	var mu sync.Mutex
	var done *demoStatus // nil while the crawl runs
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+demoStatusPath, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d := done
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if d == nil {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "crawling"})
			return
		}
		_ = json.NewEncoder(w).Encode(d)
	})
	mux.Handle("/", site.Handler())
	// The shop's own logs (its "listening on" line, clients' broken
	// connections) are left out: the lines below say where it is.
	srv := &httpserver.Server{Name: "demo shop", Addr: *shopListen, Flag: "--shop-listen", Handler: mux, Logger: slog.New(slog.DiscardHandler)}
	if err := srv.Listen(); err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	shopAddr := clientAddr(srv.BoundAddr())
	ap, err := netip.ParseAddrPort(shopAddr)
	if err != nil {
		return fmt.Errorf("--shop-listen %s: want an IP address and port: %w", *shopListen, err)
	}
	shopURL := "http://" + shopAddr + fixture.Locale
	fmt.Fprintf(stderr, "demo shop   %s  (%d products; quarry serve reaches it with --allow-networks %s)\n", shopURL, *products, shopAddr)
	fmt.Fprintf(stderr, "crawling it into DataShelf's store in %s …\n", dataShelfPlace(c))

	// The crawl reaches the demo shop and nothing else local.
	fo := crawler.FetchOptions(version)
	fo.Policy = fetch.NewPolicy(nil, []netip.AddrPort{ap})
	fetcher := fetch.New(fo)
	defer fetcher.Close()
	start := time.Now()
	// RefreshAge -1: a second demo fetches every product again rather
	// than reporting none crawled.
	stats, err := crawler.Crawl(ctx, crawler.Options{Store: st, Fetcher: fetcher, Blobs: blobs, Profile: extract.WorldOfBooks(),
		RefreshAge: -1, Logger: log}, shopURL)
	if err != nil {
		return fmt.Errorf("datashelf demo: %w", err)
	}
	fmt.Fprintf(stderr, "crawled in %s: %s\n", time.Since(start).Round(100*time.Millisecond), stats.String())

	base := c.PublicURL
	if base == "" {
		base = "http://" + clientAddr(c.Listen)
	}
	base = strings.TrimSuffix(base, "/")
	status := &demoStatus{Shop: shopURL, Products: stats.Products, Pages: stats.Pages, Failures: stats.Failures,
		API: base + "/datashelf/", Catalogue: base + "/console/datashelf/"}
	if serveRunning(ctx, c) {
		fmt.Fprintf(stderr, "quarry serve holds %s; look at:\n", c.DataDir)
	} else {
		fmt.Fprintf(stderr, "start quarry serve on the same data (bin/quarry serve --data-dir %s --allow-networks %s), then look at:\n", c.DataDir, shopAddr)
	}
	fmt.Fprintf(stderr, "  the API index  %s\n", status.API)
	fmt.Fprintf(stderr, "  products       %sapi/products?limit=5\n", status.API)
	fmt.Fprintf(stderr, "  categories     %sapi/categories\n", status.API)
	fmt.Fprintf(stderr, "  the catalogue  %s  (web console)\n", status.Catalogue)
	fmt.Fprintf(stderr, "  the shop       %s  (what was crawled)\n", shopURL)
	mu.Lock()
	done = status
	mu.Unlock()
	if *exit {
		return nil
	}
	fmt.Fprintf(stderr, "the shop stays up at %s as a local target for Checks and Wallcrawler; Ctrl-C stops it\n", shopURL)
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		return err
	}
}

// dataShelfPlace names DataShelf's database for people: the data
// directory (SQLite), or PostgreSQL.
func dataShelfPlace(c *config.Config) string {
	if c.DataShelf.DB != "" {
		return "PostgreSQL (--datashelf-db)"
	}
	return c.DataDir
}

// serveRunning reports whether a quarry serve holds the data directory:
// one answers on its admin channel.
func serveRunning(ctx context.Context, c *config.Config) bool {
	_, err := adminsock.Client(ctx, c.DataDir, c.Region)
	return err == nil
}

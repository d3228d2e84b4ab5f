// Command crawlbench measures crawl throughput (pages/s) of DataShelf's
// crawler against Crawlee's CheerioCrawler on the same deterministic
// fixture, at the same concurrency, in the same run.
//
// It starts the fixture (internal/datashelf/fixture: -products products, no
// Crawl-delay, no faults) on a loopback httptest server, then crawls it from
// the home page until the queue drains:
//
//  1. quarry: crawler.Crawl with a fresh SQLite store and blob.Dir in a temp
//     dir, a fetcher limited to 127.0.0.1 with no per-host delay,
//     PerHostConcurrency = Workers = -concurrency;
//  2. Crawlee: node bench/crawlee/crawl.mjs START_URL CONCURRENCY (a
//     CheerioCrawler doing the same work: menu → collections → related
//     collections and pagination → products with specs, each image fetched
//     once), with in-memory storage.
//
// It checks that each crawl found every product and appends a Markdown
// section to -out.
//
//	go run ./bench/crawlbench -products 5000 -concurrency 8 -out bench/RESULTS.md
//
// Install Crawlee first: cd bench/crawlee && npm install --no-audit --no-fund.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

type result struct {
	target   string
	pages    int64
	products int64
	images   int64
	seconds  float64
	failures int64
	note     string
}

func (r result) pagesPerSec() float64 {
	if r.seconds <= 0 {
		return 0
	}
	return float64(r.pages) / r.seconds
}

func main() {
	products := flag.Int("products", 5000, "products in the fixture")
	seed := flag.Int64("seed", 1, "fixture seed")
	concurrency := flag.Int("concurrency", 8, "concurrent requests (quarry workers and per-host limit; Crawlee maxConcurrency)")
	crawleeDir := flag.String("crawlee", "bench/crawlee", "directory holding crawl.mjs and its node_modules")
	node := flag.String("node", "node", "node binary")
	skipCrawlee := flag.Bool("skip-crawlee", false, "run quarry only")
	timeout := flag.Duration("timeout", 15*time.Minute, "bound on each crawl")
	out := flag.String("out", "", "Markdown file to append the results to")
	flag.Parse()
	if *concurrency < 1 || *products < 1 {
		fail(errors.New("-concurrency and -products must be positive"))
	}

	site := fixture.New(fixture.Options{Products: *products, Seed: *seed, CrawlDelay: -1})
	var imageReqs atomic.Int64
	h := site.Handler()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/cdn/") {
			imageReqs.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	startURL := srv.URL + fixture.Locale
	distinctImages := map[string]bool{}
	for _, p := range site.Products() {
		for _, im := range p.Images {
			distinctImages[im] = true
		}
	}
	fmt.Fprintf(os.Stderr, "crawlbench: fixture %d products, %d categories, %d distinct product images at %s\n",
		*products, len(site.Categories()), len(distinctImages), startURL)

	loadBefore := report.LoadAvg()
	var results []result
	var warnings []string

	// 1. quarry.
	req0, img0 := site.Requests(), imageReqs.Load()
	q, err := runQuarry(startURL, *concurrency, *timeout)
	if err != nil {
		fail(fmt.Errorf("quarry crawl: %w", err))
	}
	q.note = fmt.Sprintf("%d server requests (%d images)", site.Requests()-req0, imageReqs.Load()-img0)
	results = append(results, q)
	fmt.Fprintf(os.Stderr, "crawlbench: quarry: %d pages, %d products, %d images in %.2fs = %.0f pages/s\n",
		q.pages, q.products, q.images, q.seconds, q.pagesPerSec())

	// 2. Crawlee.
	nodeVersion, crawleeVersion := "not run", "not run"
	if !*skipCrawlee {
		nodeVersion = strings.TrimSpace(run(*node, "--version"))
		crawleeVersion = strings.TrimSpace(run(*node, "-p", "require('./"+filepath.ToSlash(filepath.Join(*crawleeDir, "node_modules/@crawlee/cheerio/package.json"))+"').version"))
		req0, img0 = site.Requests(), imageReqs.Load()
		c, err := runCrawlee(*node, *crawleeDir, startURL, *concurrency, *timeout)
		if err != nil {
			fail(fmt.Errorf("crawlee crawl: %w", err))
		}
		c.note += fmt.Sprintf("%d server requests (%d images)", site.Requests()-req0, imageReqs.Load()-img0)
		results = append(results, c)
		fmt.Fprintf(os.Stderr, "crawlbench: crawlee: %d pages, %d products, %d images in %.2fs = %.0f pages/s\n",
			c.pages, c.products, c.images, c.seconds, c.pagesPerSec())
	}
	for _, r := range results {
		if r.products != int64(*products) {
			w := fmt.Sprintf("WARNING: %s stored %d products, the fixture has %d", r.target, r.products, *products)
			fmt.Fprintln(os.Stderr, "crawlbench: "+w)
			warnings = append(warnings, w)
		}
		if r.images != int64(len(distinctImages)) {
			w := fmt.Sprintf("WARNING: %s stored %d images, the fixture has %d distinct product images", r.target, r.images, len(distinctImages))
			fmt.Fprintln(os.Stderr, "crawlbench: "+w)
			warnings = append(warnings, w)
		}
	}

	md := markdown(results, warnings, *products, *concurrency, len(distinctImages), nodeVersion, crawleeVersion, loadBefore, report.LoadAvg())
	fmt.Print(md)
	if *out != "" {
		if err := report.Append(*out, md); err != nil {
			fail(err)
		}
	}
}

func runQuarry(startURL string, concurrency int, timeout time.Duration) (result, error) {
	dir, err := os.MkdirTemp("", "crawlbench-quarry-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "datashelf.db"), nil)
	if err != nil {
		return result{}, err
	}
	defer st.Close()
	blobs, err := blob.NewDir(filepath.Join(dir, "blobs"))
	if err != nil {
		return result{}, err
	}
	// The production fetcher (crawler.FetchOptions: robots.txt obeyed) with
	// loopback allowed, no per-host delay (the fixture announces no
	// Crawl-delay) and the benchmark's concurrency.
	fo := crawler.FetchOptions("bench")
	fo.AllowPrefixes = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	fo.PerHostConcurrency = concurrency
	fo.PerHostDelay = 0
	f := fetch.New(fo)
	defer f.Close()
	t0 := time.Now()
	s, err := crawler.Crawl(ctx, crawler.Options{Store: st, Fetcher: f, Blobs: blobs, Workers: concurrency}, startURL)
	elapsed := time.Since(t0)
	if err != nil {
		return result{}, err
	}
	_, total, err := st.ListProducts(ctx, store.ProductFilter{Limit: 1})
	if err != nil {
		return result{}, err
	}
	return result{target: "quarry", pages: s.Pages, products: int64(total), images: s.Images,
		seconds: elapsed.Seconds(), failures: s.Failures}, nil
}

type crawleeOut struct {
	Pages          int64   `json:"pages"`
	Products       int64   `json:"products"`
	DatasetItems   int64   `json:"dataset_items"`
	Images         int64   `json:"images"`
	FailedRequests int64   `json:"failed_requests"`
	Retries        int64   `json:"retries"`
	Seconds        float64 `json:"seconds"`
}

func runCrawlee(node, dir, startURL string, concurrency int, timeout time.Duration) (result, error) {
	storage, err := os.MkdirTemp("", "crawlbench-crawlee-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(storage)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "crawl.mjs", startURL, fmt.Sprint(concurrency))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CRAWLEE_STORAGE_DIR="+storage, "CRAWLEE_PURGE_ON_START=1", "CRAWLEE_PERSIST_STORAGE=0")
	cmd.Stderr = os.Stderr
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	t0 := time.Now()
	err = cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return result{}, fmt.Errorf("%s crawl.mjs: %w (stdout: %s)", node, err, stdout.String())
	}
	var line string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); strings.HasPrefix(t, "{") {
			line = t
		}
	}
	var o crawleeOut
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		return result{}, fmt.Errorf("crawl.mjs output %q: %w", line, err)
	}
	return result{target: "crawlee", pages: o.Pages, products: o.Products, images: o.Images, seconds: o.Seconds,
		failures: o.FailedRequests + o.Retries,
		note:     fmt.Sprintf("node process %.2fs wall (with start-up); dataset %d items; ", wall.Seconds(), o.DatasetItems)}, nil
}

func markdown(rs []result, warnings []string, products, concurrency, images int, nodeV, crawleeV, loadBefore, loadAfter string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — crawl throughput: quarry vs Crawlee CheerioCrawler, %d products, concurrency %d\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), products, concurrency)
	fmt.Fprintf(&b, "- Machine: %s\n", report.Machine())
	fmt.Fprintf(&b, "- Load average (1/5/15 min) before: %s, after: %s\n", loadBefore, loadAfter)
	fmt.Fprintf(&b, "- Command: `go run ./bench/crawlbench %s`\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "- Node %s, @crawlee/cheerio %s; commit %s\n", nodeV, crawleeV, commit())
	fmt.Fprintf(&b, "- Fixture: internal/datashelf/fixture, %d products, no Crawl-delay, no faults, %d distinct product images, served by httptest on 127.0.0.1 in the bench process (shares the CPUs with both crawlers).\n", products, images)
	b.WriteString("- quarry: crawler.Crawl, SQLite store + blob.Dir in a fresh temp dir, production fetch options (robots.txt obeyed) with 127.0.0.1 allowed, no per-host delay, Workers = PerHostConcurrency = concurrency; seconds = crawler.Crawl wall time.\n")
	b.WriteString("- Crawlee: bench/crawlee/crawl.mjs, CheerioCrawler with minConcurrency = maxConcurrency = concurrency, in-memory storage, no delays; same selectors (extract.WorldOfBooks), product data to the dataset, each image fetched once into a key-value store; seconds = crawler.run() wall time.\n")
	b.WriteString("- pages = HTML pages fetched (home, collection pages, product pages); images are fetched by both but not counted as pages.\n\n")
	b.WriteString("| target | pages | products | images | seconds | pages/s | failed attempts | notes |\n|---|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.2f | %.0f | %d | %s |\n", r.target, r.pages, r.products, r.images, r.seconds, r.pagesPerSec(), r.failures, r.note)
	}
	if len(rs) == 2 && rs[1].pagesPerSec() > 0 {
		ratio := rs[0].pagesPerSec() / rs[1].pagesPerSec()
		fmt.Fprintf(&b, "| **quarry/Crawlee** | | | | | **%.2f×** | | |\n", ratio)
		verdict := "met"
		if ratio < 3 {
			verdict = "missed"
		}
		fmt.Fprintf(&b, "\nTarget (≥ 3× Crawlee's pages/s): quarry %.2f× Crawlee (%s).\n", ratio, verdict)
	} else {
		b.WriteString("\nTarget (≥ 3× Crawlee's pages/s): not evaluated (Crawlee not run).\n")
	}
	for _, w := range warnings {
		fmt.Fprintf(&b, "\n- %s\n", w)
	}
	return b.String()
}

func commit() string {
	c := strings.TrimSpace(run("git", "rev-parse", "--short", "HEAD"))
	if c == "" {
		return "unknown"
	}
	if exec.Command("git", "diff", "--quiet", "HEAD", "--").Run() != nil {
		c += " + uncommitted changes"
	}
	return c
}

// run returns the command's stdout, or "" when it fails.
func run(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	return string(b)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "crawlbench:", err)
	os.Exit(1)
}

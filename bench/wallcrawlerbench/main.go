// Command wallcrawlerbench measures how fast Wallcrawler (`quarry serve`,
// mounted at /wallcrawler) starts a browser session and hands it to a CDP
// client, without a warm pool and with one. For each mode it starts its own
// `quarry serve` on loopback ports with a fresh data directory, creates a
// project and an API key with the CLI, serves a tiny page on loopback, and
// runs -sessions sessions one after the other, timing each phase:
//
//   - create: POST /v1/sessions until its 201 answer;
//   - connect: WebSocket to connectUrl opened and Browser.getVersion answered;
//   - page: the first page target attached (Target.attachToTarget, flat),
//     Page.enable, Page.navigate to the loopback page, Page.loadEventFired,
//     and document.title read (checked against the page's title);
//   - release: WebSocket closed, then POST /v1/sessions/{id}
//     {"status":"REQUEST_RELEASE"} until its 200 answer;
//   - total: from the create request to the release answer.
//
// Results (nearest-rank p50, p95, max per phase) are printed and appended to
// a Markdown file with the machine and the command.
//
//	go run ./bench/wallcrawlerbench -sessions 50 -out bench/RESULTS.md
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/quarrydb/quarry/bench/internal/bbclient"
	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

const (
	pageTitle = "wallcrawlerbench page"
	projectID = "project_bench"
)

type config struct {
	quarry      string
	sessions    int
	pools       []int
	warmWait    time.Duration
	between     time.Duration
	concurrency int
	out         string
	commandLine string

	pageLoads     int
	rounds        int
	warmup        int
	https         bool
	freshConns    bool
	egressProfile string

	peers int
}

func main() {
	var c config
	pools := flag.String("pools", "0,4", "comma-separated --wallcrawler-pool values, one mode each (0 = cold)")
	flag.StringVar(&c.quarry, "quarry", "", "quarry binary (default: go build ./cmd/quarry into a temp dir; run from the repository root)")
	flag.IntVar(&c.sessions, "sessions", 50, "sessions per mode, run one after the other")
	flag.DurationVar(&c.warmWait, "warm-wait", 60*time.Second, "longest wait for a warm pool to fill before the first session")
	flag.DurationVar(&c.between, "between", 0, "pause between two sessions (0: back to back)")
	flag.IntVar(&c.concurrency, "concurrency", 64, "the project's concurrency quota")
	flag.StringVar(&c.out, "out", "", "Markdown file to append results to (default: stdout only)")
	flag.IntVar(&c.pageLoads, "pageload", 0, "page-load mode: measured loads per round of each series (direct/egress × http/https); 0: off")
	flag.IntVar(&c.rounds, "rounds", 3, "page-load mode: rounds, each with fresh browsers")
	flag.IntVar(&c.warmup, "warmup", 3, "page-load mode: loads per series and round before the measured ones")
	flag.BoolVar(&c.https, "https", true, "page-load mode: also load the fixture over https")
	flag.BoolVar(&c.freshConns, "fresh-conns", true, "page-load mode: close the fixture's client connections before each load")
	flag.StringVar(&c.egressProfile, "egress-cpuprofile", "", "page-load mode: write the egress proxy's CPU profile (pprof) to this file")
	flag.IntVar(&c.peers, "peers", 0, "also launch Chromium directly (chromedp allocator, Playwright chromium.launch) this many times per series, cold and warm, and compare the time to a usable page; 0: off")
	egressAllow := flag.String("egress-child", "", "internal: serve an egress proxy allowing these host:ports until stdin closes")
	flag.Parse()
	if *egressAllow != "" {
		if err := egressChild(*egressAllow, c.egressProfile); err != nil {
			fail(err)
		}
		return
	}
	for _, f := range strings.Split(*pools, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			fail(fmt.Errorf("-pools %q: want non-negative integers", *pools))
		}
		c.pools = append(c.pools, n)
	}
	if c.sessions < 0 || c.pageLoads < 0 || c.rounds < 1 || c.warmup < 0 {
		fail(errors.New("-sessions, -pageload and -warmup must not be negative, -rounds must be positive"))
	}
	if c.sessions == 0 && c.pageLoads == 0 {
		fail(errors.New("nothing to do: -sessions 0 and no -pageload"))
	}
	if c.sessions == 0 {
		c.pools = nil
	}
	c.commandLine = "go run ./bench/wallcrawlerbench " + strings.Join(os.Args[1:], " ")
	if via := os.Getenv("WALLCRAWLERBENCH_VIA"); via != "" { // set by run.sh
		c.commandLine = via + " → wallcrawlerbench " + strings.Join(os.Args[1:], " ")
	}
	if err := run(&c); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wallcrawlerbench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "wallcrawlerbench: "+format+"\n", args...)
}

// phases are the measured steps, in order.
var phases = []string{"create", "connect", "page", "release", "total"}

var phaseNames = map[string]string{
	"create":  "create (POST /v1/sessions → 201)",
	"connect": "CDP connected (WebSocket + Browser.getVersion)",
	"page":    "first page loaded (attach, navigate, load event, title)",
	"release": "release (REQUEST_RELEASE → 200)",
	"total":   "total",
}

// modeResult is one mode's measurements.
type modeResult struct {
	pool      int
	lat       map[string][]time.Duration
	errors    int
	firstErr  string
	warmAfter time.Duration // time the pool took to fill
	leftovers int           // processes of the data dir left after the server stopped
	notes     []string
}

func run(c *config) error {
	bin := c.quarry
	version := "given binary"
	if len(c.pools) == 0 {
		version = "not used"
	} else if bin == "" {
		dir, err := os.MkdirTemp("", "wallcrawlerbench-bin")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "quarry")
		logf("building ./cmd/quarry")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/quarry")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/quarry: %w", err)
		}
		version = "built from this tree (go build ./cmd/quarry)"
	}
	if out, err := exec.Command("git", "describe", "--always", "--dirty=+uncommitted changes").Output(); err == nil {
		version += ", commit " + strings.TrimSpace(string(out))
	}
	chromium := "chromium"
	if p, err := exec.LookPath("chromium"); err == nil {
		if out, err := exec.Command(p, "--version").Output(); err == nil {
			chromium = strings.TrimSpace(string(out))
		}
	}

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body><p>hello</p></body></html>", pageTitle)
	}))
	defer site.Close()

	loadBefore := report.LoadAvg()
	start := time.Now().UTC()
	var results []*modeResult
	for _, pool := range c.pools {
		r, err := runMode(c, bin, pool, site.URL+"/page")
		if err != nil {
			return fmt.Errorf("pool %d: %w", pool, err)
		}
		results = append(results, r)
	}
	var peers *peerResult
	if c.peers > 0 {
		var err error
		if peers, err = runPeers(c, site.URL+"/page"); err != nil {
			return fmt.Errorf("peers: %w", err)
		}
	}
	var page *pageResult
	if c.pageLoads > 0 {
		var err error
		if page, err = runPageLoad(c); err != nil {
			return fmt.Errorf("page load: %w", err)
		}
	}
	md := markdown(c, results, page, start, loadBefore, report.LoadAvg(), version, chromium)
	if peers != nil {
		var b strings.Builder
		peerMarkdown(&b, c, results, peers)
		md += b.String()
	}
	fmt.Print(md)
	if c.out != "" {
		if err := report.Append(c.out, "\n"+md); err != nil {
			return err
		}
		logf("appended to %s", c.out)
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// server is one running `quarry serve`.
type server struct {
	bin, dir, api, store string
	cmd                  *exec.Cmd
	logPath              string
	exited               chan error
}

func startServer(bin string, pool int, allow string) (*server, error) {
	dir, err := os.MkdirTemp("", "wallcrawlerbench-data")
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir, logPath: filepath.Join(dir, "serve.log"), exited: make(chan error, 1)}
	if s.api, err = freeAddr(); err != nil {
		return nil, err
	}
	if s.store, err = freeAddr(); err != nil {
		return nil, err
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "serve", "--listen", s.api, "--ddb-listen", s.store, "--data-dir", filepath.Join(dir, "data"),
		"--wallcrawler-pool", strconv.Itoa(pool), "--allow-networks", allow)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { s.exited <- s.cmd.Wait(); logFile.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + s.api + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		select {
		case err := <-s.exited:
			return nil, fmt.Errorf("quarry serve exited (%v): %s", err, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("quarry serve not healthy after 30s: %s", s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// countLog counts the server log lines containing what.
func (s *server) countLog(what string) int {
	b, _ := os.ReadFile(s.logPath)
	return bytes.Count(b, []byte(what))
}

// cli runs a quarry CLI command against the running server's store.
func (s *server) cli(args ...string) (string, error) {
	args = append(args, "--data-dir", filepath.Join(s.dir, "data"), "--ddb-listen", s.store)
	var out, errb bytes.Buffer
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("quarry %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// stop sends SIGTERM, waits up to a minute (then kills), and returns the
// number of processes whose command line still names the data directory.
func (s *server) stop() int {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		logf("quarry serve did not stop within 60s; killing it")
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	var left int
	for range 50 {
		if left = len(processesOf(s.dir)); left == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

func processesOf(dir string) []string {
	var found []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(dir)) {
			found = append(found, p)
		}
	}
	return found
}

func runMode(c *config, bin string, pool int, pageURL string) (*modeResult, error) {
	logf("pool %d: starting quarry serve", pool)
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil, err
	}
	// quarry serve sends every browser connection through its egress
	// proxy, whose policy refuses loopback unless allowed: allow the page.
	s, err := startServer(bin, pool, u.Host)
	if err != nil {
		return nil, err
	}
	r := &modeResult{pool: pool, lat: map[string][]time.Duration{}}
	stopped := false
	defer func() {
		if !stopped {
			s.stop()
		}
		if r.leftovers == 0 {
			os.RemoveAll(s.dir)
		} else {
			logf("kept %s (processes left)", s.dir)
		}
	}()
	if _, err := s.cli("wallcrawler", "project", "create", "--name", "bench", "--id", projectID, "--concurrency", strconv.Itoa(c.concurrency)); err != nil {
		return nil, err
	}
	key, err := s.cli("wallcrawler", "key", "create", "--project", projectID)
	if err != nil {
		return nil, err
	}
	if pool > 0 {
		// The pool logs "browser launched" once a browser answers on its
		// DevTools port; wait for pool of them, then let the machine settle.
		t0 := time.Now()
		for s.countLog("browser launched") < pool {
			if time.Since(t0) > c.warmWait {
				return nil, fmt.Errorf("pool not warm after %v (%d of %d browsers): %s", c.warmWait, s.countLog("browser launched"), pool, s.logTail())
			}
			time.Sleep(50 * time.Millisecond)
		}
		r.warmAfter = time.Since(t0)
		logf("pool %d: warm after %v", pool, r.warmAfter.Round(time.Millisecond))
		time.Sleep(2 * time.Second)
	}
	base := "http://" + s.api + "/wallcrawler"
	hc := &http.Client{Timeout: 90 * time.Second}
	for i := range c.sessions {
		if i > 0 && c.between > 0 {
			time.Sleep(c.between)
		}
		d, err := oneSession(hc, base, key, pageURL)
		if err != nil {
			r.errors++
			if r.firstErr == "" {
				r.firstErr = err.Error()
			}
			logf("pool %d: session %d: %v", pool, i+1, err)
			continue
		}
		for k, v := range d {
			r.lat[k] = append(r.lat[k], v)
		}
		if (i+1)%10 == 0 {
			logf("pool %d: %d sessions", pool, i+1)
		}
	}
	if n := s.countLog("level=ERROR"); n > 0 {
		r.notes = append(r.notes, fmt.Sprintf("server logged %d ERROR lines", n))
	}
	stopped = true
	r.leftovers = s.stop()
	return r, nil
}

// oneSession runs one session's life and returns each phase's duration.
func oneSession(hc *http.Client, base, key, pageURL string) (map[string]time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := map[string]time.Duration{}
	t0 := time.Now()

	var sess struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		ConnectURL string `json:"connectUrl"`
	}
	if err := bbclient.Call(ctx, hc, http.MethodPost, base+"/v1/sessions", key, map[string]any{"projectId": projectID}, http.StatusCreated, &sess); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	d["create"] = time.Since(t0)
	if sess.ConnectURL == "" || sess.Status != "RUNNING" {
		return nil, fmt.Errorf("create: status %q, connectUrl %q", sess.Status, sess.ConnectURL)
	}
	release := func() error {
		return bbclient.Call(context.Background(), hc, http.MethodPost, base+"/v1/sessions/"+sess.ID, key,
			map[string]any{"status": "REQUEST_RELEASE", "projectId": projectID}, http.StatusOK, nil)
	}

	t1 := time.Now()
	conn, err := bbclient.Dial(ctx, sess.ConnectURL)
	if err != nil {
		release()
		return nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Call(ctx, "", "Browser.getVersion", nil); err != nil {
		conn.Close()
		release()
		return nil, fmt.Errorf("connect: Browser.getVersion: %w", err)
	}
	d["connect"] = time.Since(t1)

	t2 := time.Now()
	title, err := conn.Load(ctx, pageURL)
	if err != nil {
		conn.Close()
		release()
		return nil, fmt.Errorf("page: %w", err)
	}
	if title != pageTitle {
		conn.Close()
		release()
		return nil, fmt.Errorf("page: title %q, want %q", title, pageTitle)
	}
	d["page"] = time.Since(t2)
	d["usable"] = time.Since(t0) // create + connect + page: the time to a usable page

	t3 := time.Now()
	conn.Close()
	if err := release(); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	d["release"] = time.Since(t3)
	d["total"] = time.Since(t0)
	return d, nil
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

func modeName(pool int) string {
	if pool == 0 {
		return "cold (pool 0)"
	}
	return fmt.Sprintf("warm (pool %d)", pool)
}

func markdown(c *config, results []*modeResult, page *pageResult, start time.Time, loadBefore, loadAfter, version, chromium string) string {
	var b strings.Builder
	var what []string
	if len(results) > 0 {
		what = append(what, fmt.Sprintf("session start: cold vs warm pool, %d sequential sessions", c.sessions))
	}
	if page != nil {
		what = append(what, fmt.Sprintf("page load direct vs egress proxy, %d rounds × %d loads", c.rounds, c.pageLoads))
	}
	fmt.Fprintf(&b, "## %s — Wallcrawler %s (wallcrawlerbench)\n\n", start.Format("2006-01-02 15:04 UTC"), strings.Join(what, "; "))
	fmt.Fprintf(&b, "- Machine: %s\n", report.Machine())
	fmt.Fprintf(&b, "- Load average (1/5/15 min) before: %s, after: %s\n", loadBefore, loadAfter)
	fmt.Fprintf(&b, "- Command: `%s`\n", c.commandLine)
	if len(results) == 0 {
		fmt.Fprintf(&b, "- Tree: %s; %s\n", version, chromium)
		if page != nil {
			pageMarkdown(&b, c, page)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "- quarry: `quarry serve --wallcrawler-pool N --allow-networks <the page's host:port>` %s, fresh data dir per mode, embedded store; browsers through serve's egress proxy, as user %s; %s\n", version, browserUserNote(), chromium)
	fmt.Fprintf(&b, "- Workload: per mode one project (concurrency %d) and key made with the CLI; sessions run one after the other (pause %v), each: POST /v1/sessions `{projectId}` → 201; WebSocket (github.com/coder/websocket) to connectUrl + `Browser.getVersion`; attach to the first page target (flat), `Page.enable`, `Page.navigate` to a loopback httptest page, wait for `Page.loadEventFired`, read `document.title` (checked); close the WebSocket and POST /v1/sessions/{id} `REQUEST_RELEASE` → 200. Client, server and Chromium share the machine; nearest-rank percentiles over the successful sessions.\n", c.concurrency, c.between)
	for _, r := range results {
		if r.pool > 0 {
			fmt.Fprintf(&b, "- %s: the pool held %d launched browsers %v after the server answered /healthz; the first session started 2 s later; refills run in the background while the sessions go on\n", modeName(r.pool), r.pool, r.warmAfter.Round(time.Millisecond))
		}
	}
	b.WriteString("\n| mode | phase | p50 | p95 | max | sessions | errors |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		for _, p := range phases {
			l := r.lat[p]
			name := phaseNames[p]
			if p == "total" {
				name = "**total**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d |\n", modeName(r.pool), name,
				fmtDur(report.Percentile(l, 50)), fmtDur(report.Percentile(l, 95)), fmtDur(report.Percentile(l, 100)), len(l), r.errors)
		}
	}
	b.WriteString("\n")
	var targets []string
	for _, r := range results {
		p50 := report.Percentile(r.lat["create"], 50)
		limit, label := 300*time.Millisecond, "under 300 ms cold"
		if r.pool > 0 {
			limit, label = 50*time.Millisecond, "under 50 ms warm"
		}
		verdict := "met"
		if len(r.lat["create"]) == 0 || p50 >= limit {
			verdict = "missed"
		}
		targets = append(targets, fmt.Sprintf("%s create p50 %s (%s, %s)", modeName(r.pool), fmtDur(p50), label, verdict))
	}
	fmt.Fprintf(&b, "Targets (p50 create under 300 ms cold, under 50 ms warm): %s. Published peer figures, not measured here: Browserbase p50 create 112 ms (connect 255 ms, lifecycle 578 ms), Steel p50 create 170 ms (lifecycle 972 ms).\n", strings.Join(targets, "; "))
	for _, r := range results {
		if r.errors > 0 {
			fmt.Fprintf(&b, "\n- %s: %d failed sessions, first: %s\n", modeName(r.pool), r.errors, oneLine(r.firstErr))
		}
		if r.leftovers > 0 {
			fmt.Fprintf(&b, "\n- %s: %d processes of the data directory still running after quarry serve stopped\n", modeName(r.pool), r.leftovers)
		}
		for _, n := range r.notes {
			fmt.Fprintf(&b, "\n- %s: %s\n", modeName(r.pool), n)
		}
	}
	if page != nil {
		pageMarkdown(&b, c, page)
	}
	return b.String()
}

// browserUserNote names the user quarry serve runs its browsers as here
// (its default: browser.DefaultUser when root, else its own).
func browserUserNote() string {
	if os.Geteuid() != 0 {
		return "quarry's own (not root)"
	}
	u, err := browser.DefaultUser()
	if err != nil {
		return "root (no unprivileged user)"
	}
	return u.String()
}

func oneLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		return sc.Text()
	}
	return s
}

// Command gatusbench compares the Checks scheduler of `quarry serve` with
// Gatus (github.com/TwiN/gatus), each run as its own process, on the same
// N HTTP endpoints at one interval against one loopback fixture that
// timestamps every request. For each system in turn: start it, configure
// the N endpoints (quarry: N checks through its REST API; Gatus: a
// config.yaml), wait until every endpoint has been requested once (both
// spread their first runs: Gatus starts endpoint i 222 ms after endpoint
// i-1), then measure a window of -duration: per-endpoint period error (the
// gap between two consecutive requests to an endpoint minus the interval),
// missed periods, and the process's CPU per check. Results are appended to
// a Markdown file.
//
// bench/peers/gatus/run.sh builds Gatus from its Go module into
// .cache/peers-bin and quarry from this tree, then runs:
//
//	go run ./bench/peers/gatus -quarry bin/quarry -gatus .cache/peers-bin/gatus -n 1000 -duration 3m
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quarrydb/quarry/bench/internal/report"
)

type config struct {
	quarry, gatus    string
	quarryBase       string
	baseLabel        string
	quarryFlags      []string
	gatusVersion     string
	n                int
	interval         time.Duration
	duration         time.Duration
	warmMax          time.Duration
	systems          []string
	out, command     string
	gatusStorage     string
	gatusConcurrency int
}

func main() {
	var c config
	flag.StringVar(&c.quarry, "quarry", "bin/quarry", "quarry binary")
	flag.StringVar(&c.quarryBase, "quarry-base", "", "a second quarry binary (a base revision), run as the system quarry-base with the same flags")
	flag.StringVar(&c.baseLabel, "base-label", "", "what -quarry-base was built from, for the report (e.g. a commit)")
	flag.StringVar(&c.gatus, "gatus", ".cache/peers-bin/gatus", "Gatus binary")
	flag.StringVar(&c.gatusVersion, "gatus-version", "", "Gatus version, for the report")
	flag.IntVar(&c.n, "n", 1000, "endpoints (checks) per system")
	flag.DurationVar(&c.interval, "interval", 60*time.Second, "interval of every endpoint")
	flag.DurationVar(&c.duration, "duration", 3*time.Minute, "measured window, after every endpoint has been requested once")
	flag.DurationVar(&c.warmMax, "warm-max", 0, "longest wait for every endpoint's first request (default: N × 222 ms + 2 intervals)")
	// Gatus only monitors: quarry serving Checks alone is the like-for-like
	// process (the other systems' stream consumers and pools cost CPU
	// while idle).
	quarryFlags := flag.String("quarry-flags", "--systems checks", "extra flags for quarry serve, space-separated (e.g. --ddb-sync=false)")
	systems := flag.String("systems", "quarry,gatus", "systems to run, in order")
	flag.StringVar(&c.gatusStorage, "gatus-storage", "sqlite", "Gatus storage type: sqlite (results on disk, as quarry keeps them) or memory")
	flag.IntVar(&c.gatusConcurrency, "gatus-concurrency", -1, "Gatus `concurrency` (-1: Gatus's default, 3; 0: unlimited)")
	flag.StringVar(&c.out, "out", "", "Markdown file to append the results to")
	flag.StringVar(&c.command, "command", "", "the command to report (run.sh passes its own)")
	flag.Parse()
	if c.n <= 0 || c.interval <= 0 || c.duration <= 0 {
		fail(errors.New("-n, -interval and -duration must be positive"))
	}
	if c.warmMax == 0 {
		c.warmMax = time.Duration(c.n)*222*time.Millisecond + 2*c.interval + 30*time.Second
	}
	for _, p := range []*string{&c.quarry, &c.gatus, &c.quarryBase} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			fail(err)
		}
		*p = abs
	}
	c.systems = strings.Split(*systems, ",")
	c.quarryFlags = strings.Fields(*quarryFlags)
	if c.command == "" {
		c.command = "go run ./bench/peers/gatus " + strings.Join(os.Args[1:], " ")
	}
	fx := newFixture()
	defer fx.close()
	loadBefore := report.LoadAvg()
	start := time.Now().UTC()
	var results []*result
	for _, sys := range c.systems {
		var r *result
		var err error
		switch sys {
		case "quarry":
			r, err = runQuarry(&c, fx, "quarry", c.quarry, "/q/")
		case "quarry-base":
			if c.quarryBase == "" {
				err = errors.New("-quarry-base not given")
				break
			}
			r, err = runQuarry(&c, fx, "quarry-base", c.quarryBase, "/b/")
		case "gatus":
			r, err = runGatus(&c, fx)
		default:
			err = fmt.Errorf("unknown system %q", sys)
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", sys, err))
		}
		results = append(results, r)
	}
	md := render(&c, results, start, loadBefore)
	fmt.Print(md)
	if c.out != "" {
		if err := report.Append(c.out, md); err != nil {
			fail(err)
		}
	}
}

// ---- fixture ----

// fixture answers every request with 200 and a short page and records when
// each path was requested.
type fixture struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string][]time.Time
}

func newFixture() *fixture {
	f := &fixture{hits: map[string][]time.Time{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		f.mu.Lock()
		f.hits[r.URL.Path] = append(f.hits[r.URL.Path], now)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><head><title>ok</title></head><body>In stock</body></html>")
	}))
	return f
}

func (f *fixture) close() { f.srv.Close() }

func (f *fixture) host() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// snapshot copies the request times of paths.
func (f *fixture) snapshot(paths []string) [][]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]time.Time, len(paths))
	for i, p := range paths {
		out[i] = slices.Clone(f.hits[p])
	}
	return out
}

// seenAll reports how many of paths were requested at least once.
func (f *fixture) seen(paths []string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range paths {
		if len(f.hits[p]) > 0 {
			n++
		}
	}
	return n
}

// ---- measurement ----

type result struct {
	system     string
	setup      time.Duration // configuring the endpoints (quarry: the API calls)
	warm       time.Duration // from start until every endpoint was requested once
	warmSeen   int
	requests   int // in the window
	periods    []time.Duration
	missed     int
	endpoints  int
	cpu        time.Duration // process CPU over the window
	rssMiB     float64
	notes      []string
	windowFrom time.Time
}

// measure waits until every path was requested once (or warmMax), then
// for the window, and computes the figures from the fixture's timestamps
// and the process's CPU time.
func measure(c *config, fx *fixture, sys string, paths []string, pid int, started time.Time, exited <-chan error) (*result, error) {
	r := &result{system: sys, endpoints: len(paths)}
	for {
		n := fx.seen(paths)
		if n == len(paths) {
			break
		}
		if time.Since(started) > c.warmMax {
			r.notes = append(r.notes, fmt.Sprintf("only %d of %d endpoints requested within %s; measuring anyway", n, len(paths), c.warmMax))
			break
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("process exited during warm-up: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.warm = time.Since(started)
	r.warmSeen = fx.seen(paths)
	from := time.Now()
	cpu0 := report.ProcCPU(pid, true)
	fmt.Fprintf(os.Stderr, "gatusbench: %s: every endpoint requested after %s; measuring %s\n", sys, r.warm.Round(time.Second), c.duration)
	select {
	case err := <-exited:
		return nil, fmt.Errorf("process exited during the window: %v", err)
	case <-time.After(c.duration):
	}
	to := time.Now()
	r.cpu = report.ProcCPU(pid, true) - cpu0
	r.rssMiB = procRSSMiB(pid)
	r.windowFrom = from
	for _, hs := range fx.snapshot(paths) {
		n, errs, missed := endpointPeriods(hs, from, to, c.interval)
		r.requests += n
		r.periods = append(r.periods, errs...)
		r.missed += missed
	}
	return r, nil
}

// endpointPeriods reads one endpoint's request times (in order) for the
// window [from, to]: the requests in it, the period error (gap −
// interval) of each request in it that follows another, and the missed
// periods: a gap of k intervals (rounded) misses k−1, and so does each
// period due in the window after the last request and more than half an
// interval before its end.
func endpointPeriods(hits []time.Time, from, to time.Time, interval time.Duration) (requests int, errs []time.Duration, missed int) {
	grace := interval / 2
	var last time.Time
	for _, h := range hits {
		if h.After(to) {
			break
		}
		if !h.Before(from) {
			requests++
			if !last.IsZero() {
				gap := h.Sub(last)
				errs = append(errs, gap-interval)
				if k := int(math.Round(float64(gap)/float64(interval))) - 1; k > 0 {
					missed += k
				}
			}
		}
		last = h
	}
	if last.IsZero() {
		return requests, errs, int(to.Sub(from) / interval)
	}
	due := last.Add(interval)
	for due.Before(from) { // periods due before the window are not its to count
		due = due.Add(interval)
	}
	if to.Sub(due) > grace {
		missed += int((to.Sub(due)-grace)/interval) + 1
	}
	return requests, errs, missed
}

// ---- quarry ----

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// runQuarry measures the quarry binary bin as system sys, its endpoints
// under prefix on the fixture.
func runQuarry(c *config, fx *fixture, sys, bin, prefix string) (*result, error) {
	dir, err := os.MkdirTemp("", "gatusbench-quarry-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	api, err := freeAddr()
	if err != nil {
		return nil, err
	}
	store, err := freeAddr()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", data,
		"--allow-networks", fx.host(), "--checks-pro-limit", strconv.Itoa(c.n + 10), "--log-level", "warn"}, c.quarryFlags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stop(cmd, exited)
	if err := waitHealthy("http://"+api+"/healthz", exited); err != nil {
		return nil, err
	}
	var out, errb bytes.Buffer
	cli := exec.Command(bin, "checks", "user", "create", "--email", "bench@example.com", "--tier", "PRO",
		"--checks-pro-limit", strconv.Itoa(c.n+10), "--data-dir", data, "--ddb-listen", store)
	cli.Stdout, cli.Stderr = &out, &errb
	if err := cli.Run(); err != nil {
		return nil, fmt.Errorf("checks user create: %v: %s", err, errb.String())
	}
	token := lastField(out.String())
	paths := make([]string, c.n)
	for i := range paths {
		paths[i] = prefix + strconv.Itoa(i)
	}
	started := time.Now()
	// Create the checks with 8 clients; each is due at once when created.
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 30 * time.Second}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= c.n {
					return
				}
				body, _ := json.Marshal(map[string]any{"url": fx.srv.URL + paths[i], "checkType": "AVAILABILITY", "delayMs": c.interval.Milliseconds()})
				req, _ := http.NewRequest(http.MethodPost, "http://"+api+"/checks/v1/checks", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err == nil {
					if resp.StatusCode != http.StatusCreated {
						var b bytes.Buffer
						_, _ = b.ReadFrom(resp.Body)
						err = fmt.Errorf("POST /checks/v1/checks: %d %s", resp.StatusCode, strings.TrimSpace(b.String()))
					}
					resp.Body.Close()
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					next.Store(int64(c.n))
					return
				}
			}
		}()
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok {
		return nil, e
	}
	setup := time.Since(started)
	r, err := measure(c, fx, sys, paths, cmd.Process.Pid, started, exited)
	if err != nil {
		return nil, err
	}
	r.setup = setup
	return r, nil
}

func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

func waitHealthy(url string, exited <-chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before it was healthy: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not healthy after 60 s", url)
}

func stop(cmd *exec.Cmd, exited <-chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// ---- Gatus ----

func runGatus(c *config, fx *fixture) (*result, error) {
	dir, err := os.MkdirTemp("", "gatusbench-gatus-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	web, err := freeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(web)
	paths := make([]string, c.n)
	var y strings.Builder
	switch c.gatusStorage {
	case "sqlite":
		fmt.Fprintf(&y, "storage:\n  type: sqlite\n  path: %s\n", filepath.Join(dir, "data.db"))
	case "memory":
		y.WriteString("storage:\n  type: memory\n")
	default:
		return nil, fmt.Errorf("-gatus-storage %q: want sqlite or memory", c.gatusStorage)
	}
	fmt.Fprintf(&y, "web:\n  address: %s\n  port: %s\n", host, port)
	if c.gatusConcurrency >= 0 {
		fmt.Fprintf(&y, "concurrency: %d\n", c.gatusConcurrency)
	}
	y.WriteString("endpoints:\n")
	for i := range paths {
		paths[i] = "/g/" + strconv.Itoa(i)
		fmt.Fprintf(&y, "  - name: e%d\n    url: %s%s\n    interval: %s\n    conditions:\n      - \"[STATUS] == 200\"\n", i, fx.srv.URL, paths[i], c.interval)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(y.String()), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "gatus.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(c.gatus)
	cmd.Env = append(os.Environ(), "GATUS_CONFIG_PATH="+cfgPath, "GATUS_LOG_LEVEL=WARN")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stop(cmd, exited)
	if err := waitHealthy("http://"+web+"/health", exited); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "gatus.log"))
		return nil, fmt.Errorf("%w: %s", err, tail(b))
	}
	r, err := measure(c, fx, "gatus", paths, cmd.Process.Pid, started, exited)
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "gatus.log"))
		return nil, fmt.Errorf("%w: %s", err, tail(b))
	}
	return r, nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// ---- /proc ----

func procRSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// ---- report ----

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

type figures struct {
	p50, p99, max, mean time.Duration // of |period error|
	cpuPerCheck         time.Duration
}

func figuresOf(r *result) figures {
	var f figures
	a := make([]time.Duration, len(r.periods))
	var sum time.Duration
	for i, p := range r.periods {
		a[i] = abs(p)
		sum += p
	}
	if len(a) > 0 {
		f.p50, f.p99, f.max = report.Percentile(a, 50), report.Percentile(a, 99), report.Percentile(a, 100)
		f.mean = sum / time.Duration(len(a))
	}
	if r.requests > 0 {
		f.cpuPerCheck = r.cpu / time.Duration(r.requests)
	}
	return f
}

func render(c *config, rs []*result, start time.Time, loadBefore string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — Checks scheduler vs Gatus (gatusbench)\n\n", start.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- Machine: %s\n- Load average before: %s, after: %s\n- Command: `%s`\n", report.Machine(), loadBefore, report.LoadAvg(), c.command)
	gv := c.gatusVersion
	if gv == "" {
		gv = "(version not given)"
	}
	conc := "3 (its default)"
	if c.gatusConcurrency >= 0 {
		conc = strconv.Itoa(c.gatusConcurrency)
	}
	flags := "fsync on"
	if len(c.quarryFlags) > 0 {
		flags += ", serve flags `" + strings.Join(c.quarryFlags, " ") + "`"
	}
	if c.quarryBase != "" {
		label := c.baseLabel
		if label == "" {
			label = c.quarryBase
		}
		fmt.Fprintf(&b, "- quarry-base: `quarry serve` built from %s, run exactly as quarry is.\n", label)
	}
	fmt.Fprintf(&b, "- quarry: `quarry serve` built from this tree, embedded store (%s), N AVAILABILITY checks (`delayMs` %d) created through `POST /checks/v1/checks` by 8 clients, each due when created. Gatus %s: its own process, N HTTP endpoints with `interval: %s` and the condition `[STATUS] == 200`, storage %s, concurrency %s.\n", flags, c.interval.Milliseconds(), gv, c.interval, c.gatusStorage, conc)
	fmt.Fprintf(&b, "- One fixture on 127.0.0.1 answers 200 to every request and records its time per path. After every endpoint has been requested once, a window of %s: period error = gap between two consecutive requests to an endpoint − %s (nearest-rank percentiles of its absolute value; mean signed); missed periods = gaps of ≥ 1.5 intervals (each counts its skipped periods) + periods due after an endpoint's last request and more than half an interval before the window's end; CPU per check = user+system CPU of the process (/proc) over the window ÷ requests in the window. The systems run one after the other.\n\n", c.duration, c.interval)
	b.WriteString("| system | N | first round done after | requests in window | periods measured | period error p50 | p99 | max | mean (signed) | missed periods | CPU per check | RSS |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	fig := map[string]figures{}
	for _, r := range rs {
		f := figuresOf(r)
		fig[r.system] = f
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %s | %s | %s | %s | %d | %s | %.0f MiB |\n", r.system, r.endpoints, r.warm.Round(time.Second), r.requests, len(r.periods), dur(f.p50), dur(f.p99), dur(f.max), dur(f.mean), r.missed, dur(f.cpuPerCheck), r.rssMiB)
	}
	for _, rr := range [][3]string{{"quarry-base", "gatus", "quarry-base/Gatus"}, {"quarry", "gatus", "quarry/Gatus"}, {"quarry", "quarry-base", "quarry/quarry-base"}} {
		a, oka := fig[rr[0]]
		z, okz := fig[rr[1]]
		if oka && okz {
			fmt.Fprintf(&b, "| **%s** | | | | | %s | %s | %s | | | %s | |\n", rr[2], ratio(a.p50, z.p50), ratio(a.p99, z.p99), ratio(a.max, z.max), ratio(a.cpuPerCheck, z.cpuPerCheck))
		}
	}
	b.WriteString("\nRatios below 1 favour quarry.\n")
	for _, r := range rs {
		for _, n := range r.notes {
			fmt.Fprintf(&b, "\n- %s: %s\n", r.system, n)
		}
	}
	return b.String()
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func dur(d time.Duration) string {
	a := abs(d)
	switch {
	case a >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case a >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gatusbench:", err)
	os.Exit(1)
}

// Command clusterbench measures quarry on one node against three: real
// `quarry serve` processes (built from ./cmd/quarry, or -quarry) sharing
// one `quarry ddb serve --credentials` on this machine.
//
//   - Checks: -checks checks at -interval against a loopback target, on
//     nodes started with --systems checks, created through the nodes in
//     turn. Over the measured window it reports runs per second and start
//     lateness: the target records each check's requests, and a run's
//     lateness is its delay beyond the check's period, counted from the
//     check's least-late run in the window (the scheduler's due times are
//     a period apart), and the store requests per run: the growth of the
//     store's quarry_ddb_requests_total (its /metrics, every operation)
//     over the window, divided by the runs in it. With -kill, the
//     failover is the longest a check waited, after the node's SIGKILL,
//     for its next run.
//
//   - EECAR: -parts parts registered through node 1, then, for -duration,
//     -searchers clients searching node 1 while -write-rate parts a second
//     are registered through the other nodes (through node 1 with one
//     node). It reports search latency: with several nodes a search waits
//     until node 1's index has the parts written elsewhere (the table's
//     stream), so this is where the stream's lag shows.
//
//     go run ./bench/clusterbench -nodes 1,3 -duration 30s -out bench/RESULTS.md
//
// The nodes run on the same machine as the store and the bench: the
// figures show what sharing costs, not what more machines buy.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/bench/internal/report"
)

type config struct {
	quarry   string
	nodes    []int
	checks   int
	interval time.Duration
	// targetDelay is how long the target takes to answer each run.
	targetDelay time.Duration
	// maxInflight is each node's --checks-max-inflight (0: its default).
	maxInflight int
	// kill SIGKILLs the last node a third into the window (clusters of
	// two nodes or more) and reports the failover: the longest a check
	// waited beyond its period.
	kill       bool
	duration   time.Duration
	parts      int
	writeRate  float64
	searchers  int
	out        string
	workDir    string
	skipChecks bool
	skipEECAR  bool
}

func main() {
	var c config
	var nodes string
	flag.StringVar(&c.quarry, "quarry", "", "quarry binary (default: go build ./cmd/quarry into a temporary directory)")
	flag.StringVar(&nodes, "nodes", "1,3", "comma-separated node counts to compare")
	flag.IntVar(&c.checks, "checks", 600, "checks")
	flag.DurationVar(&c.interval, "interval", 5*time.Second, "period of every check")
	flag.DurationVar(&c.targetDelay, "target-delay", 0, "how long the target takes to answer each run (a slow site: runs wait on it, not on the CPU)")
	flag.IntVar(&c.maxInflight, "max-inflight", 0, "each node's --checks-max-inflight (0: quarry's default)")
	flag.BoolVar(&c.kill, "kill", false, "SIGKILL the last node a third into the window (2 nodes or more) and report the longest a check waited beyond its period")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "measured window of each part")
	flag.IntVar(&c.parts, "parts", 200, "EECAR parts registered before the window")
	flag.Float64Var(&c.writeRate, "write-rate", 5, "EECAR parts registered per second during the window, through the other nodes")
	flag.IntVar(&c.searchers, "searchers", 4, "concurrent EECAR search clients on node 1")
	flag.StringVar(&c.out, "out", "", "Markdown file to append results to (default: stdout only)")
	flag.BoolVar(&c.skipChecks, "no-checks", false, "leave out Checks")
	flag.BoolVar(&c.skipEECAR, "no-eecar", false, "leave out EECAR")
	flag.Parse()
	for _, f := range strings.Split(nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fatal(fmt.Errorf("-nodes %q: want counts like 1,3", nodes))
		}
		c.nodes = append(c.nodes, n)
	}
	dir, err := os.MkdirTemp("", "clusterbench-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	c.workDir = dir
	if c.quarry == "" {
		c.quarry = filepath.Join(dir, "quarry")
		build := exec.Command("go", "build", "-o", c.quarry, "./cmd/quarry")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fatal(fmt.Errorf("go build ./cmd/quarry: %w", err))
		}
	}
	loadBefore := report.LoadAvg()
	var b strings.Builder
	if !c.skipChecks {
		fmt.Fprintf(&b, "\n### Checks: %d checks every %s, %s window, target answers in %s, --checks-max-inflight %s\n\n", c.checks, c.interval, c.duration, c.targetDelay, inflight(c.maxInflight))
		if c.kill {
			b.WriteString("With -kill: the last node is SIGKILLed a third into the window; the worst gap is the longest a check waited beyond its period (the failover).\n\n")
		}
		b.WriteString("| nodes | offered runs/s | runs/s | missed | store requests/run | lateness p50 | p99 | max | worst gap beyond the period | failover |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		var results []checksResult
		for _, n := range c.nodes {
			r, err := benchChecks(c, n)
			if err != nil {
				fatal(fmt.Errorf("checks on %d nodes: %w", n, err))
			}
			failover := "–"
			if r.killed {
				failover = ms(r.failover)
			}
			fmt.Fprintf(&b, "| %d | %.1f | %.1f | %d | %.2f | %s | %s | %s | %s | %s |\n", n, float64(c.checks)/c.interval.Seconds(), r.rate, r.missed,
				r.requestsPerRun, ms(r.p50), ms(r.p99), ms(r.max), ms(r.worstGap), failover)
			fmt.Fprint(os.Stderr, b.String())
			results = append(results, r)
		}
		writeRequestsByOp(&b, c.nodes, results)
	}
	if !c.skipEECAR {
		fmt.Fprintf(&b, "\n### EECAR: search on node 1 while %.0f parts/s are registered through the other nodes (%d parts before, %d clients, %s)\n\n", c.writeRate, c.parts, c.searchers, c.duration)
		b.WriteString("| nodes | searches | searches/s | p50 | p99 | max | parts written |\n|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, n := range c.nodes {
			r, err := benchEECAR(c, n)
			if err != nil {
				fatal(fmt.Errorf("eecar on %d nodes: %w", n, err))
			}
			fmt.Fprintf(&b, "| %d | %d | %.1f | %s | %s | %s | %d |\n", n, r.n, float64(r.n)/c.duration.Seconds(), ms(r.p50), ms(r.p99), ms(r.max), r.written)
			fmt.Fprint(os.Stderr, b.String())
		}
	}
	head := fmt.Sprintf("\n## %s — cluster: 1 vs 3 `quarry serve` processes on one `quarry ddb serve` (clusterbench)\n\n"+
		"- Machine: %s (shared with other work: figures are noisy)\n- Load average (1/5/15 min) before: %s, after: %s\n- Command: `go run ./bench/clusterbench %s`\n"+
		"- Every process (the store, the nodes, the bench with its loopback target and webhook-free clients) on this one machine; nodes started with `--systems checks` or `--systems eecar`, the store with `--credentials` (requests signed) and fsync on.\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), report.Machine(), loadBefore, report.LoadAvg(), strings.Join(os.Args[1:], " "))
	out := head + b.String()
	fmt.Print(out)
	if c.out != "" {
		if err := report.Append(c.out, out); err != nil {
			fatal(err)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "clusterbench:", err)
	os.Exit(1)
}

// cluster is a store and its nodes.
type cluster struct {
	c     config
	procs []*exec.Cmd
	store string
	apis  []string
	env   []string
	dir   string
}

const keyID, secret = "AKIDBENCH", "bench-secret-key"

// freeAddr returns a free loopback address.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func startCluster(c config, n int, systems string, extra ...string) (*cluster, error) {
	dir, err := os.MkdirTemp(c.workDir, "cluster-")
	if err != nil {
		return nil, err
	}
	cl := &cluster{c: c, dir: dir, store: freeAddr()}
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(creds, []byte(keyID+" "+secret+"\n"), 0o600); err != nil {
		return nil, err
	}
	cl.env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+keyID, "AWS_SECRET_ACCESS_KEY="+secret, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
	if err := cl.spawn("ddb", "ddb", "serve", "--listen", cl.store, "--data-dir", filepath.Join(dir, "ddb"), "--credentials", creds); err != nil {
		return nil, err
	}
	if err := waitHTTP("http://"+cl.store+"/", 30*time.Second, false); err != nil {
		cl.stop()
		return nil, fmt.Errorf("ddb serve: %w", err)
	}
	for i := range n {
		api := freeAddr()
		cl.apis = append(cl.apis, api)
		args := append([]string{"serve", "--listen", api, "--ddb-listen", "off", "--data-dir", filepath.Join(dir, fmt.Sprintf("node%d", i+1)),
			"--dynamodb-endpoint", "http://" + cl.store, "--node-id", fmt.Sprintf("node%d", i+1), "--systems", systems,
			"--wallcrawler-secret", "clusterbench-shared-secret"}, extra...)
		if err := cl.spawn(fmt.Sprintf("node%d", i+1), args...); err != nil {
			cl.stop()
			return nil, err
		}
	}
	for _, api := range cl.apis {
		if err := waitHTTP("http://"+api+"/healthz", 60*time.Second, true); err != nil {
			cl.stop()
			return nil, fmt.Errorf("node %s: %w", api, err)
		}
	}
	return cl, nil
}

func (cl *cluster) spawn(name string, args ...string) error {
	logFile, err := os.Create(filepath.Join(cl.dir, name+".log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(cl.c.quarry, args...)
	cmd.Env = cl.env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	cl.procs = append(cl.procs, cmd)
	return nil
}

// cli runs a quarry administration command against the store.
func (cl *cluster) cli(args ...string) (string, error) {
	cmd := exec.Command(cl.c.quarry, append(args, "--dynamodb-endpoint", "http://"+cl.store, "--data-dir", filepath.Join(cl.dir, "cli"))...)
	cmd.Env = cl.env
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %w: %s", args, err, errs.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// stop ends the nodes, then the store.
func (cl *cluster) stop() {
	for i := len(cl.procs) - 1; i >= 0; i-- {
		p := cl.procs[i]
		_ = p.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
}

func waitHTTP(url string, d time.Duration, want200 bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(d)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if !want200 || resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering %s within %s (%v)", url, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func call(method, url, auth string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// parallel runs f(0..n-1) on k goroutines and returns the first error.
func parallel(n, k int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// inflight names a -max-inflight value.
func inflight(n int) string {
	if n == 0 {
		return "default"
	}
	return strconv.Itoa(n)
}

type checksResult struct {
	rate          float64
	missed        int
	p50, p99, max time.Duration
	// worstGap is the longest time between two runs of a check in the
	// window beyond its period.
	worstGap time.Duration
	// requestsPerRun is the store's requests in the window per run.
	requestsPerRun float64
	// requestsByOp is the store's requests in the window by operation,
	// over seconds of window.
	requestsByOp map[string]float64
	seconds      float64
	// killed: a node was SIGKILLed in the window; failover is the longest
	// a check waited, from the kill, for its next run.
	killed   bool
	failover time.Duration
}

// storeRequests reads the store's quarry_ddb_requests_total from its
// /metrics, by operation, and its quarry_ddb_errors_total under
// "<operation> error <type>" keys (not requests of their own).
func storeRequests(addr string) (map[string]float64, error) {
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("store metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("store metrics: %s", resp.Status)
	}
	byOp := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "quarry_ddb_requests_total{")
		isErr := false
		if !ok {
			if line, ok = strings.CutPrefix(sc.Text(), "quarry_ddb_errors_total{"); !ok {
				continue
			}
			isErr = true
		}
		labels, v, ok := strings.Cut(line, "} ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("store metrics: %q: %w", sc.Text(), err)
		}
		op, typ, _ := strings.Cut(labels, ",")
		op = strings.Trim(strings.TrimPrefix(op, "op="), `"`)
		if isErr {
			op += " error " + strings.Trim(strings.TrimPrefix(typ, "type="), `"`)
		}
		byOp[op] += f
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("store metrics: %w", err)
	}
	if len(byOp) == 0 {
		return nil, errors.New("store metrics: no quarry_ddb_requests_total")
	}
	return byOp, nil
}

// writeRequestsByOp writes the store's requests in the window by
// operation, per second and per run, one column per node count: what a
// node's background work costs beside what each run costs.
func writeRequestsByOp(b *strings.Builder, nodes []int, results []checksResult) {
	ops := map[string]bool{}
	for _, r := range results {
		for op := range r.requestsByOp {
			ops[op] = true
		}
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	b.WriteString("\nStore requests by operation, per second of the window (per run):\n\n| operation |")
	for _, n := range nodes[:len(results)] {
		fmt.Fprintf(b, " %d node(s) |", n)
	}
	b.WriteString("\n|---|" + strings.Repeat("--:|", len(results)) + "\n")
	for _, op := range names {
		fmt.Fprintf(b, "| %s |", op)
		for _, r := range results {
			v := r.requestsByOp[op]
			fmt.Fprintf(b, " %.2f (%.3f) |", v/r.seconds, v/(r.rate*r.seconds))
		}
		b.WriteString("\n")
	}
}

// requestsDelta is, per operation, the requests between two readings of
// storeRequests, and their sum.
func requestsDelta(from, to map[string]float64) (map[string]float64, float64) {
	d := map[string]float64{}
	var sum float64
	for op, v := range to {
		if n := v - from[op]; n > 0 {
			d[op] = n
			if !strings.Contains(op, " error ") {
				sum += n
			}
		}
	}
	return d, sum
}

func benchChecks(c config, n int) (checksResult, error) {
	var mu sync.Mutex
	runs := make([][]time.Time, c.checks)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/t/"))
		if err != nil || i < 0 || i >= c.checks {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		runs[i] = append(runs[i], time.Now())
		mu.Unlock()
		if c.targetDelay > 0 {
			time.Sleep(c.targetDelay)
		}
		io.WriteString(w, "ok")
	}))
	defer target.Close()
	flags := []string{"--allow-networks", target.Listener.Addr().String(), "--checks-min-interval", "1s",
		"--checks-pro-limit", strconv.Itoa(c.checks)}
	if c.maxInflight > 0 {
		flags = append(flags, "--checks-max-inflight", strconv.Itoa(c.maxInflight))
	}
	cl, err := startCluster(c, n, "checks", flags...)
	if err != nil {
		return checksResult{}, err
	}
	defer cl.stop()
	token, err := cl.cli("checks", "user", "create", "--email", "bench@example.com", "--tier", "PRO", "--checks-pro-limit", strconv.Itoa(c.checks))
	if err != nil {
		return checksResult{}, err
	}
	err = parallel(c.checks, 16, func(i int) error {
		code, body, err := call(http.MethodPost, "http://"+cl.apis[i%n]+"/checks/v1/checks", "Bearer "+token,
			map[string]any{"url": fmt.Sprintf("%s/t/%d", target.URL, i), "checkType": "AVAILABILITY", "delayMs": c.interval.Milliseconds()})
		if err == nil && code != http.StatusCreated {
			err = fmt.Errorf("create check: %d %s", code, body)
		}
		return err
	})
	if err != nil {
		return checksResult{}, err
	}
	// Warm-up: first runs are spread over the first period, and every
	// node has read the new checks (a Checks refresh, 10 s) so that each
	// runs on its owner, not on the node it was created through.
	time.Sleep(max(c.interval, 10*time.Second) + time.Second)
	reqFrom, err := storeRequests(cl.store)
	if err != nil {
		return checksResult{}, err
	}
	from := time.Now()
	var killedAt time.Time
	if c.kill && n > 1 {
		time.Sleep(c.duration / 3)
		// procs[0] is the store; the last is node n.
		_ = cl.procs[len(cl.procs)-1].Process.Kill()
		killedAt = time.Now()
		time.Sleep(c.duration - c.duration/3)
	} else {
		time.Sleep(c.duration)
	}
	to := time.Now()
	reqTo, err := storeRequests(cl.store)
	if err != nil {
		return checksResult{}, err
	}
	byOp, reqSum := requestsDelta(reqFrom, reqTo)
	mu.Lock()
	defer mu.Unlock()
	var late []time.Duration
	var worstGap, failover time.Duration
	total, missed := 0, 0
	for _, rs := range runs {
		var in []time.Time
		for _, t := range rs {
			if !t.Before(from) && t.Before(to) {
				in = append(in, t)
			}
		}
		if !killedAt.IsZero() {
			// A request the dead node sent just before the kill may
			// arrive just after it: runs from 100 ms on count.
			wait := to.Sub(killedAt)
			for _, t := range in {
				if t.After(killedAt.Add(100 * time.Millisecond)) {
					wait = t.Sub(killedAt)
					break
				}
			}
			failover = max(failover, wait)
		}
		total += len(in)
		for j := 1; j < len(in); j++ {
			worstGap = max(worstGap, in[j].Sub(in[j-1])-c.interval)
		}
		if len(in) == 0 {
			missed += int(to.Sub(from) / c.interval)
			continue
		}
		// The k-th period after the first run; lateness from the
		// least-late run.
		base := in[0]
		offs := make([]time.Duration, len(in))
		minOff := time.Duration(0)
		for j, t := range in {
			k := int((t.Sub(base) + c.interval/2) / c.interval)
			offs[j] = t.Sub(base) - time.Duration(k)*c.interval
			minOff = min(minOff, offs[j])
		}
		for _, o := range offs {
			late = append(late, o-minOff)
		}
		// Every whole period of the window holds one due time.
		if want := int(to.Sub(from) / c.interval); len(in) < want {
			missed += want - len(in)
		}
	}
	if len(late) == 0 {
		return checksResult{}, errors.New("no run in the window")
	}
	return checksResult{rate: float64(total) / to.Sub(from).Seconds(), missed: missed, worstGap: worstGap,
		requestsPerRun: reqSum / float64(total), requestsByOp: byOp, seconds: to.Sub(from).Seconds(), killed: !killedAt.IsZero(), failover: failover,
		p50: report.Percentile(late, 50), p99: report.Percentile(late, 99), max: report.Percentile(late, 100)}, nil
}

type eecarResult struct {
	n, written    int
	p50, p99, max time.Duration
}

var queries = []string{"battery pack for ESS", "used traction motor", "inverter 400V", "NCM battery module", "onboard charger 11kW",
	"LFP cells second life", "door panel", "heat pump", "drive unit", "battery management system"}

func benchEECAR(c config, n int) (eecarResult, error) {
	cl, err := startCluster(c, n, "eecar")
	if err != nil {
		return eecarResult{}, err
	}
	defer cl.stop()
	key, err := cl.cli("eecar", "company", "create", "--name", "Bench Seller")
	if err != nil {
		return eecarResult{}, err
	}
	buyer, err := cl.cli("eecar", "company", "create", "--name", "Bench Buyer")
	if err != nil {
		return eecarResult{}, err
	}
	cats := []string{"battery", "motor", "inverter", "charger", "electronics"}
	part := func(i int) map[string]any {
		q := queries[i%len(queries)]
		return map[string]any{"name": fmt.Sprintf("%s #%d", q, i), "category": cats[i%len(cats)], "manufacturer": "Bench",
			"price": 1000 + i, "description": "clusterbench part: " + q}
	}
	err = parallel(c.parts, 8, func(i int) error {
		code, body, err := call(http.MethodPost, "http://"+cl.apis[0]+"/eecar/parts", "Bearer "+key, part(i))
		if err == nil && code != http.StatusCreated {
			err = fmt.Errorf("register part: %d %s", code, body)
		}
		return err
	})
	if err != nil {
		return eecarResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.duration)
	defer cancel()
	var written atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writers, on the other nodes
		defer wg.Done()
		tick := time.NewTicker(time.Duration(float64(time.Second) / c.writeRate))
		defer tick.Stop()
		for i := c.parts; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			node := cl.apis[0]
			if n > 1 {
				node = cl.apis[1+i%(n-1)]
			}
			if code, _, err := call(http.MethodPost, "http://"+node+"/eecar/parts", "Bearer "+key, part(i)); err == nil && code == http.StatusCreated {
				written.Add(1)
			}
		}
	}()
	var mu sync.Mutex
	var lat []time.Duration
	for s := range c.searchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; ctx.Err() == nil; i += c.searchers {
				start := time.Now()
				code, body, err := call(http.MethodPost, "http://"+cl.apis[0]+"/eecar/search", "Bearer "+buyer,
					map[string]any{"query": queries[i%len(queries)], "topK": 10})
				if ctx.Err() != nil {
					return
				}
				if err != nil || code != http.StatusOK {
					fmt.Fprintf(os.Stderr, "search: %d %v %s\n", code, err, firstLine(body))
					continue
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(lat) == 0 {
		return eecarResult{}, errors.New("no search completed")
	}
	return eecarResult{n: len(lat), written: int(written.Load()), p50: report.Percentile(lat, 50), p99: report.Percentile(lat, 99), max: report.Percentile(lat, 100)}, nil
}

func firstLine(b []byte) string {
	s := bufio.NewScanner(bytes.NewReader(b))
	if s.Scan() {
		return s.Text()
	}
	return ""
}

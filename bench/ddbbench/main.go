// Command ddbbench measures GetItem, PutItem and Query (100 items per page)
// over HTTP with aws-sdk-go-v2 against one or more DynamoDB endpoints on
// this machine (quarry, dynalite, ...), in one run, and appends the results
// to a Markdown file.
//
// Usage:
//
//	go run ./bench/ddbbench -targets quarry=http://127.0.0.1:8000,dynalite=http://127.0.0.1:4567 \
//	    -duration 10s -concurrency 16 -out bench/RESULTS.md
//
// With -embedded the harness serves a fresh quarry store itself on a
// loopback port (in this process) as the target "quarry".
//
// With -null-listen 127.0.0.1:PORT it benchmarks nothing and instead
// serves the null server (null.go): a DynamoDB-wire HTTP server that stores
// nothing and answers with precomputed bytes. Run as a target named "null",
// it shows the throughput ceiling of this machine, HTTP plus the SDK
// clients, against which the report sets quarry and dynalite.
//
// For each target it creates a table (pk S hash, sk N range), preloads it
// (GetItem: 10,000 items; Query: 10 partitions of 1,000 items; ~200 bytes
// each), then runs each operation with -concurrency goroutines for
// -duration, each goroutine with its own aws-sdk-go-v2 client (own HTTP
// keep-alive connection, retries disabled). Latencies are recorded exactly
// and sorted for p50 and p99. Only loopback endpoints are accepted, and
// every loop is bounded by a deadline or a count.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/awsclient"
)

// config holds the command-line settings.
type config struct {
	targets      []target
	embedded     bool
	duration     time.Duration
	warmup       time.Duration
	concurrency  int
	ops          []string
	getItems     int
	partitions   int
	perPartition int
	pageSize     int
	putKeys      int
	itemBytes    int
	table        string
	out          string
	command      string
	note         string
	wait         time.Duration
	cpuProfile   string
	rounds       int
	rate         float64
	// nullListen, when set, makes the process serve the null server on
	// this loopback address instead of benchmarking.
	nullListen string
	// nullRaw serves the null server with a minimal HTTP/1.1 loop instead
	// of net/http (nullraw.go).
	nullRaw bool

	// loadBefore and loadAfter are /proc/loadavg at the start and the end
	// of the measurements: the machine may be shared.
	loadBefore, loadAfter string
}

// target is one endpoint under test.
type target struct {
	name string
	url  string
	// pid is the server's process id (0: unknown, or the bench process
	// itself with -embedded); its CPU time per request is reported.
	pid int
}

// result is one operation's measurement against one target.
type result struct {
	op       string
	target   string
	ops      int
	errors   int
	firstErr string
	elapsed  time.Duration
	p50, p99 time.Duration
	max      time.Duration
	// serverCPU is the CPU time (user+system) the server process used
	// during the measurement; 0 when unknown.
	serverCPU time.Duration
	// clientCPU is the CPU time (user+system) this bench process used
	// during the measurement: the clients, and with -embedded the quarry
	// store too.
	clientCPU time.Duration
	// lat holds every successful request's latency, sorted.
	lat []time.Duration
}

// merge adds another round's measurement of the same op and target.
func (r *result) merge(o result) {
	if r.target == "" {
		*r = o
		return
	}
	r.ops += o.ops
	r.errors += o.errors
	if r.firstErr == "" {
		r.firstErr = o.firstErr
	}
	r.elapsed += o.elapsed
	r.serverCPU += o.serverCPU
	r.clientCPU += o.clientCPU
	r.lat = append(r.lat, o.lat...)
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	r.setPercentiles()
}

func (r *result) setPercentiles() {
	if len(r.lat) > 0 {
		r.p50 = percentile(r.lat, 50)
		r.p99 = percentile(r.lat, 99)
		r.max = r.lat[len(r.lat)-1]
	}
}

// cpuPerOp is the server's CPU time per successful request.
func (r result) cpuPerOp() time.Duration {
	if r.ops == 0 || r.serverCPU == 0 {
		return 0
	}
	return r.serverCPU / time.Duration(r.ops)
}

// clientCPUPerOp is the bench process's CPU time per successful request.
func (r result) clientCPUPerOp() time.Duration {
	if r.ops == 0 || r.clientCPU == 0 {
		return 0
	}
	return r.clientCPU / time.Duration(r.ops)
}

func (r result) opsPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

var allOps = []string{"GetItem", "PutItem", "Query"}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ddbbench:", err)
		os.Exit(2)
	}
	if cfg.nullListen != "" {
		err = runNull(cfg)
	} else {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ddbbench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("ddbbench", flag.ContinueOnError)
	c := &config{}
	pids := fs.String("pids", "", "comma-separated name=PID of the targets' server processes, to report their CPU time per request")
	targets := fs.String("targets", "", "comma-separated name=URL endpoints (loopback only), e.g. quarry=http://127.0.0.1:8000,dynalite=http://127.0.0.1:4567")
	fs.BoolVar(&c.embedded, "embedded", false, "serve a fresh in-process quarry store on a loopback port as target \"quarry\"")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured run time of each operation on each target, per round")
	fs.IntVar(&c.rounds, "rounds", 1, "rounds of measurement; each measures every operation on every target, the results add up")
	fs.Float64Var(&c.rate, "rate", 0, "open loop: requests per second in all (spread evenly over the clients, latency counted from each request's scheduled time); 0: closed loop, each client sends its next request when the last is answered")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured run time before each operation")
	fs.IntVar(&c.concurrency, "concurrency", 16, "concurrent clients (goroutines, one SDK client each)")
	ops := fs.String("ops", strings.Join(allOps, ","), "operations to run")
	fs.IntVar(&c.getItems, "get-items", 10000, "items preloaded for GetItem")
	fs.IntVar(&c.partitions, "partitions", 10, "partitions preloaded for Query")
	fs.IntVar(&c.perPartition, "per-partition", 1000, "items per Query partition")
	fs.IntVar(&c.pageSize, "page", 100, "Query Limit (items per page)")
	fs.IntVar(&c.putKeys, "put-keys", 100000, "PutItem writes random keys among this many")
	fs.IntVar(&c.itemBytes, "item-bytes", 200, "approximate item size in bytes")
	fs.StringVar(&c.table, "table", "ddbbench", "table name (dropped and recreated on every target)")
	fs.StringVar(&c.out, "out", "", "Markdown file to append the results to (default: stdout only)")
	fs.StringVar(&c.command, "command", "", "command line to record (default: this process's)")
	fs.StringVar(&c.note, "note", "", "free text recorded with the results (versions, modes)")
	fs.DurationVar(&c.wait, "wait", 30*time.Second, "how long to wait for each target to accept connections")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (with -embedded: clients and store) to this file")
	fs.BoolVar(&c.nullRaw, "null-raw", false, "with -null-listen: answer through a minimal HTTP/1.1 loop instead of net/http, to measure net/http's own cost")
	fs.StringVar(&c.nullListen, "null-listen", "", "instead of benchmarking, serve the null DynamoDB server (no storage, precomputed answers for -table, -item-bytes and -page) on this loopback host:port until SIGINT/SIGTERM")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, t := range strings.Split(*targets, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		name, u, ok := strings.Cut(t, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("target %q: want name=URL", t)
		}
		if err := checkLoopback(u); err != nil {
			return nil, fmt.Errorf("target %s: %w", name, err)
		}
		c.targets = append(c.targets, target{name: name, url: u})
	}
	if c.embedded {
		kept := c.targets[:0]
		for _, t := range c.targets {
			if t.name != "quarry" {
				kept = append(kept, t)
			}
		}
		c.targets = append([]target{{name: "quarry"}}, kept...)
	}
	if c.nullListen != "" {
		if len(c.targets) > 0 {
			return nil, errors.New("-null-listen serves instead of benchmarking: give no -targets or -embedded with it")
		}
		if err := checkLoopbackListen(c.nullListen); err != nil {
			return nil, fmt.Errorf("-null-listen: %w", err)
		}
	} else if len(c.targets) == 0 {
		return nil, errors.New("no targets: give -targets and/or -embedded")
	}
	for _, p := range strings.Split(*pids, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("pid %q: want name=PID", p)
		}
		for i := range c.targets {
			if c.targets[i].name == name {
				c.targets[i].pid = pid
			}
		}
	}
	for _, op := range strings.Split(*ops, ",") {
		op = strings.TrimSpace(op)
		found := false
		for _, a := range allOps {
			if strings.EqualFold(op, a) {
				c.ops = append(c.ops, a)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown operation %q (want %s)", op, strings.Join(allOps, ", "))
		}
	}
	switch {
	case c.duration <= 0 || c.duration > time.Hour:
		return nil, errors.New("-duration must be in (0, 1h]")
	case c.warmup < 0 || c.warmup > time.Minute:
		return nil, errors.New("-warmup must be in [0, 1m]")
	case c.concurrency < 1 || c.concurrency > 1024:
		return nil, errors.New("-concurrency must be in [1, 1024]")
	case c.rounds < 1 || c.rounds > 100:
		return nil, errors.New("-rounds must be in [1, 100]")
	case c.rate < 0 || c.rate > 1e6:
		return nil, errors.New("-rate must be in [0, 1000000]")
	case c.getItems < 1 || c.partitions < 1 || c.perPartition < 1 || c.putKeys < 1:
		return nil, errors.New("item counts must be positive")
	case c.pageSize < 1 || c.pageSize > c.perPartition:
		return nil, errors.New("-page must be in [1, -per-partition]")
	case c.itemBytes < 64 || c.itemBytes > 350*1024:
		return nil, errors.New("-item-bytes must be in [64, 358400]")
	}
	if c.command == "" {
		c.command = "go run ./bench/ddbbench " + shellJoin(args)
	}
	return c, nil
}

// checkLoopback refuses endpoints that are not on this machine's loopback.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" {
		return fmt.Errorf("%s: only http:// endpoints are supported", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: not a loopback address (traffic stays on 127.0.0.1)", raw)
	}
	return nil
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func run(cfg *config) error {
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if cfg.embedded {
		u, stop, err := serveEmbedded()
		if err != nil {
			return err
		}
		defer stop()
		cfg.targets[0].url = u
	}
	cfg.loadBefore = report.LoadAvg()
	for _, t := range cfg.targets {
		fmt.Fprintf(os.Stderr, "== %s (%s)\n", t.name, t.url)
		if err := waitFor(t.url, cfg.wait); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		if err := prepareTarget(cfg, t); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	// Every round measures each operation on every target in turn (the
	// order rotating from round to round), so that a machine whose load
	// drifts during the run treats the targets alike.
	acc := map[string]*result{}
	var results []result
	for round := 0; round < cfg.rounds; round++ {
		for _, op := range cfg.ops {
			for i := range cfg.targets {
				t := cfg.targets[(i+round)%len(cfg.targets)]
				r := measure(cfg, t, op)
				fmt.Fprintf(os.Stderr, "   round %d %-8s %-14s %10.0f ops/s  p50 %-9s p99 %-9s errors %d\n", round+1, op, t.name, r.opsPerSec(), fmtDur(r.p50), fmtDur(r.p99), r.errors)
				if r.firstErr != "" {
					fmt.Fprintf(os.Stderr, "            first error: %s\n", r.firstErr)
				}
				key := op + "/" + t.name
				if acc[key] == nil {
					acc[key] = &result{}
				}
				acc[key].merge(r)
			}
		}
	}
	for _, op := range cfg.ops {
		for _, t := range cfg.targets {
			results = append(results, *acc[op+"/"+t.name])
		}
	}
	for _, t := range cfg.targets {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		newClient(t.url).DeleteTable(dctx, &dynamodb.DeleteTableInput{TableName: aws.String(cfg.table)})
		cancel()
	}
	cfg.loadAfter = report.LoadAvg()
	md := render(cfg, results)
	fmt.Print(md)
	if cfg.out != "" {
		text := "\n" + md
		if st, err := os.Stat(cfg.out); err != nil || st.Size() == 0 {
			text = "# Benchmark results\n\nAppended by `bench/run.sh` / `go run ./bench/ddbbench`; newest last. See bench/README.md.\n" + text
		}
		if err := report.Append(cfg.out, text); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "appended to %s\n", cfg.out)
	}
	return nil
}

// serveEmbedded opens a fresh store in a temporary directory and serves it
// on a loopback port; stop shuts it down and removes the directory.
func serveEmbedded() (string, func(), error) {
	dir, err := os.MkdirTemp("", "ddbbench-")
	if err != nil {
		return "", nil, err
	}
	store, err := ddb.Open(dir, nil)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	srv := &http.Server{Handler: store.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		store.Close()
		os.RemoveAll(dir)
	}
	return "http://" + l.Addr().String(), stop, nil
}

// waitFor waits until the endpoint accepts TCP connections.
func waitFor(raw string, d time.Duration) error {
	u, _ := url.Parse(raw)
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not reachable after %s: %w", raw, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newClient returns an SDK client with its own HTTP transport (keep-alive,
// no proxy) and no retries, its requests sent through
// awsclient.PlainBodyClient like quarry's own clients: without it about
// one Query response in 4,000 to 40,000 under 16 clients fails after its
// 200 header with "use of closed network connection", whatever the server
// (awsclient.PlainBodyClient says why).
func newClient(endpoint string) *dynamodb.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("ddbbench", "ddbbench", ""),
		HTTPClient:   awsclient.PlainBodies(&http.Client{Transport: tr, Timeout: 30 * time.Second}),
		Retryer:      aws.NopRetryer{},
	})
}

func getKey(i int) string   { return fmt.Sprintf("get#%06d", i) }
func queryKey(p int) string { return fmt.Sprintf("query#%03d", p) }
func putKey(i int) string   { return fmt.Sprintf("put#%07d", i) }
func nAV(n int) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
}

// newItem returns an item of about cfg.itemBytes bytes.
func newItem(cfg *config, pk string, sk int, rnd *rand.Rand) map[string]types.AttributeValue {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	fixed := len("pk") + len(pk) + len("sk") + 4 + len("n") + 8 + len("ts") + 13 + len("payload")
	b := make([]byte, max(8, cfg.itemBytes-fixed))
	for i := range b {
		b[i] = alphabet[rnd.IntN(len(alphabet))]
	}
	return map[string]types.AttributeValue{
		"pk":      &types.AttributeValueMemberS{Value: pk},
		"sk":      nAV(sk),
		"n":       nAV(rnd.IntN(1 << 24)),
		"ts":      &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)},
		"payload": &types.AttributeValueMemberS{Value: string(b)},
	}
}

// prepareTarget creates the table on t and preloads it.
func prepareTarget(cfg *config, t target) error {
	ctx := context.Background()
	if err := setupTable(ctx, newClient(t.url), cfg.table); err != nil {
		return err
	}
	start := time.Now()
	if err := preload(ctx, cfg, t.url); err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	fmt.Fprintf(os.Stderr, "   preloaded %d items in %s\n", cfg.getItems+cfg.partitions*cfg.perPartition, time.Since(start).Round(time.Millisecond))
	return nil
}

// setupTable drops the table if present, creates it and waits until it is
// active.
func setupTable(ctx context.Context, c *dynamodb.Client, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err == nil {
		w := dynamodb.NewTableNotExistsWaiter(c, func(o *dynamodb.TableNotExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
			return fmt.Errorf("delete old table: %w", err)
		}
	} else {
		var rnf *types.ResourceNotFoundException
		if !errors.As(err, &rnf) {
			return fmt.Errorf("delete old table: %w", err)
		}
	}
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return fmt.Errorf("wait for table: %w", err)
	}
	return nil
}

// preload writes the GetItem and Query data sets with BatchWriteItem from
// cfg.concurrency clients.
func preload(ctx context.Context, cfg *config, endpoint string) error {
	type key struct {
		pk string
		sk int
	}
	keys := make(chan key, 1024)
	go func() {
		defer close(keys)
		for i := 0; i < cfg.getItems; i++ {
			keys <- key{getKey(i), 0}
		}
		for p := 0; p < cfg.partitions; p++ {
			for s := 0; s < cfg.perPartition; s++ {
				keys <- key{queryKey(p), s}
			}
		}
	}()
	var wg sync.WaitGroup
	errc := make(chan error, cfg.concurrency)
	for w := 0; w < cfg.concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := newClient(endpoint)
			rnd := rand.New(rand.NewPCG(uint64(w), 42))
			var batch []types.WriteRequest
			flush := func() error {
				pending := map[string][]types.WriteRequest{cfg.table: batch}
				for tries := 0; len(pending) > 0; tries++ {
					if tries == 20 {
						return errors.New("BatchWriteItem: items still unprocessed after 20 tries")
					}
					rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					out, err := c.BatchWriteItem(rctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
					cancel()
					if err != nil {
						return err
					}
					pending = out.UnprocessedItems
				}
				batch = batch[:0]
				return nil
			}
			for k := range keys {
				batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: newItem(cfg, k.pk, k.sk, rnd)}})
				if len(batch) == 25 {
					if err := flush(); err != nil {
						errc <- err
						for range keys { // drain so the producer ends
						}
						return
					}
				}
			}
			if len(batch) > 0 {
				if err := flush(); err != nil {
					errc <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// opFunc runs one request; it returns an error for a failed or wrong answer.
type opFunc func(ctx context.Context, c *dynamodb.Client, rnd *rand.Rand) error

func makeOp(cfg *config, op string) opFunc {
	table := aws.String(cfg.table)
	switch op {
	case "GetItem":
		return func(ctx context.Context, c *dynamodb.Client, rnd *rand.Rand) error {
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: getKey(rnd.IntN(cfg.getItems))}, "sk": nAV(0)}})
			if err != nil {
				return err
			}
			if out.Item == nil {
				return errors.New("GetItem: preloaded item not found")
			}
			return nil
		}
	case "PutItem":
		return func(ctx context.Context, c *dynamodb.Client, rnd *rand.Rand) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: newItem(cfg, putKey(rnd.IntN(cfg.putKeys)), 0, rnd)})
			return err
		}
	case "Query":
		return func(ctx context.Context, c *dynamodb.Client, rnd *rand.Rand) error {
			from := rnd.IntN(cfg.perPartition - cfg.pageSize + 1)
			out, err := c.Query(ctx, &dynamodb.QueryInput{
				TableName:              table,
				KeyConditionExpression: aws.String("pk = :p AND sk >= :s"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":p": &types.AttributeValueMemberS{Value: queryKey(rnd.IntN(cfg.partitions))},
					":s": nAV(from),
				},
				Limit: aws.Int32(int32(cfg.pageSize)),
			})
			if err != nil {
				return err
			}
			if len(out.Items) != cfg.pageSize {
				//lint:ignore ST1005 the message starts with the name of the DynamoDB operation that failed
				return fmt.Errorf("Query: %d items, want %d", len(out.Items), cfg.pageSize)
			}
			return nil
		}
	}
	panic("unknown op " + op)
}

// measure runs op from cfg.concurrency clients: cfg.warmup unmeasured, then
// cfg.duration measured.
func measure(cfg *config, t target, op string) result {
	f := makeOp(cfg, op)
	type workerResult struct {
		lat      []time.Duration
		errors   int
		firstErr error
	}
	res := make([]workerResult, cfg.concurrency)
	var ready, done sync.WaitGroup
	startc := make(chan struct{})
	var measureStart, deadline time.Time
	for w := 0; w < cfg.concurrency; w++ {
		ready.Add(1)
		done.Add(1)
		go func(w int) {
			defer done.Done()
			c := newClient(t.url)
			rnd := rand.New(rand.NewPCG(uint64(w)+1, uint64(time.Now().UnixNano())))
			r := &res[w]
			r.lat = make([]time.Duration, 0, 1<<16)
			// Warm the connection and the SDK before the clock starts.
			warmEnd := time.Now().Add(cfg.warmup)
			for time.Now().Before(warmEnd) {
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				f(rctx, c, rnd)
				cancel()
			}
			ready.Done()
			<-startc
			// With -rate, worker w sends at fixed times, staggered among the
			// workers; a late request is timed from when it was due, so
			// that a slow server is not excused by sending it later.
			var interval time.Duration
			var due time.Time
			if cfg.rate > 0 {
				interval = time.Duration(float64(cfg.concurrency) / cfg.rate * float64(time.Second))
				due = measureStart.Add(interval * time.Duration(w) / time.Duration(cfg.concurrency))
			}
			for {
				t0 := time.Now()
				if interval > 0 {
					if wait := time.Until(due); wait > 0 {
						time.Sleep(wait)
					}
					t0 = due
					due = due.Add(interval)
				}
				if !t0.Before(deadline) {
					return
				}
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := f(rctx, c, rnd)
				cancel()
				d := time.Since(t0)
				if err != nil {
					r.errors++
					if r.firstErr == nil {
						r.firstErr = err
					}
					continue
				}
				r.lat = append(r.lat, d)
			}
		}(w)
	}
	ready.Wait()
	var cpu0 time.Duration
	if t.pid > 0 {
		cpu0 = report.ProcCPU(t.pid, false)
	}
	self0 := report.SelfCPU()
	measureStart = time.Now()
	deadline = measureStart.Add(cfg.duration)
	close(startc)
	done.Wait()
	elapsed := time.Since(measureStart)
	self1 := report.SelfCPU()

	var all []time.Duration
	r := result{op: op, target: t.name, elapsed: elapsed}
	if self0 > 0 && self1 > self0 {
		r.clientCPU = self1 - self0
	}
	if t.pid > 0 {
		r.serverCPU = report.ProcCPU(t.pid, false) - cpu0
	}
	for _, w := range res {
		all = append(all, w.lat...)
		r.errors += w.errors
		if w.firstErr != nil && r.firstErr == "" {
			r.firstErr = w.firstErr.Error()
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	r.ops = len(all)
	r.lat = all
	r.setPercentiles()
	return r
}

// percentile returns the nearest-rank percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// render returns the Markdown section of a run.
func render(cfg *config, results []result) string {
	var b strings.Builder
	now := time.Now().UTC()
	names := make([]string, len(cfg.targets))
	for i, t := range cfg.targets {
		names[i] = t.name
	}
	per := cfg.duration.String()
	if cfg.rounds > 1 {
		per = fmt.Sprintf("%d rounds × %s", cfg.rounds, cfg.duration)
	}
	if cfg.rate > 0 {
		per += fmt.Sprintf(", open loop at %.0f requests/s", cfg.rate)
	}
	fmt.Fprintf(&b, "## %s — %s, %d clients, %s per operation and target\n\n", now.Format("2006-01-02 15:04 UTC"), strings.Join(names, " vs "), cfg.concurrency, per)
	fmt.Fprintf(&b, "- Machine: %s\n", report.Machine())
	fmt.Fprintf(&b, "- Load average (1/5/15 min) before: %s, after: %s\n", cfg.loadBefore, cfg.loadAfter)
	fmt.Fprintf(&b, "- Command: `%s`\n", cfg.command)
	for _, t := range cfg.targets {
		where := t.url
		if cfg.embedded && t.name == "quarry" {
			where = "in-process server on " + t.url + " (-embedded: store and clients share one Go process)"
		}
		fmt.Fprintf(&b, "- Target %s: %s\n", t.name, where)
	}
	if cfg.note != "" {
		fmt.Fprintf(&b, "- Note: %s\n", cfg.note)
	}
	fmt.Fprintf(&b, "- Workload: table pk S / sk N, items ~%d bytes; GetItem over %d items; PutItem over %d keys; Query Limit %d from a random sk in one of %d partitions of %d items; one aws-sdk-go-v2 client per goroutine (HTTP keep-alive, retries off); %s warm-up before each measurement; each round measures every operation on every target in turn, the order rotating by round; latencies exact (all requests), nearest-rank percentiles.\n",
		cfg.itemBytes, cfg.getItems, cfg.putKeys, cfg.pageSize, cfg.partitions, cfg.perPartition, cfg.warmup)
	fmt.Fprintf(&b, "- CPU per request: server = user+system CPU time of the target's server process (-pids; /proc/PID/stat, 10 ms ticks) over the measurement / successful requests; client = the same for this bench process (getrusage: all %d clients, aws-sdk-go-v2 and HTTP).\n\n", cfg.concurrency)

	byKey := map[string]result{}
	for _, r := range results {
		byKey[r.op+"/"+r.target] = r
	}
	var notes []string
	if cfg.embedded {
		notes = append(notes, "-embedded: quarry's store runs inside the bench process, so quarry's client CPU per request is clients and store combined, and its server CPU per request is n/a.")
	}
	for _, op := range cfg.ops {
		fmt.Fprintf(&b, "### %s\n\n", op)
		fmt.Fprintf(&b, "| target | ops/s | p50 | p99 | max | server CPU per request | client CPU per request | requests | errors |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, n := range names {
			r := byKey[op+"/"+n]
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s | %d | %d |\n", n, r.opsPerSec(), fmtDur(r.p50), fmtDur(r.p99), fmtDur(r.max), cpuCell(r.cpuPerOp()), cpuCell(r.clientCPUPerOp()), r.ops, r.errors)
			if r.firstErr != "" {
				notes = append(notes, fmt.Sprintf("%s on %s: %d errors, first: %s", op, n, r.errors, oneLine(r.firstErr)))
			}
		}
		// A ratio row for every target against dynalite. The null server
		// does no work: its ratio is the highest any server could show
		// against dynalite on this machine.
		d, okd := byKey[op+"/dynalite"]
		for _, n := range names {
			if r, ok := byKey[op+"/"+n]; ok && okd && n != "dynalite" {
				b.WriteString(ratioRow(n+"/dynalite", r, d))
			}
		}
		// quarry against the second peer and against its own base build
		// (run.sh's BASE_REV), when the run has them.
		if q, ok := byKey[op+"/quarry"]; ok {
			for _, ref := range []string{"moto", "quarry-base"} {
				if r, ok := byKey[op+"/"+ref]; ok {
					b.WriteString(ratioRow("quarry/"+ref, q, r))
				}
			}
		}
		b.WriteString("\n")
		z, okz := byKey[op+"/null"]
		for _, n := range names {
			q, okq := byKey[op+"/"+n]
			if okq && okz && z.opsPerSec() > 0 && strings.HasPrefix(n, "quarry") {
				fmt.Fprintf(&b, "%s reaches %.0f %% of the null server's throughput (%.0f vs %.0f ops/s).\n\n", n, 100*q.opsPerSec()/z.opsPerSec(), q.opsPerSec(), z.opsPerSec())
			}
		}
	}
	// With a base build in the run, the targets are the store's CPU cuts
	// against it; without one, the first targets against dynalite.
	if line := baseTargets(cfg.ops, byKey); line != "" {
		b.WriteString(line)
	} else {
		b.WriteString(dynaliteTargets(cfg, byKey))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// dynaliteTargets states the first targets: ≥10× dynalite's throughput
// and GetItem p99 < 2 ms. The null server's ratio to dynalite is the
// ceiling of the first here.
func dynaliteTargets(cfg *config, byKey map[string]result) string {
	var goals []string
	belowTen := false
	for _, op := range cfg.ops {
		if cfg.rate > 0 {
			break // at a fixed rate every target serves the same throughput
		}
		q, okq := byKey[op+"/quarry"]
		d, okd := byKey[op+"/dynalite"]
		z, okz := byKey[op+"/null"]
		ceiling := ""
		if okz && okd && d.opsPerSec() > 0 {
			x := z.opsPerSec() / d.opsPerSec()
			ceiling = fmt.Sprintf("ceiling here: null server %.1f× dynalite", x)
			belowTen = belowTen || x < 10
		}
		switch {
		case okq && okd && d.opsPerSec() > 0:
			x := q.opsPerSec() / d.opsPerSec()
			status := metMissed(x >= 10 && q.errors == 0)
			if ceiling != "" {
				status += "; " + ceiling
			}
			goals = append(goals, fmt.Sprintf("%s %.1f× dynalite (%s)", op, x, status))
		case ceiling != "":
			goals = append(goals, fmt.Sprintf("%s %s", op, ceiling))
		}
	}
	for _, op := range cfg.ops {
		q, okq := byKey[op+"/quarry"]
		d, okd := byKey[op+"/dynalite"]
		if okq && okd && q.cpuPerOp() > 0 && d.cpuPerOp() > 0 {
			goals = append(goals, fmt.Sprintf("%s server CPU per request %s vs %s (%.1f× less)", op, fmtDur(q.cpuPerOp()), fmtDur(d.cpuPerOp()), float64(d.cpuPerOp())/float64(q.cpuPerOp())))
		}
	}
	if q, ok := byKey["GetItem/quarry"]; ok && q.ops > 0 {
		goals = append(goals, fmt.Sprintf("GetItem p99 %s (%s)", fmtDur(q.p99), metMissed(q.p99 < 2*time.Millisecond)))
	}
	var b strings.Builder
	if len(goals) > 0 && cfg.rate > 0 {
		fmt.Fprintf(&b, "Targets (GetItem p99 < 2 ms; open loop at %.0f requests/s, so throughput is not compared): %s.\n\n", cfg.rate, strings.Join(goals, "; "))
	} else if len(goals) > 0 {
		fmt.Fprintf(&b, "Targets (≥ 10× dynalite on each, GetItem p99 < 2 ms): %s.\n\n", strings.Join(goals, "; "))
	}
	if belowTen {
		b.WriteString("The null server answers with precomputed bytes and stores nothing, so its throughput is what the clients and HTTP allow on this machine: no server can show a higher ratio to dynalite here, and where that ceiling is below 10× the 10× target cannot be shown on this machine whatever the server.\n\n")
	}
	return b.String()
}

// baseCPUTargets are the highest server CPU per request quarry may use,
// as a fraction of its base build's (run.sh's BASE_REV) in the same run.
var baseCPUTargets = map[string]float64{"PutItem": 0.75, "GetItem": 0.85}

// baseTargets states, when the run has quarry and quarry-base, quarry's
// server CPU per request against the base build's for each operation,
// met or missed where baseCPUTargets has a target; otherwise "".
func baseTargets(ops []string, byKey map[string]result) string {
	var goals []string
	for _, op := range ops {
		q, okq := byKey[op+"/quarry"]
		r, okr := byKey[op+"/quarry-base"]
		if !okq || !okr || q.cpuPerOp() <= 0 || r.cpuPerOp() <= 0 {
			continue
		}
		x := float64(q.cpuPerOp()) / float64(r.cpuPerOp())
		g := fmt.Sprintf("%s %.2f× (%s vs %s", op, x, fmtDur(q.cpuPerOp()), fmtDur(r.cpuPerOp()))
		if max, ok := baseCPUTargets[op]; ok {
			g += fmt.Sprintf("; target ≤ %.2f×, %s", max, metMissed(x <= max && q.errors == 0))
		}
		goals = append(goals, g+")")
	}
	if len(goals) == 0 {
		return ""
	}
	return fmt.Sprintf("Targets (server CPU per request against quarry-base, the base build in this run: PutItem ≤ %.2f×, GetItem ≤ %.2f×): %s.\n\n",
		baseCPUTargets["PutItem"], baseCPUTargets["GetItem"], strings.Join(goals, "; "))
}

// cpuCell formats a CPU time per request for the table ("n/a": unknown).
func cpuCell(d time.Duration) string {
	if d <= 0 {
		return "n/a"
	}
	return fmtDur(d)
}

// ratioRow returns the table row of a's figures over b's: throughput, p50,
// p99, max, and server and client CPU per request where both are known.
func ratioRow(label string, a, b result) string {
	cpuRatio := func(x, y time.Duration) string {
		if x <= 0 || y <= 0 {
			return ""
		}
		return ratio(float64(x), float64(y))
	}
	return fmt.Sprintf("| **%s** | **%s** | %s | %s | %s | %s | %s | | |\n", label, ratio(a.opsPerSec(), b.opsPerSec()), ratio(float64(a.p50), float64(b.p50)), ratio(float64(a.p99), float64(b.p99)), ratio(float64(a.max), float64(b.max)), cpuRatio(a.cpuPerOp(), b.cpuPerOp()), cpuRatio(a.clientCPUPerOp(), b.clientCPUPerOp()))
}

func metMissed(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

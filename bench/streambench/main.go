// Command streambench measures two things of quarry's embedded store:
// the lag of a stream consumer (ddb/consumer) behind a steady write load —
// the time from a PutItem starting to its record reaching the handler — and
// TransactWriteItems throughput. The store is served on a loopback port and
// driven over HTTP with aws-sdk-go-v2; results are appended to a Markdown
// file with the machine and the command.
//
//	go run ./bench/streambench -rate 5000 -duration 10s -out bench/RESULTS.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/consumer"
)

type config struct {
	rate        int
	writers     int
	duration    time.Duration
	poll        time.Duration
	txClients   int
	txDuration  time.Duration
	out         string
	noSync      bool
	inProcess   bool
	commandLine string
}

func main() {
	var c config
	flag.IntVar(&c.rate, "rate", 5000, "target PutItem rate (writes/s) for the lag measurement")
	flag.IntVar(&c.writers, "writers", 16, "concurrent writers")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of the lag measurement")
	flag.DurationVar(&c.poll, "poll", 5*time.Millisecond, "consumer poll interval when the stream is idle")
	flag.IntVar(&c.txClients, "tx-clients", 16, "concurrent TransactWriteItems clients")
	flag.DurationVar(&c.txDuration, "tx-duration", 5*time.Second, "length of the transaction measurement")
	flag.StringVar(&c.out, "out", "", "Markdown file to append results to (default: stdout only)")
	flag.BoolVar(&c.noSync, "nosync", false, "open the store without fsync (default: fsync every commit)")
	flag.BoolVar(&c.inProcess, "inprocess", false, "clients call the store in-process (ddb.NewClient, no socket) instead of over loopback HTTP")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (store, clients, consumer) to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	c.commandLine = "go run ./bench/streambench " + strings.Join(os.Args[1:], " ")
	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "streambench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// newClients returns the client constructors of a run: over loopback HTTP,
// or in-process.
func newClients(c *config, store *ddb.Store, endpoint string) (func() *dynamodb.Client, *dynamodbstreams.Client) {
	if c.inProcess {
		return func() *dynamodb.Client { return ddb.NewClient(store) }, ddb.NewStreamsClient(store)
	}
	return func() *dynamodb.Client { return client(endpoint) }, dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("bench", "bench", ""), Retryer: aws.NopRetryer{}})
}

func client(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("bench", "bench", ""), Retryer: aws.NopRetryer{},
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}})
}

func run(c *config) error {
	dir, err := os.MkdirTemp("", "streambench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := ddb.Open(dir, &ddb.Options{NoSync: c.noSync})
	if err != nil {
		return err
	}
	defer store.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: store.Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	endpoint := "http://" + ln.Addr().String()
	before := report.LoadAvg()

	newClient, streams := newClients(c, store, endpoint)
	lag, err := measureLag(c, newClient, streams)
	if err != nil {
		return err
	}
	tx, err := measureTx(c, newClient)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — stream consumer lag and transactions (streambench)\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n- Load average before: %s, after: %s\n- Command: `%s`\n", report.Machine(), before, report.LoadAvg(), c.commandLine)
	transport := "over loopback HTTP"
	if c.inProcess {
		transport = "in-process (ddb.NewClient: the SDK's full request path, no socket)"
	}
	fmt.Fprintf(&b, "- Store: embedded, clients %s, fsync on every commit: %v; clients: aws-sdk-go-v2 (%d writers, retries off); consumer: ddb/consumer with poll interval %s when idle, in-memory checkpoints\n\n", transport, !c.noSync, c.writers, c.poll)
	fmt.Fprintf(&b, "### Stream consumer lag (PutItem start → record in the handler)\n\n")
	fmt.Fprintf(&b, "| target rate | achieved writes/s | records delivered | p50 | p99 | max | missing |\n|--:|--:|--:|--:|--:|--:|--:|\n")
	fmt.Fprintf(&b, "| %d/s | %.0f | %d | %s | %s | %s | %d |\n\n", c.rate, lag.achieved, lag.delivered, fmtDur(lag.p50), fmtDur(lag.p99), fmtDur(lag.max), lag.missing)
	verdict := "met"
	if lag.p99 >= 50*time.Millisecond || lag.achieved < 0.95*float64(c.rate) {
		verdict = "missed"
	}
	fmt.Fprintf(&b, "Target: p99 lag under 50 ms at %d writes/s — %s.\n\n", c.rate, verdict)
	fmt.Fprintf(&b, "### TransactWriteItems (2 Puts + 1 ConditionCheck per transaction, %d clients)\n\n", c.txClients)
	fmt.Fprintf(&b, "| case | tx/s | p50 | p99 | cancelled |\n|---|--:|--:|--:|--:|\n")
	for _, r := range tx {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %d |\n", r.name, r.perSec, fmtDur(r.p50), fmtDur(r.p99), r.cancelled)
	}
	fmt.Print(b.String())
	if c.out != "" {
		if err := report.Append(c.out, b.String()); err != nil {
			return err
		}
	}
	return nil
}

type lagResult struct {
	achieved      float64
	delivered     int
	missing       int
	p50, p99, max time.Duration
}

func measureLag(c *config, newClient func() *dynamodb.Client, sc *dynamodbstreams.Client) (*lagResult, error) {
	ctx := context.Background()
	admin := newClient()
	_, err := admin.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("lagbench"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}})
	if err != nil {
		return nil, err
	}
	d, err := admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("lagbench")})
	if err != nil {
		return nil, err
	}

	var mu sync.Mutex
	var lags []time.Duration
	seen := map[string]bool{}
	handler := func(_ context.Context, recs []streamtypes.Record) error {
		now := time.Now().UnixNano()
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			ts, _ := strconv.ParseInt(r.Dynamodb.NewImage["ts"].(*streamtypes.AttributeValueMemberN).Value, 10, 64)
			key := r.Dynamodb.Keys["pk"].(*streamtypes.AttributeValueMemberS).Value
			if !seen[key] {
				seen[key] = true
				lags = append(lags, time.Duration(now-ts))
			}
		}
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	cons := consumer.New(sc, *d.Table.LatestStreamArn, consumer.NewMemoryCheckpointer(), handler,
		consumer.Options{StartPosition: streamtypes.ShardIteratorTypeTrimHorizon, PollInterval: c.poll, RetryBackoff: 10 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- cons.Run(cctx) }()

	var written atomic.Int64
	perWriter := time.Duration(float64(time.Second) * float64(c.writers) / float64(c.rate))
	start := time.Now()
	deadline := start.Add(c.duration)
	var wg sync.WaitGroup
	var werr atomic.Value
	for w := 0; w < c.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient()
			next := start.Add(time.Duration(rand.Int63n(int64(perWriter))))
			for i := 0; ; i++ {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				if time.Now().After(deadline) {
					return
				}
				next = next.Add(perWriter)
				ts := time.Now().UnixNano()
				_, err := cl.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("lagbench"), Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("w%d-%d", w, i)},
					"ts": &types.AttributeValueMemberN{Value: strconv.FormatInt(ts, 10)},
				}})
				if err != nil {
					werr.Store(err)
					return
				}
				written.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if e, ok := werr.Load().(error); ok {
		cancel()
		return nil, e
	}
	// Wait for the consumer to catch up (bounded).
	catchUp := time.Now().Add(10 * time.Second)
	for time.Now().Before(catchUp) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if int64(n) >= written.Load() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	r := &lagResult{achieved: float64(written.Load()) / elapsed.Seconds(), delivered: len(lags), missing: int(written.Load()) - len(seen)}
	r.p50 = report.Percentile(lags, 50)
	r.p99 = report.Percentile(lags, 99)
	r.max = report.Percentile(lags, 100)
	return r, nil
}

type txResult struct {
	name      string
	perSec    float64
	p50, p99  time.Duration
	cancelled int64
}

// measureTx runs TransactWriteItems with two Puts and a ConditionCheck:
// once over spread keys, once with every transaction touching one hot item.
func measureTx(c *config, newClient func() *dynamodb.Client) ([]txResult, error) {
	ctx := context.Background()
	admin := newClient()
	_, err := admin.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("txbench"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest})
	if err != nil {
		return nil, err
	}
	_, err = admin.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("txbench"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "guard"}, "open": &types.AttributeValueMemberBOOL{Value: true}}})
	if err != nil {
		return nil, err
	}
	var out []txResult
	for _, hot := range []bool{false, true} {
		name := "spread keys"
		if hot {
			name = "one hot item in every transaction"
		}
		var mu sync.Mutex
		var lat []time.Duration
		var cancelled atomic.Int64
		deadline := time.Now().Add(c.txDuration)
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < c.txClients; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := newClient()
				rnd := rand.New(rand.NewSource(int64(g)))
				var mine []time.Duration
				for time.Now().Before(deadline) {
					a := fmt.Sprintf("a%d", rnd.Intn(1_000_000))
					b := fmt.Sprintf("b%d", rnd.Intn(1_000_000))
					if hot {
						b = "hot"
					}
					t0 := time.Now()
					_, err := cl.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
						{Put: &types.Put{TableName: aws.String("txbench"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: a}, "v": &types.AttributeValueMemberN{Value: "1"}}}},
						{Put: &types.Put{TableName: aws.String("txbench"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: b}, "v": &types.AttributeValueMemberN{Value: "2"}}}},
						{ConditionCheck: &types.ConditionCheck{TableName: aws.String("txbench"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "guard"}},
							ConditionExpression: aws.String("attribute_exists(pk)")}},
					}})
					if err != nil {
						var tce *types.TransactionCanceledException
						if errors.As(err, &tce) {
							cancelled.Add(1)
							continue
						}
						var tc *types.TransactionConflictException
						if errors.As(err, &tc) {
							cancelled.Add(1)
							continue
						}
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		el := time.Since(start)
		out = append(out, txResult{name: name, perSec: float64(len(lat)) / el.Seconds(), p50: report.Percentile(lat, 50), p99: report.Percentile(lat, 99), cancelled: cancelled.Load()})
	}
	return out, nil
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
}

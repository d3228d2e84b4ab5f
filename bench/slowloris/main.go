// Command slowloris measures what stalled clients cost `quarry ddb serve`.
// It starts its own server on a loopback port with a fresh data directory,
// puts one item, and measures the server's resident memory (VmRSS of
// /proc/<pid>/status) and the GetItem latency of one well-behaved
// aws-sdk-go-v2 client, first idle and then while -clients connections
// (no credentials) each send the headers of a PutItem announcing a
// -announce byte body (Content-Length) and then stall without sending it.
//
// The figures are printed and, with -out, appended to a Markdown file with
// the machine, the command and the date.
//
//	go run ./bench/slowloris -out bench/RESULTS.md
//	go run ./bench/slowloris -quarry /tmp/quarry-base -label "before" -out bench/RESULTS.md
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/bench/internal/report"
)

type config struct {
	quarry   string
	label    string
	clients  int
	announce int64
	hold     time.Duration
	out      string
	args     string
}

func main() {
	var c config
	flag.StringVar(&c.quarry, "quarry", "", "quarry binary (default: go build ./cmd/quarry into a temp dir; run from the repository root)")
	flag.StringVar(&c.label, "label", "", "what the binary is, for the report (default: this tree's commit)")
	flag.IntVar(&c.clients, "clients", 100, "stalled connections")
	flag.Int64Var(&c.announce, "announce", 16<<20, "Content-Length each stalled request announces")
	flag.DurationVar(&c.hold, "hold", 8*time.Second, "how long the stalled connections are held open")
	flag.StringVar(&c.out, "out", "", "Markdown file to append results to (default: stdout only)")
	flag.StringVar(&c.args, "args", "", "further flags for quarry ddb serve, space-separated")
	flag.Parse()
	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "slowloris:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// phase is what one phase (idle or stalled) measured.
type phase struct {
	rss, maxRSS int64 // kB: at the end, and the largest sample
	lat         []time.Duration
	errs        int
	firstErr    error
}

func run(c *config) error {
	bin := c.quarry
	version := c.label
	if bin == "" {
		dir, err := os.MkdirTemp("", "slowloris-bin")
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
		if version == "" {
			version = "built from this tree"
			if out, err := exec.Command("git", "describe", "--always", "--dirty=+uncommitted changes").Output(); err == nil {
				version += ", commit " + strings.TrimSpace(string(out))
			}
		}
	}
	if version == "" {
		version = "given binary " + bin
	}

	data, err := os.MkdirTemp("", "slowloris-data")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	args := []string{"ddb", "serve", "--listen", addr, "--data-dir", data, "--log-level", "warn"}
	if c.args != "" {
		args = append(args, strings.Fields(c.args)...)
	}
	srv := exec.Command(bin, args...)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start quarry: %w", err)
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			srv.Process.Kill()
			<-done
		}
	}()
	if err := waitHealthy(addr); err != nil {
		return err
	}

	ctx := context.Background()
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + addr),
		Credentials:  credentials.NewStaticCredentialsProvider("bench", "bench", ""),
	})
	if err := setup(ctx, client); err != nil {
		return err
	}
	pid := srv.Process.Pid

	logf("idle: %v of GetItem", c.hold)
	idle := measure(ctx, client, pid, c.hold)

	logf("stalled: %d connections announcing %d bytes, held %v", c.clients, c.announce, c.hold)
	conns, refused := stall(addr, c.clients, c.announce)
	stalled := measure(ctx, client, pid, c.hold)
	open := stillOpen(conns)
	for _, conn := range conns {
		conn.Close()
	}

	md := markdown(c, version, args, idle, stalled, len(conns), refused, open)
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitHealthy(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("quarry ddb serve did not answer within 30s")
}

func setup(ctx context.Context, client *dynamodb.Client) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("bench"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("bench"),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}, "v": &types.AttributeValueMemberS{Value: strings.Repeat("x", 100)}},
	})
	if err != nil {
		return fmt.Errorf("put item: %w", err)
	}
	return nil
}

// measure runs GetItem back to back for d, sampling the server's RSS every
// 100 ms.
func measure(ctx context.Context, client *dynamodb.Client, pid int, d time.Duration) phase {
	var p phase
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if kb, err := vmRSS(pid); err == nil && kb > p.maxRSS {
				p.maxRSS = kb
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	end := time.Now().Add(d)
	in := &dynamodb.GetItemInput{TableName: aws.String("bench"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}
	for time.Now().Before(end) {
		t0 := time.Now()
		_, err := client.GetItem(ctx, in)
		if err != nil {
			p.errs++
			if p.firstErr == nil {
				p.firstErr = err
			}
			continue
		}
		p.lat = append(p.lat, time.Since(t0))
	}
	close(stop)
	<-sampled
	p.rss, _ = vmRSS(pid)
	p.maxRSS = max(p.maxRSS, p.rss)
	return p
}

// stall opens n connections that each send a PutItem's headers announcing
// size bytes of body, and nothing more.
func stall(addr string, n int, size int64) (conns []net.Conn, refused int) {
	head := "POST / HTTP/1.1\r\nHost: " + addr + "\r\n" +
		"X-Amz-Target: DynamoDB_20120810.PutItem\r\n" +
		"Content-Type: application/x-amz-json-1.0\r\n" +
		"Content-Length: " + strconv.FormatInt(size, 10) + "\r\n\r\n"
	for range n {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			refused++
			continue
		}
		if _, err := conn.Write([]byte(head)); err != nil {
			conn.Close()
			refused++
			continue
		}
		conns = append(conns, conn)
	}
	return conns, refused
}

// stillOpen counts the connections the server has not closed (a read that
// times out at once means the connection is still open).
func stillOpen(conns []net.Conn) int {
	open := 0
	var b [1]byte
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		_, err := c.Read(b[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			open++
		}
	}
	return open
}

// vmRSS reads VmRSS (kB) of pid.
func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

func markdown(c *config, version string, args []string, idle, stalled phase, conns, refused, open int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s — slowloris: `quarry ddb serve` with %d stalled clients announcing %d-byte bodies\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), c.clients, c.announce)
	fmt.Fprintf(&b, "Machine: %s; load average %s.\n\n", report.Machine(), report.LoadAvg())
	fmt.Fprintf(&b, "Binary: %s. Server: `quarry %s`. Command: `go run ./bench/slowloris %s`.\n\n",
		version, strings.Join(args, " "), strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "Each stalled client sends a PutItem's headers (no signature, Content-Length %d) and then nothing; they are held for %v while one well-behaved client runs GetItem back to back.\n\n", c.announce, c.hold)
	b.WriteString("| phase | VmRSS at end | max VmRSS | GetItem p50 | p99 | max | requests | errors |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, p phase) {
		p50, p99, max := report.Percentile(p.lat, 50), report.Percentile(p.lat, 99), report.Percentile(p.lat, 100)
		fmt.Fprintf(&b, "| %s | %s | %s | %v | %v | %v | %d | %d |\n", name, mib(p.rss), mib(p.maxRSS),
			p50.Round(time.Microsecond), p99.Round(time.Microsecond), max.Round(time.Microsecond), len(p.lat), p.errs)
	}
	row("idle", idle)
	row(fmt.Sprintf("%d stalled", c.clients), stalled)
	ratio := float64(stalled.maxRSS) / float64(max(idle.maxRSS, 1))
	verdict := "met"
	if ratio >= 2 {
		verdict = "missed"
	}
	fmt.Fprintf(&b, "\nMax RSS while stalled / idle: %.2f× (target < 2×: %s). Stalled connections opened: %d (refused %d); still open at the end of the hold: %d.\n", ratio, verdict, conns, refused, open)
	if stalled.firstErr != nil {
		fmt.Fprintf(&b, "\nFirst GetItem error while stalled: %v\n", stalled.firstErr)
	}
	return b.String()
}

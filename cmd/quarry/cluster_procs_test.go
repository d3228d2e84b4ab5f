package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"

	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	datashelfstore "github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/testenv"
)

// The cluster tests on processes: three real `quarry serve` processes
// (quarryBinary) on one shared `quarry ddb serve --credentials`, so that a
// node can be killed with SIGKILL.

// startProcNode runs `quarry serve` as a child process on the shared
// store, with its own data directory, and waits until /healthz answers
// 200.
func startProcNode(t *testing.T, d *ddbProc, name string, extra ...string) *quarryProc {
	t.Helper()
	args := append([]string{"--dynamodb-endpoint", "http://" + d.addr, "--node-id", name,
		"--wallcrawler-secret", clusterWCKey, "--ddb-sync=false"}, extra...)
	return startQuarry(t, quarryBinary(t), t.TempDir(), freeAddr(t), "off", name+".log", args...)
}

// startProcNodes starts n nodes at once (each start costs seconds on a
// loaded machine) named node-a, node-b, ….
func startProcNodes(t *testing.T, d *ddbProc, n int, extra ...string) []*quarryProc {
	t.Helper()
	nodes := make([]*quarryProc, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// startQuarry calls t.Fatalf, which must run on the test's
			// goroutine: start in order when it fails.
			nodes[i] = startProcNodeAsync(t, d, fmt.Sprintf("node-%c", 'a'+i), extra...)
		}()
	}
	wg.Wait()
	for i, q := range nodes {
		if q == nil {
			nodes[i] = startProcNode(t, d, fmt.Sprintf("node-%c", 'a'+i), extra...)
		}
	}
	return nodes
}

// startProcNodeAsync is startProcNode for another goroutine: it returns
// nil instead of failing the test.
func startProcNodeAsync(t *testing.T, d *ddbProc, name string, extra ...string) *quarryProc {
	logPath := t.TempDir() + "/" + name + ".log"
	api := freeAddr(t)
	args := append([]string{"serve", "--data-dir", t.TempDir(), "--listen", api, "--ddb-listen", "off",
		"--dynamodb-endpoint", "http://" + d.addr, "--node-id", name, "--wallcrawler-secret", clusterWCKey, "--ddb-sync=false"}, extra...)
	q, err := spawnQuarry(quarryBinary(t), logPath, api, args...)
	if err != nil {
		return nil
	}
	t.Cleanup(func() {
		if !q.exited() {
			_ = q.cmd.Process.Kill()
			<-q.done
		}
		if t.Failed() {
			logs := q.logs()
			if len(logs) > 20000 {
				logs = "…" + logs[len(logs)-20000:]
			}
			t.Logf("%s logs:\n%s", name, logs)
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !q.exited(); time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get("http://" + api + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return q
			}
		}
	}
	_ = q.cmd.Process.Kill()
	<-q.done
	return nil
}

// spawnQuarry starts quarry with args, logging to logPath.
func spawnQuarry(bin, logPath, api string, args ...string) (*quarryProc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := quarryCommand(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	q := &quarryProc{cmd: cmd, api: api, logPath: logPath, done: make(chan struct{})}
	go func() {
		q.waitErr = cmd.Wait()
		close(q.done)
	}()
	return q, nil
}

// kill ends a node with SIGKILL and waits for it.
func kill(t *testing.T, q *quarryProc) time.Time {
	t.Helper()
	if err := q.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-q.done
	return time.Now()
}

// apiCall sends a JSON request with an Authorization header and returns
// the status and body.
func apiCall(t *testing.T, method, url, auth string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// runLog records, per target, when it was requested.
type runLog struct {
	mu   sync.Mutex
	runs map[int][]time.Time
	down []atomic.Bool
	// The last slow targets answer after delay.
	slow  int
	delay time.Duration
}

func (l *runLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/t/"))
	if err != nil || i < 0 || i >= len(l.down) {
		http.NotFound(w, r)
		return
	}
	l.mu.Lock()
	l.runs[i] = append(l.runs[i], time.Now())
	l.mu.Unlock()
	if i >= len(l.down)-l.slow {
		// A slow target: a node killed now leaves its run leased.
		select {
		case <-time.After(l.delay):
		case <-r.Context().Done():
		}
	}
	if l.down[i].Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "up")
}

// snapshot returns a copy of the runs.
func (l *runLog) snapshot() map[int][]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int][]time.Time, len(l.runs))
	for i, ts := range l.runs {
		out[i] = append([]time.Time(nil), ts...)
	}
	return out
}

// alertLog records the alerts a webhook receives, per check, as a
// receiver de-duplicating by alert id does: alerts are delivered at least
// once, and a redelivery (a node killed after sending, before marking the
// alert sent) carries the id of the first delivery.
type alertLog struct {
	mu     sync.Mutex
	events map[string][]string
	seen   map[string]bool
	// redelivered counts the deliveries of an id already seen.
	redelivered int
}

func (l *alertLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var a struct{ ID, CheckID, Event string }
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil || a.CheckID == "" || a.ID == "" {
		http.Error(w, "bad alert", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	if l.seen[a.ID] {
		l.redelivered++
	} else {
		l.seen[a.ID] = true
		l.events[a.CheckID] = append(l.events[a.CheckID], a.Event)
	}
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (l *alertLog) of(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events[id]...)
}

// TestClusterProcsChecks runs 200 checks at a 6 s period on three `quarry
// serve --systems checks` processes sharing one DynamoDB endpoint, against
// one loopback target that records each check's requests and a webhook
// receiver that records each check's alerts (the last 30 targets answer
// slowly, so that the killed node is likely to hold some runs' leases).
// It shows that each check
// runs once per period cluster-wide (never twice in one period, never
// skipped); that a state change alerts exactly once cluster-wide; and
// that after one node is SIGKILLed the survivors run all its checks: a
// check the dead node was running stays leased until its lease, no
// longer renewed, runs out (scheduler.DefaultRunLease); the test allows
// two periods and the lease. Only the checks node-c held when it died (runs in flight or
// claimed ahead of their due time) may lack that one period.
func TestClusterProcsChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three quarry processes; skipped in -short mode")
	}
	// Not parallel: 200 checks at a 6 s period through a race-detector
	// build fall behind their schedule when the package's other tests
	// share the 2 cores with them (the store then misses its 2 s health
	// probes and the nodes pause).
	const (
		checks     = 200
		period     = 6 * time.Second
		runTimeout = 2 * time.Second
		flipped    = 30 // targets that go down, then up again
		// wait bounds each wait for what must happen. The runs are counted,
		// not timed: on a loaded machine 200 checks at a 6 s period with
		// the race detector fall behind (runs outlast their lease), and a
		// period of runs can take much longer than 6 s.
		wait = 2 * time.Minute
	)
	lease := scheduler.DefaultRunLease
	targets := &runLog{runs: map[int][]time.Time{}, down: make([]atomic.Bool, checks), slow: 30, delay: runTimeout * 3 / 4}
	site := httptest.NewServer(targets)
	defer site.Close()
	alerts := &alertLog{events: map[string][]string{}, seen: map[string]bool{}}
	hook := httptest.NewServer(alerts)
	defer hook.Close()

	d := startSharedDDB(t, "", "")
	flags := []string{"--systems", "checks", "--checks-min-interval", "1s", "--checks-run-timeout", runTimeout.String(),
		"--checks-pro-limit", "1000", "--checks-retention", "0",
		"--allow-networks", site.Listener.Addr().String() + "," + hook.Listener.Addr().String()}
	start := time.Now()
	nodes := startProcNodes(t, d, 3, flags...)
	t.Logf("3 nodes healthy after %s", time.Since(start).Round(time.Millisecond))
	token := clusterCLI(t, d, "checks", "user", "create", "--email", "ops@example.com", "--tier", "PRO", "--checks-pro-limit", "1000")
	auth := "Bearer " + token
	if code, body := apiCall(t, http.MethodPut, "http://"+nodes[1].api+"/checks/v1/me/alerts", auth, map[string]any{"webhookUrl": hook.URL + "/alerts"}); code != http.StatusOK {
		t.Fatalf("set the webhook: %d %s", code, body)
	}

	// The checks, created through the three nodes in turn.
	ids := make([]string, checks)
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 8)
	for i := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			code, body := apiCall(t, http.MethodPost, "http://"+nodes[i%3].api+"/checks/v1/checks", auth,
				map[string]any{"url": fmt.Sprintf("%s/t/%d", site.URL, i), "checkType": "AVAILABILITY", "delayMs": period.Milliseconds()})
			var c struct{ ID string }
			if code != http.StatusCreated || json.Unmarshal(body, &c) != nil || c.ID == "" {
				failed.Store(fmt.Sprintf("create check %d: %d %s", i, code, body))
				return
			}
			ids[i] = c.ID
		}()
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}
	t.Logf("%d checks created after %s", checks, time.Since(start).Round(time.Millisecond))

	// Every check runs, on whichever node claims it.
	runsAtLeast := func(n int, after time.Time) func() bool {
		return func() bool {
			snap := targets.snapshot()
			for i := range checks {
				k := 0
				for _, at := range snap[i] {
					if at.After(after) {
						k++
					}
				}
				if k < n {
					return false
				}
			}
			return true
		}
	}
	waitForLong(t, wait, "every check to run", runsAtLeast(1, start))

	// A state change alerts once: some targets go down.
	for i := range flipped {
		targets.down[i].Store(true)
	}
	waitForLong(t, wait, "a down alert for each target that went down", func() bool {
		for i := range flipped {
			if len(alerts.of(ids[i])) == 0 {
				return false
			}
		}
		return true
	})

	// One node dies. Its runs in flight and those it had claimed ahead
	// keep their checks' leases until they expire; every other check is
	// run by the survivors at its next due time. The leases node-c holds
	// when it dies are those runs: claimed (the check's nextRunAt moved on
	// by a period) and not completed, the only runs whose period may be
	// lacking. The survivors are stopped (SIGSTOP) while they are read, so
	// that neither takes over one of them (once expired) first, however
	// slow the machine.
	beforeKill := targets.snapshot()
	for _, q := range nodes[:2] {
		if err := q.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	killedAt := kill(t, nodes[2])
	heldByC := leasedBy(t, d, "node-c-")
	for _, q := range nodes[:2] {
		if err := q.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("node-c SIGKILLed after %s, holding the leases of %d checks", killedAt.Sub(start).Round(time.Millisecond), len(heldByC))
	after := killedAt.Add(100 * time.Millisecond) // a request sent by node-c just before may still arrive
	waitForLong(t, wait, "the survivors to run every check", runsAtLeast(1, after))
	// And alert for it: the targets come up again.
	for i := range flipped {
		targets.down[i].Store(false)
	}
	waitForLong(t, wait, "an up alert for each target that came back", func() bool {
		for i := range flipped {
			if ev := alerts.of(ids[i]); len(ev) < 2 {
				return false
			}
		}
		return true
	})
	// One more period, for any duplicate run or alert to show; then the
	// survivors stop (SIGTERM: runs in flight finish), so that the
	// schedule stands still while it is compared with the runs.
	settle := time.Now()
	waitForLong(t, wait, "one more run of every check", runsAtLeast(1, settle))
	for _, q := range nodes[:2] {
		if err := q.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range nodes[:2] {
		select {
		case <-q.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("a node did not stop within 60 s of SIGTERM:\n%s", q.logs())
		}
	}
	final := targets.snapshot()

	// Each period ran once. A claim moves the check's nextRunAt on by one
	// period, so the periods a check had are the due times nextRunAt −
	// k·period (k ≥ 1) from the first run's on: the one at or before its
	// first request and less than a period before it. A check ran once per
	// period when its requests are as many as those due times: one more is
	// a period run twice, one fewer a period skipped. Lateness does not
	// matter, however loaded the machine. A run node-c had claimed (ahead of
	// its due time, or in flight) but not yet sent when it died is the one period a check may lack: only a
	// check whose lease it held then. So may a run a survivor had claimed
	// when it was stopped and not yet sent (its context ended first): the
	// check's last period, so that its nextRunAt lies more than a period
	// after its last run (a run is never early, so on time or late it
	// leaves at most one).
	next := storedNextRuns(t, d, ids)
	short, atStop := 0, 0
	for i := range checks {
		runs := final[i]
		n, ok := next[ids[i]]
		if !ok || len(runs) == 0 {
			t.Errorf("check %d: no nextRunAt stored (%v) or no run", i, ok)
			continue
		}
		due := int((n.Sub(runs[0]) + period - 1) / period) // periods from the first run's due time to nextRunAt
		switch got := len(runs); {
		case got > due:
			t.Errorf("check %d ran %d times for %d periods (a period run twice): runs at %s", i, got, due, offsets(runs, start))
		case got == due-1 && n.Sub(runs[len(runs)-1]) > period*3/2:
			atStop++
		case got == due-1:
			if !heldByC[ids[i]] {
				t.Errorf("check %d ran %d times for %d periods, and node-c held no lease on it when it died: runs at %s, next due %s", i, got, due, offsets(runs, start), n.Sub(start).Round(time.Millisecond))
			}
			short++
		case got < due:
			t.Errorf("check %d ran %d times for %d periods: runs at %s", i, got, due, offsets(runs, start))
		}
	}
	t.Logf("%d checks lack the period node-c had claimed when it died (it held %d leases), %d the one a survivor had claimed when it stopped", short, len(heldByC), atStop)

	// Across the kill: how much later than its period each check ran.
	var takeover []time.Duration
	overLease := 0
	for i := range checks {
		runs := final[i]
		for k := 1; k < len(runs); k++ {
			if gap := runs[k].Sub(runs[k-1]); !runs[k-1].After(killedAt) && runs[k].After(killedAt) {
				takeover = append(takeover, gap-period)
				if gap > 2*period+lease {
					overLease++
				}
			}
		}
	}
	if overLease > 0 {
		t.Errorf("%d checks waited longer than two periods and the lease (%s) after the kill", overLease, lease)
	}
	sort.Slice(takeover, func(i, j int) bool { return takeover[i] < takeover[j] })
	if len(takeover) > 0 {
		onTime := sort.Search(len(takeover), func(i int) bool { return takeover[i] > time.Second })
		t.Logf("across the kill: %d of %d checks ran within a second of their period (%s); the latest %s late (lease %s)",
			onTime, len(takeover), period, takeover[len(takeover)-1].Round(time.Millisecond), lease)
	}
	n := 0
	for i := range checks {
		n += len(final[i]) - len(beforeKill[i])
	}
	t.Logf("%d runs in total, %d after the kill", func() int {
		total := 0
		for _, r := range final {
			total += len(r)
		}
		return total
	}(), n)

	// Each state change alerted once (by alert id): down then up for the
	// flipped targets, nothing for the others.
	alerts.mu.Lock()
	t.Logf("%d alert deliveries repeated an id already delivered", alerts.redelivered)
	alerts.mu.Unlock()
	for i, id := range ids {
		got := strings.Join(alerts.of(id), ",")
		want := ""
		if i < flipped {
			want = "down,up"
		}
		if got != want {
			t.Errorf("check %d (%s): alerts %q, want %q", i, id, got, want)
		}
	}
	// And the store agrees: no check holds a lease of the dead node for
	// longer than the lease.
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + d.addr),
		Credentials: credentials.NewStaticCredentialsProvider(clusterKeyID, clusterSecret, "")})
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("checks-CHECK"),
		FilterExpression:          aws.String("begins_with(leaseOwner, :c)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "node-c-"}}})
	if err != nil {
		t.Logf("scan of the leases: %v", err)
	} else if len(out.Items) > 0 {
		t.Errorf("%d checks still leased by the dead node-c after %s", len(out.Items), time.Since(killedAt).Round(time.Millisecond))
	}
}

// storedNextRuns reads each check's nextRunAt from the shared store.
func storedNextRuns(t *testing.T, d *ddbProc, ids []string) map[string]time.Time {
	t.Helper()
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + d.addr),
		Credentials: credentials.NewStaticCredentialsProvider(clusterKeyID, clusterSecret, "")})
	out := map[string]time.Time{}
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String("checks-CHECK"),
		FilterExpression:          aws.String("attribute_exists(nextRunAt) AND SK = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "CHECK"}}})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			id, _ := it["PK"].(*types.AttributeValueMemberS)
			n, _ := it["nextRunAt"].(*types.AttributeValueMemberN)
			if id == nil || n == nil {
				continue
			}
			ms, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				t.Fatalf("nextRunAt %q of %s", n.Value, id.Value)
			}
			out[id.Value] = time.UnixMilli(ms)
		}
	}
	if len(out) < len(ids) {
		t.Fatalf("%d checks in the store, want %d", len(out), len(ids))
	}
	return out
}

// leasedBy returns the checks (by id) whose lease is held by an owner
// whose name begins with prefix.
func leasedBy(t *testing.T, d *ddbProc, prefix string) map[string]bool {
	t.Helper()
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + d.addr),
		Credentials: credentials.NewStaticCredentialsProvider(clusterKeyID, clusterSecret, "")})
	held := map[string]bool{}
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String("checks-CHECK"),
		FilterExpression:          aws.String("SK = :c AND begins_with(leaseOwner, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "CHECK"}, ":p": &types.AttributeValueMemberS{Value: prefix}}})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if id, ok := it["PK"].(*types.AttributeValueMemberS); ok {
				held[id.Value] = true
			}
		}
	}
	return held
}

// offsets formats times as offsets from start.
func offsets(ts []time.Time, start time.Time) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Sub(start).Round(time.Millisecond).String()
	}
	return strings.Join(parts, " ")
}

// notifyLog records the webhook notifications a receiver gets.
type notifyLog struct {
	mu     sync.Mutex
	byPart map[string]int // part_available deliveries per part
	ids    map[string]int // deliveries per notification id
}

func (l *notifyLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var n struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		http.Error(w, "bad notification", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.ids[r.Header.Get("X-EECAR-Notification-Id")]++
	if n.Type == "part_available" {
		part, _ := n.Data["partId"].(string)
		l.byPart[part]++
	}
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (l *notifyLog) parts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.byPart))
	for k, v := range l.byPart {
		out[k] = v
	}
	return out
}

// TestClusterProcsEECAR runs EECAR on three `quarry serve --systems eecar`
// processes sharing one DynamoDB endpoint. A part registered on one node
// is found by search on the two others (each keeps its own index, fed by
// the table's stream); a watch that matches new parts, registered on
// different nodes, notifies its buyer once per part cluster-wide (one
// webhook delivery, one notification), although every node evaluates the
// watch; and accepts of one proposal sent at once to the three nodes leave
// exactly one winner, the others answered 409 with a JSON error.
func TestClusterProcsEECAR(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three quarry processes; skipped in -short mode")
	}
	t.Parallel()
	notes := &notifyLog{byPart: map[string]int{}, ids: map[string]int{}}
	hook := httptest.NewServer(notes)
	defer hook.Close()
	d := startSharedDDB(t, "", "")
	nodes := startProcNodes(t, d, 3, "--systems", "eecar", "--allow-networks", hook.Listener.Addr().String())
	url := func(i int, path string) string { return "http://" + nodes[i].api + "/eecar" + path }

	sellerKey := clusterCLI(t, d, "eecar", "company", "create", "--name", "Seller Cluster")
	buyerKey := clusterCLI(t, d, "eecar", "company", "create", "--name", "Buyer Cluster")
	seller, buyer := "Bearer "+sellerKey, "Bearer "+buyerKey
	var me struct {
		ID string `json:"companyId"`
	}
	code, body := apiCall(t, http.MethodGet, url(0, "/me"), buyer, nil)
	if code != http.StatusOK || json.Unmarshal(body, &me) != nil || me.ID == "" {
		t.Fatalf("GET /me: %d %s", code, body)
	}
	buyerID := me.ID
	if code, body := apiCall(t, http.MethodPut, url(0, "/me/webhook"), buyer, map[string]any{"webhookUrl": hook.URL + "/eecar"}); code != http.StatusOK {
		t.Fatalf("PUT /me/webhook: %d %s", code, body)
	}
	// The watch, registered on node B, reaches A and C through the stream.
	code, body = apiCall(t, http.MethodPost, url(1, "/watches"), buyer, map[string]any{
		"criteria": map[string]any{"category": "motor", "maxPrice": 5000, "keywords": []string{"quasar"}}})
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("POST /watches: %d %s", code, body)
	}

	// Parts registered on each node in turn: each is searchable on the
	// others, and each matches the watch.
	const parts = 6
	partIDs := make([]string, parts)
	vectorAt := make([]string, parts) // when each part's vector was recorded
	var visible []time.Duration       // registration to searchable on another node
	for i := range parts {
		code, body := apiCall(t, http.MethodPost, url(i%3, "/parts"), seller, map[string]any{
			"name": fmt.Sprintf("Quasar traction motor %c%d", 'A'+i, i), "category": "motor", "manufacturer": "Quasar",
			"price": 1000 + i, "description": "A quasar drive unit for the cluster test"})
		var p struct {
			ID     string `json:"partId"`
			Vector struct {
				CreatedAt string `json:"createdAt"`
			} `json:"vector"`
		}
		if code != http.StatusCreated || json.Unmarshal(body, &p) != nil || p.ID == "" {
			t.Fatalf("POST /parts on node %d: %d %s", i%3, code, body)
		}
		partIDs[i] = p.ID
		vectorAt[i] = p.Vector.CreatedAt
		registered := time.Now()
		for _, other := range []int{(i + 1) % 3, (i + 2) % 3} {
			waitForLong(t, 20*time.Second, fmt.Sprintf("part %d registered on node %d to be found on node %d", i, i%3, other), func() bool {
				code, body := apiCall(t, http.MethodPost, url(other, "/search"), seller, map[string]any{
					"query": fmt.Sprintf("Quasar traction motor %c%d", 'A'+i, i), "topK": 10, "filters": map[string]any{"category": "motor"}})
				if code != http.StatusOK {
					t.Logf("search on node %d: %d %s", other, code, body)
				}
				return code == http.StatusOK && bytes.Contains(body, []byte(p.ID))
			})
			visible = append(visible, time.Since(registered))
		}
	}
	sort.Slice(visible, func(i, j int) bool { return visible[i] < visible[j] })
	t.Logf("a part registered on one node was found on another after %s (median) to %s (max) of %d",
		visible[len(visible)/2].Round(time.Millisecond), visible[len(visible)-1].Round(time.Millisecond), len(visible))

	// One delivery and one notification per part: all three nodes have
	// seen every part (search above), so any duplicate is on its way.
	waitForLong(t, 30*time.Second, "a notification for each part", func() bool { return len(notes.parts()) >= parts })
	var delivered atomic.Int64
	waitForLong(t, 30*time.Second, "no further deliveries", quietFunc(func() int64 {
		n := 0
		for _, c := range notes.parts() {
			n += c
		}
		delivered.Store(int64(n))
		return int64(n)
	}, 2*time.Second))
	got := notes.parts()
	for i, id := range partIDs {
		if got[id] != 1 {
			t.Errorf("part %d (%s): %d webhook deliveries, want 1", i, id, got[id])
		}
	}
	notes.mu.Lock()
	for id, n := range notes.ids {
		if n != 1 {
			t.Errorf("notification %s delivered %d times", id, n)
		}
	}
	notes.mu.Unlock()
	// The other nodes, whose blob stores lack the vectors, embedded the
	// parts again for themselves without writing them again (a write
	// each would start another round on every other node).
	for i, id := range partIDs {
		code, body := apiCall(t, http.MethodGet, url(i%3, "/parts/"+id), seller, nil)
		if code != http.StatusOK || !bytes.Contains(body, []byte(`"createdAt":"`+vectorAt[i]+`"}`)) {
			t.Errorf("part %d after indexing on every node: %d %s, want its vector recorded at %s only", i, code, body, vectorAt[i])
		}
	}
	code, body = apiCall(t, http.MethodGet, url(2, "/notifications"), buyer, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /notifications: %d %s", code, body)
	}
	for i, id := range partIDs {
		if n := bytes.Count(body, []byte(`"partId":"`+id+`"`)); n != 1 {
			t.Errorf("part %d: %d notifications listed for the buyer, want 1", i, n)
		}
	}

	// Racing accepts: the three nodes each get the buyer's accept of the
	// same proposal at once.
	for round := range 4 {
		code, body := apiCall(t, http.MethodPost, url(round%3, "/proposals"), seller, map[string]any{
			"toCompanyId": buyerID, "partIds": []string{partIDs[round]}, "proposalType": "sell", "priceOffer": 900})
		var p struct {
			ID string `json:"proposalId"`
		}
		if code != http.StatusCreated || json.Unmarshal(body, &p) != nil || p.ID == "" {
			t.Fatalf("POST /proposals: %d %s", code, body)
		}
		type answer struct {
			code int
			body []byte
		}
		answers := make([]answer, 3)
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-ready
				code, body := apiCall(t, http.MethodPost, url(i, "/proposals/"+p.ID+"/respond"), buyer, map[string]any{"action": "accept", "message": fmt.Sprintf("via node %d", i)})
				answers[i] = answer{code, body}
			}()
		}
		close(ready)
		wg.Wait()
		won := 0
		for i, a := range answers {
			var e struct{ Error string }
			switch {
			case a.code == http.StatusOK:
				won++
			case a.code == http.StatusConflict && json.Unmarshal(a.body, &e) == nil && e.Error != "":
			default:
				t.Errorf("round %d, accept on node %d: %d %s, want 200 or 409 with a JSON error", round, i, a.code, a.body)
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d accepts won, want exactly 1: %v", round, won, answers)
		}
		code, body = apiCall(t, http.MethodGet, url((round+1)%3, "/proposals/"+p.ID), buyer, nil)
		if code != http.StatusOK || !bytes.Contains(body, []byte(`"status":"accepted"`)) || bytes.Count(body, []byte(`"action":"accept"`)) != 1 {
			t.Errorf("round %d: proposal after the race: %d %s, want accepted with one accept in its history", round, code, body)
		}
	}
}

// quietFunc returns a condition that holds once value has not changed
// for d.
func quietFunc(value func() int64, d time.Duration) func() bool {
	last, since := value(), time.Now()
	return func() bool {
		if n := value(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= d
	}
}

// freshPGSchema creates an empty schema in the test PostgreSQL and
// returns a URL whose connections use it (dropped when the test ends).
func freshPGSchema(t *testing.T) string {
	t.Helper()
	base := testenv.PostgresURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("quarry_cluster_%x", b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// shelfDigest is a SHA-256 over DataShelf's exported categories and
// products (`quarry datashelf export --format jsonl`), without what
// differs between two crawls of one site: ids (a product's category is
// named by its source URL), and times.
func shelfDigest(t *testing.T, db string) (string, int) {
	t.Helper()
	export := func(table string) []map[string]any {
		var out, errs syncBuffer
		if code := run(context.Background(), []string{"datashelf", "export", "--table", table, "--format", "jsonl", "--datashelf-db", db, "--data-dir", t.TempDir()}, noEnv, &out, &errs); code != 0 {
			t.Fatalf("export %s: exit %d: %s", table, code, errs.String())
		}
		var rows []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue
			}
			var row map[string]any
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("export %s: %v: %s", table, err, line)
			}
			rows = append(rows, row)
		}
		return rows
	}
	cats := export("category")
	catURL := map[any]any{}
	for _, c := range cats {
		catURL[c["id"]] = c["source_url"]
	}
	var lines []string
	for table, rows := range map[string][]map[string]any{"category": cats, "product": export("product")} {
		for _, row := range rows {
			if id, ok := row["category_id"]; ok {
				row["category_id"] = catURL[id]
			}
			for _, k := range []string{"id", "navigation_id", "last_scraped_at", "created_at", "updated_at"} {
				delete(row, k)
			}
			b, err := json.Marshal(row) // keys sorted
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, table+"\t"+string(b))
		}
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)), len(lines)
}

// TestClusterProcsDataShelf runs three `quarry datashelf crawl` processes
// on one PostgreSQL queue against the fixture bookshop, SIGKILLs one of
// them mid-crawl (its running jobs are taken over by the others once their
// 2 s lease expires), and compares the database with a single crawler's
// run of the same site: the digests of the exported categories and
// products are equal.
func TestClusterProcsDataShelf(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four crawler processes; skipped in -short mode")
	}
	t.Parallel()
	const products = 200
	site := fixture.New(fixture.Options{Products: products, Seed: 16, CrawlDelay: -1})
	srv := httptest.NewServer(site.Handler())
	defer srv.Close()
	start := srv.URL + fixture.Locale
	crawl := func(db, name string) *quarryProc {
		t.Helper()
		q, err := spawnQuarry(quarryBinary(t), t.TempDir()+"/"+name+".log", "", "datashelf", "crawl", start,
			"--datashelf-db", db, "--data-dir", t.TempDir(), "--allow-networks", srv.Listener.Addr().String(),
			"--lease", "2s", "--workers", "4")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if !q.exited() {
				_ = q.cmd.Process.Kill()
				<-q.done
			}
			if t.Failed() {
				t.Logf("%s:\n%s", name, q.logs())
			}
		})
		return q
	}
	wait := func(q *quarryProc, name string) {
		t.Helper()
		select {
		case <-q.done:
			if q.waitErr != nil {
				t.Fatalf("%s: %v\n%s", name, q.waitErr, q.logs())
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("%s did not finish within 3 minutes:\n%s", name, q.logs())
		}
	}

	// Three crawlers on one queue; one dies once a third of the products
	// are stored.
	db := freshPGSchema(t)
	began := time.Now()
	crawlers := []*quarryProc{crawl(db, "crawler-a"), crawl(db, "crawler-b"), crawl(db, "crawler-c")}
	ctx := context.Background()
	st, err := postgres.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var stored int
	waitForLong(t, 2*time.Minute, "a third of the products stored", func() bool {
		_, stored, err = st.ListProducts(ctx, datashelfstore.ProductFilter{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return stored >= products/3 || crawlers[2].exited()
	})
	if crawlers[2].exited() {
		t.Fatalf("crawler-c finished before it could be killed (%d products stored)", stored)
	}
	kill(t, crawlers[2])
	running := 0
	if stats, err := st.QueueStats(ctx); err == nil {
		for _, s := range stats {
			if s.Status == datashelfstore.StatusRunning {
				running += s.Count
			}
		}
	}
	t.Logf("crawler-c SIGKILLed after %s with %d products stored, %d jobs running cluster-wide", time.Since(began).Round(time.Millisecond), stored, running)
	wait(crawlers[0], "crawler-a")
	wait(crawlers[1], "crawler-b")
	clustered := time.Since(began)
	got, rows := shelfDigest(t, db)

	// The reference: one crawler, not interrupted.
	ref := freshPGSchema(t)
	began = time.Now()
	wait(crawl(ref, "reference"), "reference")
	want, wantRows := shelfDigest(t, ref)
	t.Logf("three crawlers (one killed) %s, one crawler %s; %d rows: %s", clustered.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), rows, got)
	if got != want || rows != wantRows {
		t.Fatalf("digest of the three crawlers' database %s (%d rows), of one crawler's %s (%d rows)", got, rows, want, wantRows)
	}
	if rows < products {
		t.Fatalf("only %d rows exported, want at least the %d products", rows, products)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
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

	"github.com/quarrydb/quarry/internal/checks/alert"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// The failover guarantees of Checks on real processes: a SIGKILLed node's
// checks run again within failoverBound, no period is recorded twice, and
// an alert whose node dies between recording its run and delivering it is
// delivered by a survivor under the same id.

// failoverBound is the longest a check may wait, after its node's death,
// for its next run at default settings (docs/checks.md).
const failoverBound = 10 * time.Second

// storeClient is a DynamoDB client of the shared store d.
func storeClient(d *ddbProc) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + d.addr),
		Credentials: credentials.NewStaticCredentialsProvider(clusterKeyID, clusterSecret, "")})
}

// recordedRuns reads the run history of each check from the store: the
// times of its recorded runs, oldest first.
func recordedRuns(t *testing.T, d *ddbProc, ids []string) map[string][]time.Time {
	t.Helper()
	client := storeClient(d)
	out := make(map[string][]time.Time, len(ids))
	for _, id := range ids {
		p := dynamodb.NewQueryPaginator(client, &dynamodb.QueryInput{TableName: aws.String("checks-CHECK"),
			KeyConditionExpression:    aws.String("PK = :id AND begins_with(SK, :r)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": ddbitem.S(id), ":r": ddbitem.S("RESULT#")},
			ProjectionExpression:      aws.String("SK")})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				at, err := time.Parse(ddbitem.TimeLayout, strings.TrimPrefix(ddbitem.String(it, "SK"), "RESULT#"))
				if err != nil {
					t.Fatalf("run of %s: %v", id, err)
				}
				out[id] = append(out[id], at)
			}
		}
		sort.Slice(out[id], func(i, j int) bool { return out[id][i].Before(out[id][j]) })
	}
	return out
}

// TestClusterProcsFailover runs 30 checks every 2 s on three `quarry serve
// --systems checks` nodes at default lease settings against targets that
// answer in 1 s (so that each node always has runs in flight), stops one
// node (SIGSTOP, then SIGKILL) at a moment it holds the leases of some
// checks, and reads the run history the survivors record. Every check
// runs again within failoverBound of the node's death, those the dead
// node held included, and no check has more recorded runs than periods.
func TestClusterProcsFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three quarry processes; skipped in -short mode")
	}
	t.Parallel()
	const (
		checks = 30
		period = 2 * time.Second
	)
	targets := &runLog{runs: map[int][]time.Time{}, down: make([]atomic.Bool, checks), slow: checks, delay: time.Second}
	site := httptest.NewServer(targets)
	defer site.Close()
	d := startSharedDDB(t, "", "")
	nodes := startProcNodes(t, d, 3, "--systems", "checks", "--checks-min-interval", "1s", "--checks-retention", "1h",
		"--allow-networks", site.Listener.Addr().String())
	token := clusterCLI(t, d, "checks", "user", "create", "--email", "failover@example.com", "--tier", "PRO")
	auth := "Bearer " + token
	ids := make([]string, checks)
	for i := range ids {
		code, body := apiCall(t, http.MethodPost, "http://"+nodes[i%3].api+"/checks/v1/checks", auth,
			map[string]any{"url": fmt.Sprintf("%s/t/%d", site.URL, i), "checkType": "AVAILABILITY", "delayMs": period.Milliseconds()})
		var c struct{ ID string }
		if code != http.StatusCreated || json.Unmarshal(body, &c) != nil || c.ID == "" {
			t.Fatalf("create check %d: %d %s", i, code, body)
		}
		ids[i] = c.ID
	}
	// The waits read the target's requests (in memory); the assertions,
	// the run history in the store.
	ranAfter := func(after time.Time, n int) func() bool {
		return func() bool {
			snap := targets.snapshot()
			for _, runs := range snap {
				k := 0
				for _, at := range runs {
					if at.After(after) {
						k++
					}
				}
				if k < n {
					return false
				}
			}
			return len(snap) == checks
		}
	}
	waitForLong(t, 2*time.Minute, "two runs of every check", ranAfter(time.Time{}, 2))

	// node-c stops at a moment it holds leases: its runs in flight and
	// those it claimed ahead. Stopped, it renews nothing, as if dead; the
	// SIGKILL that follows ends it for good.
	victim := nodes[2]
	var held map[string]bool
	var diedAt time.Time
	waitForLong(t, time.Minute, "node-c to hold a lease when stopped", func() bool {
		if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		diedAt = time.Now()
		if held = leasedBy(t, d, "node-c-"); len(held) > 0 {
			return true
		}
		if err := victim.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return false
	})
	kill(t, victim)
	t.Logf("node-c died holding the leases of %d checks", len(held))

	// Every check runs again on a survivor, then once more, so that a
	// period run twice would show; the survivors stop (SIGTERM: their
	// runs in flight record themselves) before the history is read.
	waitForLong(t, 2*time.Minute, "two runs of every check after node-c died", ranAfter(diedAt, 2))
	for _, q := range nodes[:2] {
		if err := q.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range nodes[:2] {
		select {
		case <-q.done:
		case <-time.After(time.Minute):
			t.Fatalf("a node did not stop within a minute of SIGTERM:\n%s", q.logs())
		}
	}

	runs := recordedRuns(t, d, ids)
	next := storedNextRuns(t, d, ids)
	var worst time.Duration
	for i, id := range ids {
		var first time.Time
		for _, at := range runs[id] {
			if !at.Before(diedAt) {
				first = at
				break
			}
		}
		wait := first.Sub(diedAt)
		worst = max(worst, wait)
		if wait > failoverBound {
			t.Errorf("check %d (node-c held its lease: %v) ran again %s after node-c died, want within %s: runs at %s",
				i, held[id], wait.Round(time.Millisecond), failoverBound, offsets(runs[id], diedAt))
		}
		// The periods a check had are the due times its nextRunAt passed
		// through since its first run (a run is never early): one more
		// recorded run than those is a period recorded twice.
		periods := int((next[id].Sub(runs[id][0]) + period - 1) / period)
		if len(runs[id]) > periods {
			t.Errorf("check %d: %d recorded runs for %d periods (a period recorded twice): runs at %s, next due %s",
				i, len(runs[id]), periods, offsets(runs[id], diedAt), next[id].Sub(diedAt).Round(time.Millisecond))
		}
	}
	t.Logf("after node-c's death every check ran again within %s (bound %s)", worst.Round(time.Millisecond), failoverBound)
}

// hookAttempt is one delivery attempt of an alert to a hookReceiver.
type hookAttempt struct {
	id, checkID, event string
	// answer receives the status to answer, 0 to hold the request until
	// its sender goes away; answered is closed once the status is sent.
	answer   chan int
	answered chan struct{}
}

// hookReceiver is an alert webhook that hands the first attempt of each
// alert to the test (arrivals) and answers every later one 204; it counts
// the attempts answered 2xx per alert id.
type hookReceiver struct {
	arrivals chan *hookAttempt
	mu       sync.Mutex
	seen     map[string]int // attempts per alert id
	acked    map[string]int // attempts answered 2xx per alert id
	bodies   map[string][]string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var a struct{ ID, CheckID, Event string }
	if err := json.Unmarshal(body, &a); err != nil || a.ID == "" || r.Header.Get(alert.HeaderAlertID) != a.ID {
		http.Error(w, "want an alert whose id is its "+alert.HeaderAlertID, http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.seen[a.ID]++
	first := h.seen[a.ID] == 1
	h.bodies[a.ID] = append(h.bodies[a.ID], string(body))
	h.mu.Unlock()
	code := http.StatusNoContent
	if first {
		at := &hookAttempt{id: a.ID, checkID: a.CheckID, event: a.Event, answer: make(chan int, 1), answered: make(chan struct{})}
		defer close(at.answered)
		h.arrivals <- at
		select {
		case code = <-at.answer:
		case <-r.Context().Done():
			return
		}
		if code == 0 {
			<-r.Context().Done()
			return
		}
	}
	w.WriteHeader(code)
	w.(http.Flusher).Flush()
	if code/100 == 2 {
		h.mu.Lock()
		h.acked[a.ID]++
		h.mu.Unlock()
	}
}

// pendingAlertOwner returns the owner of the outbox item of alert id, ""
// when the outbox no longer holds it (delivered).
func pendingAlertOwner(t *testing.T, d *ddbProc, id string) (owner string, pending bool) {
	t.Helper()
	out, err := storeClient(d).Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("checks-CHECK"),
		KeyConditionExpression:    aws.String("PK = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": ddbitem.S("ALERTS")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if strings.HasSuffix(ddbitem.String(it, "SK"), "#"+id) {
			return ddbitem.String(it, "owner"), true
		}
	}
	return "", false
}

// TestClusterProcsAlertFailover runs three `quarry serve --systems
// checks` nodes at default settings with one user's alert webhook. For
// each case a check whose target is down raises a down alert; when its
// first delivery reaches the receiver, the node delivering it (the one
// whose claim the outbox item carries) dies by SIGKILL:
//   - killed while delivering (the request is never answered): a
//     survivor delivers the alert, with the same id, and it is answered
//     exactly once;
//   - killed after delivering (the receiver answered 204 to the stopped
//     node, which never read it): a survivor delivers it again, the
//     receiver sees the same id twice with the same body, and drops the
//     duplicate by its id.
//
// Either way the alert leaves the outbox, so nothing is delivered later.
func TestClusterProcsAlertFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three quarry processes; skipped in -short mode")
	}
	t.Parallel()
	targets := &runLog{runs: map[int][]time.Time{}, down: make([]atomic.Bool, 2)}
	for i := range targets.down {
		targets.down[i].Store(true)
	}
	site := httptest.NewServer(targets)
	defer site.Close()
	hooks := &hookReceiver{arrivals: make(chan *hookAttempt, 4), seen: map[string]int{}, acked: map[string]int{}, bodies: map[string][]string{}}
	hook := httptest.NewServer(hooks)
	defer hook.Close()
	d := startSharedDDB(t, "", "")
	nodes := startProcNodes(t, d, 3, "--systems", "checks", "--checks-min-interval", "1s",
		"--allow-networks", site.Listener.Addr().String()+","+hook.Listener.Addr().String())
	alive := map[string]*quarryProc{"node-a-": nodes[0], "node-b-": nodes[1], "node-c-": nodes[2]}
	token := clusterCLI(t, d, "checks", "user", "create", "--email", "alerts@example.com", "--tier", "PRO")
	auth := "Bearer " + token
	if code, body := apiCall(t, http.MethodPut, "http://"+nodes[0].api+"/checks/v1/me/alerts", auth, map[string]any{"webhookUrl": hook.URL + "/alerts"}); code != http.StatusOK {
		t.Fatalf("set the webhook: %d %s", code, body)
	}

	for i, tc := range []struct {
		name string
		// delivered: the receiver answers 204 before the node dies.
		delivered bool
		wantAcked int
	}{
		{name: "killed while delivering", delivered: false, wantAcked: 1},
		{name: "killed after delivering", delivered: true, wantAcked: 2},
	} {
		var via *quarryProc
		for _, q := range alive {
			via = q
			break
		}
		code, body := apiCall(t, http.MethodPost, "http://"+via.api+"/checks/v1/checks", auth,
			map[string]any{"url": fmt.Sprintf("%s/t/%d", site.URL, i), "checkType": "AVAILABILITY", "delayMs": 1000})
		var c struct{ ID string }
		if code != http.StatusCreated || json.Unmarshal(body, &c) != nil || c.ID == "" {
			t.Fatalf("%s: create the check: %d %s", tc.name, code, body)
		}
		var at *hookAttempt
		select {
		case at = <-hooks.arrivals:
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: no alert within 2 minutes", tc.name)
		}
		if at.checkID != c.ID || at.event != "down" {
			t.Fatalf("%s: alert %s of check %s, want down of %s", tc.name, at.event, at.checkID, c.ID)
		}
		owner, pending := pendingAlertOwner(t, d, at.id)
		var victim *quarryProc
		var name string
		for prefix, q := range alive {
			if strings.HasPrefix(owner, prefix) {
				victim, name = q, prefix
			}
		}
		if !pending || victim == nil {
			t.Fatalf("%s: alert %s in the outbox: %v, claimed by %q, want claimed by a live node", tc.name, at.id, pending, owner)
		}
		if tc.delivered {
			// Stopped, the node cannot read the answer nor remove the
			// alert from the outbox.
			if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			at.answer <- http.StatusNoContent
			<-at.answered
		}
		kill(t, victim)
		delete(alive, name)
		at.answer <- 0
		waitForLong(t, 2*time.Minute, tc.name+": the alert answered by a survivor and gone from the outbox", func() bool {
			hooks.mu.Lock()
			acked := hooks.acked[at.id]
			hooks.mu.Unlock()
			_, pending := pendingAlertOwner(t, d, at.id)
			return acked >= 1 && !pending && (!tc.delivered || acked >= 2)
		})
		hooks.mu.Lock()
		acked, bodies := hooks.acked[at.id], hooks.bodies[at.id]
		hooks.mu.Unlock()
		if acked != tc.wantAcked {
			t.Errorf("%s: alert %s answered %d times, want %d", tc.name, at.id, acked, tc.wantAcked)
		}
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Errorf("%s: alert %s delivered again with another body:\n%s\nfirst:\n%s", tc.name, at.id, b, bodies[0])
			}
		}
		t.Logf("%s: %s's alert %s reached the receiver %d times, answered %d", tc.name, strings.TrimSuffix(name, "-"), at.id, len(bodies), acked)
	}
	// No other alert: one down alert per check, whatever the deaths.
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	if len(hooks.seen) != 2 {
		t.Errorf("%d alert ids delivered, want 2: %v", len(hooks.seen), hooks.seen)
	}
}

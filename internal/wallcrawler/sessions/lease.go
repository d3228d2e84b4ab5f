package sessions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Owner leases. Every process that runs browsers renews a lease in one
// item of the sessions table, the node registry (sessionId
// NodeRegistryID): its attribute nodes maps each node id to the node's
// lease {inc, seq, leaseMs, renewedAt, nodeUrl}. inc names the process
// (random at start), seq counts its renewals; leaseMs is how long the
// others wait for the next renewal before they take its sessions over.
//
// An observer never compares clocks across machines: it remembers when
// it first read each lease's (inc, seq), on its own monotonic clock, and
// declares the node dead once it has read the same pair, with every read
// in between successful, for leaseMs. A failed read of the registry
// forgets every observation, so an outage of the store (which stops every
// node's renewals alike) never makes a live node look dead. The dead
// node's sessions become FAILED (SDK ERROR), each with a conditional
// write on its current state, and the node that wins that write, and only
// it, frees the session's concurrency slot. When all of them are ended,
// the dead node's lease is removed, conditionally on its (inc, seq): a
// node that renewed meanwhile keeps it.

// Lease defaults.
const (
	// DefaultLease is how long a node may go without renewing its lease
	// before the others end its sessions.
	DefaultLease = 15 * time.Second
	// NodeRegistryID is the sessionId of the item holding the nodes'
	// leases. It has neither projectId nor status, so neither index of
	// the table lists it, and no API key can read it.
	NodeRegistryID = "wallcrawler#nodes"
)

// NodeLease is one node's entry in the node registry.
type NodeLease struct {
	// Inc names the process (random per start); Seq counts its renewals.
	Inc string
	Seq int64
	// Lease is how long the node promises to renew within.
	Lease time.Duration
	// RenewedAt is the node's own clock at the renewal (informational:
	// observers do not use it).
	RenewedAt time.Time
	// NodeURL is the node's advertised address.
	NodeURL string
}

func leaseItem(l NodeLease) av {
	m := map[string]av{
		"inc":       ddbitem.S(l.Inc),
		"seq":       ddbitem.N(l.Seq),
		"leaseMs":   ddbitem.N(l.Lease.Milliseconds()),
		"renewedAt": ddbitem.S(ddbitem.FormatTime(l.RenewedAt)),
	}
	if l.NodeURL != "" {
		m["nodeUrl"] = ddbitem.S(l.NodeURL)
	}
	return &types.AttributeValueMemberM{Value: m}
}

func parseLease(v av) (NodeLease, bool) {
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return NodeLease{}, false
	}
	l := NodeLease{
		Inc:       ddbitem.String(m.Value, "inc"),
		Seq:       ddbitem.Int(m.Value, "seq"),
		Lease:     time.Duration(ddbitem.Int(m.Value, "leaseMs")) * time.Millisecond,
		RenewedAt: ddbitem.ParseTime(ddbitem.String(m.Value, "renewedAt")),
		NodeURL:   ddbitem.String(m.Value, "nodeUrl"),
	}
	return l, l.Inc != "" && l.Lease > 0
}

// ErrLeaseLost reports that the node's lease in the registry is not the one this
// process last wrote (another node declared it dead and removed it, or
// another process uses the same node id).
var ErrLeaseLost = errors.New("sessions: lease lost")

var registryKey = map[string]av{"sessionId": ddbitem.S(NodeRegistryID)}

// RenewLease writes node's lease. With prev set (the Inc and Seq this
// process wrote last), the write is conditional on the registry still
// holding them, and fails with ErrLeaseLost otherwise; without, it
// replaces whatever the registry holds for node (a start).
func (r *Repo) RenewLease(ctx context.Context, node string, l NodeLease, prev *NodeLease) error {
	names := map[string]string{"#nodes": "nodes", "#n": node}
	values := map[string]av{":l": leaseItem(l)}
	cond := "attribute_exists(#nodes)"
	if prev != nil {
		cond = "#nodes.#n.#inc = :inc AND #nodes.#n.#seq = :seq"
		names["#inc"], names["#seq"] = "inc", "seq"
		values[":inc"], values[":seq"] = ddbitem.S(prev.Inc), ddbitem.N(prev.Seq)
	}
	for attempt := 0; ; attempt++ {
		_, err := r.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(r.table),
			Key:                       registryKey,
			UpdateExpression:          aws.String("SET #nodes.#n = :l"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
		if err == nil {
			return nil
		}
		if !ddbitem.ConditionFailed(err) {
			return fmt.Errorf("sessions: renew the lease of node %s: %w", node, err)
		}
		if prev != nil {
			return fmt.Errorf("%w: node %s", ErrLeaseLost, node)
		}
		if attempt > 0 {
			return fmt.Errorf("sessions: renew the lease of node %s: the node registry has no nodes map", node)
		}
		// The first node of an installation creates the registry.
		_, err = r.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(r.table),
			Key:                       registryKey,
			UpdateExpression:          aws.String("SET #nodes = if_not_exists(#nodes, :empty)"),
			ExpressionAttributeNames:  map[string]string{"#nodes": "nodes"},
			ExpressionAttributeValues: map[string]av{":empty": &types.AttributeValueMemberM{Value: map[string]av{}}},
		})
		if err != nil {
			return fmt.Errorf("sessions: create the node registry: %w", err)
		}
	}
}

// Leases reads the node registry (strongly consistent): node id → lease.
// Entries that cannot be read are left out.
func (r *Repo) Leases(ctx context.Context) (map[string]NodeLease, error) {
	out, err := r.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.table),
		Key:            registryKey,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("sessions: read the node registry: %w", err)
	}
	leases := map[string]NodeLease{}
	if m, ok := out.Item["nodes"].(*types.AttributeValueMemberM); ok {
		for node, v := range m.Value {
			if l, ok := parseLease(v); ok {
				leases[node] = l
			}
		}
	}
	return leases, nil
}

// DropLease removes node's lease if it is still the one described by l
// (same Inc and Seq); it reports whether it did.
func (r *Repo) DropLease(ctx context.Context, node string, l NodeLease) (bool, error) {
	_, err := r.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.table),
		Key:                       registryKey,
		UpdateExpression:          aws.String("REMOVE #nodes.#n"),
		ConditionExpression:       aws.String("#nodes.#n.#inc = :inc AND #nodes.#n.#seq = :seq"),
		ExpressionAttributeNames:  map[string]string{"#nodes": "nodes", "#n": node, "#inc": "inc", "#seq": "seq"},
		ExpressionAttributeValues: map[string]av{":inc": ddbitem.S(l.Inc), ":seq": ddbitem.N(l.Seq)},
	})
	if ddbitem.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sessions: drop the lease of node %s: %w", node, err)
	}
	return true, nil
}

// leaseState is the Manager's side of the leases: its own (under mu),
// and what it observed of the others' (under seenMu).
type leaseState struct {
	mu sync.Mutex
	// mine is the lease this process wrote last; written reports that
	// it was written at least once.
	mine    NodeLease
	written bool
	// lastOK is when the last successful renewal was sent.
	lastOK time.Time
	// closed: the Manager was closed; no more renewals.
	closed bool
	// renewed is lastOK for readers that must not wait for a renewal
	// under way (LeaseStatus).
	renewed atomic.Pointer[time.Time]
	// orphans counts the sessions of dead nodes this process ended.
	orphans atomic.Int64

	seenMu sync.Mutex
	// seen maps a node to the lease read of it and when (monotonic) that
	// exact (inc, seq) was first read.
	seen map[string]observed
}

type observed struct {
	inc   string
	seq   int64
	since time.Time
}

// RenewLease writes this node's lease: at the first call (Reconcile makes
// it) it replaces what a previous process of the same node left; later
// calls are conditional on the registry still holding this process's
// lease. When the lease was lost (another node declared this one dead) or
// could not be renewed for longer than the lease, the sessions the others
// ended meanwhile have their browsers closed here.
func (m *Manager) RenewLease(ctx context.Context) error {
	ls := &m.lease
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil
	}
	next := NodeLease{Inc: m.inc, Seq: ls.mine.Seq + 1, Lease: m.o.Lease, RenewedAt: m.now(), NodeURL: m.o.AdvertiseURL}
	var prev *NodeLease
	if ls.written {
		prev = &ls.mine
	}
	sent := time.Now()
	err := m.d.Repo.RenewLease(ctx, m.o.NodeID, next, prev)
	lost := errors.Is(err, ErrLeaseLost)
	if lost {
		// A renewal that reached the store although its answer did not
		// (a timeout) leaves this process's own entry ahead: that is not
		// a loss, and the next seq follows the stored one.
		if cur, rerr := m.d.Repo.Leases(ctx); rerr == nil && cur[m.o.NodeID].Inc == m.inc {
			lost = false
			next.Seq = max(next.Seq, cur[m.o.NodeID].Seq+1)
		}
	}
	if errors.Is(err, ErrLeaseLost) {
		if lost {
			m.log.Error("wallcrawler: this node's lease was taken over (another node found it expired, or another process uses the same --node-id); sessions the others ended will have their browsers closed here", "node", m.o.NodeID)
		}
		err = m.d.Repo.RenewLease(ctx, m.o.NodeID, next, nil)
	}
	if err != nil {
		return err
	}
	gap := ls.written && sent.Sub(ls.lastOK) > m.o.Lease
	ls.mine, ls.written, ls.lastOK = next, true, sent
	ls.renewed.Store(&sent)
	if lost || gap {
		m.closeEnded(ctx)
	}
	return nil
}

// closeEnded closes the browsers of live sessions whose records say they
// ended (or are ending) by another hand: after this node lost its lease,
// the stream may not have told it.
func (m *Manager) closeEnded(ctx context.Context) {
	m.mu.Lock()
	ids := make([]string, 0, len(m.live))
	for id := range m.live {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	for _, id := range ids {
		x, err := m.d.Repo.Get(ctx, id)
		if errors.Is(err, ErrNotFound) || err == nil && (x.InternalStatus == StateTerminating || Terminal(x.InternalStatus)) {
			m.ended(id)
		}
	}
}

// fenceOrEnd stops serving this node's sessions once a whole lease has
// passed since its last successful renewal was sent (fence): from then
// on the other nodes may take it for dead and end its sessions, and it
// cannot tell, so it must not serve them. Once renewals succeed again it
// writes the end of the sessions it fenced (endFenced). Run calls it
// every Options.LeaseRenew.
func (m *Manager) fenceOrEnd(ctx context.Context) error {
	renewed := m.lease.renewed.Load()
	if renewed == nil {
		return nil // no lease yet: no session either
	}
	if time.Since(*renewed) > m.o.Lease {
		m.fence()
		return nil
	}
	return m.endFenced(ctx)
}

// fence kills the browsers of every session running here, without any
// write (the store does not answer): their CDP and live-view connections
// end with the browsers, and new ones are not resolved here any more.
// The sessions are kept in fenced, for endFenced.
func (m *Manager) fence() {
	m.mu.Lock()
	var cut []*live
	for id, l := range m.live {
		l.mu.Lock()
		stopping := l.stopping
		l.stopping = true
		l.mu.Unlock()
		if stopping {
			continue // a stop has it
		}
		delete(m.live, id)
		m.fenced[id] = l.projectID
		cut = append(cut, l)
	}
	m.mu.Unlock()
	if len(cut) == 0 {
		return
	}
	m.log.Error("wallcrawler: this node has not renewed its lease for longer than the lease; the other nodes may have ended its sessions, so it kills their browsers", "node", m.o.NodeID, "sessions", len(cut), "lease", m.o.Lease)
	for _, l := range cut {
		m.wg.Go(func() {
			ctx, cancel := context.WithTimeout(m.base, defaultCloseBudget)
			defer cancel()
			m.dropLive(ctx, l)
		})
	}
}

// endFenced writes the end (FAILED) of the sessions fence closed, each
// conditional on its state (a session another node ended meanwhile is
// left as it is), and frees the slot of each one it ends.
func (m *Manager) endFenced(ctx context.Context) error {
	m.mu.Lock()
	ids := maps.Clone(m.fenced)
	m.mu.Unlock()
	var firstErr error
	for id := range ids {
		errText := fmt.Sprintf("node %s was cut off from the store for longer than its lease; the browser was closed", m.o.NodeID)
		x, err := m.d.Repo.Transition(ctx, id, []string{StateCreating, StateProvisioning, StateReady, StateTerminating}, StateFailed,
			errText, map[string]av{"endedAt": ddbitem.S(ddbitem.FormatTime(m.now())), "error": ddbitem.S(errText)})
		switch {
		case err == nil:
			m.releaseSlot(x.ProjectID)
			m.countBrowserTime(x)
		case errors.Is(err, ErrState) || errors.Is(err, ErrNotFound):
			// ended meanwhile, by another node
		default:
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		m.mu.Lock()
		delete(m.fenced, id)
		m.mu.Unlock()
	}
	return firstErr
}

// SweepLeases reads the node registry and ends the sessions of every
// other node whose lease this process has seen unrenewed for that lease's
// duration: they become FAILED (SDK ERROR) and their slots are freed,
// each exactly once however many nodes sweep at the same time. It
// returns how many sessions this call ended. Run calls it every
// Options.ReapEvery.
func (m *Manager) SweepLeases(ctx context.Context) (int, error) {
	ls := &m.lease
	leases, err := m.d.Repo.Leases(ctx)
	now := time.Now()
	ls.seenMu.Lock()
	if err != nil {
		// Forget everything: a node must be seen unrenewed through reads
		// that worked, for the whole lease.
		ls.seen = nil
		ls.seenMu.Unlock()
		return 0, err
	}
	if ls.seen == nil {
		ls.seen = map[string]observed{}
	}
	var dead []string
	for node, l := range leases {
		if node == m.o.NodeID {
			continue
		}
		o, ok := ls.seen[node]
		if !ok || o.inc != l.Inc || o.seq != l.Seq {
			ls.seen[node] = observed{inc: l.Inc, seq: l.Seq, since: now}
			continue
		}
		if now.Sub(o.since) >= l.Lease {
			dead = append(dead, node)
		}
	}
	for node := range ls.seen {
		if _, ok := leases[node]; !ok {
			delete(ls.seen, node)
		}
	}
	ls.seenMu.Unlock()
	total := 0
	for _, node := range dead {
		l := leases[node]
		m.log.Warn("wallcrawler: a node stopped renewing its lease; ending its sessions", "node", node, "lease", l.Lease, "lastRenewal", l.RenewedAt)
		n, done, _ := m.failOrphans(ctx, node, fmt.Sprintf("node %s stopped renewing its lease; the browser was lost", node),
			fmt.Sprintf("the node running the browser (%s) stopped renewing its lease", node))
		total += n
		ls.orphans.Add(int64(n))
		if n > 0 {
			m.log.Warn("wallcrawler: sessions of a dead node marked FAILED", "node", node, "count", n)
		}
		if !done {
			continue
		}
		if _, err := m.d.Repo.DropLease(ctx, node, l); err != nil {
			m.log.Warn("wallcrawler: drop a dead node's lease", "node", node, "err", err)
		}
	}
	return total, nil
}

// failOrphans moves every RUNNING session whose browser ran on node (and
// not in this process) to FAILED with reason and errText, freeing the
// slot of each one this process moved. done reports that none is left
// (every one was moved, here or by someone else).
func (m *Manager) failOrphans(ctx context.Context, node, reason, errText string) (n int, done bool, err error) {
	ids, err := m.d.Repo.Running(ctx)
	if err != nil {
		m.log.Warn("wallcrawler: list running sessions", "err", err)
		return 0, false, err
	}
	prefix := "local:" + node + ":"
	done = true
	for _, id := range ids {
		x, err := m.d.Repo.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			done = false
			continue
		}
		if !strings.HasPrefix(x.TaskARN, prefix) {
			continue
		}
		m.mu.Lock()
		_, mine := m.live[id]
		m.mu.Unlock()
		if mine {
			continue
		}
		x, err = m.d.Repo.Transition(ctx, id, []string{StateCreating, StateProvisioning, StateReady, StateTerminating}, StateFailed,
			reason, map[string]av{"endedAt": ddbitem.S(ddbitem.FormatTime(m.now())), "error": ddbitem.S(errText)})
		if errors.Is(err, ErrState) || errors.Is(err, ErrNotFound) {
			continue // ended meanwhile, by its owner or another sweeper
		}
		if err != nil {
			m.log.Warn("wallcrawler: mark an orphaned session failed", "session", id, "err", err)
			done = false
			continue
		}
		m.releaseSlot(x.ProjectID)
		m.countBrowserTime(x)
		n++
	}
	return n, done, nil
}

// LeaseStatus is this process's lease as it stands, for /metrics.
type LeaseStatus struct {
	// Age is the time since the last successful renewal was sent (0
	// before the first).
	Age time.Duration
	// Lease is how long the other processes wait for a renewal.
	Lease time.Duration
	// OrphansEnded counts the sessions of dead nodes this process ended.
	OrphansEnded int64
}

// LeaseStatus reports this process's lease.
func (m *Manager) LeaseStatus() LeaseStatus {
	var age time.Duration
	if t := m.lease.renewed.Load(); t != nil {
		age = time.Since(*t)
	}
	return LeaseStatus{Age: age, Lease: m.o.Lease, OrphansEnded: m.lease.orphans.Load()}
}

// dropOwnLease removes this process's lease (a clean shutdown with every
// session ended), so that the registry lists only running nodes.
func (m *Manager) dropOwnLease(ctx context.Context) {
	ls := &m.lease
	ls.mu.Lock()
	mine, written := ls.mine, ls.written
	ls.closed = true
	ls.mu.Unlock()
	if !written {
		return
	}
	if _, err := m.d.Repo.DropLease(ctx, m.o.NodeID, mine); err != nil {
		m.log.Warn("wallcrawler: drop this node's lease at shutdown", "err", err)
	}
}

// closeLease stops the renewals without removing the lease (a shutdown
// that could not end every session: the others will, once it expires).
func (m *Manager) closeLease() {
	m.lease.mu.Lock()
	m.lease.closed = true
	m.lease.mu.Unlock()
}

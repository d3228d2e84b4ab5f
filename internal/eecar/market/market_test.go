package market_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/consumer"
	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// clock is a settable clock (store timestamps, TTLs).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type env struct {
	db      *ddb.Store
	client  *dynamodb.Client
	st      *store.Store
	m       *market.Market
	clock   *clock
	seller  store.Company
	buyer   store.Company
	notes   atomic.Int64
	polls   atomic.Int64
	stopped chan struct{}
	blobs   blob.Store
}

func newEnv(t *testing.T, follow bool) *env {
	t.Helper()
	clk := &clock{t: time.Now().UTC()}
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true, TTLInterval: time.Hour, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	e := &env{db: db, client: ddb.NewClient(db), clock: clk}
	table, err := store.EnsureTable(ctx, e.client, "")
	if err != nil {
		t.Fatal(err)
	}
	e.st = store.New(e.client, table, &store.Options{Now: e.clock.now})
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e.blobs = blobs
	e.m = market.New(e.st, blobs, market.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Notify: func(context.Context, store.Notification) { e.notes.Add(1) },
	})
	if e.seller, _, err = e.st.CreateCompany(ctx, "Seoul EV Recycling", "recycling"); err != nil {
		t.Fatal(err)
	}
	if e.buyer, _, err = e.st.CreateCompany(ctx, "Busan ESS", "energy"); err != nil {
		t.Fatal(err)
	}
	if follow {
		e.follow(t)
	}
	return e
}

// follow starts the market's stream follower (stopped at cleanup) and
// waits until it has polled.
func (e *env) follow(t *testing.T) {
	t.Helper()
	fctx, stop := context.WithCancel(context.Background())
	e.stopped = make(chan struct{})
	go func() {
		defer close(e.stopped)
		_ = e.m.Follow(fctx, e.client, ddb.NewStreamsClient(e.db), consumer.Options{
			PollInterval: 2 * time.Millisecond,
			AfterPoll:    func(int) { e.polls.Add(1) },
		})
	}()
	t.Cleanup(func() { stop(); <-e.stopped })
	e.settle(t)
}

// settle waits until the stream follower has polled twice more (so every
// record written before the call has been handled).
func (e *env) settle(t *testing.T) {
	t.Helper()
	start := e.polls.Load()
	deadline := time.Now().Add(5 * time.Second)
	for e.polls.Load() < start+3 {
		if time.Now().After(deadline) {
			t.Fatal("stream follower is not polling")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

func battery(name string, price float64, soh float64) market.PartInput {
	return market.PartInput{
		Name: name, Category: "battery", Manufacturer: "LG Energy Solution", Model: "Ioniq 5", Year: 2022,
		Condition: "중고", Price: ptr(price), Quantity: ptr(2), Description: "NCM 배터리 팩, ESS 재사용 가능",
		Specs:    map[string]any{"electricalProps": map[string]any{"voltage": 697, "capacity": 72.6}, "chemicalProps": map[string]any{"cathode": "NCM811", "soh": soh}},
		UseCases: []store.UseCase{{Industry: "ESS", Application: "에너지 저장", SuccessCase: true}},
	}
}

func TestPartsAndAccessPattern1(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 5; i++ {
		p, err := e.m.RegisterPart(ctx, e.seller.ID, battery(fmt.Sprintf("pack %d", i), 1000+float64(i), 90))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
		e.clock.add(time.Second)
	}
	motor := battery("drive motor", 500, 0)
	motor.Category = "motor"
	if _, err := e.m.RegisterPart(ctx, e.seller.ID, motor); err != nil {
		t.Fatal(err)
	}
	// Merged get: METADATA + SPEC + VECTOR + USAGE#.
	p, err := e.st.GetPart(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.Condition != "used" || p.Vector == nil || p.Vector.Dimension != 256 || len(p.UseCases) != 1 || p.Specs["chemicalProps"] == nil {
		t.Fatalf("merged part %+v", p)
	}
	// Category listing newest first, with a cursor.
	page1, cur, err := e.st.ListByCategory(ctx, "battery", 3, "")
	if err != nil || len(page1) != 3 || cur == "" {
		t.Fatalf("page1 %d %q %v", len(page1), cur, err)
	}
	page2, cur2, err := e.st.ListByCategory(ctx, "battery", 3, cur)
	if err != nil || len(page2) != 2 {
		t.Fatalf("page2 %d %v", len(page2), err)
	}
	got := []string{}
	for _, x := range append(page1, page2...) {
		got = append(got, x.ID)
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if fmt.Sprint(got) != fmt.Sprint(want) || cur2 != "" {
		t.Fatalf("order %v, want %v (cursor %q)", got, want, cur2)
	}
	if _, _, err := e.st.ListByCategory(ctx, "battery", 3, "garbage"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad cursor: %v", err)
	}
	// Only the seller may change or delete.
	if _, err := e.m.UpdatePart(ctx, e.buyer.ID, ids[0], battery("x", 1, 1)); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("foreign update: %v", err)
	}
	if err := e.m.DeletePart(ctx, e.buyer.ID, ids[0]); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("foreign delete: %v", err)
	}
	// Update replaces use cases.
	in := battery("pack 0 v2", 900, 88)
	in.UseCases = []store.UseCase{{Industry: "물류", Application: "지게차"}, {Industry: "해양", Application: "electric boat"}}
	up, err := e.m.UpdatePart(ctx, e.seller.ID, ids[0], in)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ = e.st.GetPart(ctx, ids[0]); len(p.UseCases) != 2 || p.Name != "pack 0 v2" || p.CreatedAt != up.CreatedAt {
		t.Fatalf("after update %+v", p)
	}
	if err := e.m.DeletePart(ctx, e.seller.ID, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.GetPart(ctx, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted part: %v", err)
	}
}

func TestValidation(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		edit func(*market.PartInput)
	}{
		{"category", func(p *market.PartInput) { p.Category = "wheels" }},
		{"condition", func(p *market.PartInput) { p.Condition = "broken" }},
		{"negative price", func(p *market.PartInput) { p.Price = ptr(-1.0) }},
		{"no price", func(p *market.PartInput) { p.Price = nil }},
		{"negative quantity", func(p *market.PartInput) { p.Quantity = ptr(-3) }},
		{"year", func(p *market.PartInput) { p.Year = 1900 }},
		{"name", func(p *market.PartInput) { p.Name = " " }},
		{"reserved spec", func(p *market.PartInput) { p.Specs = map[string]any{"PK": "x"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := battery("x", 1, 90)
			c.edit(&in)
			if _, err := e.m.RegisterPart(ctx, e.seller.ID, in); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%v, want ErrInvalid", err)
			}
		})
	}
	for _, cond := range []string{"신품", "중고", "재생", "new", "USED", "refurbished"} {
		in := battery("x", 1, 90)
		in.Condition = cond
		if _, err := e.m.RegisterPart(ctx, e.seller.ID, in); err != nil {
			t.Fatalf("condition %q: %v", cond, err)
		}
	}
}

func TestNeedsAccessPattern2AndPriorityOrder(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	for i, pr := range []string{"low", "high", "medium", "high"} {
		status := store.NeedActive
		if i == 3 {
			status = store.NeedFulfilled
		}
		id, _ := e.st.NewID("need_")
		if _, err := e.st.PutNeed(ctx, store.Need{ID: id, CompanyID: e.buyer.ID, CompanyName: "Busan ESS", Priority: pr, Status: status,
			RequiredSpecs: store.RequiredSpecs{Category: "battery", MinQuantity: 1, MaxPrice: 5000}}); err != nil {
			t.Fatal(err)
		}
		e.clock.add(time.Second)
	}
	active, err := e.st.ListNeeds(ctx, e.buyer.ID, store.NeedActive)
	if err != nil || len(active) != 3 {
		t.Fatalf("active needs %d %v", len(active), err)
	}
	byPriority, err := e.st.NeedsByStatus(ctx, store.NeedActive, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, n := range byPriority {
		order = append(order, n.Priority)
	}
	if fmt.Sprint(order) != "[high medium low]" {
		t.Fatalf("GSI1 order %v, want high medium low (alphabetical would be high low medium)", order)
	}
	if _, err := e.st.PutNeed(ctx, store.Need{ID: "n", CompanyID: e.buyer.ID, Priority: "urgent"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad priority: %v", err)
	}
}

func TestProposalsAccessPattern3AndStateMachine(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	third, _, _ := e.st.CreateCompany(ctx, "Third Party", "")
	p, err := e.st.CreateProposal(ctx, store.Proposal{ID: "prop_1", FromCompanyID: e.seller.ID, ToCompanyID: e.buyer.ID, PartIDs: []string{"part_x"}, ProposalType: "sell", Quantity: 2, PriceOffer: 1000})
	if err != nil || p.Status != store.ProposalPending {
		t.Fatalf("%+v %v", p, err)
	}
	e.clock.add(time.Second) // notifications are listed by sent time
	pending, _ := e.st.ListProposals(ctx, e.buyer.ID, store.ProposalPending)
	if len(pending) != 1 {
		t.Fatalf("buyer's pending %d", len(pending))
	}
	if _, err := e.st.GetProposal(ctx, third.ID, "prop_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("third party sees the proposal: %v", err)
	}
	if _, err := e.st.Respond(ctx, e.seller.ID, "prop_1", store.Response{Action: store.ActionAccept}); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("the proposer answered its own proposal: %v", err)
	}
	// Counter: negotiating, the proposer's turn.
	p, err = e.st.Respond(ctx, e.buyer.ID, "prop_1", store.Response{Action: store.ActionCounter, PriceOffer: 800})
	if err != nil || p.Status != store.ProposalNegotiating || p.ToCompanyID != e.seller.ID || p.PriceOffer != 800 || p.RespondedAt == "" {
		t.Fatalf("counter %+v %v", p, err)
	}
	if _, err := e.st.Respond(ctx, e.buyer.ID, "prop_1", store.Response{Action: store.ActionAccept}); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("responding out of turn: %v", err)
	}
	negotiating, _ := e.st.ListProposals(ctx, e.seller.ID, store.ProposalNegotiating)
	if len(negotiating) != 1 {
		t.Fatalf("seller's negotiating %d", len(negotiating))
	}
	e.clock.add(time.Second)
	// Two racing accepts: exactly one applies.
	var ok, lost atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.st.Respond(ctx, e.seller.ID, "prop_1", store.Response{Action: store.ActionAccept}); err == nil {
				ok.Add(1)
			} else if errors.Is(err, store.ErrState) {
				lost.Add(1)
			} else {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || lost.Load() != 4 {
		t.Fatalf("%d accepts applied, %d refused", ok.Load(), lost.Load())
	}
	p, _ = e.st.GetProposal(ctx, e.buyer.ID, "prop_1")
	if p.Status != store.ProposalAccepted || len(p.History) != 2 {
		t.Fatalf("final %+v", p)
	}
	if _, err := e.st.Respond(ctx, e.buyer.ID, "prop_1", store.Response{Action: store.ActionReject}); !errors.Is(err, store.ErrForbidden) && !errors.Is(err, store.ErrState) {
		t.Fatalf("respond after accept: %v", err)
	}
	// Each step notified the other party.
	ns, _ := e.st.Notifications(ctx, e.buyer.ID, 10)
	if len(ns) != 2 || ns[0].Type != "proposal_accepted" || ns[1].Type != "proposal_received" {
		t.Fatalf("buyer's notifications %+v", ns)
	}
}

func TestWatchTriggersOncePerPartAccessPattern5(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()
	w, err := e.m.CreateWatch(ctx, e.buyer.ID, store.Watch{Criteria: store.WatchCriteria{Category: "battery", MaxPrice: 2000, MinSpecs: map[string]float64{"chemicalProps.soh": 80}}})
	if err != nil {
		t.Fatal(err)
	}
	active, _ := e.st.ListWatches(ctx, e.buyer.ID, store.WatchActive)
	if len(active) != 1 || active[0].ID != w.ID {
		t.Fatalf("active watches %+v", active)
	}
	match, err := e.m.RegisterPart(ctx, e.seller.ID, battery("good pack", 1500, 92))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.RegisterPart(ctx, e.seller.ID, battery("tired pack", 1500, 60)); err != nil { // SOH too low
		t.Fatal(err)
	}
	if _, err := e.m.RegisterPart(ctx, e.seller.ID, battery("dear pack", 5000, 95)); err != nil { // too expensive
		t.Fatal(err)
	}
	e.settle(t)
	// The matching part is updated twice: still one trigger.
	for i := 0; i < 2; i++ {
		in := battery(fmt.Sprintf("good pack v%d", i+2), 1400, 91)
		if _, err := e.m.UpdatePart(ctx, e.seller.ID, match.ID, in); err != nil {
			t.Fatal(err)
		}
		e.settle(t)
	}
	ts, err := e.st.Triggers(ctx, w.ID)
	if err != nil || len(ts) != 1 || ts[0].PartID != match.ID {
		t.Fatalf("triggers %+v %v", ts, err)
	}
	ns, _ := e.st.Notifications(ctx, e.buyer.ID, 10)
	if len(ns) != 1 || ns[0].Type != "part_available" || e.notes.Load() != 1 {
		t.Fatalf("notifications %+v (webhook calls %d)", ns, e.notes.Load())
	}
	// A part written by "another process" (straight to the store) triggers too.
	other := store.Part{ID: "part_other", Metadata: store.Metadata{Name: "직접 등록 팩", Category: "battery", Manufacturer: "CATL", Condition: "used", Price: 1000, Quantity: 1, SellerID: e.seller.ID},
		Specs: map[string]any{"chemicalProps": map[string]any{"soh": 85}}}
	if _, err := e.st.PutPart(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if ts, _ = e.st.Triggers(ctx, w.ID); len(ts) != 2 {
		t.Fatalf("triggers after a foreign write %+v", ts)
	}
	if _, ok := e.m.Index().Get("part_other"); !ok {
		t.Fatal("a part written by another process is not searchable")
	}
	// A cancelled watch no longer triggers.
	if _, err := e.m.CancelWatch(ctx, e.buyer.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if _, err := e.m.RegisterPart(ctx, e.seller.ID, battery("late pack", 1000, 99)); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if ts, _ = e.st.Triggers(ctx, w.ID); len(ts) != 2 {
		t.Fatalf("cancelled watch triggered: %+v", ts)
	}
	// Notifications are visible to their recipient only.
	if err := e.st.MarkRead(ctx, e.seller.ID, ns[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("seller marked the buyer's notification: %v", err)
	}
	if err := e.st.MarkRead(ctx, e.buyer.ID, ns[0].ID); err != nil {
		t.Fatal(err)
	}
}

func TestSearchCacheAccessPattern4(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	if _, err := e.m.RegisterPart(ctx, e.seller.ID, battery("Ioniq 5 battery pack", 1500, 92)); err != nil {
		t.Fatal(err)
	}
	req := market.SearchRequest{Query: "ioniq battery pack", TopK: 5}
	first, err := e.m.Search(ctx, req)
	if err != nil || first.Cached || len(first.Results) != 1 {
		t.Fatalf("first %+v %v", first, err)
	}
	for i := 0; i < 3; i++ {
		again, err := e.m.Search(ctx, req)
		if err != nil || !again.Cached || len(again.Results) != 1 || again.Results[0].Reason == "" || again.Results[0].Part == nil {
			t.Fatalf("again %+v %v", again, err)
		}
	}
	other := market.SearchRequest{Query: "battery", TopK: 5}
	for i := 0; i < 11; i++ {
		if _, err := e.m.Search(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	top, err := e.st.TopCached(ctx, 10)
	if err != nil || len(top) != 2 || top[0].Query != "battery" || top[0].HitCount != 10 || top[1].HitCount != 3 {
		t.Fatalf("top cached %+v %v (10 must sort above 3)", top, err)
	}
	// A part registered after a cached search is not hidden by the cache.
	if _, err := e.m.RegisterPart(ctx, e.seller.ID, battery("Ioniq 5 battery pack, second", 1400, 90)); err != nil {
		t.Fatal(err)
	}
	after, err := e.m.Search(ctx, req)
	if err != nil || after.Cached || len(after.Results) != 2 {
		t.Fatalf("after a new part: cached %v, %d results, %v", after.Cached, len(after.Results), err)
	}
	// The cache expires after 7 days (TTL), notifications after 30.
	e.clock.add(8 * 24 * time.Hour)
	if res, _ := e.m.Search(ctx, req); res.Cached {
		t.Fatal("an expired cache entry was used")
	}
}

func TestTTLDeletesCacheAndNotifications(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	n, err := e.st.Notify(ctx, store.Notification{RecipientID: e.buyer.ID, Type: "compliance_violation", Title: "t", Message: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.PutMatch(ctx, store.CachedMatch{QueryHash: "h1", Query: "q"}); err != nil {
		t.Fatal(err)
	}
	// The items carry the document's TTL attribute; the store's sweeper
	// deletes them once it is in the past.
	ttlOf := func(pk, sk string) int64 {
		out, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.st.Table()), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk}}})
		if err != nil || out.Item == nil {
			t.Fatalf("get %s: %v", pk, err)
		}
		n, ok := out.Item["TTL"].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("%s has no numeric TTL", pk)
		}
		var v int64
		fmt.Sscan(n.Value, &v)
		return v
	}
	now := e.clock.now()
	if got := ttlOf("NOTIFICATION#"+n.ID, "METADATA"); got != now.Add(30*24*time.Hour).Unix() {
		t.Fatalf("notification TTL %d", got)
	}
	if got := ttlOf("MATCH#h1", "RESULT"); got != now.Add(7*24*time.Hour).Unix() {
		t.Fatalf("cache TTL %d", got)
	}
	// 31 days later the store's TTL sweeper deletes both.
	e.clock.add(31 * 24 * time.Hour)
	if n, err := e.db.SweepExpired(ctx); err != nil || n < 2 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if ns, _ := e.st.Notifications(ctx, e.buyer.ID, 10); len(ns) != 0 {
		t.Fatalf("notifications after expiry %+v", ns)
	}
}

// TestFollowCatchesUpAfterLoad writes a part and a watch through another
// process's market after this one's Load and before its stream follower
// starts (the follower starts at the stream's latest position): the
// follower reads them from the table once it has its position, so the
// part is found and the watch notifies.
func TestFollowCatchesUpAfterLoad(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	if err := e.m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	other := market.New(e.st, e.blobs, market.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	gap, err := other.RegisterPart(ctx, e.seller.ID, battery("pack written in the gap", 1000, 90))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.CreateWatch(ctx, e.buyer.ID, store.Watch{Criteria: store.WatchCriteria{Category: "battery"}}); err != nil {
		t.Fatal(err)
	}
	e.follow(t)
	res, err := e.m.Search(ctx, market.SearchRequest{Query: "pack written in the gap", TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || res.Results[0].PartID != gap.ID {
		t.Fatalf("search after the follower started: %+v, want the part written in the gap first", res.Results)
	}
	if _, err := other.RegisterPart(ctx, e.seller.ID, battery("pack written after", 1200, 90)); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if n := e.notes.Load(); n != 1 {
		t.Fatalf("%d notifications for the watch written in the gap, want 1 (the part written after; the part written before the watch does not trigger it)", n)
	}
}

// TestFollowDropsWhatWasDeletedInTheGap withdraws a part and cancels a
// watch through another process after this one's Load and before its
// stream follower starts: once the follower has its position, the part is
// no longer found and the watch no longer notifies.
func TestFollowDropsWhatWasDeletedInTheGap(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	gone, err := e.m.RegisterPart(ctx, e.seller.ID, battery("pack withdrawn in the gap", 1000, 90))
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.m.CreateWatch(ctx, e.buyer.ID, store.Watch{Criteria: store.WatchCriteria{Category: "battery"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	other := market.New(e.st, e.blobs, market.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := other.DeletePart(ctx, e.seller.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := other.CancelWatch(ctx, e.buyer.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	e.follow(t)
	res, err := e.m.Search(ctx, market.SearchRequest{Query: "pack withdrawn in the gap", TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Results {
		if r.PartID == gone.ID {
			t.Fatalf("the part withdrawn in the gap is still found: %+v", res.Results)
		}
	}
	if ids, _ := e.m.SellerParts(e.seller.ID, "", 10); slices.Contains(ids, gone.ID) {
		t.Fatalf("the part withdrawn in the gap is still listed among the seller's parts: %v", ids)
	}
	before := e.notes.Load()
	if _, err := other.RegisterPart(ctx, e.seller.ID, battery("pack written after", 1200, 90)); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if n := e.notes.Load() - before; n != 0 {
		t.Fatalf("%d notifications from the watch cancelled in the gap, want 0", n)
	}
}

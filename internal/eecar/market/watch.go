package market

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/quarrydb/quarry/ddb/consumer"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// CreateWatch registers a buyer's watch.
func (m *Market) CreateWatch(ctx context.Context, buyerID string, w store.Watch) (store.Watch, error) {
	if w.Criteria.Category != "" && !store.ValidCategory(w.Criteria.Category) {
		return store.Watch{}, fmt.Errorf("%w: unknown category %q", store.ErrInvalid, w.Criteria.Category)
	}
	if w.Criteria.MaxPrice < 0 {
		return store.Watch{}, fmt.Errorf("%w: maxPrice must be ≥ 0", store.ErrInvalid)
	}
	id, err := m.st.NewID("w_")
	if err != nil {
		return store.Watch{}, err
	}
	w.ID, w.BuyerID, w.Status, w.CreatedAt, w.TriggeredAt = id, buyerID, store.WatchActive, "", ""
	if w, err = m.st.PutWatch(ctx, w); err != nil {
		return store.Watch{}, err
	}
	m.mu.Lock()
	m.watches[w.ID] = w
	m.mu.Unlock()
	return w, nil
}

// CancelWatch cancels a buyer's watch.
func (m *Market) CancelWatch(ctx context.Context, buyerID, id string) (store.Watch, error) {
	w, err := m.st.CancelWatch(ctx, buyerID, id)
	if err != nil {
		return store.Watch{}, err
	}
	m.mu.Lock()
	delete(m.watches, id)
	m.mu.Unlock()
	return w, nil
}

// Meets reports whether a part meets a watch's criteria: category,
// price ≤ maxPrice, every minSpecs path at least its minimum, and every
// keyword (when given) among the part's words.
func (m *Market) Meets(w store.Watch, p store.Part) bool {
	return m.meets(w, m.newFacts(p))
}

// facts is what matching needs of one part, computed once however many
// watches it is matched against (its words only if a watch has keywords).
type facts struct {
	m     *Market
	p     store.Part
	specs map[string]string
	words map[string]bool
}

func (m *Market) newFacts(p store.Part) *facts {
	return &facts{m: m, p: p, specs: SpecMap(p.Specs)}
}

func (f *facts) hasWord(t string) bool {
	if f.words == nil {
		f.words = map[string]bool{}
		for _, w := range f.m.local.Tokens(PartText(f.p)) {
			f.words[w] = true
		}
	}
	return f.words[t]
}

func (m *Market) meets(w store.Watch, f *facts) bool {
	c, p := w.Criteria, f.p
	if c.Category != "" && c.Category != p.Category {
		return false
	}
	if c.MaxPrice > 0 && p.Price > c.MaxPrice {
		return false
	}
	for path, min := range c.MinSpecs {
		v, ok := f.specs[path]
		if !ok {
			return false
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || n < min {
			return false
		}
	}
	for _, t := range m.local.Tokens(c.Keywords.Text()) {
		if !f.hasWord(t) {
			return false
		}
	}
	return true
}

// evaluate writes a trigger and a notification for each active watch the
// part meets — once per (watch, part), however often the part changes.
func (m *Market) evaluate(ctx context.Context, p store.Part) error {
	f := m.newFacts(p)
	m.mu.RLock()
	var hit []store.Watch
	for _, w := range m.watches {
		if w.BuyerID != p.SellerID && m.meets(w, f) {
			hit = append(hit, w)
		}
	}
	m.mu.RUnlock()
	for _, w := range hit {
		n := store.Notification{
			RecipientID: w.BuyerID, Type: "part_available",
			Title:   "A part matching your watch is available",
			Message: fmt.Sprintf("%s (%s, %s) at %.0f", p.Name, p.Manufacturer, p.Condition, p.Price),
			Data:    map[string]any{"watchId": w.ID, "partId": p.ID, "category": p.Category},
		}
		created, n, err := m.st.RecordTrigger(ctx, w, store.Trigger{PartID: p.ID, MatchScore: 1}, n)
		if err != nil {
			return err
		}
		if created && m.o.Notify != nil {
			m.o.Notify(ctx, n)
		}
	}
	return nil
}

// Follow consumes the table's stream until ctx ends: part writes (by any
// process) refresh the search index and are matched against the active
// watches; watch writes update the active-watch list. It starts at the
// stream's latest position, after Load: once it has that position it reads
// the watches again, and the parts too when the catalogue version moved
// since Load, so that nothing another process wrote in between is missed.
func (m *Market) Follow(ctx context.Context, client *dynamodb.Client, streams *dynamodbstreams.Client, poll consumer.Options) error {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(m.st.Table())})
	if err != nil {
		return fmt.Errorf("eecar: describe table: %w", err)
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		return fmt.Errorf("eecar: table %s has no stream", m.st.Table())
	}
	poll.StartPosition = streamtypes.ShardIteratorTypeLatest
	m.following.Store(true)
	// After the first poll the follower has its position: re-read what
	// was written since Load and before it (catchUp).
	after, first := poll.AfterPoll, true
	poll.AfterPoll = func(n int) {
		if first {
			first = false
			m.catchUp(ctx)
		}
		if after != nil {
			after(n)
		}
	}
	c := consumer.New(streams, arn, consumer.NewMemoryCheckpointer(), m.handle, poll)
	return c.Run(ctx)
}

// handle applies one batch of stream records.
func (m *Market) handle(ctx context.Context, records []streamtypes.Record) error {
	parts := map[string]bool{}
	var order []string
	var version int64 // the highest catalogue version in the batch
	for _, r := range records {
		if r.Dynamodb == nil {
			continue
		}
		pk, _ := r.Dynamodb.Keys["PK"].(*streamtypes.AttributeValueMemberS)
		sk, _ := r.Dynamodb.Keys["SK"].(*streamtypes.AttributeValueMemberS)
		if pk == nil || sk == nil {
			continue
		}
		switch {
		case store.IsCatalogueVersion(pk.Value, sk.Value):
			if v, ok := r.Dynamodb.NewImage["version"].(*streamtypes.AttributeValueMemberN); ok {
				if n, err := strconv.ParseInt(v.Value, 10, 64); err == nil && n > version {
					version = n
				}
			}
		case strings.HasPrefix(pk.Value, "PART#"):
			id := strings.TrimPrefix(pk.Value, "PART#")
			if !parts[id] {
				parts[id] = true
				order = append(order, id)
			}
		case strings.HasPrefix(pk.Value, "WATCH#") && sk.Value == "METADATA":
			m.applyWatch(r)
		case strings.HasPrefix(pk.Value, "MATCH#") && sk.Value == "RESULT" && r.EventName == streamtypes.OperationTypeRemove:
			// An expired (TTL) or deleted cache item: its query vector
			// goes with it. Every process may do this; a second delete
			// finds nothing.
			k := QueryVectorKey(strings.TrimPrefix(pk.Value, "MATCH#"))
			if err := m.blobs.Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
				m.log.Warn("eecar: delete query embedding", "key", k, "err", err)
			}
		}
	}
	for _, id := range order {
		p, ok, err := m.reindex(ctx, id)
		if err != nil {
			return err
		}
		if ok {
			if err := m.evaluate(ctx, p); err != nil {
				return err
			}
		}
	}
	// A part write and its catalogue bump are one transaction, whose
	// records come in one batch: the parts above are indexed (and, once
	// catchUp has run, every earlier one).
	if m.caughtUp.Load() {
		m.noteIndexed(version)
	}
	return nil
}

func (m *Market) applyWatch(r streamtypes.Record) {
	id := strings.TrimPrefix(r.Dynamodb.Keys["PK"].(*streamtypes.AttributeValueMemberS).Value, "WATCH#")
	if r.Dynamodb.NewImage == nil {
		m.mu.Lock()
		delete(m.watches, id)
		m.mu.Unlock()
		return
	}
	w, ok := store.WatchFromItem(fromStream(r.Dynamodb.NewImage))
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok && w.Status == store.WatchActive {
		m.watches[id] = w
	} else {
		delete(m.watches, id)
	}
}

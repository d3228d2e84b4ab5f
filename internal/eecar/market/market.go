// Package market is EECAR's behaviour over its store: registering parts
// (embedding them, keeping the vector in the blob store and the index
// current), hybrid search with a result cache keyed by catalogue version,
// matching company needs, watch lists triggered from the table's stream,
// proposals, notifications and battery-health screening.
package market

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/search"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Options configures a Market.
type Options struct {
	// Embedder makes the vectors; default embed.NewLocal(256).
	Embedder embed.Embedder
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Notify, when set, is told of each notification written for a
	// company (webhook delivery).
	Notify func(ctx context.Context, n store.Notification)
	// ImageQuota bounds the bytes of the images one company uploads
	// (PutImage); 0: DefaultImageQuota, negative: no bound.
	ImageQuota int64
}

// Market is EECAR's service layer. Safe for concurrent use.
type Market struct {
	st    *store.Store
	blobs blob.Store
	emb   embed.Embedder
	local *embed.Local
	idx   *search.Index
	log   *slog.Logger
	o     Options

	mu      sync.RWMutex
	watches map[string]store.Watch

	// indexed is the catalogue version this process's index is known to
	// reflect (Load, then the stream: see noteIndexed); advanced is closed
	// and replaced each time it grows.
	vmu      sync.Mutex
	indexed  int64
	advanced chan struct{}
	// following is set by Follow: other processes may write, and their
	// writes reach the index through the stream. Without it this process
	// is the only writer and its index is always current.
	following atomic.Bool
	// caughtUp is set once the stream follower has re-read what was
	// written between Load and its start (catchUp); until then its
	// batches do not advance indexed.
	caughtUp atomic.Bool
	// loaded is the catalogue version Load read.
	loaded atomic.Int64
}

// New returns a Market. Call Load before serving and Follow to keep it in
// step with writes of other processes.
func New(st *store.Store, blobs blob.Store, o Options) *Market {
	local := embed.NewLocal(256)
	if o.Embedder == nil {
		o.Embedder = local
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Market{
		st: st, blobs: blobs, emb: o.Embedder, local: local, log: o.Logger, o: o,
		idx: search.NewIndex(local.AppendTokens), watches: map[string]store.Watch{},
		advanced: make(chan struct{}),
	}
}

// noteIndexed records that the index reflects every part write up to
// catalogue version v.
func (m *Market) noteIndexed(v int64) {
	m.vmu.Lock()
	defer m.vmu.Unlock()
	if v > m.indexed {
		m.indexed = v
		close(m.advanced)
		m.advanced = make(chan struct{})
	}
}

// IndexedVersion is the catalogue version this process's index is known
// to reflect.
func (m *Market) IndexedVersion() int64 {
	m.vmu.Lock()
	defer m.vmu.Unlock()
	return m.indexed
}

// waitIndexed waits (at most d) until the index reflects catalogue version
// v, and reports whether it does: a part written through another process
// reaches this one's index through the table's stream.
func (m *Market) waitIndexed(ctx context.Context, v int64, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		m.vmu.Lock()
		ok, ch := m.indexed >= v, m.advanced
		m.vmu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Store is the underlying store.
func (m *Market) Store() *store.Store { return m.st }

// Index is the search index (for benchmarks and tests).
func (m *Market) Index() *search.Index { return m.idx }

// PartInput is a part as POST /eecar/parts accepts it.
type PartInput struct {
	Name         string          `json:"name"`
	Category     string          `json:"category"`
	Manufacturer string          `json:"manufacturer"`
	Model        string          `json:"model"`
	Year         int             `json:"year"`
	Condition    string          `json:"condition"`
	Price        *float64        `json:"price"`
	Quantity     *int            `json:"quantity"`
	Description  string          `json:"description"`
	Images       []string        `json:"images"`
	Specs        map[string]any  `json:"specs"`
	UseCases     []store.UseCase `json:"useCases"`
}

// DefaultCondition is the condition of a part registered without one:
// EECAR is a marketplace for used parts.
const DefaultCondition = "used"

// normalizeCondition maps accepted condition words (English and the
// document's Korean) to the stored value.
func normalizeCondition(c string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(c)) {
	case "new", "신품":
		return "new", true
	case "used", "중고":
		return "used", true
	case "refurbished", "재생":
		return "refurbished", true
	}
	return "", false
}

// validate checks a part input and returns the part to store.
func (m *Market) validate(in PartInput) (store.Part, error) {
	var errs []string
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 300 {
		errs = append(errs, "name is required (at most 300 characters)")
	}
	if !store.ValidCategory(in.Category) {
		errs = append(errs, "category must be one of "+strings.Join(store.Categories(), ", "))
	}
	if strings.TrimSpace(in.Manufacturer) == "" {
		errs = append(errs, "manufacturer is required")
	}
	cond := DefaultCondition
	if strings.TrimSpace(in.Condition) != "" {
		var ok bool
		if cond, ok = normalizeCondition(in.Condition); !ok {
			errs = append(errs, "condition must be new, used or refurbished (신품, 중고, 재생)")
		}
	}
	if in.Price == nil || *in.Price < 0 || math.IsNaN(*in.Price) || math.IsInf(*in.Price, 0) {
		errs = append(errs, "price is required and must be ≥ 0")
	}
	qty := 1
	if in.Quantity != nil {
		qty = *in.Quantity
	}
	if qty < 0 {
		errs = append(errs, "quantity must be ≥ 0")
	}
	if in.Year != 0 && (in.Year < 1990 || in.Year > m.st.Now().Year()+1) {
		errs = append(errs, fmt.Sprintf("year must be between 1990 and %d", m.st.Now().Year()+1))
	}
	if len(in.Description) > 20000 {
		errs = append(errs, "description is too long (20,000 characters)")
	}
	if len(errs) > 0 {
		return store.Part{}, fmt.Errorf("%w: %s", store.ErrInvalid, strings.Join(errs, "; "))
	}
	return store.Part{
		Metadata: store.Metadata{
			Name: in.Name, Category: in.Category, Manufacturer: strings.TrimSpace(in.Manufacturer), Model: in.Model,
			Year: in.Year, Condition: cond, Price: *in.Price, Quantity: qty, Description: in.Description,
			Images: in.Images,
		},
		Specs: in.Specs, UseCases: in.UseCases,
	}, nil
}

// PartText is the searchable text of a part: everything a buyer might type.
func PartText(p store.Part) string {
	var b strings.Builder
	add := func(v ...string) {
		for _, s := range v {
			if s != "" {
				b.WriteString(s)
				b.WriteByte(' ')
			}
		}
	}
	add(p.Name, p.Category, p.Manufacturer, p.Model, p.Condition, p.Description)
	if p.Year != 0 {
		add(strconv.Itoa(p.Year))
	}
	for _, kv := range FlattenSpecs(p.Specs) {
		add(kv[0][strings.LastIndexByte(kv[0], '.')+1:], kv[1])
	}
	for _, u := range p.UseCases {
		add(u.Industry, u.Application, u.Description)
	}
	return b.String()
}

// SpecMap flattens nested specs into a map from path ("a.b") to value.
func SpecMap(specs map[string]any) map[string]string {
	out := map[string]string{}
	for _, kv := range FlattenSpecs(specs) {
		out[kv[0]] = kv[1]
	}
	return out
}

// FlattenSpecs flattens nested specs into sorted ("a.b", "value") pairs.
func FlattenSpecs(specs map[string]any) [][2]string {
	var out [][2]string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, y)
			}
		case []any:
			for _, y := range x {
				walk(prefix, y)
			}
		case nil:
		default:
			out = append(out, [2]string{prefix, fmt.Sprint(x)})
		}
	}
	walk("", specs)
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] || out[i][0] == out[j][0] && out[i][1] < out[j][1] })
	return out
}

// vectorKey is where a part's embedding lives in the blob store.
func vectorKey(partID string) string { return "vectors/" + partID + ".f32" }

func encodeVector(v []float32) []byte {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return buf
}

func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// embedPart computes a part's vector, stores it and returns its VECTOR
// reference.
func (m *Market) embedPart(ctx context.Context, p store.Part) (*store.VectorRef, []float32, error) {
	vs, err := m.emb.Embed(ctx, []string{PartText(p)})
	if err != nil {
		return nil, nil, fmt.Errorf("eecar: embed part: %w", err)
	}
	k := vectorKey(p.ID)
	if err := m.blobs.Put(ctx, k, bytes.NewReader(encodeVector(vs[0]))); err != nil {
		return nil, nil, fmt.Errorf("eecar: store vector: %w", err)
	}
	return &store.VectorRef{S3Key: k, EmbeddingModel: m.emb.Model(), Dimension: m.emb.Dimension(), CreatedAt: ddbitem.FormatTime(m.st.Now())}, vs[0], nil
}

// RegisterPart validates, embeds and writes a new part for a seller.
func (m *Market) RegisterPart(ctx context.Context, sellerID string, in PartInput) (store.Part, error) {
	p, err := m.validate(in)
	if err != nil {
		return store.Part{}, err
	}
	if p.ID, err = m.st.NewID("part_"); err != nil {
		return store.Part{}, err
	}
	p.SellerID = sellerID
	ref, vec, err := m.embedPart(ctx, p)
	if err != nil {
		return store.Part{}, err
	}
	p.Vector = ref
	if p, err = m.st.PutPart(ctx, p, nil); err != nil {
		_ = m.blobs.Delete(ctx, ref.S3Key)
		return store.Part{}, err
	}
	m.indexPart(p, vec)
	m.checkPart(ctx, p, nil)
	return p, nil
}

// UpdatePart replaces a seller's part (re-embedding it).
func (m *Market) UpdatePart(ctx context.Context, sellerID, id string, in PartInput) (store.Part, error) {
	prev, err := m.st.GetPart(ctx, id)
	if err != nil {
		return store.Part{}, err
	}
	if prev.SellerID != sellerID {
		return store.Part{}, fmt.Errorf("%w: only the seller may change part %s", store.ErrForbidden, id)
	}
	p, err := m.validate(in)
	if err != nil {
		return store.Part{}, err
	}
	p.ID, p.SellerID = id, sellerID
	ref, vec, err := m.embedPart(ctx, p)
	if err != nil {
		return store.Part{}, err
	}
	p.Vector = ref
	if p, err = m.st.PutPart(ctx, p, &prev); err != nil {
		return store.Part{}, err
	}
	m.indexPart(p, vec)
	m.checkPart(ctx, p, &prev)
	return p, nil
}

// DeletePart deletes a seller's part and its vector.
func (m *Market) DeletePart(ctx context.Context, sellerID, id string) error {
	p, err := m.st.DeletePart(ctx, id, sellerID)
	if err != nil {
		return err
	}
	m.idx.Delete(id)
	if p.Vector != nil {
		_ = m.blobs.Delete(ctx, p.Vector.S3Key)
	}
	return nil
}

// indexPart puts a part into the search index.
func (m *Market) indexPart(p store.Part, vec []float32) {
	m.idx.Put(partDoc(p, vec))
}

// partDoc is a part as the search index takes it.
func partDoc(p store.Part, vec []float32) search.Doc {
	created, _ := time.Parse(time.RFC3339Nano, p.CreatedAt)
	flat := SpecMap(p.Specs)
	soh, hasSOH := statedSOH(flat)
	return search.Doc{
		ID: p.ID, Category: p.Category, Manufacturer: p.Manufacturer, Price: p.Price, Quantity: p.Quantity,
		Text: PartText(p), Specs: flat, Vector: vec, CreatedAt: created,
		SellerID: p.SellerID, Condition: p.Condition, SOH: soh, HasSOH: hasSOH, Cathode: batteryCathode(flat),
	}
}

// SellerParts lists a seller's part ids newest first from this process's
// index (kept current by the table's stream), limit a page, after the
// cursor of the previous page; next is "" on the last page.
func (m *Market) SellerParts(sellerID, after string, limit int) (ids []string, next string) {
	return m.idx.BySeller(sellerID, after, limit)
}

// reindex reloads one part from the store (and its vector from the blob
// store) into the index, or removes it when it is gone.
func (m *Market) reindex(ctx context.Context, id string) (store.Part, bool, error) {
	p, err := m.st.GetPart(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		m.idx.Delete(id)
		return store.Part{}, false, nil
	}
	if err != nil {
		return store.Part{}, false, err
	}
	return m.indexStored(ctx, p)
}

// indexStored puts a part read from the store into the index with its
// stored vector (embedding it again when missing or of another model).
func (m *Market) indexStored(ctx context.Context, p store.Part) (store.Part, bool, error) {
	p, vec, ok, err := m.storedVector(ctx, p)
	if !ok || err != nil {
		return store.Part{}, ok, err
	}
	m.indexPart(p, vec)
	return p, true, nil
}

// storedVector returns a part read from the store with its stored vector,
// embedding it again when missing or of another model (and recording
// that, the part returned then carrying the new reference); ok is false
// when the part was deleted meanwhile (and left the index).
func (m *Market) storedVector(ctx context.Context, p store.Part) (_ store.Part, vec []float32, ok bool, err error) {
	id := p.ID
	if p.Vector != nil {
		rc, err := m.blobs.Get(ctx, p.Vector.S3Key)
		if err == nil {
			data, rerr := io.ReadAll(rc)
			rc.Close()
			if rerr == nil {
				vec = decodeVector(data)
			}
		}
	}
	if len(vec) != m.emb.Dimension() && p.Vector != nil && p.Vector.EmbeddingModel == m.emb.Model() && p.Vector.Dimension == m.emb.Dimension() {
		// The vector is recorded for this model but its blob is not here
		// (another process's blob store, not shared): embed it again into
		// this process's blobs, and leave the part alone. Recording it
		// again would be a write that every other process, missing the
		// blob too, answers with a write of its own, without end.
		v, err := m.emb.Embed(ctx, []string{PartText(p)})
		if err != nil {
			return store.Part{}, nil, false, fmt.Errorf("eecar: embed part: %w", err)
		}
		vec = v[0]
		if err := m.blobs.Put(ctx, p.Vector.S3Key, bytes.NewReader(encodeVector(vec))); err != nil {
			m.log.Warn("eecar: keep a part's vector", "part", id, "err", err)
		}
	}
	if len(vec) != m.emb.Dimension() || p.Vector == nil || p.Vector.EmbeddingModel != m.emb.Model() {
		// Missing, or from another model: embed again (and record it).
		ref, v, err := m.embedPart(ctx, p)
		if err != nil {
			return store.Part{}, nil, false, err
		}
		vec = v
		if err := m.st.SetVector(ctx, p.ID, *ref); errors.Is(err, store.ErrNotFound) {
			m.idx.Delete(id) // deleted meanwhile
			return store.Part{}, nil, false, nil
		} else if err != nil {
			return store.Part{}, nil, false, err
		}
		p.Vector = ref
	}
	return p, vec, true, nil
}

// loadBlock is the number of parts Load puts into the index at once.
const loadBlock = 1024

// Load builds the index and the active-watch list from the table.
func (m *Market) Load(ctx context.Context) error {
	_, err := m.load(ctx)
	return err
}

// load is Load, returning the ids of the parts and watches it read.
func (m *Market) load(ctx context.Context) (read map[string]bool, err error) {
	// Every part written up to this version is in the table read next.
	version, err := m.st.CatalogueVersion(ctx)
	if err != nil {
		return nil, err
	}
	parts, err := m.st.AllParts(ctx)
	if err != nil {
		return nil, err
	}
	read = make(map[string]bool, len(parts))
	// Parts go into the index loadBlock at a time through PutAll, which
	// tokenizes them in parallel; the block bounds the vectors held.
	docs := make([]search.Doc, 0, min(len(parts), loadBlock))
	for i, p := range parts {
		read[p.ID] = true
		p, vec, ok, err := m.storedVector(ctx, p)
		if err != nil {
			m.idx.PutAll(docs) // the parts read before stay searchable
			return nil, err
		}
		if ok {
			docs = append(docs, partDoc(p, vec))
		}
		if len(docs) == loadBlock || i == len(parts)-1 {
			m.idx.PutAll(docs)
			clear(docs)
			docs = docs[:0]
		}
	}
	ws, err := m.loadWatches(ctx)
	if err != nil {
		return nil, err
	}
	m.loaded.Store(version)
	m.noteIndexed(version)
	m.log.Info("eecar: loaded", "parts", len(parts), "watches", len(ws), "catalogue_version", version)
	return read, nil
}

// loadWatches adds the active watches to the active-watch list and
// returns the ids it read.
func (m *Market) loadWatches(ctx context.Context) (map[string]bool, error) {
	ws, err := m.st.ActiveWatches(ctx)
	if err != nil {
		return nil, err
	}
	read := make(map[string]bool, len(ws))
	m.mu.Lock()
	for _, w := range ws {
		m.watches[w.ID] = w
		read[w.ID] = true
	}
	m.mu.Unlock()
	return read, nil
}

// catchUp runs once the stream follower has its position: what other
// processes wrote between Load and then is in the table but not in the
// stream from that position, so the watches are read again, and the parts
// too when the catalogue version moved since Load.
//
// Reading adds; what was deleted in between (a part withdrawn, a watch
// cancelled) is what this process holds and the read did not return:
// each such part or watch is read again on its own, and dropped when it
// is gone (reindex, recheckWatch), so that a part written since the read
// is kept.
func (m *Market) catchUp(ctx context.Context) {
	defer m.caughtUp.Store(true)
	if read, err := m.loadWatches(ctx); err != nil {
		if ctx.Err() == nil {
			m.log.Warn("eecar: re-read watches after the stream follower started", "err", err)
		}
	} else {
		m.mu.RLock()
		var gone []store.Watch
		for id, w := range m.watches {
			if !read[id] {
				gone = append(gone, w)
			}
		}
		m.mu.RUnlock()
		for _, w := range gone {
			if err := m.recheckWatch(ctx, w); err != nil && ctx.Err() == nil {
				m.log.Warn("eecar: re-read a watch after the stream follower started", "watch", w.ID, "err", err)
			}
		}
	}
	v, err := m.st.CatalogueVersion(ctx)
	if err == nil && v == m.loaded.Load() {
		return
	}
	read, err := m.load(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("eecar: re-read parts after the stream follower started", "err", err)
		}
		return
	}
	for _, id := range m.idx.IDs() {
		if read[id] {
			continue
		}
		if _, _, err := m.reindex(ctx, id); err != nil && ctx.Err() == nil {
			m.log.Warn("eecar: re-read a part after the stream follower started", "part", id, "err", err)
		}
	}
}

// recheckWatch reads a watch of the active-watch list again and drops it
// when it is gone or no longer active. The list's lock is held across
// the read, so that a stream record of the same watch applied meanwhile
// is not undone.
func (m *Market) recheckWatch(ctx context.Context, w store.Watch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.st.GetWatch(ctx, w.BuyerID, w.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		delete(m.watches, w.ID)
	case err != nil:
		return err
	case cur.Status != store.WatchActive:
		delete(m.watches, w.ID)
	}
	return nil
}

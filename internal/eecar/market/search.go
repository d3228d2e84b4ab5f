package market

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/search"
	"github.com/quarrydb/quarry/internal/eecar/store"
)

// Filters are POST /eecar/search's filters.
type Filters struct {
	Category     string   `json:"category,omitempty"`
	MaxPrice     *float64 `json:"maxPrice,omitempty"`
	MinQuantity  *int     `json:"minQuantity,omitempty"`
	Manufacturer string   `json:"manufacturer,omitempty"`
	MinPrice     *float64 `json:"minPrice,omitempty"`
	// Condition is new, used or refurbished (신품, 중고, 재생).
	Condition string `json:"condition,omitempty"`
	// MinSOH keeps batteries whose stated state of health is at least it.
	MinSOH *float64 `json:"minSoh,omitempty"`
	// Cathode prefixes the part's cathode chemistry: NCM matches NCM811.
	Cathode string `json:"cathode,omitempty"`
}

// SearchRequest is POST /eecar/search.
type SearchRequest struct {
	Query   string  `json:"query"`
	Filters Filters `json:"filters"`
	TopK    int     `json:"topK"`
}

// Result is one match.
type Result struct {
	PartID       string             `json:"partId"`
	Score        float64            `json:"score"`
	SearchScores map[string]float64 `json:"searchScores"`
	Part         *store.Part        `json:"part,omitempty"`
	Reason       string             `json:"reason"`
}

// SearchResponse is the answer of POST /eecar/search.
type SearchResponse struct {
	Results []Result `json:"results"`
	Cached  bool     `json:"cached"`
	// CatalogueVersion is the version the results were computed at.
	CatalogueVersion int64 `json:"catalogueVersion"`
}

// IndexWait bounds how long a search waits for this process's index to
// reach the catalogue version it read; after that it answers from the
// index as it stands, without caching the result.
const IndexWait = 2 * time.Second

// Search runs a hybrid search (0.7·vector + 0.3·BM25) with filters. Results
// are cached as MATCH#{hash}/RESULT for 7 days, keyed by the query, the
// filters, topK and the catalogue version, so a part registered after a
// cached search is never hidden by it.
func (m *Market) Search(ctx context.Context, req SearchRequest) (SearchResponse, error) {
	req.Query = strings.TrimSpace(req.Query)
	if req.Query == "" || len(req.Query) > 2000 {
		return SearchResponse{}, fmt.Errorf("%w: query is required (at most 2,000 characters)", store.ErrInvalid)
	}
	if req.TopK <= 0 {
		req.TopK = 10
	}
	if req.TopK > 100 {
		return SearchResponse{}, fmt.Errorf("%w: topK must be at most 100", store.ErrInvalid)
	}
	if req.Filters.Category != "" && !store.ValidCategory(req.Filters.Category) {
		return SearchResponse{}, fmt.Errorf("%w: unknown category %q", store.ErrInvalid, req.Filters.Category)
	}
	if strings.TrimSpace(req.Filters.Condition) != "" {
		c, ok := normalizeCondition(req.Filters.Condition)
		if !ok {
			return SearchResponse{}, fmt.Errorf("%w: filters.condition must be new, used or refurbished (신품, 중고, 재생)", store.ErrInvalid)
		}
		req.Filters.Condition = c
	}
	if f := req.Filters; f.MinPrice != nil && f.MaxPrice != nil && *f.MinPrice > *f.MaxPrice {
		return SearchResponse{}, fmt.Errorf("%w: filters.minPrice must not be above filters.maxPrice", store.ErrInvalid)
	}
	if f := req.Filters.MinSOH; f != nil && (*f < 0 || *f > 100) {
		return SearchResponse{}, fmt.Errorf("%w: filters.minSoh must be between 0 and 100", store.ErrInvalid)
	}
	version, err := m.st.CatalogueVersion(ctx)
	if err != nil {
		return SearchResponse{}, err
	}
	hash := store.QueryHash(strings.ToLower(req.Query), filterKey(req.Filters), strconv.Itoa(req.TopK), strconv.FormatInt(version, 10), m.emb.Model())
	if cm, ok, err := m.st.GetMatch(ctx, hash); err == nil && ok {
		out := SearchResponse{Cached: true, CatalogueVersion: version, Results: make([]Result, 0, len(cm.MatchedParts))}
		for _, mp := range cm.MatchedParts {
			out.Results = append(out.Results, Result{PartID: mp.PartID, Score: mp.Score, SearchScores: mp.Scores, Reason: mp.Reason})
		}
		return m.attachParts(ctx, out)
	}
	// The index answers once it reflects the version read (a part written
	// through another process arrives through the stream), and only then
	// is the result cached: a result cached before would hide the part
	// from every process until the next write.
	current := !m.following.Load() || m.waitIndexed(ctx, version, IndexWait)
	out, vec, err := m.searchIndex(ctx, req.Query, req.Filters, req.TopK)
	if err != nil {
		return SearchResponse{}, err
	}
	out.CatalogueVersion = version
	if !current {
		return m.attachParts(ctx, out)
	}
	cm := store.CachedMatch{QueryHash: hash, Query: req.Query, ModelUsed: m.emb.Model()}
	if err := m.blobs.Put(ctx, QueryVectorKey(hash), bytes.NewReader(encodeVector(vec))); err != nil {
		m.log.Warn("eecar: keep query embedding", "err", err)
	} else {
		cm.QueryEmbedding = QueryVectorKey(hash)
	}
	for _, r := range out.Results {
		cm.MatchedParts = append(cm.MatchedParts, store.MatchedPart{PartID: r.PartID, Score: r.Score, Scores: r.SearchScores, Reason: r.Reason})
	}
	if err := m.st.PutMatch(ctx, cm); err != nil {
		m.log.Warn("eecar: cache search result", "err", err)
	}
	return m.attachParts(ctx, out)
}

func filterKey(f Filters) string {
	var b strings.Builder
	b.WriteString(f.Category + "|" + strings.ToLower(f.Manufacturer) + "|")
	if f.MaxPrice != nil {
		b.WriteString(strconv.FormatFloat(*f.MaxPrice, 'g', -1, 64))
	}
	b.WriteString("|")
	if f.MinQuantity != nil {
		b.WriteString(strconv.Itoa(*f.MinQuantity))
	}
	// The newer filters are written only when set, so that keys of
	// searches without them stay what they were.
	if f.MinPrice != nil || f.Condition != "" || f.MinSOH != nil || f.Cathode != "" {
		b.WriteString("|" + f.Condition + "|" + search.CathodeKey(f.Cathode) + "|")
		if f.MinPrice != nil {
			b.WriteString(strconv.FormatFloat(*f.MinPrice, 'g', -1, 64))
		}
		b.WriteString("|")
		if f.MinSOH != nil {
			b.WriteString(strconv.FormatFloat(*f.MinSOH, 'g', -1, 64))
		}
	}
	return b.String()
}

// QueryVectorKey is the blob key of a cached query's embedding, the
// queryEmbedding of its MATCH#{hash}/RESULT item.
func QueryVectorKey(queryHash string) string { return "queries/" + queryHash + ".f32" }

// searchIndex runs the query against the in-memory index and returns the
// results with the query's vector.
func (m *Market) searchIndex(ctx context.Context, query string, f Filters, topK int) (SearchResponse, []float32, error) {
	vs, err := m.emb.Embed(ctx, []string{query})
	if err != nil {
		return SearchResponse{}, nil, fmt.Errorf("eecar: embed query: %w", err)
	}
	hits := m.idx.Search(search.Query{
		Text: query, Vector: vs[0], TopK: topK, Mode: search.Hybrid,
		Filters: search.Filters{Category: f.Category, MaxPrice: f.MaxPrice, MinQuantity: f.MinQuantity, Manufacturer: f.Manufacturer,
			MinPrice: f.MinPrice, Condition: f.Condition, MinSOH: f.MinSOH, Cathode: f.Cathode},
	})
	// The index keeps no specs: each hit's part is read here, its specs
	// give the hit's matched specs and reason, and the result carries the
	// part (attachParts then has nothing left to read). A part deleted
	// since the index answered is dropped.
	out := SearchResponse{Results: make([]Result, 0, len(hits))}
	for _, h := range hits {
		p, err := m.st.GetPart(ctx, h.ID)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return SearchResponse{}, nil, err
		}
		specs := SpecMap(p.Specs)
		h.MatchedSpecs = m.idx.MatchedSpecs(query, specs)
		out.Results = append(out.Results, Result{
			PartID: h.ID, Score: h.Score,
			SearchScores: map[string]float64{"hybrid": h.Scores.Hybrid, "vector": h.Scores.Vector, "bm25": h.Scores.BM25},
			Reason:       search.Reason(h, search.Doc{Specs: specs}),
			Part:         &p,
		})
	}
	return out, vs[0], nil
}

// attachParts adds each result's part (METADATA + SPEC + …) unless it has
// it; results whose part was deleted meanwhile are dropped.
func (m *Market) attachParts(ctx context.Context, out SearchResponse) (SearchResponse, error) {
	kept := out.Results[:0]
	for _, r := range out.Results {
		if r.Part != nil {
			kept = append(kept, r)
			continue
		}
		p, err := m.st.GetPart(ctx, r.PartID)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return SearchResponse{}, err
		}
		r.Part = &p
		kept = append(kept, r)
	}
	out.Results = kept
	return out, nil
}

// NeedMatches searches for a need: its requiredSpecs become the query
// (category, material preferences, target application, production
// process) and the filters (category, maxPrice, minQuantity).
func (m *Market) NeedMatches(ctx context.Context, n store.Need, topK int) (SearchResponse, error) {
	rs := n.RequiredSpecs
	q := strings.Join(append([]string{rs.Category, n.TargetApplication, n.ProductionProcess, n.Industry}, rs.MaterialPreferences...), " ")
	f := Filters{Category: rs.Category}
	if rs.MaxPrice > 0 {
		mp := rs.MaxPrice
		f.MaxPrice = &mp
	}
	if rs.MinQuantity > 0 {
		mq := rs.MinQuantity
		f.MinQuantity = &mq
	}
	if strings.TrimSpace(q) == "" {
		q = "part"
	}
	return m.Search(ctx, SearchRequest{Query: q, Filters: f, TopK: topK})
}

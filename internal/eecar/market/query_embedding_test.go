package market_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// TestCachedMatchKeepsQueryEmbedding checks the cache item's
// queryEmbedding: the blob key of the query's vector, which holds exactly
// the embedder's vector of the query, and which goes when the item
// expires.
func TestCachedMatchKeepsQueryEmbedding(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()
	if _, err := e.m.RegisterPart(ctx, e.seller.ID, battery("Ioniq 5 battery pack", 1500, 92)); err != nil {
		t.Fatal(err)
	}
	const query = "ioniq battery pack"
	if _, err := e.m.Search(ctx, market.SearchRequest{Query: query, TopK: 5}); err != nil {
		t.Fatal(err)
	}
	top, err := e.st.TopCached(ctx, 10)
	if err != nil || len(top) != 1 {
		t.Fatalf("cached %+v %v", top, err)
	}
	cm := top[0]
	if cm.QueryEmbedding != market.QueryVectorKey(cm.QueryHash) {
		t.Fatalf("queryEmbedding %q, want %q", cm.QueryEmbedding, market.QueryVectorKey(cm.QueryHash))
	}
	rc, err := e.blobs.Get(ctx, cm.QueryEmbedding)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	want, err := embed.NewLocal(256).Embed(ctx, []string{query})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 4*len(want[0]) {
		t.Fatalf("%d bytes, want %d float32", len(data), len(want[0]))
	}
	for i, w := range want[0] {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])); got != w {
			t.Fatalf("component %d = %v, want %v", i, got, w)
		}
	}
	// A cache hit keeps it.
	if res, err := e.m.Search(ctx, market.SearchRequest{Query: query, TopK: 5}); err != nil || !res.Cached {
		t.Fatalf("second search: cached %v, %v", res.Cached, err)
	}
	if again, _ := e.st.TopCached(ctx, 10); len(again) != 1 || again[0].QueryEmbedding != cm.QueryEmbedding {
		t.Fatalf("after a hit %+v", again)
	}
	// After 7 days the TTL sweeper deletes the item, and the vector goes.
	e.clock.add(8 * 24 * time.Hour)
	if n, err := e.db.SweepExpired(ctx); err != nil || n < 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := e.blobs.Get(ctx, cm.QueryEmbedding)
		if errors.Is(err, blob.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("query vector still there after its cache item expired: %v", err)
		}
		e.settle(t)
	}
}

package market_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/store"
)

// TestSearchFiltersConditionSOHCathodePrice checks the filters the
// console's search form sends: condition, minimum SOH, cathode prefix and
// a price range.
func TestSearchFiltersConditionSOHCathodePrice(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	reg := func(name string, price, soh float64, cathode, cond string) string {
		in := battery(name, price, soh)
		in.Condition = cond
		in.Specs["chemicalProps"] = map[string]any{"cathode": cathode, "soh": soh}
		p, err := e.m.RegisterPart(ctx, e.seller.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	ncm := reg("NCM pack 92", 8_000_000, 92, "NCM811", "used")
	lfp := reg("LFP pack 75", 5_000_000, 75, "LFP", "refurbished")
	old := reg("NCM pack 60", 2_000_000, 60, "NCM622", "used")
	for _, tc := range []struct {
		name string
		f    market.Filters
		want []string
	}{
		{"none", market.Filters{}, []string{ncm, lfp, old}},
		{"min soh 80", market.Filters{MinSOH: ptr(80.0)}, []string{ncm}},
		{"cathode ncm", market.Filters{Cathode: "ncm"}, []string{ncm, old}},
		{"condition 재생", market.Filters{Condition: "재생"}, []string{lfp}},
		{"price 3M to 9M", market.Filters{MinPrice: ptr(3e6), MaxPrice: ptr(9e6)}, []string{ncm, lfp}},
		{"cathode and soh", market.Filters{Cathode: "NCM", MinSOH: ptr(50.0), MaxPrice: ptr(3e6)}, []string{old}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.m.Search(ctx, market.SearchRequest{Query: "배터리 팩", Filters: tc.f, TopK: 10})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range out.Results {
				got = append(got, r.PartID)
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	for _, f := range []market.Filters{{Condition: "broken"}, {MinPrice: ptr(5.0), MaxPrice: ptr(1.0)}, {MinSOH: ptr(120.0)}} {
		if _, err := e.m.Search(ctx, market.SearchRequest{Query: "pack", Filters: f}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("filters %+v: %v", f, err)
		}
	}
	// A battery's assessment for its detail page.
	p, _ := e.st.GetPart(ctx, lfp)
	if a, ok := e.m.Assess(p); !ok || a.SOH != 75 || a.SOHEstimated || a.Recommendation != "reuse" || a.Cathode != "LFP" {
		t.Errorf("assess %+v %v", a, ok)
	}
}

// TestSellerPartsPages lists a seller's parts newest first, a page at a
// time, without the other seller's.
func TestSellerPartsPages(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	var mine []string
	for i := 0; i < 5; i++ {
		p, err := e.m.RegisterPart(ctx, e.seller.ID, battery(fmt.Sprintf("pack %d", i), 1000, 90))
		if err != nil {
			t.Fatal(err)
		}
		mine = append([]string{p.ID}, mine...)
		if _, err := e.m.RegisterPart(ctx, e.buyer.ID, battery("other", 1000, 90)); err != nil {
			t.Fatal(err)
		}
		e.clock.add(time.Second)
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		ids, next := e.m.SellerParts(e.seller.ID, after, 2)
		got = append(got, ids...)
		if next == "" {
			if pages != 2 {
				t.Errorf("%d pages", pages+1)
			}
			break
		}
		after = next
	}
	if !slices.Equal(got, mine) {
		t.Errorf("got %v, want %v", got, mine)
	}
}

// TestCompanyProposalsBothParties lists a proposal under its sender and
// its recipient, paginated, and under nobody else.
func TestCompanyProposalsBothParties(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	third, _, _ := e.st.CreateCompany(ctx, "Third", "")
	for i := 0; i < 3; i++ {
		if _, err := e.st.CreateProposal(ctx, store.Proposal{ID: fmt.Sprintf("prop_%d", i), FromCompanyID: e.seller.ID, ToCompanyID: e.buyer.ID, PartIDs: []string{"part_x"}, ProposalType: "sell"}); err != nil {
			t.Fatal(err)
		}
		e.clock.add(time.Second)
	}
	for _, co := range []string{e.seller.ID, e.buyer.ID} {
		ps, next, err := e.st.CompanyProposals(ctx, co, 2, "")
		if err != nil || len(ps) != 2 || ps[0].ID != "prop_2" || next == "" {
			t.Fatalf("first page of %s: %v %q %v", co, ps, next, err)
		}
		ps, next, err = e.st.CompanyProposals(ctx, co, 2, next)
		if err != nil || len(ps) != 1 || ps[0].ID != "prop_0" || next != "" {
			t.Fatalf("second page of %s: %v %q %v", co, ps, next, err)
		}
	}
	if ps, _, err := e.st.CompanyProposals(ctx, third.ID, 10, ""); err != nil || len(ps) != 0 {
		t.Errorf("a third company lists %v %v", ps, err)
	}
	if _, _, err := e.st.CompanyProposals(ctx, third.ID, 10, "bm90IGEgY3Vyc29y"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a forged cursor: %v", err)
	}
}

// TestImages stores a PNG by content and refuses what is not an image.
func TestImages(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	key, err := e.m.PutImage(ctx, e.seller.ID, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := market.ImageKey(market.ImagePath + key); !ok || k != key {
		t.Fatalf("ImageKey(%q) = %q %v", key, k, ok)
	}
	rc, ctype, err := e.m.Image(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if ctype != "image/png" || !bytes.Equal(data, buf.Bytes()) {
		t.Errorf("read back %s, %d bytes", ctype, len(data))
	}
	for _, bad := range [][]byte{nil, []byte("<html><script>alert(1)</script>"), bytes.Repeat([]byte{0x89}, market.MaxImageSize+1)} {
		if _, err := e.m.PutImage(ctx, e.seller.ID, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("stored %d bytes: %v", len(bad), err)
		}
	}
	for _, k := range []string{"../vectors/x.f32", "img_00.png", "img_" + key[4:68] + ".html"} {
		if _, _, err := e.m.Image(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Image(%q): %v", k, err)
		}
	}
}

// TestPagesOfNeedsWatchesTriggers reads needs, watches and a watch's
// triggers a page at a time; a cursor of one company does not open
// another's list.
func TestPagesOfNeedsWatchesTriggers(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	var w store.Watch
	for i := 0; i < 5; i++ {
		if _, err := e.m.SaveNeed(ctx, e.buyer, "", market.NeedInput{Industry: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		var err error
		if w, err = e.m.CreateWatch(ctx, e.buyer.ID, store.Watch{Criteria: store.WatchCriteria{Category: "battery"}}); err != nil {
			t.Fatal(err)
		}
		e.clock.add(time.Second)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := e.st.RecordTrigger(ctx, w, store.Trigger{PartID: fmt.Sprintf("part_%d", i)}, store.Notification{RecipientID: e.buyer.ID, Type: "part_available"}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(name string, page func(cursor string) (int, string, error)) {
		t.Helper()
		total, pages, cursor := 0, 0, ""
		for {
			n, next, err := page(cursor)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			total, pages = total+n, pages+1
			if next == "" {
				break
			}
			cursor = next
		}
		if total != 5 || pages != 3 {
			t.Errorf("%s: %d items in %d pages", name, total, pages)
		}
	}
	var needCursor, watchCursor string
	count("needs", func(c string) (int, string, error) {
		ns, next, err := e.st.NeedsPage(ctx, e.buyer.ID, 2, c)
		if needCursor == "" {
			needCursor = next
		}
		return len(ns), next, err
	})
	count("watches", func(c string) (int, string, error) {
		ws, next, err := e.st.WatchesPage(ctx, e.buyer.ID, 2, c)
		if watchCursor == "" {
			watchCursor = next
		}
		return len(ws), next, err
	})
	count("triggers", func(c string) (int, string, error) {
		ts, next, err := e.st.TriggersPage(ctx, w.ID, 2, c)
		return len(ts), next, err
	})
	count("notifications", func(c string) (int, string, error) {
		ns, next, err := e.st.NotificationsPage(ctx, e.buyer.ID, 2, c)
		return len(ns), next, err
	})
	// The seller replays the buyer's cursors: its own (empty) lists, or a
	// refusal, never the buyer's items.
	if ns, _, err := e.st.NeedsPage(ctx, e.seller.ID, 10, needCursor); err != nil || len(ns) != 0 {
		t.Errorf("the buyer's needs cursor as the seller: %v %v", ns, err)
	}
	if ws, _, err := e.st.WatchesPage(ctx, e.seller.ID, 10, watchCursor); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("the buyer's watches cursor as the seller: %v %v", ws, err)
	}
}

// fakePNG is size bytes that sniff as PNG, distinct for each n.
func fakePNG(n, size int) []byte {
	b := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{byte(n), byte(n >> 8)}, size)...)
	return b[:size]
}

// TestImageQuota plays a company that uploads without end: its images
// count against its quota, counted once per distinct upload; past it
// nothing more is stored; deleting gives the room back; another company
// can neither delete nor be charged for them; and racing uploads never
// take a company past its quota.
func TestImageQuota(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	const size = 1000
	m := market.New(e.st, e.blobs, market.Options{Logger: slog.New(slog.DiscardHandler), ImageQuota: 3 * size})
	usage := func(company string) market.ImageUsage {
		t.Helper()
		u, err := m.ImageUsage(ctx, company)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	a, err := m.PutImage(ctx, e.seller.ID, fakePNG(1, size))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.PutImage(ctx, e.seller.ID, fakePNG(1, size)); err != nil || again != a {
		t.Fatalf("the same bytes again = %q, %v; want %q", again, err, a)
	}
	if u := usage(e.seller.ID); u.Bytes != size || u.Count != 1 || u.QuotaBytes != 3*size {
		t.Fatalf("after one image uploaded twice: %+v", u)
	}
	// The buyer's copy of the same bytes is the buyer's.
	b, err := m.PutImage(ctx, e.buyer.ID, fakePNG(1, size))
	if err != nil || b == a {
		t.Fatalf("buyer's upload = %q, %v (seller's %q)", b, err, a)
	}
	for i := 2; i <= 3; i++ {
		if _, err := m.PutImage(ctx, e.seller.ID, fakePNG(i, size)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.PutImage(ctx, e.seller.ID, fakePNG(4, size)); !errors.Is(err, store.ErrQuota) {
		t.Fatalf("an upload past the quota: %v", err)
	}
	if u := usage(e.seller.ID); u.Bytes != 3*size || u.Count != 3 {
		t.Fatalf("after a refused upload: %+v", u)
	}
	// Another company cannot delete it; its owner can, and gets the room back.
	if err := m.DeleteImage(ctx, e.buyer.ID, a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("buyer deleting the seller's image: %v", err)
	}
	if rc, _, err := m.Image(ctx, a); err != nil {
		t.Fatalf("the seller's image after the buyer's attempt: %v", err)
	} else {
		rc.Close()
	}
	if err := m.DeleteImage(ctx, e.seller.ID, a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Image(ctx, a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted image is still served: %v", err)
	}
	if err := m.DeleteImage(ctx, e.seller.ID, a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	if _, err := m.PutImage(ctx, e.seller.ID, fakePNG(4, size)); err != nil {
		t.Fatalf("an upload after a delete: %v", err)
	}
	if u := usage(e.buyer.ID); u.Bytes != size || u.Count != 1 {
		t.Fatalf("buyer's usage: %+v", u)
	}

	// Racing uploads by a third company: exactly the quota's worth lands.
	third, _, err := e.st.CreateCompany(ctx, "Racer", "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, refused int
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.PutImage(ctx, third.ID, fakePNG(100+i, size))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrQuota):
				refused++
			default:
				t.Errorf("racing upload: %v", err)
			}
		}()
	}
	wg.Wait()
	if u := usage(third.ID); ok != 3 || refused != 9 || u.Bytes != 3*size || u.Count != 3 {
		t.Fatalf("12 racing uploads with room for 3: %d stored, %d refused, usage %+v", ok, refused, u)
	}
}

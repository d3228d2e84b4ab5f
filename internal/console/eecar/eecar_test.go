package eecar

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/fixture"
	"github.com/quarrydb/quarry/internal/eecar/search"
)

// fakeBackend answers the pages these tests open; the rest of Backend is
// nil and panics if called.
type fakeBackend struct {
	Backend
	hits      []Hit
	proposals map[string]Proposal
}

func (f *fakeBackend) Search(context.Context, string, Query) ([]Hit, error) { return f.hits, nil }
func (f *fakeBackend) Unread(context.Context, string) (int, error)          { return 0, nil }
func (f *fakeBackend) Part(_ context.Context, id string) (Part, error) {
	return Part{ID: id, Name: "Ioniq 5 pack", Price: 8_500_000}, nil
}

func (f *fakeBackend) Proposal(_ context.Context, _, id string) (Proposal, error) {
	p, ok := f.proposals[id]
	if !ok {
		return Proposal{}, console.ErrNotFound
	}
	return p, nil
}

func (f *fakeBackend) Proposals(context.Context, string, string, int) ([]Proposal, string, error) {
	var out []Proposal
	for _, p := range f.proposals {
		out = append(out, p)
	}
	return out, "", nil
}

// serve runs the console with the marketplace over b, signed in as the
// company "buyer".
func serve(t *testing.T, b Backend) (base string, get func(path string) string) {
	t.Helper()
	auth := console.AuthFunc(func(context.Context, string) (console.Principal, error) {
		return console.Principal{ID: "buyer", Name: "Busan ESS"}, nil
	})
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)),
		Realms: []console.Realm{{Kind: "eecar", Label: "EECAR company API key", Auth: auth}},
		Areas:  []console.Area{New(b)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	get = func(path string) string {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(get("/console/signin"))[1]
	resp, err := hc.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce}, "realm": {"eecar"}, "credential": {"k"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return srv.URL, get
}

// TestSearchNoMatches: a query whose hits share no word with it and are
// only faintly similar shows "no part matches", not every part ranked.
func TestSearchNoMatches(t *testing.T) {
	weak := []Hit{{Part: Part{ID: "p1", Name: "Kona pack"}, Score: 0.7, Vector: 0.12},
		{Part: Part{ID: "p2", Name: "Model 3 module"}, Score: 0, Vector: 0.05}}
	_, get := serve(t, &fakeBackend{hits: weak})
	page := get("/console/eecar/?q=xyzzy")
	if !strings.Contains(page, `id="hits-none"`) || strings.Contains(page, "Kona pack") {
		t.Errorf("a nonsense query's page:\n%s", page)
	}
	_, get = serve(t, &fakeBackend{hits: append([]Hit{{Part: Part{ID: "p0", Name: "Ioniq 5 pack"}, Score: 1, Vector: 0.4, BM25: 12}}, weak...)})
	page = get("/console/eecar/?q=ioniq+5+pack")
	if !strings.Contains(page, "Ioniq 5 pack") || strings.Contains(page, "Kona pack") || strings.Contains(page, "hits-none") {
		t.Errorf("a real query's page:\n%s", page)
	}
}

// TestRelevanceFloorOnFixture runs the labelled queries of EECAR's fixture
// catalogue through its index as the market does (local embedder, hybrid
// mode): every relevant part in a query's top 5 passes the floor, and
// queries of made-up or off-topic words keep nothing.
func TestRelevanceFloorOnFixture(t *testing.T) {
	ctx := context.Background()
	emb := embed.NewLocal(0)
	parts := fixture.Catalogue(fixture.QueryCatalogueSize)
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.Text()
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	idx := search.NewIndex(emb.AppendTokens)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range parts {
		idx.Put(search.Doc{ID: p.ID, Category: p.Category, Manufacturer: p.Manufacturer, Price: p.Price,
			Quantity: p.Quantity, Text: texts[i], Specs: p.FlatSpecs(), Vector: vecs[i], CreatedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	run := func(q string) []Hit {
		qv, err := emb.Embed(ctx, []string{q})
		if err != nil {
			t.Fatal(err)
		}
		var hits []Hit
		for _, h := range idx.Search(search.Query{Text: q, Vector: qv[0], TopK: 10, Mode: search.Hybrid}) {
			hits = append(hits, Hit{Part: Part{ID: h.ID}, Score: h.Score, Vector: h.Scores.Vector, BM25: h.Scores.BM25})
		}
		return hits
	}
	for _, q := range fixture.Queries() {
		all := run(q.Text)
		kept := map[string]bool{}
		for _, h := range relevant(all) {
			kept[h.Part.ID] = true
		}
		for i, h := range all[:min(5, len(all))] {
			for _, id := range q.Relevant {
				if h.Part.ID == id && !kept[id] {
					t.Errorf("%q: relevant %s (rank %d, vector %.3f, BM25 %.3f) is below the floor", q.Text, id, i+1, h.Vector, h.BM25)
				}
			}
		}
	}
	for _, q := range []string{"xyzzy", "asdfghjkl qwerty", "blorp fnord", "뷁뷁", "purple elephant dance", "hello world", "banana"} {
		if got := relevant(run(q)); len(got) > 0 {
			t.Errorf("%q keeps %d hits, the first %s (vector %.3f, BM25 %.3f)", q, len(got), got[0].Part.ID, got[0].Vector, got[0].BM25)
		}
	}
}

// TestProposalStates: an accepted or rejected proposal says who answered
// and when, not whom it awaits; the history starts with the first offer's
// price, quantity and message.
func TestProposalStates(t *testing.T) {
	offer := Step{By: "buyer", ByName: "Busan ESS", Action: "propose", PriceOffer: 8_000_000, Quantity: 2, Message: "Both packs please", At: "2026-03-01T09:00:00Z"}
	history := []Step{
		{By: "seller", ByName: "Daegu Parts", Action: "counter", PriceOffer: 8_200_000, Message: "Can do 8.2M", At: "2026-03-01T10:00:00Z"},
		{By: "buyer", ByName: "Busan ESS", Action: "accept", At: "2026-03-01T11:00:00Z"},
	}
	b := &fakeBackend{proposals: map[string]Proposal{
		"acc": {ID: "acc", FromID: "seller", FromName: "Daegu Parts", ToID: "buyer", ToName: "Busan ESS", PartIDs: []string{"p1"}, Type: "buy",
			Quantity: 2, PriceOffer: 8_200_000, Status: "accepted", CreatedAt: offer.At, SenderName: "Busan ESS", Offer: offer, History: history},
		"rej": {ID: "rej", FromID: "buyer", FromName: "Busan ESS", ToID: "seller", ToName: "Daegu Parts", PartIDs: []string{"p1"}, Type: "buy",
			Quantity: 2, PriceOffer: 8_000_000, Status: "rejected", CreatedAt: offer.At, SenderName: "Busan ESS", Offer: offer,
			History: []Step{{By: "seller", ByName: "Daegu Parts", Action: "reject", At: "2026-03-02T08:00:00Z"}}},
		"open": {ID: "open", FromID: "buyer", FromName: "Busan ESS", ToID: "seller", ToName: "Daegu Parts", PartIDs: []string{"p1"}, Type: "buy",
			Quantity: 2, PriceOffer: 8_000_000, Status: "pending", CreatedAt: offer.At, SenderName: "Busan ESS", Offer: offer},
	}}
	_, get := serve(t, b)
	text := func(page, id string) string {
		m := regexp.MustCompile(`(?s)id="` + id + `"[^>]*>(.*?)</(?:p|dd|tr)>`).FindStringSubmatch(page)
		if m == nil {
			return ""
		}
		return regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], " ")
	}

	page := get("/console/eecar/proposals/acc")
	if strings.Contains(page, "Awaiting") || strings.Contains(page, `id="waiting"`) {
		t.Errorf("an accepted proposal awaits someone:\n%s", page)
	}
	if got := text(page, "closed"); !strings.Contains(got, "Busan ESS accepted this proposal on 1 Mar 2026 11:00 UTC") {
		t.Errorf("accepted: %q", got)
	}
	if got := text(page, "p-by"); got != "Busan ESS" {
		t.Errorf("answered by %q", got)
	}
	if got := text(page, "offer"); !strings.Contains(got, "₩8,000,000") || !strings.Contains(got, " 2 ") || !strings.Contains(got, "Both packs please") || !strings.Contains(got, "Busan ESS") {
		t.Errorf("the first offer's row: %q", got)
	}
	if n := strings.Count(page, "<tr"); n != 4 { // the header, the offer, the counter, the acceptance
		t.Errorf("%d table rows:\n%s", n, page)
	}

	page = get("/console/eecar/proposals/rej")
	if got := text(page, "closed"); !strings.Contains(got, "Daegu Parts rejected this proposal") || strings.Contains(page, "Awaiting") {
		t.Errorf("rejected: %q\n%s", got, page)
	}
	page = get("/console/eecar/proposals/open")
	if got := text(page, "p-to"); got != "Daegu Parts" || !strings.Contains(page, `id="waiting"`) || strings.Contains(page, `id="closed"`) {
		t.Errorf("an open proposal awaits %q:\n%s", got, page)
	}

	// The list names each proposal's parties without saying a closed one
	// awaits anyone.
	page = get("/console/eecar/proposals/?box=all")
	if strings.Contains(page, "Awaiting") || strings.Count(page, "<td>Daegu Parts</td>") != 3 {
		t.Errorf("the proposals list:\n%s", page)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/console"
	eecarconsole "github.com/quarrydb/quarry/internal/console/eecar"
	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// BenchmarkConsoleEECARPages times the EECAR console's pages (server
// time of ServeHTTP, signed in, over loopback HTTP) with 10,000 items
// behind them: a seller with 10,000 parts, 10,000 proposals between two
// companies (so 10,000 notifications for the seller). Results go to
// bench/RESULTS.md:
//
//	go test -run '^$' -bench ConsoleEECARPages -benchtime 100x ./cmd/quarry
func BenchmarkConsoleEECARPages(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	db, err := ddb.Open(b.TempDir(), &ddb.Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	client := ddb.NewClient(db)
	table, err := store.EnsureTable(ctx, client, "")
	if err != nil {
		b.Fatal(err)
	}
	st := store.New(client, table, nil)
	blobs, err := blob.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	m := market.New(st, blobs, market.Options{Logger: slog.New(slog.DiscardHandler)})
	seller, sellerKey, err := st.CreateCompany(ctx, "Seoul EV Recycling", "")
	if err != nil {
		b.Fatal(err)
	}
	buyer, buyerKey, err := st.CreateCompany(ctx, "Busan ESS", "")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	cathodes := []string{"NCM811", "NCM622", "LFP", "NCA"}
	var partIDs []string
	for i := range n {
		price, qty := float64(1_000_000+i*1000), 1+i%5
		p, err := m.RegisterPart(ctx, seller.ID, market.PartInput{
			Name: fmt.Sprintf("배터리 팩 %d kWh #%d", 40+i%60, i), Category: "battery", Manufacturer: []string{"Hyundai", "Kia", "LG", "SK On"}[i%4],
			Model: "Ioniq 5", Year: 2015 + i%10, Condition: []string{"used", "refurbished"}[i%2], Price: &price, Quantity: &qty,
			Description: "ESS 재사용 가능한 중고 배터리 팩, used EV battery pack",
			Specs:       map[string]any{"chemicalProps": map[string]any{"soh": 60 + i%40, "cathode": cathodes[i%4]}, "electricalProps": map[string]any{"capacity": 40 + i%60}},
		})
		if err != nil {
			b.Fatal(err)
		}
		partIDs = append(partIDs, p.ID)
	}
	var propID string
	for i := range n {
		p, err := m.Propose(ctx, buyer.ID, store.Proposal{ToCompanyID: seller.ID, PartIDs: []string{partIDs[i]}, ProposalType: "buy", Quantity: 1, PriceOffer: 900000})
		if err != nil {
			b.Fatal(err)
		}
		propID = p.ID
	}
	b.Logf("setup: %d parts, %d proposals in %s", n, n, time.Since(start).Round(time.Second))

	auth := console.AuthFunc(func(ctx context.Context, cred string) (console.Principal, error) {
		co, err := st.Authenticate(ctx, cred)
		if err != nil {
			return console.Principal{}, err
		}
		return console.Principal{ID: co.ID, Name: co.Name}, nil
	})
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Areas: []console.Area{eecarconsole.New(eecarconsole.Adapt(m))},
		Realms: []console.Realm{{Kind: "eecar", Label: "EECAR company API key", Auth: auth}}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	signIn := func(key string) *http.Client {
		jar, _ := cookiejar.New(nil)
		cl := &http.Client{Jar: jar}
		body := benchGet(b, cl, srv.URL+"/console/signin")
		nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(body)
		resp, err := cl.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce[1]}, "realm": {"eecar"}, "credential": {key}})
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		return cl
	}
	sc, bc := signIn(sellerKey), signIn(buyerKey)
	// A deep page of the seller's parts: follow Next 50 times (page 51).
	deep := "/console/eecar/my/"
	for range 50 {
		body := benchGet(b, sc, srv.URL+deep)
		m := regexp.MustCompile(`href="\?(after=[^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			b.Fatal("no next page on my parts")
		}
		deep = "/console/eecar/my/?" + strings.ReplaceAll(m[1], "&amp;", "&")
	}
	q := url.QueryEscape("ESS용 중고 배터리 팩 80 kWh")
	for _, p := range []struct {
		name string
		cl   *http.Client
		path string
	}{
		{"search_korean", bc, "/console/eecar/?q=" + q},
		{"search_filters_page5", bc, "/console/eecar/?q=" + q + "&minSoh=80&cathode=NCM&maxPrice=9000000&condition=used&page=5"},
		{"part", bc, "/console/eecar/parts/" + partIDs[n/2]},
		{"my_parts_first", sc, "/console/eecar/my/"},
		{"my_parts_page51", sc, deep},
		{"proposals_inbox", sc, "/console/eecar/proposals/"},
		{"proposals_all", sc, "/console/eecar/proposals/?box=all"},
		{"proposal", sc, "/console/eecar/proposals/" + propID},
		{"notifications", sc, "/console/eecar/notifications/"},
	} {
		benchGet(b, p.cl, srv.URL+p.path) // warm up (and check it answers 200)
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				benchGet(b, p.cl, srv.URL+p.path)
			}
		})
	}
}

func benchGet(b testing.TB, cl *http.Client, u string) string {
	b.Helper()
	resp, err := cl.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s = %d: %.300s", u, resp.StatusCode, body)
	}
	return string(body)
}

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/consumer"
	"github.com/quarrydb/quarry/internal/eecar/api"
	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/notify"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// tickClock returns a later time on every call (1 ms apart), so every
// stored timestamp — CREATED_AT#, SENT# — is distinct and ordered.
type tickClock struct {
	base time.Time
	n    atomic.Int64
}

func (c *tickClock) now() time.Time {
	return c.base.Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}

// env is the API over a market on the embedded store, following the
// table's stream (so watches trigger), with three companies: A sells, B
// buys, C is a third party.
type env struct {
	t       *testing.T
	srv     *httptest.Server
	st      *store.Store
	m       *market.Market
	polls   *atomic.Int64
	a, b, c store.Company
	ka, kb  string
	kc      string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, envOptions{})
}

// envOptions varies newEnvWith's environment.
type envOptions struct {
	// webhookPolicy, when set, is the network policy PUT /me/webhook
	// validates against.
	webhookPolicy *fetch.Policy
	// deliveryPolicy, when set, turns on webhook delivery through a client
	// of this policy (2 attempts, 5 ms apart).
	deliveryPolicy *fetch.Policy
	// imageQuota is market.Options.ImageQuota.
	imageQuota int64
}

func newEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true, TTLInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	client := ddb.NewClient(db)
	table, err := store.EnsureTable(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	clk := &tickClock{base: time.Now().UTC()}
	e := &env{t: t, polls: new(atomic.Int64), st: store.New(client, table, &store.Options{Now: clk.now})}
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	mo := market.Options{Logger: logger, ImageQuota: o.imageQuota}
	if o.deliveryPolicy != nil {
		hooks := notify.New(e.st, fetch.New(fetch.Options{Policy: o.deliveryPolicy}).Client(), logger)
		hooks.SetRetry(2, 5*time.Millisecond)
		mo.Notify = hooks.Notify
		t.Cleanup(hooks.Wait)
	}
	e.m = market.New(e.st, blobs, mo)

	fctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = e.m.Follow(fctx, client, ddb.NewStreamsClient(db), consumer.Options{
			PollInterval: 2 * time.Millisecond,
			AfterPoll:    func(int) { e.polls.Add(1) },
		})
	}()
	t.Cleanup(func() { stop(); <-stopped })
	if err := e.m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, co := range []struct {
		c    *store.Company
		k    *string
		name string
	}{{&e.a, &e.ka, "Seoul EV Recycling"}, {&e.b, &e.kb, "Busan ESS"}, {&e.c, &e.kc, "Daegu Motors"}} {
		if *co.c, *co.k, err = e.st.CreateCompany(ctx, co.name, "ev"); err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	var apiOpts []api.Option
	if o.webhookPolicy != nil {
		apiOpts = append(apiOpts, api.WithWebhookCheck(fetch.New(fetch.Options{Policy: o.webhookPolicy}).Validate))
	}
	mux.Handle("/eecar/", http.StripPrefix("/eecar", api.New(e.m, logger, apiOpts...)))
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	e.settle()
	return e
}

// on returns the environment reporting to t (a subtest).
func (e *env) on(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// settle waits until the stream follower has polled a few more times, so
// every record written before the call has been handled.
func (e *env) settle() {
	e.t.Helper()
	start := e.polls.Load()
	deadline := time.Now().Add(5 * time.Second)
	for e.polls.Load() < start+3 {
		if time.Now().After(deadline) {
			e.t.Fatal("stream follower is not polling")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// raw sends a request with a Bearer key ("" for none). body is nil, a
// string sent as is, or a value sent as JSON.
func (e *env) raw(key, method, path string, body any) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, data
}

// do is raw that decodes a 2xx JSON answer into out (when not nil) and
// returns the status and the answer's text.
func (e *env) do(key, method, path string, body, out any) (int, string) {
	e.t.Helper()
	resp, data := e.raw(key, method, path, body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, string(data)
}

// wantError asserts a JSON {"error": "..."} answer of a status whose
// message contains every one of words (case-insensitive).
func (e *env) wantError(key, method, path string, body any, status int, words ...string) {
	e.t.Helper()
	resp, data := e.raw(key, method, path, body)
	var out struct {
		Error string `json:"error"`
	}
	if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		json.Unmarshal(data, &out) != nil || out.Error == "" {
		e.t.Fatalf("%s %s = %d %q (%s), want %d with a JSON error", method, path, resp.StatusCode, data, resp.Header.Get("Content-Type"), status)
	}
	for _, w := range words {
		if !strings.Contains(strings.ToLower(out.Error), strings.ToLower(w)) {
			e.t.Errorf("%s %s: error %q does not mention %q", method, path, out.Error, w)
		}
	}
}

// register posts a part as key's company and returns it.
func (e *env) register(key string, body map[string]any) store.Part {
	e.t.Helper()
	var p store.Part
	if code, text := e.do(key, http.MethodPost, "/eecar/parts", body, &p); code != http.StatusCreated {
		e.t.Fatalf("register %v = %d %s", body["name"], code, text)
	}
	return p
}

// search posts a search as key's company.
func (e *env) search(key string, req map[string]any) market.SearchResponse {
	e.t.Helper()
	var out market.SearchResponse
	if code, text := e.do(key, http.MethodPost, "/eecar/search", req, &out); code != http.StatusOK {
		e.t.Fatalf("search %v = %d %s", req, code, text)
	}
	return out
}

// notifications lists key's company's notifications.
func (e *env) notifications(key string) []store.Notification {
	e.t.Helper()
	var ns []store.Notification
	if code, text := e.do(key, http.MethodGet, "/eecar/notifications", nil, &ns); code != http.StatusOK {
		e.t.Fatalf("notifications = %d %s", code, text)
	}
	return ns
}

func ofType(ns []store.Notification, typ string) []store.Notification {
	var out []store.Notification
	for _, n := range ns {
		if n.Type == typ {
			out = append(out, n)
		}
	}
	return out
}

// battery is a valid part body, freshly built for each use.
func battery(name string, price float64, soh float64) map[string]any {
	return map[string]any{
		"name": name, "category": "battery", "manufacturer": "LG Energy Solution", "model": "Ioniq 5",
		"year": 2022, "condition": "중고", "price": price, "quantity": 2,
		"description": "NCM 배터리 팩, ESS 재사용 가능",
		"specs": map[string]any{
			"electricalProps": map[string]any{"voltage": 697, "capacity": 72.6},
			"chemicalProps":   map[string]any{"cathode": "NCM811", "soh": soh},
		},
		"useCases": []map[string]any{{"industry": "ESS", "application": "에너지 저장", "successCase": true}},
	}
}

func ids(rs []market.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.PartID
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	revoked, err := e.st.NewKey(context.Background(), e.a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if code, text := e.do(revoked, http.MethodGet, "/eecar/me", nil, nil); code != http.StatusOK {
		t.Fatalf("second key before revoking = %d %s", code, text)
	}
	if err := e.st.RevokeKey(context.Background(), revoked); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		path   string
		header func(*http.Request)
		want   int
	}{
		{"no key", "/eecar/me", func(*http.Request) {}, http.StatusUnauthorized},
		{"wrong key", "/eecar/me", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ek_not-a-key") }, http.StatusUnauthorized},
		{"wrong X-API-Key", "/eecar/me", func(r *http.Request) { r.Header.Set("X-API-Key", "ek_not-a-key") }, http.StatusUnauthorized},
		{"revoked key", "/eecar/me", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+revoked) }, http.StatusUnauthorized},
		{"no key on the alias", "/eecar/api/parts?category=battery", func(*http.Request) {}, http.StatusUnauthorized},
		{"Bearer", "/eecar/me", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+e.ka) }, http.StatusOK},
		{"X-API-Key", "/eecar/me", func(r *http.Request) { r.Header.Set("X-API-Key", e.ka) }, http.StatusOK},
		{"/api alias of /parts", "/eecar/api/parts?category=battery", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+e.ka) }, http.StatusOK},
		{"/api alias of /me", "/eecar/api/me", func(r *http.Request) { r.Header.Set("X-API-Key", e.ka) }, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.on(t)
			req, err := http.NewRequest(http.MethodGet, e.srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.header(req)
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %v", resp.StatusCode, tc.want, out)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
			switch {
			case tc.want == http.StatusUnauthorized:
				if msg, _ := out["error"].(string); msg == "" {
					t.Errorf("401 without an error message: %v", out)
				}
			case strings.HasSuffix(tc.path, "/me"):
				if out["companyId"] != e.a.ID {
					t.Errorf("/me = %v, want company %s", out, e.a.ID)
				}
			default:
				if _, ok := out["parts"]; !ok {
					t.Errorf("parts listing without parts: %v", out)
				}
			}
		})
	}
}

func TestParts(t *testing.T) {
	e := newEnv(t)
	created := e.register(e.ka, battery("아이오닉 5 배터리 팩 72.6kWh", 8500000, 92))

	t.Run("create answers the merged part", func(t *testing.T) {
		e := e.on(t)
		resp, data := e.raw(e.ka, http.MethodPost, "/eecar/parts", battery("second pack", 100, 90))
		var m map[string]any
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(data, &m) != nil {
			t.Fatalf("POST = %d %s", resp.StatusCode, data)
		}
		vec, _ := m["vector"].(map[string]any)
		if id, _ := m["partId"].(string); !strings.HasPrefix(id, "part_") || m["condition"] != "used" || m["sellerId"] != e.a.ID ||
			vec == nil || vec["embeddingModel"] == "" || vec["embeddingModel"] == nil || vec["dimension"] != float64(256) {
			t.Fatalf("created part %s", data)
		}
	})
	t.Run("get merges metadata, specs, vector and use cases", func(t *testing.T) {
		e := e.on(t)
		var p store.Part
		if code, text := e.do(e.kb, http.MethodGet, "/eecar/parts/"+created.ID, nil, &p); code != http.StatusOK {
			t.Fatalf("GET = %d %s", code, text)
		}
		chem, _ := p.Specs["chemicalProps"].(map[string]any)
		if p.ID != created.ID || p.Condition != "used" || p.Price != 8500000 || p.Quantity != 2 || chem["cathode"] != "NCM811" ||
			p.Vector == nil || p.Vector.Dimension != 256 || p.Vector.EmbeddingModel == "" ||
			len(p.UseCases) != 1 || p.UseCases[0].Industry != "ESS" {
			t.Fatalf("merged part %+v", p)
		}
	})
	t.Run("validation", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			name string
			edit func(map[string]any)
			body string // raw body instead of the edited part
			word string
		}{
			{"bad category", func(m map[string]any) { m["category"] = "wheels" }, "", "category"},
			{"bad condition", func(m map[string]any) { m["condition"] = "broken" }, "", "condition"},
			{"negative price", func(m map[string]any) { m["price"] = -1 }, "", "price"},
			{"missing price", func(m map[string]any) { delete(m, "price") }, "", "price"},
			{"negative quantity", func(m map[string]any) { m["quantity"] = -3 }, "", "quantity"},
			{"implausible year", func(m map[string]any) { m["year"] = 1850 }, "", "year"},
			{"future year", func(m map[string]any) { m["year"] = time.Now().Year() + 5 }, "", "year"},
			{"missing name", func(m map[string]any) { delete(m, "name") }, "", "name"},
			{"malformed JSON", nil, `{"name": "pack", "price": `, "JSON"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.on(t)
				var body any = tc.body
				if tc.edit != nil {
					m := battery("pack", 100, 90)
					tc.edit(m)
					body = m
				}
				e.wantError(e.ka, http.MethodPost, "/eecar/parts", body, http.StatusBadRequest, tc.word)
			})
		}
	})
	t.Run("list by category newest first, paged", func(t *testing.T) {
		e := newEnv(t) // a catalogue of its own
		var want []string
		for i := 0; i < 5; i++ {
			want = append([]string{e.register(e.ka, battery(fmt.Sprintf("pack %d", i), 1000, 90)).ID}, want...)
		}
		motor := battery("drive motor", 500, 90)
		motor["category"] = "motor"
		e.register(e.ka, motor)
		var got []string
		cursor, pages := "", 0
		for {
			var page struct {
				Parts      []store.Part `json:"parts"`
				NextCursor string       `json:"nextCursor"`
			}
			path := "/eecar/parts?category=battery&limit=2"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			if code, text := e.do(e.kb, http.MethodGet, path, nil, &page); code != http.StatusOK {
				t.Fatalf("GET %s = %d %s", path, code, text)
			}
			pages++
			if len(page.Parts) > 2 {
				t.Fatalf("page of %d parts with limit 2", len(page.Parts))
			}
			for _, p := range page.Parts {
				if p.Category != "battery" {
					t.Errorf("listed %s of category %s", p.ID, p.Category)
				}
				got = append(got, p.ID)
			}
			if page.NextCursor == "" || pages > 5 {
				break
			}
			cursor = page.NextCursor
		}
		if pages != 3 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%d pages listing %v, want 3 pages listing %v (newest first)", pages, got, want)
		}
	})
	t.Run("bad cursor", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kb, http.MethodGet, "/eecar/parts?category=battery&cursor=not-a-cursor", nil, http.StatusBadRequest, "cursor")
	})
	t.Run("category required", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kb, http.MethodGet, "/eecar/parts", nil, http.StatusBadRequest, "category")
		e.wantError(e.kb, http.MethodGet, "/eecar/parts?category=wheels", nil, http.StatusBadRequest, "category")
	})
	t.Run("update", func(t *testing.T) {
		e := e.on(t)
		// Other parts, so that the search has something to rank against.
		e.register(e.ka, battery("spare pack", 200, 85))
		changed := battery("아이오닉 5 배터리 팩 72.6kWh", 8000000, 92)
		changed["description"] = "Reconditioned with zirconium coated separators"
		e.wantError(e.kb, http.MethodPut, "/eecar/parts/"+created.ID, changed, http.StatusForbidden)
		e.wantError(e.ka, http.MethodPut, "/eecar/parts/part_nosuchpart", changed, http.StatusNotFound)
		before := e.search(e.kb, map[string]any{"query": "zirconium"})
		for _, r := range before.Results {
			if r.SearchScores["bm25"] > 0 {
				t.Fatalf("zirconium matched %s before any part mentioned it: %+v", r.PartID, r)
			}
		}
		var p store.Part
		if code, text := e.do(e.ka, http.MethodPut, "/eecar/parts/"+created.ID, changed, &p); code != http.StatusOK {
			t.Fatalf("PUT by the seller = %d %s", code, text)
		}
		if p.Price != 8000000 || p.Description != changed["description"] || p.Vector == nil || p.Vector.Dimension != 256 {
			t.Fatalf("updated part %+v", p)
		}
		after := e.search(e.kb, map[string]any{"query": "zirconium"})
		if len(after.Results) == 0 || after.Results[0].PartID != created.ID || after.Results[0].SearchScores["bm25"] <= 0 {
			t.Fatalf("search for a word of the new description: %+v", after.Results)
		}
	})
	t.Run("delete", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kb, http.MethodDelete, "/eecar/parts/"+created.ID, nil, http.StatusForbidden)
		if code, text := e.do(e.ka, http.MethodDelete, "/eecar/parts/"+created.ID, nil, nil); code != http.StatusNoContent {
			t.Fatalf("DELETE by the seller = %d %s", code, text)
		}
		e.wantError(e.kb, http.MethodGet, "/eecar/parts/"+created.ID, nil, http.StatusNotFound)
		if res := e.search(e.kb, map[string]any{"query": "zirconium 아이오닉 배터리"}); contains(ids(res.Results), created.ID) {
			t.Fatalf("deleted part still found: %v", ids(res.Results))
		}
	})
}

func TestSearch(t *testing.T) {
	e := newEnv(t)
	tesla := e.register(e.ka, map[string]any{
		"name": "Tesla Model 3 battery module NCA", "category": "battery", "manufacturer": "Tesla", "model": "Model 3",
		"year": 2020, "condition": "used", "price": 3000000, "quantity": 4,
		"description": "Long range battery module with NCA cells, tested and balanced",
		"specs":       map[string]any{"chemicalProps": map[string]any{"cathode": "NCA", "soh": 88}},
	})
	inverter := e.register(e.ka, map[string]any{
		"name": "현대 아이오닉 5 인버터", "category": "inverter", "manufacturer": "현대", "model": "아이오닉 5",
		"year": 2022, "condition": "중고", "price": 1200000, "quantity": 1,
		"description": "800V 실리콘 카바이드 인버터, 정상 작동 확인",
	})
	door := e.register(e.ka, map[string]any{
		"name": "Kia EV6 front door panel", "category": "body-door", "manufacturer": "Kia", "model": "EV6",
		"year": 2023, "condition": "new", "price": 400000, "quantity": 10, "description": "Front left door, snow white pearl",
	})
	lg := e.register(e.ka, battery("LG 배터리 팩 72.6kWh", 9000000, 92))

	t.Run("bilingual", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct{ query, want string }{
			{"테슬라 배터리 모듈", tesla.ID},
			{"Hyundai inverter", inverter.ID},
			{"기아 도어 패널", door.ID},
		} {
			res := e.search(e.kb, map[string]any{"query": tc.query, "topK": 3})
			if len(res.Results) == 0 || res.Results[0].PartID != tc.want {
				t.Errorf("%q ranks %v, want %s first", tc.query, ids(res.Results), tc.want)
			}
		}
	})
	t.Run("filters", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			name    string
			filters map[string]any
			want    []string // every part expected, in any order
		}{
			{"category", map[string]any{"category": "battery"}, []string{tesla.ID, lg.ID}},
			{"maxPrice", map[string]any{"maxPrice": 1500000}, []string{inverter.ID, door.ID}},
			{"minQuantity", map[string]any{"minQuantity": 4}, []string{tesla.ID, door.ID}},
			{"manufacturer", map[string]any{"manufacturer": "Tesla"}, []string{tesla.ID}},
			{"all together", map[string]any{"category": "battery", "maxPrice": 5000000, "minQuantity": 2, "manufacturer": "Tesla"}, []string{tesla.ID}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.on(t)
				res := e.search(e.kb, map[string]any{"query": "battery inverter door 배터리", "filters": tc.filters, "topK": 10})
				got := ids(res.Results)
				sort.Strings(got)
				want := append([]string(nil), tc.want...)
				sort.Strings(want)
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("filters %v found %v, want %v", tc.filters, got, want)
				}
			})
		}
	})
	t.Run("results carry scores, a reason and the part", func(t *testing.T) {
		e := e.on(t)
		_, data := e.raw(e.kb, http.MethodPost, "/eecar/search", map[string]any{"query": "테슬라 배터리 모듈 NCA", "topK": 4})
		var raw struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal(data, &raw); err != nil || len(raw.Results) == 0 {
			t.Fatalf("search answer %s", data)
		}
		for _, r := range raw.Results {
			scores, _ := r["searchScores"].(map[string]any)
			part, _ := r["part"].(map[string]any)
			for _, k := range []string{"hybrid", "vector", "bm25"} {
				if _, ok := scores[k].(float64); !ok {
					t.Errorf("result %v: searchScores lacks %s", r["partId"], k)
				}
			}
			if reason, _ := r["reason"].(string); strings.TrimSpace(reason) == "" {
				t.Errorf("result %v has no reason", r["partId"])
			}
			if part == nil || part["partId"] != r["partId"] || part["name"] == nil || part["vector"] == nil {
				t.Errorf("result %v: part %v", r["partId"], part)
			}
		}
		top := raw.Results[0]
		if part, _ := top["part"].(map[string]any); part["specs"] == nil {
			t.Errorf("top result's part lacks its specs: %v", part)
		}
		if reason := top["reason"].(string); !strings.Contains(strings.ToLower(reason), "nca") && !strings.Contains(reason, "배터리") && !strings.Contains(reason, "battery") {
			t.Errorf("top reason %q names no matched word", reason)
		}
	})
	t.Run("cache", func(t *testing.T) {
		e := e.on(t)
		q := map[string]any{"query": "ESS용 중고 배터리 팩", "filters": map[string]any{"category": "battery"}, "topK": 5}
		first := e.search(e.kb, q)
		second := e.search(e.kb, q)
		if first.Cached || !second.Cached {
			t.Fatalf("cached: first %v, second %v; want false then true", first.Cached, second.Cached)
		}
		if strings.Join(ids(first.Results), ",") != strings.Join(ids(second.Results), ",") || len(second.Results) == 0 || second.Results[0].Part == nil {
			t.Fatalf("cached answer %v differs from %v (or lacks parts)", ids(second.Results), ids(first.Results))
		}
		fresh := e.register(e.ka, battery("ESS 중고 배터리 팩 신규 입고", 5000000, 95))
		third := e.search(e.kb, q)
		if third.Cached || !contains(ids(third.Results), fresh.ID) || third.CatalogueVersion <= second.CatalogueVersion {
			t.Fatalf("after a new part: cached %v, results %v (want %s), version %d after %d",
				third.Cached, ids(third.Results), fresh.ID, third.CatalogueVersion, second.CatalogueVersion)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			name string
			body any
			word string
		}{
			{"topK over 100", map[string]any{"query": "battery", "topK": 101}, "topK"},
			{"empty query", map[string]any{"query": ""}, "query"},
			{"blank query", map[string]any{"query": "   "}, "query"},
			{"no body", nil, "query"},
			{"bad category", map[string]any{"query": "battery", "filters": map[string]any{"category": "wheels"}}, "category"},
			{"malformed JSON", `{"query":`, "JSON"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.on(t)
				e.wantError(e.kb, http.MethodPost, "/eecar/search", tc.body, http.StatusBadRequest, tc.word)
			})
		}
	})
}

func TestNeeds(t *testing.T) {
	e := newEnv(t)
	cheap := e.register(e.ka, battery("cheap pack", 1000000, 85))
	e.register(e.ka, battery("dear pack", 9000000, 95))
	motor := battery("cheap motor", 500000, 90)
	motor["category"] = "motor"
	e.register(e.ka, motor)

	var n store.Need
	body := map[string]any{
		"industry": "energy", "priority": "high", "targetApplication": "ESS",
		"requiredSpecs": map[string]any{"category": "battery", "maxPrice": 2000000, "minQuantity": 1, "materialPreferences": []string{"NCM"}},
	}
	if code, text := e.do(e.kb, http.MethodPost, "/eecar/needs", body, &n); code != http.StatusCreated {
		t.Fatalf("POST /needs = %d %s", code, text)
	}
	if !strings.HasPrefix(n.ID, "need_") || n.CompanyID != e.b.ID || n.CompanyName != e.b.Name || n.Status != "active" || n.Priority != "high" {
		t.Fatalf("created need %+v", n)
	}
	path := "/eecar/needs/" + n.ID

	t.Run("read and list", func(t *testing.T) {
		e := e.on(t)
		var got store.Need
		if code, text := e.do(e.kb, http.MethodGet, path, nil, &got); code != http.StatusOK || got.ID != n.ID || got.RequiredSpecs.MaxPrice != 2000000 {
			t.Fatalf("GET = %d %s", code, text)
		}
		for _, tc := range []struct {
			status string
			want   int
		}{{"", 1}, {"active", 1}, {"fulfilled", 0}} {
			var ns []store.Need
			if code, text := e.do(e.kb, http.MethodGet, "/eecar/needs?status="+tc.status, nil, &ns); code != http.StatusOK || len(ns) != tc.want {
				t.Errorf("GET /needs?status=%s = %d %s, want %d needs", tc.status, code, text, tc.want)
			}
		}
	})
	t.Run("other companies cannot see it", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kc, http.MethodGet, path, nil, http.StatusNotFound)
		e.wantError(e.kc, http.MethodPut, path, body, http.StatusNotFound)
		e.wantError(e.kc, http.MethodGet, path+"/matches", nil, http.StatusNotFound)
		e.wantError(e.kc, http.MethodDelete, path, nil, http.StatusNotFound)
		var ns []store.Need
		if code, _ := e.do(e.kc, http.MethodGet, "/eecar/needs", nil, &ns); code != http.StatusOK || len(ns) != 0 {
			t.Fatalf("C lists %d needs", len(ns))
		}
	})
	t.Run("invalid", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			name string
			body map[string]any
			word string
		}{
			{"bad category", map[string]any{"requiredSpecs": map[string]any{"category": "wheels"}}, "category"},
			{"bad priority", map[string]any{"priority": "urgent"}, "priority"},
			{"bad status", map[string]any{"status": "open"}, "status"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.on(t)
				e.wantError(e.kb, http.MethodPost, "/eecar/needs", tc.body, http.StatusBadRequest, tc.word)
			})
		}
	})
	t.Run("matches", func(t *testing.T) {
		e := e.on(t)
		var res market.SearchResponse
		if code, text := e.do(e.kb, http.MethodGet, path+"/matches", nil, &res); code != http.StatusOK {
			t.Fatalf("matches = %d %s", code, text)
		}
		if len(res.Results) == 0 || !contains(ids(res.Results), cheap.ID) {
			t.Fatalf("matches %v lack %s", ids(res.Results), cheap.ID)
		}
		for _, r := range res.Results {
			if r.Part == nil || r.Part.Category != "battery" || r.Part.Price > 2000000 {
				t.Errorf("match %s outside the need: %+v", r.PartID, r.Part)
			}
		}
	})
	t.Run("update", func(t *testing.T) {
		e := e.on(t)
		upd := map[string]any{"priority": "low", "status": "fulfilled", "requiredSpecs": map[string]any{"category": "battery"}}
		var got store.Need
		if code, text := e.do(e.kb, http.MethodPut, path, upd, &got); code != http.StatusOK {
			t.Fatalf("PUT = %d %s", code, text)
		}
		if got.ID != n.ID || got.CreatedAt != n.CreatedAt || got.Priority != "low" || got.Status != "fulfilled" {
			t.Fatalf("updated need %+v (created %+v)", got, n)
		}
		var ns []store.Need
		if code, _ := e.do(e.kb, http.MethodGet, "/eecar/needs?status=active", nil, &ns); code != http.StatusOK || len(ns) != 0 {
			t.Fatalf("%d active needs after fulfilling the only one", len(ns))
		}
	})
	t.Run("update validates the category", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kb, http.MethodPut, path, map[string]any{"requiredSpecs": map[string]any{"category": "wheels"}}, http.StatusBadRequest, "category")
	})
	t.Run("delete", func(t *testing.T) {
		e := e.on(t)
		if code, text := e.do(e.kb, http.MethodDelete, path, nil, nil); code != http.StatusNoContent {
			t.Fatalf("DELETE = %d %s", code, text)
		}
		e.wantError(e.kb, http.MethodGet, path, nil, http.StatusNotFound)
		e.wantError(e.kb, http.MethodDelete, path, nil, http.StatusNotFound)
	})
}

func TestWatches(t *testing.T) {
	e := newEnv(t)
	var w store.Watch
	criteria := map[string]any{"criteria": map[string]any{"category": "battery", "maxPrice": 9000000, "minSpecs": map[string]any{"chemicalProps.soh": 80}}}
	if code, text := e.do(e.kb, http.MethodPost, "/eecar/watches", criteria, &w); code != http.StatusCreated {
		t.Fatalf("POST /watches = %d %s", code, text)
	}
	if !strings.HasPrefix(w.ID, "w_") || w.BuyerID != e.b.ID || w.Status != "active" {
		t.Fatalf("created watch %+v", w)
	}
	// A's own watch, which A's parts must never trigger.
	var own store.Watch
	if code, text := e.do(e.ka, http.MethodPost, "/eecar/watch", criteria, &own); code != http.StatusCreated {
		t.Fatalf("POST /watch = %d %s", code, text)
	}
	path := "/eecar/watches/" + w.ID
	triggers := func(e *env, key, id string) []store.Trigger {
		e.t.Helper()
		var ts []store.Trigger
		if code, text := e.do(key, http.MethodGet, "/eecar/watches/"+id+"/triggers", nil, &ts); code != http.StatusOK {
			e.t.Fatalf("triggers = %d %s", code, text)
		}
		return ts
	}
	partAvailable := func(e *env) []store.Notification { return ofType(e.notifications(e.kb), "part_available") }

	// Parts that miss the criteria: too dear, too worn, another category.
	e.register(e.ka, battery("dear pack", 9500000, 95))
	e.register(e.ka, battery("worn pack", 5000000, 70))
	motor := battery("motor", 100, 95)
	motor["category"] = "motor"
	e.register(e.ka, motor)
	match := e.register(e.ka, battery("good pack", 8500000, 92))

	t.Run("a matching part triggers the watch once", func(t *testing.T) {
		e := e.on(t)
		deadline := time.Now().Add(5 * time.Second)
		for len(partAvailable(e)) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		e.settle()
		ns := partAvailable(e)
		if len(ns) != 1 || ns[0].Data["partId"] != match.ID || ns[0].Data["watchId"] != w.ID || ns[0].RecipientID != e.b.ID {
			t.Fatalf("part_available notifications %+v, want one for %s", ns, match.ID)
		}
		if ts := triggers(e, e.kb, w.ID); len(ts) != 1 || ts[0].PartID != match.ID {
			t.Fatalf("triggers %+v, want one for %s", ts, match.ID)
		}
		if ts := triggers(e, e.ka, own.ID); len(ts) != 0 {
			t.Fatalf("A's own part triggered A's watch: %+v", ts)
		}
		var got store.Watch
		if code, _ := e.do(e.kb, http.MethodGet, path, nil, &got); code != http.StatusOK || got.Status != "active" || got.TriggeredAt == "" {
			t.Fatalf("watch after the trigger %+v", got)
		}
	})
	t.Run("updating the part does not trigger again", func(t *testing.T) {
		e := e.on(t)
		for _, price := range []float64{8400000, 8300000} {
			var p store.Part
			if code, text := e.do(e.ka, http.MethodPut, "/eecar/parts/"+match.ID, battery("good pack", price, 93), &p); code != http.StatusOK {
				t.Fatalf("PUT = %d %s", code, text)
			}
			e.settle()
		}
		if ns := partAvailable(e); len(ns) != 1 {
			t.Fatalf("%d part_available notifications after two updates, want 1", len(ns))
		}
		if ts := triggers(e, e.kb, w.ID); len(ts) != 1 {
			t.Fatalf("%d triggers after two updates, want 1", len(ts))
		}
	})
	t.Run("listing", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			key, status string
			want        []string
		}{
			{e.kb, "", []string{w.ID}},
			{e.kb, "active", []string{w.ID}},
			{e.kb, "cancelled", nil},
			{e.kc, "", nil},
		} {
			var ws []store.Watch
			if code, text := e.do(tc.key, http.MethodGet, "/eecar/watches?status="+tc.status, nil, &ws); code != http.StatusOK {
				t.Fatalf("GET /watches = %d %s", code, text)
			}
			var got []string
			for _, x := range ws {
				got = append(got, x.ID)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("status %q lists %v, want %v", tc.status, got, tc.want)
			}
		}
	})
	t.Run("other companies cannot see it", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kc, http.MethodGet, path, nil, http.StatusNotFound)
		e.wantError(e.kc, http.MethodGet, path+"/triggers", nil, http.StatusNotFound)
		e.wantError(e.kc, http.MethodDelete, path, nil, http.StatusNotFound)
		e.wantError(e.kc, http.MethodPost, "/eecar/watches", map[string]any{"buyerId": e.b.ID}, http.StatusForbidden)
		e.wantError(e.kb, http.MethodPost, "/eecar/watches", map[string]any{"criteria": map[string]any{"category": "wheels"}}, http.StatusBadRequest, "category")
	})
	t.Run("cancel", func(t *testing.T) {
		e := e.on(t)
		var got store.Watch
		if code, text := e.do(e.kb, http.MethodDelete, path, nil, &got); code != http.StatusOK || got.Status != "cancelled" {
			t.Fatalf("DELETE = %d %s", code, text)
		}
		e.settle()
		later := e.register(e.ka, battery("another good pack", 7000000, 96))
		e.settle()
		e.settle()
		if ts := triggers(e, e.kb, w.ID); len(ts) != 1 {
			t.Fatalf("cancelled watch triggered by %s: %+v", later.ID, ts)
		}
		if ns := partAvailable(e); len(ns) != 1 {
			t.Fatalf("%d part_available notifications after cancelling, want 1", len(ns))
		}
	})
}

func TestProposals(t *testing.T) {
	e := newEnv(t)
	part := e.register(e.ka, battery("pack for sale", 8000000, 90))
	valid := func() map[string]any {
		return map[string]any{"toCompanyId": e.b.ID, "partIds": []string{part.ID}, "proposalType": "sell", "quantity": 2, "priceOffer": 16000000, "message": "2 packs"}
	}
	t.Run("validation", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			name string
			edit func(map[string]any)
			word string
		}{
			{"to self", func(m map[string]any) { m["toCompanyId"] = e.a.ID }, "toCompanyId"},
			{"to nobody", func(m map[string]any) { delete(m, "toCompanyId") }, "toCompanyId"},
			{"to an unknown company", func(m map[string]any) { m["toCompanyId"] = "co_000000000000000000000000" }, "toCompanyId"},
			{"bad proposalType", func(m map[string]any) { m["proposalType"] = "swap" }, "proposalType"},
			{"no partIds", func(m map[string]any) { m["partIds"] = []string{} }, "partIds"},
			{"unknown partId", func(m map[string]any) { m["partIds"] = []string{part.ID, "part_nosuchpart"} }, "part_nosuchpart"},
			{"negative price", func(m map[string]any) { m["priceOffer"] = -5 }, "priceOffer"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.on(t)
				m := valid()
				tc.edit(m)
				e.wantError(e.ka, http.MethodPost, "/eecar/proposals", m, http.StatusBadRequest, tc.word)
			})
		}
	})

	var p store.Proposal
	if code, text := e.do(e.ka, http.MethodPost, "/eecar/proposals", valid(), &p); code != http.StatusCreated {
		t.Fatalf("POST /proposals = %d %s", code, text)
	}
	if !strings.HasPrefix(p.ID, "prop_") || p.Status != "pending" || p.FromCompanyID != e.a.ID || p.ToCompanyID != e.b.ID {
		t.Fatalf("created proposal %+v", p)
	}
	path := "/eecar/proposals/" + p.ID
	respond := path + "/respond"
	listed := func(e *env, key, status string) []string {
		e.t.Helper()
		var ps []store.Proposal
		if code, text := e.do(key, http.MethodGet, "/eecar/proposals?status="+status, nil, &ps); code != http.StatusOK {
			e.t.Fatalf("GET /proposals = %d %s", code, text)
		}
		var out []string
		for _, x := range ps {
			out = append(out, x.ID)
		}
		return out
	}

	t.Run("recipient is notified and sees it pending", func(t *testing.T) {
		e := e.on(t)
		ns := ofType(e.notifications(e.kb), "proposal_received")
		if len(ns) != 1 || ns[0].Data["proposalId"] != p.ID {
			t.Fatalf("proposal_received notifications %+v", ns)
		}
		if got := listed(e, e.kb, "pending"); !contains(got, p.ID) {
			t.Fatalf("B's pending proposals %v lack %s", got, p.ID)
		}
		if got := listed(e, e.ka, "pending"); len(got) != 0 {
			t.Fatalf("A (the proposer) has proposals awaiting it: %v", got)
		}
		var got store.Proposal
		for _, key := range []string{e.ka, e.kb} {
			if code, text := e.do(key, http.MethodGet, path, nil, &got); code != http.StatusOK || got.ID != p.ID {
				t.Fatalf("GET by a party = %d %s", code, text)
			}
		}
	})
	t.Run("third parties and the proposer cannot act", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kc, http.MethodGet, path, nil, http.StatusNotFound)
		e.wantError(e.kc, http.MethodPost, respond, map[string]any{"action": "accept"}, http.StatusNotFound)
		e.wantError(e.ka, http.MethodPost, respond, map[string]any{"action": "accept"}, http.StatusForbidden)
		e.wantError(e.kb, http.MethodPost, respond, map[string]any{"action": "shrug"}, http.StatusBadRequest, "action")
		e.wantError(e.kb, http.MethodGet, "/eecar/proposals?companyId="+e.a.ID, nil, http.StatusForbidden)
	})
	t.Run("counter then accept", func(t *testing.T) {
		e := e.on(t)
		var got store.Proposal
		if code, text := e.do(e.kb, http.MethodPost, respond, map[string]any{"action": "counter", "priceOffer": 15000000, "message": "15M?"}, &got); code != http.StatusOK {
			t.Fatalf("counter = %d %s", code, text)
		}
		if got.Status != "negotiating" || got.PriceOffer != 15000000 || got.ToCompanyID != e.a.ID || got.FromCompanyID != e.b.ID || len(got.History) != 1 {
			t.Fatalf("countered proposal %+v", got)
		}
		// The first offer's terms stay in offer when the counter replaces
		// them.
		if o := got.Offer; o == nil || o.By != e.a.ID || o.PriceOffer != 16000000 || o.Quantity != 2 || o.Message != "2 packs" || o.At != got.CreatedAt {
			t.Fatalf("countered proposal's first offer %+v", o)
		}
		// Now it is A's turn.
		e.wantError(e.kb, http.MethodPost, respond, map[string]any{"action": "accept"}, http.StatusForbidden)
		if got := listed(e, e.kb, "pending"); contains(got, p.ID) {
			t.Fatalf("B still lists %s as pending after countering", p.ID)
		}
		if got := listed(e, e.ka, "negotiating"); !contains(got, p.ID) {
			t.Fatalf("A's negotiating proposals %v lack %s", got, p.ID)
		}
		if ns := ofType(e.notifications(e.ka), "proposal_negotiating"); len(ns) != 1 {
			t.Fatalf("A's proposal_negotiating notifications %+v", ns)
		}
		if code, text := e.do(e.ka, http.MethodPost, respond, map[string]any{"action": "accept"}, &got); code != http.StatusOK || got.Status != "accepted" {
			t.Fatalf("accept = %d %s", code, text)
		}
		if ns := ofType(e.notifications(e.kb), "proposal_accepted"); len(ns) != 1 {
			t.Fatalf("B's proposal_accepted notifications %+v", ns)
		}
	})
	t.Run("an accepted proposal is final", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			key    string
			action string
		}{{e.ka, "accept"}, {e.ka, "counter"}, {e.kb, "reject"}, {e.kb, "accept"}} {
			resp, data := e.raw(tc.key, http.MethodPost, respond, map[string]any{"action": tc.action})
			if resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s after accept = %d %s, want 409 or 403", tc.action, resp.StatusCode, data)
			}
		}
		var got store.Proposal
		if code, _ := e.do(e.kb, http.MethodGet, path, nil, &got); code != http.StatusOK || got.Status != "accepted" || len(got.History) != 2 {
			t.Fatalf("proposal after further responses %+v", got)
		}
		if got := listed(e, e.kb, "pending"); contains(got, p.ID) {
			t.Fatalf("B lists the accepted proposal as pending: %v", got)
		}
	})
}

func TestNotifications(t *testing.T) {
	e := newEnv(t)
	part := e.register(e.ka, battery("pack", 100, 90))
	var sent []string
	for i := 0; i < 3; i++ {
		var p store.Proposal
		body := map[string]any{"toCompanyId": e.b.ID, "partIds": []string{part.ID}, "proposalType": "sell", "message": fmt.Sprint("offer ", i)}
		if code, text := e.do(e.ka, http.MethodPost, "/eecar/proposals", body, &p); code != http.StatusCreated {
			t.Fatalf("POST /proposals = %d %s", code, text)
		}
		sent = append(sent, p.ID)
	}
	ns := e.notifications(e.kb)
	if len(ns) != 3 {
		t.Fatalf("%d notifications, want 3: %+v", len(ns), ns)
	}
	for i, n := range ns {
		if want := sent[len(sent)-1-i]; n.Data["proposalId"] != want || n.Read || n.RecipientID != e.b.ID {
			t.Errorf("notification %d = %+v, want unread, for %s (newest first)", i, n, want)
		}
		if i > 0 && ns[i-1].SentAt < n.SentAt {
			t.Errorf("notification %d sent %s after the one before it (%s)", i, n.SentAt, ns[i-1].SentAt)
		}
	}
	if limited := e.notifications(e.kb); len(limited) != 3 {
		t.Fatalf("second listing %d", len(limited))
	}
	var two []store.Notification
	if code, _ := e.do(e.kb, http.MethodGet, "/eecar/notifications?limit=2", nil, &two); code != http.StatusOK || len(two) != 2 || two[0].ID != ns[0].ID {
		t.Fatalf("limit=2 gives %+v", two)
	}
	target := ns[1].ID
	for _, tc := range []struct {
		name string
		key  string
		id   string
		want int
	}{
		{"another company", e.kc, target, http.StatusNotFound},
		{"the sender", e.ka, target, http.StatusNotFound},
		{"unknown id", e.kb, "ntf_nosuchnotification", http.StatusNotFound},
		{"the recipient", e.kb, target, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.on(t)
			if code, text := e.do(tc.key, http.MethodPost, "/eecar/notifications/"+tc.id+"/read", nil, nil); code != tc.want {
				t.Fatalf("read = %d %s, want %d", code, text, tc.want)
			}
		})
	}
	for _, n := range e.notifications(e.kb) {
		if n.Read != (n.ID == target) {
			t.Errorf("notification %s read=%v", n.ID, n.Read)
		}
	}
	if ns := e.notifications(e.kc); len(ns) != 0 {
		t.Errorf("C sees %d notifications", len(ns))
	}
}

func TestBatteryHealth(t *testing.T) {
	e := newEnv(t)
	cathode := map[float64]string{92: "NCM811", 75: "LFP", 55: "NCM622", 30: "NCA"}
	parts := map[string]string{} // part id → name
	for _, soh := range []float64{92, 75, 55, 30} {
		b := battery(fmt.Sprintf("soh %.0f", soh), 1000, soh)
		b["specs"].(map[string]any)["chemicalProps"].(map[string]any)["cathode"] = cathode[soh]
		parts[e.register(e.ka, b).ID] = b["name"].(string)
	}
	old := battery("twelve years old", 1000, 0)
	old["year"] = time.Now().Year() - 12
	old["specs"] = map[string]any{"chemicalProps": map[string]any{"cathode": "LFP"}}
	parts[e.register(e.ka, old).ID] = "twelve years old"
	motor := battery("motor", 1000, 95)
	motor["category"] = "motor"
	e.register(e.ka, motor)

	screen := func(e *env, req map[string]any) map[string]market.BatteryResult {
		e.t.Helper()
		var rs []market.BatteryResult
		if code, text := e.do(e.kb, http.MethodPost, "/eecar/battery-health", req, &rs); code != http.StatusOK {
			e.t.Fatalf("battery-health %v = %d %s", req, code, text)
		}
		out := map[string]market.BatteryResult{}
		for _, r := range rs {
			if _, ok := parts[r.PartID]; !ok {
				e.t.Errorf("screened a part that is not a battery: %+v", r)
			}
			out[r.Name] = r
		}
		return out
	}
	t.Run("assessment", func(t *testing.T) {
		e := e.on(t)
		got := screen(e, map[string]any{})
		for _, tc := range []struct {
			name      string
			soh       float64
			estimated bool
			rec       string
		}{
			{"soh 92", 92, false, "reuse"},
			{"soh 75", 75, false, "reuse"},
			{"soh 55", 55, false, "recycle"},
			{"soh 30", 30, false, "dispose"},
			{"twelve years old", 50, true, "recycle"},
		} {
			r, ok := got[tc.name]
			if !ok || r.SOH != tc.soh || r.SOHEstimated != tc.estimated || r.Recommendation != tc.rec {
				t.Errorf("%s: %+v, want soh %.0f (estimated %v) → %s", tc.name, r, tc.soh, tc.estimated, tc.rec)
			}
		}
		if len(got) != 5 {
			t.Errorf("%d batteries screened, want 5", len(got))
		}
		if apps := got["soh 92"].Applications; !contains(apps, "EV") {
			t.Errorf("soh 92 applications %v lack EV", apps)
		}
		if apps := got["soh 75"].Applications; contains(apps, "EV") || !contains(apps, "ESS") {
			t.Errorf("soh 75 applications %v", apps)
		}
	})
	t.Run("filters", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct {
			name string
			req  map[string]any
			want []string
		}{
			{"minSoh", map[string]any{"minSoh": 70}, []string{"soh 75", "soh 92"}},
			{"maxSoh", map[string]any{"maxSoh": 50}, []string{"soh 30", "twelve years old"}},
			{"cathode prefix", map[string]any{"cathode": "NCM"}, []string{"soh 55", "soh 92"}},
			{"cathode exact", map[string]any{"cathode": "LFP"}, []string{"soh 75", "twelve years old"}},
			{"recommendation", map[string]any{"recommendation": "recycle"}, []string{"soh 55", "twelve years old"}},
			{"combined", map[string]any{"cathode": "LFP", "recommendation": "reuse"}, []string{"soh 75"}},
			{"limit", map[string]any{"limit": 1}, nil}, // one, whichever
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.on(t)
				got := screen(e, tc.req)
				var names []string
				for n := range got {
					names = append(names, n)
				}
				sort.Strings(names)
				if tc.want == nil {
					if len(names) != 1 {
						t.Fatalf("limit 1 gives %v", names)
					}
					return
				}
				if strings.Join(names, ",") != strings.Join(tc.want, ",") {
					t.Fatalf("%v gives %v, want %v", tc.req, names, tc.want)
				}
			})
		}
	})
	t.Run("bad recommendation", func(t *testing.T) {
		e := e.on(t)
		e.wantError(e.kb, http.MethodPost, "/eecar/battery-health", map[string]any{"recommendation": "sell"}, http.StatusBadRequest, "recommendation")
	})
}

package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// loopbackPolicy allows 127.0.0.0/8 besides public addresses (as
// --allow-networks=127.0.0.0/8 does).
func loopbackPolicy() *fetch.Policy {
	return fetch.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
}

// webhookStatus is GET /me/webhook.
type webhookStatus struct {
	WebhookURL          string `json:"webhookUrl"`
	LastDeliveredAt     string `json:"lastDeliveredAt"`
	LastDeliveryError   string `json:"lastDeliveryError"`
	LastDeliveryErrorAt string `json:"lastDeliveryErrorAt"`
}

// webhookStatus reads GET /me/webhook and the same fields of GET /me.
func (e *env) webhookStatus(key string) (webhook, me webhookStatus) {
	e.t.Helper()
	if code, text := e.do(key, http.MethodGet, "/eecar/me/webhook", nil, &webhook); code != http.StatusOK {
		e.t.Fatalf("GET /me/webhook = %d %s", code, text)
	}
	if code, text := e.do(key, http.MethodGet, "/eecar/me", nil, &me); code != http.StatusOK {
		e.t.Fatalf("GET /me = %d %s", code, text)
	}
	return webhook, me
}

// waitWebhook polls GET /me/webhook and GET /me until done holds for both
// (and they agree).
func (e *env) waitWebhook(key string, done func(webhookStatus) bool) webhookStatus {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, me := e.webhookStatus(key)
		if done(s) && s == me {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("GET /me/webhook %+v, GET /me %+v: condition not reached", s, me)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebhookURLPolicy: PUT /me/webhook validates the URL with the shared
// network policy and answers 400 naming --allow-networks.
func TestWebhookURLPolicy(t *testing.T) {
	e := newEnvWith(t, envOptions{webhookPolicy: fetch.NewPolicy(nil, nil)})
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hook.Close()
	for _, tc := range []struct {
		name, url string
		status    int
		words     []string
	}{
		{"loopback", hook.URL + "/hook", http.StatusBadRequest, []string{"--allow-networks", "loopback"}},
		{"private", "http://10.1.2.3/hook", http.StatusBadRequest, []string{"--allow-networks", "private"}},
		{"link-local metadata", "http://169.254.169.254/latest", http.StatusBadRequest, []string{"--allow-networks"}},
		{"not http", "ftp://example.com/hook", http.StatusBadRequest, []string{"http(s)"}},
		{"no host", "https:///hook", http.StatusBadRequest, []string{"http(s)"}},
		{"public literal", "https://93.184.215.14/hook", http.StatusOK, nil},
		{"empty removes it", "", http.StatusOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.on(t)
			body := map[string]any{"webhookUrl": tc.url}
			if tc.status != http.StatusOK {
				e.wantError(e.kb, http.MethodPut, "/eecar/me/webhook", body, tc.status, tc.words...)
				return
			}
			var c store.Company
			if code, text := e.do(e.kb, http.MethodPut, "/eecar/me/webhook", body, &c); code != http.StatusOK || c.WebhookURL != tc.url {
				t.Fatalf("PUT %q = %d %s", tc.url, code, text)
			}
		})
	}
	t.Run("allowed when the policy allows it", func(t *testing.T) {
		e := newEnvWith(t, envOptions{webhookPolicy: loopbackPolicy()})
		var c store.Company
		if code, text := e.do(e.kb, http.MethodPut, "/eecar/me/webhook", map[string]any{"webhookUrl": hook.URL + "/hook"}, &c); code != http.StatusOK {
			t.Fatalf("PUT loopback with 127.0.0.0/8 allowed = %d %s", code, text)
		}
	})
}

// TestWebhookDeliveryFailures: a delivery that fails (refused by the
// policy, or answered with an error) is recorded where the company sees
// it: lastDeliveryError and lastDeliveryErrorAt on GET /me and GET
// /me/webhook; a later success sets lastDeliveredAt; changing the webhook
// clears them.
func TestWebhookDeliveryFailures(t *testing.T) {
	var failing atomic.Bool
	var delivered atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		delivered.Add(1)
	}))
	defer hook.Close()
	watch := func(e *env, keyword string) {
		e.t.Helper()
		if code, text := e.do(e.kb, http.MethodPost, "/eecar/watches", map[string]any{"criteria": map[string]any{"keywords": []string{keyword}}}, nil); code != http.StatusCreated {
			e.t.Fatalf("POST /watches = %d %s", code, text)
		}
	}

	for _, tc := range []struct {
		name     string
		delivery *fetch.Policy
		fail     bool
		words    []string
	}{
		// The URL passed the check when it was set, but the deliverer's
		// policy refuses it now (the operator narrowed --allow-networks).
		{"refused by the policy", fetch.NewPolicy(nil, nil), false, []string{"--allow-networks", "loopback"}},
		{"answered 500", loopbackPolicy(), true, []string{"status 500"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, envOptions{webhookPolicy: loopbackPolicy(), deliveryPolicy: tc.delivery})
			failing.Store(tc.fail)
			if code, text := e.do(e.kb, http.MethodPut, "/eecar/me/webhook", map[string]any{"webhookUrl": hook.URL + "/hook"}, nil); code != http.StatusOK {
				t.Fatalf("PUT /me/webhook = %d %s", code, text)
			}
			watch(e, "zeolite")
			e.register(e.ka, battery("zeolite pack", 1000, 90))
			s := e.waitWebhook(e.kb, func(s webhookStatus) bool { return s.LastDeliveryError != "" })
			for _, w := range append(tc.words, "not delivered") {
				if !strings.Contains(s.LastDeliveryError, w) {
					t.Errorf("lastDeliveryError %q does not mention %q", s.LastDeliveryError, w)
				}
			}
			if _, err := time.Parse(time.RFC3339Nano, s.LastDeliveryErrorAt); err != nil || s.LastDeliveredAt != "" {
				t.Errorf("status %+v: want lastDeliveryErrorAt set and nothing delivered", s)
			}
			if tc.fail {
				failing.Store(false)
				watch(e, "hafnium")
				e.register(e.ka, battery("hafnium pack", 1000, 90))
				s = e.waitWebhook(e.kb, func(s webhookStatus) bool { return s.LastDeliveredAt != "" })
				if s.LastDeliveryError == "" || s.LastDeliveredAt <= s.LastDeliveryErrorAt {
					t.Errorf("status %+v: want the earlier error kept and a later lastDeliveredAt", s)
				}
			}
			var c store.Company
			if code, text := e.do(e.kb, http.MethodPut, "/eecar/me/webhook", map[string]any{"webhookUrl": hook.URL + "/other"}, &c); code != http.StatusOK ||
				c.LastDeliveryError != "" || c.LastDeliveryErrorAt != "" || c.LastDeliveredAt != "" {
				t.Fatalf("changing the webhook = %d %s: want the delivery status cleared", code, text)
			}
		})
	}
}

// TestWatchKeywords: criteria.keywords accepts a list of strings as well as
// a string, answers a list, and every keyword must be among the part's
// words.
func TestWatchKeywords(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name     string
		keywords any
		want     []string // as answered
		triggers bool
	}{
		{"string", "heat pump", []string{"heat pump"}, true},
		{"list", []string{"heat", "pump"}, []string{"heat", "pump"}, true},
		{"list of phrases", []string{"heat pump", "Hanon"}, []string{"heat pump", "Hanon"}, true},
		{"Korean keyword for an English part", []string{"히트펌프"}, []string{"히트펌프"}, true},
		{"one keyword missing", []string{"heat pump", "chiller"}, []string{"heat pump", "chiller"}, false},
		{"string missing", "chiller", []string{"chiller"}, false},
		{"null", nil, nil, true},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		var w store.Watch
		body := map[string]any{"criteria": map[string]any{"category": "other", "keywords": tc.keywords}}
		if code, text := e.do(e.kb, http.MethodPost, "/eecar/watches", body, &w); code != http.StatusCreated {
			t.Fatalf("%s: POST /watches = %d %s", tc.name, code, text)
		}
		if !slices.Equal(w.Criteria.Keywords, tc.want) {
			t.Errorf("%s: keywords answered %q, want %q", tc.name, w.Criteria.Keywords, tc.want)
		}
		var got store.Watch
		if code, text := e.do(e.kb, http.MethodGet, "/eecar/watches/"+w.ID, nil, &got); code != http.StatusOK || !slices.Equal(got.Criteria.Keywords, tc.want) {
			t.Errorf("%s: GET = %d %s, want keywords %q", tc.name, code, text, tc.want)
		}
		ids[i] = w.ID
	}
	for _, bad := range []any{5, []any{"ok", 3}, map[string]any{"a": "b"}} {
		e.wantError(e.kb, http.MethodPost, "/eecar/watches", map[string]any{"criteria": map[string]any{"keywords": bad}}, http.StatusBadRequest, "keywords")
	}
	e.register(e.ka, map[string]any{"name": "Ioniq 5 heat pump module", "category": "other", "manufacturer": "Hanon Systems", "price": 900000,
		"description": "R1234yf heat pump with integrated valve block"})
	e.settle()
	e.settle()
	for i, tc := range cases {
		var ts []store.Trigger
		if code, text := e.do(e.kb, http.MethodGet, "/eecar/watches/"+ids[i]+"/triggers", nil, &ts); code != http.StatusOK {
			t.Fatalf("triggers = %d %s", code, text)
		}
		if (len(ts) == 1) != tc.triggers {
			t.Errorf("%s (%v): %d triggers, want triggered %v", tc.name, tc.keywords, len(ts), tc.triggers)
		}
	}
}

// TestGlossaryFamilies: for each family of the glossary file, a part named
// only in Korean is found by every English variant and a part named only
// in English by every Korean variant: the query's words match the part's
// (BM25 > 0; the manufacturer filter isolates the one part).
func TestGlossaryFamilies(t *testing.T) {
	e := newEnv(t)
	isKo := func(s string) bool {
		return strings.IndexFunc(s, func(r rune) bool { return r >= 0xAC00 && r <= 0xD7A3 }) >= 0
	}
	type named struct {
		id, maker string
	}
	fams := embed.Glossary()
	parts := make([][2]named, len(fams)) // [0] named in Korean, [1] in English
	for i, f := range fams {
		for lang := range 2 {
			var name string
			for _, v := range f.Variants {
				if isKo(v) == (lang == 0) {
					name = v
					break
				}
			}
			if name == "" {
				t.Fatalf("family %s has no %s variant", f.Canonical, [2]string{"Korean", "English"}[lang])
			}
			cond := "refurbished"
			if f.Canonical == "refurbished" {
				cond = "new"
			}
			maker := fmt.Sprintf("Zq%03d%c", i, "ke"[lang])
			p := e.register(e.ka, map[string]any{"name": name, "category": "other", "manufacturer": maker, "price": 1000, "condition": cond})
			parts[i][lang] = named{p.ID, maker}
		}
	}
	for i, f := range fams {
		t.Run(f.Canonical, func(t *testing.T) {
			e := e.on(t)
			for _, v := range f.Variants {
				target := parts[i][0] // an English query finds the Korean-named part
				if isKo(v) {
					target = parts[i][1]
				}
				out := e.search(e.kb, map[string]any{"query": v, "topK": 1, "filters": map[string]any{"manufacturer": target.maker}})
				if len(out.Results) != 1 || out.Results[0].PartID != target.id || out.Results[0].SearchScores["bm25"] <= 0 {
					t.Errorf("query %q does not find part %s by its words: %+v", v, target.maker, out.Results)
				}
			}
		})
	}
}

// TestSearchNumbersAndUnits: a part whose spec matches the query's number
// and unit ranks above one that does not, and range words (over, under,
// 이상, 미만, …) leave out parts whose stated value is out of range.
func TestSearchNumbersAndUnits(t *testing.T) {
	e := newEnv(t)
	reg := func(name, category string, specs map[string]any) string {
		return e.register(e.ka, map[string]any{"name": name, "category": category, "manufacturer": "Test Maker", "price": 1000000, "specs": specs}).ID
	}
	elec := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"electricalProps": m}
	}
	pack := func(cathode string, kwh, soh float64) map[string]any {
		return map[string]any{"electricalProps": map[string]any{"capacity": kwh, "voltage": 360}, "chemicalProps": map[string]any{"cathode": cathode, "soh": soh}}
	}
	obc11 := reg("온보드 충전기", "charger", elec("power", 11, "voltage", 800))
	obc7 := reg("on-board charger", "charger", elec("power", 7.2, "voltage", 400))
	obc66 := reg("온보드 충전기 OBC", "charger", elec("power", 6.6, "voltage", 360))
	inv400 := reg("IGBT inverter", "inverter", elec("power", 150, "voltage", 400))
	inv800 := reg("SiC inverter", "inverter", elec("power", 250, "voltage", 800))
	lfp85 := reg("LFP battery pack", "battery", pack("LFP", 60, 85))
	lfp75 := reg("LFP battery pack", "battery", pack("LFP", 60, 75))
	ncm64 := reg("NCM battery pack", "battery", pack("NCM622", 64, 90))
	ncm40 := reg("NCM battery pack", "battery", pack("NCM622", 40, 88))

	for _, tc := range []struct {
		query    string
		first    string   // must rank first ("": any; "a|b": either)
		excluded []string // must not be returned
		reason   string   // the first result's reason mentions it
	}{
		// A spec named by the query: read with the part, the index
		// keeps no specs.
		{"IGBT inverter voltage", inv400, nil, "voltage 400"},
		{"LFP battery pack cathode", lfp85 + "|" + lfp75, nil, "cathode LFP"},
		{"11kW on-board charger", obc11, nil, "power 11 kW"},
		{"7.2kW 온보드 충전기", obc7, nil, "power 7.2 kW"},
		{"on-board charger under 7 kW", obc66, []string{obc11, obc7}, "power < 7 kW"},
		{"온보드 충전기 10kW 이상", obc11, []string{obc7, obc66}, "power >= 10 kW"},
		{"400V inverter", inv400, nil, "voltage 400 V"},
		{"800V 인버터", inv800, nil, "voltage 800 V"},
		{"LFP over 80% SOH", lfp85, []string{lfp75}, "soh > 80 %"},
		{"LFP 배터리 SOH 80% 미만", lfp75, []string{lfp85}, "soh < 80 %"},
		{"60 kWh battery pack", lfp85 + "|" + lfp75, nil, "energy 60 kWh"},
		{"battery pack above 50 kWh", "", []string{ncm40}, "energy > 50 kWh"},
		{"배터리 팩 50kWh 이하", ncm40, []string{lfp85, lfp75, ncm64}, "energy <= 50 kWh"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			e := e.on(t)
			out := e.search(e.kb, map[string]any{"query": tc.query, "topK": 20})
			got := ids(out.Results)
			if len(got) == 0 {
				t.Fatal("no results")
			}
			if tc.first != "" && !contains(strings.Split(tc.first, "|"), got[0]) {
				t.Errorf("first %s, want %s (results %v)", got[0], tc.first, got)
			}
			for _, x := range tc.excluded {
				if contains(got, x) {
					t.Errorf("%s returned, its value is out of the range", x)
				}
			}
			if !strings.Contains(out.Results[0].Reason, tc.reason) {
				t.Errorf("reason %q does not mention %q", out.Results[0].Reason, tc.reason)
			}
		})
	}
}

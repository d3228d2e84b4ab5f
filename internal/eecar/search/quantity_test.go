package search

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/eecar/fixture"
)

// quantityRE is the regular expression findQuantities implements by hand:
// the test's oracle.
var quantityRE = regexp.MustCompile(`(?i)(\d+(?:[.,]\d+)*)\s?(kwh|mwh|wh|kw|mw|kv|mah|ah|volts?|amps?|nm|kg|v|w|a|%)(?:$|[^a-z0-9])`)

// regexQuantities is what quantityRE finds in lower, the matches whose
// unit is one ParseConstraints knows (under (?i) "voltſ" matches too and
// is then dropped).
func regexQuantities(lower string) []quantitySpan {
	var out []quantitySpan
	for _, m := range quantityRE.FindAllStringSubmatchIndex(lower, -1) {
		if _, ok := units[lower[m[4]:m[5]]]; ok {
			out = append(out, quantitySpan{num: m[2], numEnd: m[3], unit: m[4], unitEnd: m[5]})
		}
	}
	return out
}

func checkQuantities(t *testing.T, text string) {
	t.Helper()
	// A doc's quantities, found folding ASCII case, are those found in
	// the text lowered by strings.ToLower.
	var viaToLower []Constraint
	for _, c := range ParseConstraints(text) {
		viaToLower = append(viaToLower, Constraint{Dim: c.Dim, Op: "=", Value: c.Value})
	}
	if got := appendConstraints(nil, text, false); !slices.Equal(got, viaToLower) {
		t.Fatalf("quantities of %q = %v, with strings.ToLower %v", text, got, viaToLower)
	}
	lower := strings.ToLower(text)
	got, want := findQuantities(lower, nil), regexQuantities(lower)
	if len(got) != len(want) {
		t.Fatalf("findQuantities(%q) = %v, the regular expression finds %v", lower, got, want)
	}
	for i := range got {
		if got[i].name != lower[got[i].unit:got[i].unitEnd] {
			t.Fatalf("findQuantities(%q): unit %q named %q", lower, lower[got[i].unit:got[i].unitEnd], got[i].name)
		}
		if got[i].name = ""; got[i] != want[i] {
			t.Fatalf("findQuantities(%q) = %v, the regular expression finds %v", lower, got, want)
		}
	}
}

// TestFindQuantitiesIsTheRegexp checks the hand-written scanner against
// the regular expression on edge cases, on every text and spec value of
// the benchmark catalogue, and on the labelled queries.
func TestFindQuantitiesIsTheRegexp(t *testing.T) {
	for _, s := range []string{
		"", "11kW", "72.6 kWh", "1,000 V", "80%", "1.2.3 v", "1..2v", "12,5,6kwh.", "3 a", "3a", "10kwhx 5 kw",
		"volts 12 volts 12volt 12amps, 3amp!", "12 \u212aW 12 KW", "5 \u0130 12V", "ÀB12V Ǆ3KWH 7A", "Ω5KW", "AB12V 12V", "12 VOLTS 12 Volt", "12 VOLTſ", "12voltſ 4v", "5 ſ", "800v/400v", "7\tkw\n", "9\x00kw", "1 2 3 kg",
		"ncm811 pack 60kwh", "99.9.% 5%%", "12mah 12 mwh 12mw", "2 nm", "1,000,000 w", "5v5v 5 v.", "١٢v 12v", "12vé 12v€",
	} {
		checkQuantities(t, s)
	}
	for _, p := range fixture.Catalogue(2000) {
		checkQuantities(t, p.Text())
		for _, v := range p.FlatSpecs() {
			checkQuantities(t, v)
		}
	}
	for _, q := range fixture.Queries() {
		checkQuantities(t, q.Text)
	}
}

func FuzzFindQuantities(f *testing.F) {
	for _, s := range []string{"11kW on-board charger", "up to 1,000 V", "72.6 kWh 80% 12voltſ", "1.2,3 volts", "7\tkw 3a 3 a", "2024 1,5.25kw 3.3.3v x12.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkQuantities(t, s)
	})
}

// TestDocQuantitiesFromSpecKeys checks that a spec's key names the
// dimension of its bare number whatever the case of its letters, with
// no cache of the keys' dimensions and with one filled by an earlier doc.
func TestDocQuantitiesFromSpecKeys(t *testing.T) {
	specs := map[string]string{"chemicalProps.StateOfHealth": "85", "ELECTRICAL.VOLTAGE": "800 V", "mechanical.Width": "12"}
	want := []quantity{{dimIndex("voltage"), 800}, {dimIndex("soh"), 85}}
	cache := map[string]int8{}
	for _, tt := range []struct {
		name  string
		cache map[string]int8
	}{{"no cache", nil}, {"cache filled", cache}, {"cache read", cache}} {
		got := docQuantities("", specs, tt.cache)
		slices.SortFunc(got, func(a, b quantity) int { return int(a.dim) - int(b.dim) })
		if !slices.Equal(got, want) {
			t.Errorf("%s: docQuantities = %v, want %v", tt.name, got, want)
		}
	}
	if len(cache) != len(specs) {
		t.Errorf("cache holds %d keys, want %d", len(cache), len(specs))
	}
}

package attr

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestCanonicalNumber(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"1.50", "1.5", ""},
		{"0100", "100", ""},
		{"1e2", "100", ""},
		{"-0", "0", ""},
		{"0.000", "0", ""},
		{"+3", "3", ""},
		{"-1.5E-3", "-0.0015", ""},
		{".5", "0.5", ""},
		{"5.", "5", ""},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678", ""},
		{"123456789012345678901234567890123456789", "", "38 significant digits"},
		{"1000000000000000000000000000000000000000000", "1000000000000000000000000000000000000000000", ""},
		{"9.9999999999999999999999999999999999999E+125", "", ""},
		{"1E+126", "", "Number overflow"},
		{"1E-130", "", ""},
		{"1E-131", "", "Number underflow"},
		{"abc", "", "cannot be converted"},
		{"", "", "cannot be converted"},
		{"1e", "", "cannot be converted"},
		{"Infinity", "", "cannot be converted"},
		{"NaN", "", "cannot be converted"},
		{" 1", "", "cannot be converted"},
		{"0x10", "", "cannot be converted"},
	}
	for _, tt := range tests {
		got, err := CanonicalNumber(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("%q = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAddNumbers(t *testing.T) {
	tests := []struct {
		a, b     string
		sub      bool
		want     string
		wantFail bool
	}{
		{"1.5", "2.5", false, "4", false},
		{"0.1", "0.2", false, "0.3", false},
		{"10", "15", true, "-5", false},
		{"99999999999999999999999999999999999999", "1", false, "100000000000000000000000000000000000000", false},
		{"9.9999999999999999999999999999999999999E+125", "1E+125", false, "", true},
	}
	for _, tt := range tests {
		a, _ := CanonicalNumber(tt.a)
		b, _ := CanonicalNumber(tt.b)
		got, err := AddNumbers(a, b, tt.sub)
		if tt.wantFail != (err != nil) {
			t.Errorf("%s±%s: err = %v", tt.a, tt.b, err)
			continue
		}
		if !tt.wantFail && got != tt.want {
			t.Errorf("%s±%s = %s, want %s", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestValueJSON(t *testing.T) {
	tests := []struct{ in, out, err string }{
		{`{"S":"x"}`, `{"S":"x"}`, ""},
		{`{"N":"01.10"}`, `{"N":"1.1"}`, ""},
		{`{"B":"AAE="}`, `{"B":"AAE="}`, ""},
		{`{"BOOL":false}`, `{"BOOL":false}`, ""},
		{`{"NULL":true}`, `{"NULL":true}`, ""},
		{`{"M":{"b":{"S":"1"},"a":{"L":[{"N":"2"}]}}}`, `{"M":{"a":{"L":[{"N":"2"}]},"b":{"S":"1"}}}`, ""},
		{`{"SS":["a","b"]}`, `{"SS":["a","b"]}`, ""},
		{`{"NS":["1","2.0"]}`, `{"NS":["1","2"]}`, ""},
		{`{"BS":["AA=="]}`, `{"BS":["AA=="]}`, ""},
		{`{}`, "", "Supplied AttributeValue is empty"},
		{`{"S":"a","N":"1"}`, "", "more than one datatypes"},
		{`{"NULL":false}`, "", "Null attribute value types must have the value of true"},
		{`{"SS":[]}`, "", "may not be empty"},
		{`{"SS":["a","a"]}`, "", "contains duplicates"},
		{`{"NS":["1","1.0"]}`, "", "contains duplicates"},
		{`{"BS":[]}`, "", "should not be empty"},
		{`{"N":"x"}`, "", "The parameter cannot be converted to a numeric value: x"},
		{`{"L":[{}]}`, "", "Supplied AttributeValue is empty"},
	}
	for _, tt := range tests {
		var v Value
		err := json.Unmarshal([]byte(tt.in), &v)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		b, _ := json.Marshal(v)
		if string(b) != tt.out {
			t.Errorf("%s → %s, want %s", tt.in, b, tt.out)
		}
	}
}

func randomNumber(r *rand.Rand) string {
	switch r.Intn(4) {
	case 0:
		return strconv.Itoa(r.Intn(2000) - 1000)
	case 1:
		return strconv.FormatFloat((r.Float64()-0.5)*1e6, 'f', r.Intn(8), 64)
	case 2:
		return strconv.FormatFloat((r.Float64()-0.5)*1e-6, 'g', -1, 64)
	default:
		digits := make([]byte, 1+r.Intn(38))
		for i := range digits {
			digits[i] = byte('0' + r.Intn(10))
		}
		s := string(digits) + "E" + strconv.Itoa(r.Intn(200)-100)
		if r.Intn(2) == 0 {
			s = "-" + s
		}
		return s
	}
}

// TestKeyEncodingOrder checks that the byte order of encoded keys is the
// DynamoDB order of the values, and that decoding inverts encoding.
func TestKeyEncodingOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var nums []Value
	for i := 0; i < 3000; i++ {
		c, err := CanonicalNumber(randomNumber(r))
		if err != nil {
			continue
		}
		nums = append(nums, Value{Kind: KindN, S: c})
	}
	var strs []Value
	for i := 0; i < 3000; i++ {
		b := make([]byte, r.Intn(6))
		for j := range b {
			b[j] = []byte{0, 1, 'a', 'b', 0xff, 0x7f}[r.Intn(6)]
		}
		strs = append(strs, Value{Kind: KindB, B: b}, Value{Kind: KindS, S: string(b)})
	}
	for _, set := range [][]Value{nums, strs} {
		for i := 0; i+1 < len(set); i++ {
			a, b := set[i], set[i+1]
			if a.Kind != b.Kind {
				continue
			}
			want, _ := Compare(a, b)
			got := bytes.Compare(AppendKey(nil, a), AppendKey(nil, b))
			if want != got {
				t.Fatalf("order of %v and %v: encoding says %d, values say %d", a, b, got, want)
			}
		}
		for _, v := range set {
			enc := AppendKey(nil, v)
			dec, rest, err := DecodeKey(append(enc, 0x42), v.Kind)
			if err != nil || len(rest) != 1 || !Equal(dec, v) {
				t.Fatalf("round trip of %v: %v %v rest=%v", v, dec, err, rest)
			}
		}
	}
	// Sorting by encoding equals sorting numerically.
	sorted := append([]Value(nil), nums...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(AppendKey(nil, sorted[i]), AppendKey(nil, sorted[j])) < 0 })
	for i := 0; i+1 < len(sorted); i++ {
		if c := CompareNumbers(sorted[i].S, sorted[i+1].S); c > 0 {
			t.Fatalf("%s sorted before %s", sorted[i].S, sorted[i+1].S)
		}
	}
}

func TestItemSize(t *testing.T) {
	it := Item{"name": Str("abc"), "n": Num("123.45"), "b": Boolean(true)}
	// 4+3 + 1+(5 digits→3+1) + 1+1
	if got := it.Size(); got != 4+3+1+4+1+1 {
		t.Fatalf("size = %d", got)
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	in := `{"s":{"S":"héllo"},"n":{"N":"-12.5"},"b":{"B":"AAEC"},"e":{"B":""},"t":{"BOOL":true},"f":{"BOOL":false},"z":{"NULL":true},
		"m":{"M":{"x":{"L":[{"S":"a"},{"M":{}},{"L":[]}]},"y":{"SS":["a","b"]}}},"ns":{"NS":["1","2.5"]},"bs":{"BS":["AA==","AQ=="]}}`
	var it Item
	if err := json.Unmarshal([]byte(in), &it); err != nil {
		t.Fatal(err)
	}
	enc := it.AppendBinary(nil)
	got, err := DecodeBinary(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(Value{Kind: KindM, M: it}, Value{Kind: KindM, M: got}) {
		a, _ := json.Marshal(it)
		b, _ := json.Marshal(got)
		t.Fatalf("round trip:\n%s\n%s", a, b)
	}
	// Truncations and garbage are errors, never panics.
	for i := 0; i < len(enc); i++ {
		DecodeBinary(enc[:i])
		bad := append([]byte(nil), enc...)
		bad[i] ^= 0xff
		DecodeBinary(bad)
	}
}

// TestCanonicalIntFastPath checks that integers spared the decimal parse
// come out as the parse would have made them.
func TestCanonicalIntFastPath(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	ins := []string{"0", "-0", "00", "-00", "7", "-7", "10", "010", "-", "", "1-", "99999999999999999999999999999999999999", "-99999999999999999999999999999999999999", "999999999999999999999999999999999999999"}
	for i := 0; i < 2000; i++ {
		ins = append(ins, strconv.FormatInt(r.Int63()>>uint(r.Intn(63)), 10), strconv.FormatInt(-r.Int63()>>uint(r.Intn(63)), 10))
	}
	for _, s := range ins {
		got, gerr := CanonicalNumber(s)
		var want string
		d, werr := ParseDecimal(s)
		if werr == nil {
			want = formatDecimal(d)
		}
		if got != want || (gerr == nil) != (werr == nil) {
			t.Errorf("%q: fast path %q, %v; decimal parse %q, %v", s, got, gerr, want, werr)
		}
	}
}

// TestNumberPartsIntegers: the key encoding of an integer, read from its
// digits, is byte for byte the one its decimal value gives, so keys stored
// before and after agree.
func TestNumberPartsIntegers(t *testing.T) {
	nums := []string{"0", "1", "-1", "7", "10", "-10", "120", "1000000", "-9000", "42", "100000000000000000000000000000000000000",
		"99999999999999999999999999999999999999", "-10000000000000000000000000000000000000", "1.5", "-0.001", "1E+3", "0.1"}
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		nums = append(nums, strconv.FormatInt(r.Int63n(1<<uint(r.Intn(62)+1))*int64(1-2*r.Intn(2)), 10))
	}
	for _, n := range nums {
		c, err := CanonicalNumber(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		gs, gd, ge := numberParts(c)
		ws, wd, we := decimalParts(c)
		if gs != ws || gd != wd || ge != we {
			t.Errorf("numberParts(%s) = %d %q %d, its decimal's %d %q %d", c, gs, gd, ge, ws, wd, we)
		}
	}
}

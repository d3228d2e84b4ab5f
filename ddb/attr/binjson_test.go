package attr

import (
	"bytes"
	"math/rand"
	"strconv"
	"testing"
)

// randomValue returns a random value of any kind, nesting up to depth.
func randomValue(r *rand.Rand, depth int) Value {
	strs := []string{"", "a", "héllo", "<&>", "tab\there", "quote\"back\\slash", "\u2028", "日本"}
	str := func() string { return strs[r.Intn(len(strs))] + strconv.Itoa(r.Intn(1000)) }
	num := func() string {
		for {
			if c, err := CanonicalNumber(randomNumber(r)); err == nil {
				return c
			}
		}
	}
	kinds := 8
	if depth > 0 {
		kinds = 10
	}
	switch r.Intn(kinds) {
	case 0:
		return Str(str())
	case 1:
		return Value{Kind: KindN, S: num()}
	case 2:
		b := make([]byte, r.Intn(6))
		r.Read(b)
		return Bin(b)
	case 3:
		return Boolean(r.Intn(2) == 0)
	case 4:
		return Null()
	case 5:
		ss := map[string]bool{}
		for i := 0; i <= r.Intn(4); i++ {
			ss[str()] = true
		}
		v := Value{Kind: KindSS}
		for s := range ss {
			v.SS = append(v.SS, s)
		}
		return v
	case 6:
		ns := map[string]bool{}
		for i := 0; i <= r.Intn(4); i++ {
			ns[num()] = true
		}
		v := Value{Kind: KindNS}
		for s := range ns {
			v.SS = append(v.SS, s)
		}
		return v
	case 7:
		return Value{Kind: KindBS, BS: [][]byte{{1}, {2, 3}, {}}[:1+r.Intn(3)]}
	case 8:
		m := map[string]Value{}
		for i := 0; i < r.Intn(4); i++ {
			m[str()] = randomValue(r, depth-1)
		}
		return Value{Kind: KindM, M: m}
	default:
		l := []Value{}
		for i := 0; i < r.Intn(4); i++ {
			l = append(l, randomValue(r, depth-1))
		}
		return Value{Kind: KindL, L: l}
	}
}

// TestAppendBinaryJSON checks the transcoder against decoding the binary
// item and encoding it: same JSON, byte for byte, and same size.
func TestAppendBinaryJSON(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 3000; i++ {
		it := Item{}
		for j := 0; j <= r.Intn(6); j++ {
			it["a"+strconv.Itoa(r.Intn(20))+[]string{"", "é", "\""}[r.Intn(3)]] = randomValue(r, 3)
		}
		var want, got bytes.Buffer
		it.AppendJSON(&want)
		got.WriteString("prefix")
		size, err := AppendBinaryJSON(&got, it.AppendBinary(nil))
		if err != nil {
			t.Fatal(err)
		}
		if g := bytes.TrimPrefix(got.Bytes(), []byte("prefix")); !bytes.Equal(g, want.Bytes()) {
			t.Fatalf("JSON:\n got  %s\n want %s", g, want.Bytes())
		}
		if size != it.Size() {
			t.Fatalf("%s: size %d, want %d", want.Bytes(), size, it.Size())
		}
	}
}

func TestAppendBinaryJSONCorrupt(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	it := Item{"m": randomValue(r, 3), "l": {Kind: KindL, L: []Value{Str("x"), Num("1")}}, "s": Str("y")}
	enc := it.AppendBinary(nil)
	for i := 0; i < len(enc); i++ {
		var buf bytes.Buffer
		buf.WriteString("keep")
		if _, err := AppendBinaryJSON(&buf, enc[:i]); err == nil {
			t.Errorf("truncated at %d: no error", i)
		}
		if buf.String() != "keep" {
			t.Errorf("truncated at %d: output left behind: %q", i, buf.String())
		}
		bad := append([]byte(nil), enc...)
		bad[i] ^= 0xff
		AppendBinaryJSON(&buf, bad) // must not panic
	}
}

func BenchmarkAppendBinaryJSON(b *testing.B) {
	var it Item
	if err := it.UnmarshalJSON([]byte(`{"pk":{"S":"query#007"},"sk":{"N":"512"},"n":{"N":"1234567"},"ts":{"N":"1764133200000"},"payload":{"S":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop"}}`)); err != nil {
		b.Fatal(err)
	}
	bin := it.AppendBinary(nil)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		for range 100 { // a Query page
			if _, err := AppendBinaryJSON(&buf, bin); err != nil {
				b.Fatal(err)
			}
		}
	}
}

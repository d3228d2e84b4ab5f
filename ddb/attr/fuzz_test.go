package attr

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// valueGen builds values from fuzz input, a byte at a time, so the fuzzer's
// mutations steer the shape of the value; once the input runs out every
// choice is 0 and the value closes with scalars.
type valueGen struct {
	b     []byte
	nodes int // values built, to bound the work per input
}

func (g *valueGen) next() int {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return int(c)
}

func (g *valueGen) str() string {
	switch c := g.next(); c % 8 {
	case 0:
		return ""
	case 1:
		// 400 KB, the item size limit (and beyond, which the codec does
		// not care about).
		return strings.Repeat("x", 400*1024-c/8)
	case 2:
		return "é\u2028\"\\<>\x00\xff"
	default:
		return "s" + strconv.Itoa(c)
	}
}

// num returns a canonical number, from the smallest to the largest
// magnitude DynamoDB accepts, with up to 38 significant digits.
func (g *valueGen) num() string {
	digits := strings.Repeat("9", 1+g.next()%38)
	exp := g.next()%256 - 128
	if exp > 125 {
		exp = 125
	}
	if exp < -130 {
		exp = -130
	}
	s := digits + "E" + strconv.Itoa(exp-len(digits)+1)
	if g.next()%2 == 1 {
		s = "-" + s
	}
	c, err := CanonicalNumber(s)
	if err != nil {
		return "0"
	}
	return c
}

func (g *valueGen) bin() []byte {
	n := g.next() % 16
	if n == 15 {
		return bytes.Repeat([]byte{0xff}, 400*1024)
	}
	return bytes.Repeat([]byte{byte(n)}, n)
}

// value builds one value; depth is its nesting level so far.
func (g *valueGen) value(depth int) Value {
	g.nodes++
	if g.nodes > 2000 {
		return Str("end")
	}
	switch c := g.next(); c % 12 {
	case 0:
		return Str(g.str())
	case 1:
		return Value{Kind: KindN, S: g.num()}
	case 2:
		return Bin(g.bin())
	case 3:
		return Boolean(g.next()%2 == 1)
	case 4:
		return Null()
	case 5:
		v := Value{Kind: KindSS}
		for i := 0; i <= g.next()%4; i++ {
			v.SS = append(v.SS, g.str()+strconv.Itoa(i))
		}
		return v
	case 6:
		v := Value{Kind: KindNS}
		for i := 0; i <= g.next()%4; i++ {
			v.SS = append(v.SS, g.num()+strconv.Itoa(i))
		}
		return v
	case 7:
		v := Value{Kind: KindBS}
		for i := 0; i <= g.next()%4; i++ {
			v.BS = append(v.BS, append(g.bin(), byte(i)))
		}
		return v
	case 8:
		m := map[string]Value{}
		for i := 0; i < g.next()%4; i++ {
			m[g.str()+strconv.Itoa(i)] = g.value(depth + 1)
		}
		return Value{Kind: KindM, M: m}
	case 9:
		l := []Value{}
		for i := 0; i < g.next()%4; i++ {
			l = append(l, g.value(depth+1))
		}
		return Value{Kind: KindL, L: l}
	default:
		// A chain of maps or lists, up to past any nesting limit.
		n := g.next() + MaxNestingLevels - 8
		v := g.value(depth + n)
		for i := 0; i < n; i++ {
			if c%2 == 0 {
				v = Value{Kind: KindM, M: map[string]Value{"n": v}}
			} else {
				v = Value{Kind: KindL, L: []Value{v}}
			}
		}
		return v
	}
}

// sameValue reports whether a and b are exactly the same value: kind,
// contents, and the order of set members and list elements.
func sameValue(a, b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case KindS, KindN:
		return a.S == b.S
	case KindB:
		return bytes.Equal(a.B, b.B)
	case KindBOOL, KindNULL:
		return a.Bool == b.Bool
	case KindSS, KindNS:
		if len(a.SS) != len(b.SS) {
			return false
		}
		for i := range a.SS {
			if a.SS[i] != b.SS[i] {
				return false
			}
		}
	case KindBS:
		if len(a.BS) != len(b.BS) {
			return false
		}
		for i := range a.BS {
			if !bytes.Equal(a.BS[i], b.BS[i]) {
				return false
			}
		}
	case KindM:
		return sameItem(a.M, b.M)
	case KindL:
		if len(a.L) != len(b.L) {
			return false
		}
		for i := range a.L {
			if !sameValue(a.L[i], b.L[i]) {
				return false
			}
		}
	}
	return true
}

func sameItem(a, b Item) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !sameValue(v, w) {
			return false
		}
	}
	return true
}

// checkRoundTrip asserts that the binary form of it decodes to it exactly,
// and transcodes to the JSON and size of it.
func checkRoundTrip(t *testing.T, it Item) {
	t.Helper()
	bin := it.AppendBinary(nil)
	got, err := DecodeBinary(bin)
	if err != nil {
		t.Fatalf("DecodeBinary of what AppendBinary wrote (%d bytes): %v", len(bin), err)
	}
	if !sameItem(it, got) {
		t.Fatalf("round trip changed the item")
	}
	if again := got.AppendBinary(nil); !bytes.Equal(again, bin) {
		t.Fatalf("re-encoding the decoded item gives other bytes")
	}
	var want, js bytes.Buffer
	it.AppendJSON(&want)
	size, err := AppendBinaryJSON(&js, bin)
	if err != nil {
		t.Fatalf("AppendBinaryJSON of what AppendBinary wrote: %v", err)
	}
	if !bytes.Equal(js.Bytes(), want.Bytes()) {
		t.Fatalf("AppendBinaryJSON differs from AppendJSON")
	}
	if size != it.Size() {
		t.Fatalf("AppendBinaryJSON size %d, Item.Size %d", size, it.Size())
	}
}

// FuzzBinaryRoundTrip builds an item from the input (nested maps, lists and
// sets, numbers of extreme exponents, empty and 400 KB strings and binaries,
// chains nested past any limit) and asserts that encode → decode gives it
// back exactly. It also decodes the raw input, which must not panic and,
// when it decodes, must round-trip in turn.
func FuzzBinaryRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 0, 0, 0})
	f.Add([]byte{10, 40, 0})        // a map chain past 64 levels
	f.Add([]byte{11, 200, 9, 2, 1}) // a list chain past 200 levels
	f.Add([]byte{0, 1, 1, 255, 255, 1, 1, 0, 0, 2, 15})
	f.Add([]byte{8, 3, 1, 10, 24, 0, 9, 2, 6, 3, 1, 2, 3, 4, 5, 6})
	f.Add(Item{"a": Str("x"), "m": {Kind: KindM, M: map[string]Value{"l": {Kind: KindL, L: []Value{Num("1")}}}}}.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The input as a description of an item.
		g := &valueGen{b: data}
		it := Item{}
		for i := 0; i == 0 || (len(g.b) > 0 && i < 8); i++ {
			it["a"+strconv.Itoa(i)] = g.value(1)
		}
		checkRoundTrip(t, it)

		// The input as a binary item: never a panic.
		if dec, err := DecodeBinary(data); err == nil {
			checkRoundTrip(t, dec)
		}
		var buf bytes.Buffer
		_, _ = AppendBinaryJSON(&buf, data)
	})
}

// TestBinaryRoundTripDeep is the original report: an item nested 64 levels
// or more was written but could not be read back. The codec has no depth
// limit of its own; every depth round-trips.
func TestBinaryRoundTripDeep(t *testing.T) {
	for _, depth := range []int{1, 31, 32, 33, 63, 64, 65, 100, 1000, 100000} {
		for _, kind := range []Kind{KindM, KindL} {
			v := Str("leaf")
			for i := 0; i < depth; i++ {
				if kind == KindM {
					v = Value{Kind: KindM, M: map[string]Value{"n": v}}
				} else {
					v = Value{Kind: KindL, L: []Value{v}}
				}
			}
			t.Run(kind.String()+strconv.Itoa(depth), func(t *testing.T) {
				checkRoundTrip(t, Item{"pk": Str("k"), "d": v})
			})
		}
	}
}

// TestTooDeep pins the nesting limit: 31 maps or lists around a scalar (the
// scalar at level 32) are accepted, 32 are not, and neither is a map or
// list at level 32, even empty.
func TestTooDeep(t *testing.T) {
	wrap := func(v Value, n int, kind Kind) Value {
		for i := 0; i < n; i++ {
			if kind == KindM {
				v = Value{Kind: KindM, M: map[string]Value{"n": v}}
			} else {
				v = Value{Kind: KindL, L: []Value{v}}
			}
		}
		return v
	}
	for _, kind := range []Kind{KindM, KindL} {
		tests := []struct {
			name string
			v    Value
			deep bool
		}{
			{"scalar", Str("x"), false},
			{"set", Value{Kind: KindSS, SS: []string{"a"}}, false},
			{"31 around a scalar", wrap(Str("x"), 31, kind), false},
			{"31 around a set", wrap(Value{Kind: KindNS, SS: []string{"1"}}, 31, kind), false},
			{"30 around an empty map", wrap(Value{Kind: KindM, M: map[string]Value{}}, 30, kind), false},
			{"32 around a scalar", wrap(Str("x"), 32, kind), true},
			{"31 around an empty list", wrap(Value{Kind: KindL, L: []Value{}}, 31, kind), true},
			{"64 around a scalar", wrap(Str("x"), 64, kind), true},
			{"mixed 16+16", wrap(wrap(Num("1"), 16, KindL), 16, KindM), true},
			{"mixed 16+15", wrap(wrap(Num("1"), 15, KindL), 16, KindM), false},
		}
		for _, tt := range tests {
			t.Run(kind.String()+"/"+tt.name, func(t *testing.T) {
				if got := tt.v.TooDeep(); got != tt.deep {
					t.Errorf("Value.TooDeep = %v, want %v", got, tt.deep)
				}
				it := Item{"pk": Str("k"), "v": tt.v}
				if got := it.TooDeep(); got != tt.deep {
					t.Errorf("Item.TooDeep = %v, want %v", got, tt.deep)
				}
			})
		}
	}
}

// Package attr implements DynamoDB attribute values: their JSON wire form,
// the validation DynamoDB applies to them, number canonicalisation,
// comparison, item size accounting and an order-preserving key encoding.
package attr

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Kind is the DynamoDB data type of a Value.
type Kind uint8

// The DynamoDB data types. The zero Kind means "no value".
const (
	KindS Kind = iota + 1
	KindN
	KindB
	KindBOOL
	KindNULL
	KindM
	KindL
	KindSS
	KindNS
	KindBS
)

var kindNames = [...]string{"", "S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"}

// String returns the DynamoDB type descriptor ("S", "N", "SS", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// KindFromString returns the Kind named by a DynamoDB type descriptor.
func KindFromString(s string) (Kind, bool) {
	for i, n := range kindNames {
		if i > 0 && n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// IsSet reports whether k is one of the set types (SS, NS, BS).
func (k Kind) IsSet() bool { return k == KindSS || k == KindNS || k == KindBS }

// Value is one DynamoDB attribute value. Exactly the field(s) that belong to
// Kind are meaningful: S holds the string of S and the canonical decimal of N;
// Bool holds BOOL (and is true for NULL); SS holds the members of SS and NS.
type Value struct {
	Kind Kind
	S    string
	B    []byte
	Bool bool
	M    map[string]Value
	L    []Value
	SS   []string
	BS   [][]byte
}

// Item is a DynamoDB item: attribute name to value.
type Item map[string]Value

// Str returns an S value.
func Str(s string) Value { return Value{Kind: KindS, S: s} }

// Num returns an N value from a decimal string. It panics if s is not a
// valid DynamoDB number; use ParseNumber for untrusted input.
func Num(s string) Value {
	c, err := CanonicalNumber(s)
	if err != nil {
		panic(err)
	}
	return Value{Kind: KindN, S: c}
}

// Bin returns a B value.
func Bin(b []byte) Value { return Value{Kind: KindB, B: b} }

// Boolean returns a BOOL value.
func Boolean(b bool) Value { return Value{Kind: KindBOOL, Bool: b} }

// Null returns the NULL value.
func Null() Value { return Value{Kind: KindNULL, Bool: true} }

// IsZero reports whether v holds no value.
func (v Value) IsZero() bool { return v.Kind == 0 }

// Error is a validation error in a value, reported by DynamoDB as a
// ValidationException with Message as its message.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

func verr(format string, args ...any) error { return &Error{Message: fmt.Sprintf(format, args...)} }

// wire is the JSON shape of an AttributeValue.
type wire struct {
	S    *string           `json:"S"`
	N    *string           `json:"N"`
	B    *[]byte           `json:"B"`
	BOOL *bool             `json:"BOOL"`
	NULL *bool             `json:"NULL"`
	M    *map[string]Value `json:"M"`
	L    *[]Value          `json:"L"`
	SS   *[]string         `json:"SS"`
	NS   *[]string         `json:"NS"`
	BS   *[][]byte         `json:"BS"`
}

// fromWire validates a decoded wire value and stores it in v.
func (v *Value) fromWire(w *wire) error {
	n := 0
	for _, set := range []bool{w.S != nil, w.N != nil, w.B != nil, w.BOOL != nil, w.NULL != nil, w.M != nil, w.L != nil, w.SS != nil, w.NS != nil, w.BS != nil} {
		if set {
			n++
		}
	}
	if n == 0 {
		return verr("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	if n > 1 {
		return verr("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
	}
	switch {
	case w.S != nil:
		*v = Value{Kind: KindS, S: *w.S}
	case w.N != nil:
		c, err := CanonicalNumber(*w.N)
		if err != nil {
			return err
		}
		*v = Value{Kind: KindN, S: c}
	case w.B != nil:
		b := *w.B
		if b == nil {
			b = []byte{}
		}
		*v = Value{Kind: KindB, B: b}
	case w.BOOL != nil:
		*v = Value{Kind: KindBOOL, Bool: *w.BOOL}
	case w.NULL != nil:
		if !*w.NULL {
			return verr("One or more parameter values were invalid: Null attribute value types must have the value of true")
		}
		*v = Value{Kind: KindNULL, Bool: true}
	case w.M != nil:
		m := *w.M
		if m == nil {
			m = map[string]Value{}
		}
		for _, e := range m {
			if e.Kind == 0 {
				return verr("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
			}
		}
		*v = Value{Kind: KindM, M: m}
	case w.L != nil:
		l := *w.L
		if l == nil {
			l = []Value{}
		}
		for _, e := range l {
			if e.Kind == 0 {
				return verr("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
			}
		}
		*v = Value{Kind: KindL, L: l}
	case w.SS != nil:
		ss := *w.SS
		if len(ss) == 0 {
			return verr("One or more parameter values were invalid: An string set  may not be empty")
		}
		if dup := hasDupStrings(ss); dup {
			return verr("One or more parameter values were invalid: Input collection %s contains duplicates.", fmtCollection(ss))
		}
		*v = Value{Kind: KindSS, SS: ss}
	case w.NS != nil:
		ns := *w.NS
		if len(ns) == 0 {
			return verr("One or more parameter values were invalid: An number set  may not be empty")
		}
		out := make([]string, len(ns))
		for i, s := range ns {
			c, err := CanonicalNumber(s)
			if err != nil {
				return err
			}
			out[i] = c
		}
		if hasDupStrings(out) {
			return verr("One or more parameter values were invalid: Input collection %s contains duplicates.", fmtCollection(ns))
		}
		*v = Value{Kind: KindNS, SS: out}
	case w.BS != nil:
		bs := *w.BS
		if len(bs) == 0 {
			return verr("One or more parameter values were invalid: Binary sets should not be empty")
		}
		seen := make(map[string]bool, len(bs))
		for i, b := range bs {
			if b == nil {
				bs[i] = []byte{}
			}
			if seen[string(b)] {
				strs := make([]string, len(bs))
				for j, b := range bs {
					strs[j] = base64.StdEncoding.EncodeToString(b)
				}
				return verr("One or more parameter values were invalid: Input collection %s contains duplicates.", fmtCollection(strs))
			}
			seen[string(b)] = true
		}
		*v = Value{Kind: KindBS, BS: bs}
	}
	return nil
}

func fmtCollection(ss []string) string { return "[" + strings.Join(ss, ", ") + "]" }

func hasDupStrings(ss []string) bool {
	seen := make(map[string]struct{}, len(ss))
	for _, s := range ss {
		if _, ok := seen[s]; ok {
			return true
		}
		seen[s] = struct{}{}
	}
	return false
}

// MarshalJSON encodes v in DynamoDB's wire form.
func (v Value) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	v.appendJSON(&buf)
	return buf.Bytes(), nil
}

func writeJSONString[T string | []byte](buf *bytes.Buffer, s T) {
	if isPlainASCII(s) {
		buf.WriteByte('"')
		buf.Write(append(buf.AvailableBuffer(), s...))
		buf.WriteByte('"')
		return
	}
	b, _ := json.Marshal(string(s))
	buf.Write(b)
}

func isPlainASCII[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			return false
		}
	}
	return true
}

// plainJSON marks the bytes encoding/json writes as they are in a string:
// printable ASCII other than the quote, the backslash and the characters
// it escapes for HTML (<, >, &).
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

func writeB64(buf *bytes.Buffer, b []byte) {
	buf.WriteByte('"')
	enc := base64.StdEncoding
	n := enc.EncodedLen(len(b))
	start := buf.Len()
	buf.Grow(n)
	buf.Write(make([]byte, n))
	enc.Encode(buf.Bytes()[start:], b)
	buf.WriteByte('"')
}

func (v Value) appendJSON(buf *bytes.Buffer) {
	switch v.Kind {
	case KindS:
		buf.WriteString(`{"S":`)
		writeJSONString(buf, v.S)
	case KindN:
		buf.WriteString(`{"N":"`)
		buf.WriteString(v.S)
		buf.WriteByte('"')
	case KindB:
		buf.WriteString(`{"B":`)
		writeB64(buf, v.B)
	case KindBOOL:
		if v.Bool {
			buf.WriteString(`{"BOOL":true`)
		} else {
			buf.WriteString(`{"BOOL":false`)
		}
	case KindNULL:
		buf.WriteString(`{"NULL":true`)
	case KindM:
		buf.WriteString(`{"M":`)
		Item(v.M).appendJSON(buf)
	case KindL:
		buf.WriteString(`{"L":[`)
		for i, e := range v.L {
			if i > 0 {
				buf.WriteByte(',')
			}
			e.appendJSON(buf)
		}
		buf.WriteByte(']')
	case KindSS, KindNS:
		if v.Kind == KindSS {
			buf.WriteString(`{"SS":[`)
		} else {
			buf.WriteString(`{"NS":[`)
		}
		for i, s := range v.SS {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, s)
		}
		buf.WriteByte(']')
	case KindBS:
		buf.WriteString(`{"BS":[`)
		for i, b := range v.BS {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeB64(buf, b)
		}
		buf.WriteByte(']')
	default:
		buf.WriteString(`null`)
		return
	}
	buf.WriteByte('}')
}

// MarshalJSON encodes the item as a JSON object of AttributeValues, with
// attribute names in sorted order so the encoding is deterministic.
func (it Item) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	it.appendJSON(&buf)
	return buf.Bytes(), nil
}

// AppendJSON appends the JSON encoding of the item to buf.
func (it Item) AppendJSON(buf *bytes.Buffer) { it.appendJSON(buf) }

func (it Item) appendJSON(buf *bytes.Buffer) {
	if it == nil {
		buf.WriteString("{}")
		return
	}
	keys := make([]string, 0, len(it))
	for k := range it {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeJSONString(buf, k)
		buf.WriteByte(':')
		it[k].appendJSON(buf)
	}
	buf.WriteByte('}')
}

// Clone returns a deep copy of v.
func (v Value) Clone() Value {
	out := v
	switch v.Kind {
	case KindB:
		out.B = append([]byte(nil), v.B...)
	case KindM:
		out.M = make(map[string]Value, len(v.M))
		for k, e := range v.M {
			out.M[k] = e.Clone()
		}
	case KindL:
		out.L = make([]Value, len(v.L))
		for i, e := range v.L {
			out.L[i] = e.Clone()
		}
	case KindSS, KindNS:
		out.SS = append([]string(nil), v.SS...)
	case KindBS:
		out.BS = make([][]byte, len(v.BS))
		for i, b := range v.BS {
			out.BS[i] = append([]byte(nil), b...)
		}
	}
	return out
}

// Clone returns a deep copy of the item.
func (it Item) Clone() Item {
	if it == nil {
		return nil
	}
	out := make(Item, len(it))
	for k, v := range it {
		out[k] = v.Clone()
	}
	return out
}

// Equal reports whether a and b are the same DynamoDB value: same type and
// same contents, with sets compared as sets and numbers numerically.
func Equal(a, b Value) bool {
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
	case KindM:
		if len(a.M) != len(b.M) {
			return false
		}
		for k, av := range a.M {
			bv, ok := b.M[k]
			if !ok || !Equal(av, bv) {
				return false
			}
		}
		return true
	case KindL:
		if len(a.L) != len(b.L) {
			return false
		}
		for i := range a.L {
			if !Equal(a.L[i], b.L[i]) {
				return false
			}
		}
		return true
	case KindSS, KindNS:
		if len(a.SS) != len(b.SS) {
			return false
		}
		set := make(map[string]struct{}, len(a.SS))
		for _, s := range a.SS {
			set[s] = struct{}{}
		}
		for _, s := range b.SS {
			if _, ok := set[s]; !ok {
				return false
			}
		}
		return true
	case KindBS:
		if len(a.BS) != len(b.BS) {
			return false
		}
		set := make(map[string]struct{}, len(a.BS))
		for _, s := range a.BS {
			set[string(s)] = struct{}{}
		}
		for _, s := range b.BS {
			if _, ok := set[string(s)]; !ok {
				return false
			}
		}
		return true
	}
	return true
}

// Compare orders two scalar values of the same kind (S, N or B): strings and
// binaries by their bytes, numbers numerically. ok is false when the values
// are not comparable (different kinds, or not S/N/B).
func Compare(a, b Value) (c int, ok bool) {
	if a.Kind != b.Kind {
		return 0, false
	}
	switch a.Kind {
	case KindS:
		return strings.Compare(a.S, b.S), true
	case KindB:
		return bytes.Compare(a.B, b.B), true
	case KindN:
		return CompareNumbers(a.S, b.S), true
	}
	return 0, false
}

// Size returns the number of bytes DynamoDB counts for the value.
func (v Value) Size() int {
	switch v.Kind {
	case KindS:
		return len(v.S)
	case KindN:
		return numberSize(v.S)
	case KindB:
		return len(v.B)
	case KindBOOL, KindNULL:
		return 1
	case KindM:
		n := 3
		for k, e := range v.M {
			n += len(k) + e.Size() + 1
		}
		return n
	case KindL:
		n := 3
		for _, e := range v.L {
			n += e.Size() + 1
		}
		return n
	case KindSS:
		n := 0
		for _, s := range v.SS {
			n += len(s)
		}
		return n
	case KindNS:
		n := 0
		for _, s := range v.SS {
			n += numberSize(s)
		}
		return n
	case KindBS:
		n := 0
		for _, b := range v.BS {
			n += len(b)
		}
		return n
	}
	return 0
}

// Size returns the number of bytes DynamoDB counts for the item: the UTF-8
// length of each attribute name plus the size of its value.
func (it Item) Size() int {
	n := 0
	for k, v := range it {
		n += len(k) + v.Size()
	}
	return n
}

// ValidUTF8 reports whether every string in v is valid UTF-8.
func (v Value) ValidUTF8() bool {
	switch v.Kind {
	case KindS:
		return utf8.ValidString(v.S)
	case KindSS:
		for _, s := range v.SS {
			if !utf8.ValidString(s) {
				return false
			}
		}
	case KindM:
		for k, e := range v.M {
			if !utf8.ValidString(k) || !e.ValidUTF8() {
				return false
			}
		}
	case KindL:
		for _, e := range v.L {
			if !e.ValidUTF8() {
				return false
			}
		}
	}
	return true
}

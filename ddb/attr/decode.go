package attr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"
)

// This file decodes AttributeValues and Items from JSON without reflection:
// every request carries them, and decoding them through encoding/json
// re-scanned each nested value once per level of nesting.
//
// The jsonDecoder keeps encoding/json's observable behaviour, which the error
// messages of the wire protocol are built on: a JSON value of the wrong
// type for a field is a *json.UnmarshalTypeError naming the Go type it
// could not fill, remembered while the rest of the value is read (the first
// one wins); a validation error (*Error) stops decoding at once; a null
// field counts as absent; a repeated field keeps its last value; strings are
// unquoted exactly as encoding/json unquotes them. Field names must match
// exactly (encoding/json would also accept "s" for "S"; DynamoDB does not),
// and binary values are base64 strings only (encoding/json would also take
// an array of numbers).

// errSyntax reports malformed JSON handed directly to a jsonDecoder (through
// encoding/json the input has already been checked).
var errSyntax = errors.New("attr: malformed JSON")

var (
	typeWire      = reflect.TypeFor[wire]()
	typeString    = reflect.TypeFor[string]()
	typeBytes     = reflect.TypeFor[[]byte]()
	typeBool      = reflect.TypeFor[bool]()
	typeMap       = reflect.TypeFor[map[string]Value]()
	typeList      = reflect.TypeFor[[]Value]()
	typeStrings   = reflect.TypeFor[[]string]()
	typeByteSlice = reflect.TypeFor[[][]byte]()
	typeItem      = reflect.TypeFor[Item]()
)

// TypeErrorMessage is the message of the SerializationException DynamoDB
// answers for a JSON value of the wrong type, as encoding/json reports it
// (also for the types of a request's other members).
func TypeErrorMessage(te *json.UnmarshalTypeError) string {
	switch te.Value {
	case "number":
		return "NUMBER_VALUE can not be converted to " + javaTypeName(te.Type.String())
	case "string":
		return "STRING_VALUE can not be converted to " + javaTypeName(te.Type.String())
	case "bool":
		return "TRUE_VALUE can not be converted to " + javaTypeName(te.Type.String())
	case "array":
		return "Unexpected list element termination"
	case "object":
		return "Start of structure or map found where not expected."
	}
	return "Unexpected value type in payload"
}

// javaTypeName names a Go type as DynamoDB's (Java) messages name theirs.
func javaTypeName(t string) string {
	switch {
	case strings.Contains(t, "string"):
		return "String"
	case strings.Contains(t, "int"):
		return "Long"
	case strings.Contains(t, "bool"):
		return "Boolean"
	case strings.Contains(t, "[]"):
		return "List"
	}
	return "Structure"
}

// UnmarshalJSON decodes and validates a DynamoDB AttributeValue. Syntax and
// type errors are json errors; semantic errors (empty value, several types,
// bad numbers, empty or duplicate sets) are *Error.
func (v *Value) UnmarshalJSON(data []byte) error {
	d := jsonDecoder{data: data}
	if err := d.value(v); err != nil {
		return err
	}
	return d.end()
}

// UnmarshalJSON decodes an item (a JSON object of AttributeValues); null
// leaves the item nil.
func (it *Item) UnmarshalJSON(data []byte) error {
	d := jsonDecoder{data: data}
	d.ws()
	if d.literal("null") {
		*it = nil
		return d.end()
	}
	if d.peek() != '{' {
		return d.typeError(typeItem)
	}
	m, err := d.object()
	if err != nil {
		return err
	}
	*it = m
	return d.end()
}

// jsonDecoder reads one JSON text.
type jsonDecoder struct {
	data []byte
	pos  int
	// deferred is the first type error (or bad base64) met inside the
	// value being decoded: encoding/json finishes the value before
	// reporting it.
	deferred error
}

func (d *jsonDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// end checks that only white space follows the value.
func (d *jsonDecoder) end() error {
	d.ws()
	if d.pos != len(d.data) {
		return errSyntax
	}
	return nil
}

// literal consumes lit (null, true, false) if it is next.
func (d *jsonDecoder) literal(lit string) bool {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return true
	}
	return false
}

// expect consumes c after white space.
func (d *jsonDecoder) expect(c byte) error {
	d.ws()
	if d.peek() != c {
		return errSyntax
	}
	d.pos++
	return nil
}

// jsonKind names the JSON value starting at the cursor as encoding/json's
// UnmarshalTypeError does.
func (d *jsonDecoder) jsonKind() string {
	switch c := d.peek(); {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't' || c == 'f':
		return "bool"
	default:
		return "number"
	}
}

// typeError skips the value at the cursor and returns the type error of
// putting it into a t.
func (d *jsonDecoder) typeError(t reflect.Type) error {
	e := &json.UnmarshalTypeError{Value: d.jsonKind(), Type: t, Offset: int64(d.pos)}
	if err := d.skip(); err != nil {
		return err
	}
	return e
}

// deferTypeError skips the value at the cursor and remembers its type
// error if it is the first.
func (d *jsonDecoder) deferTypeError(t reflect.Type) error {
	err := d.typeError(t)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err // malformed
	}
	if d.deferred == nil {
		d.deferred = err
	}
	return nil
}

// value decodes one AttributeValue into v.
func (d *jsonDecoder) value(v *Value) error {
	d.ws()
	switch d.peek() {
	case '{':
	case 'n':
		if !d.literal("null") {
			return errSyntax
		}
		return verr("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	default:
		return d.typeError(typeWire)
	}
	d.pos++
	outer := d.deferred
	d.deferred = nil
	var w wire
	err := d.members(func(name []byte) error { return d.field(&w, name) })
	if err != nil {
		return err
	}
	if d.deferred != nil {
		return d.deferred
	}
	d.deferred = outer
	return v.fromWire(&w)
}

// members reads the members of an object whose '{' has been consumed,
// calling f with the cursor on each member's value.
func (d *jsonDecoder) members(f func(name []byte) error) error {
	d.ws()
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	for {
		d.ws()
		name, err := d.rawString()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.ws()
		if err := f(name); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return errSyntax
		}
	}
}

// elements reads the elements of an array whose '[' has been consumed,
// calling f with the cursor on each element.
func (d *jsonDecoder) elements(f func() error) error {
	d.ws()
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for {
		d.ws()
		if err := f(); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return errSyntax
		}
	}
}

// field decodes the wire field name (cursor on its value) into w.
func (d *jsonDecoder) field(w *wire, name []byte) error {
	switch string(name) {
	case "S":
		return d.optString(&w.S)
	case "N":
		return d.optString(&w.N)
	case "B":
		if d.literal("null") {
			w.B = nil
			return nil
		}
		b, err := d.bytes()
		if err != nil {
			return err
		}
		if b != nil {
			w.B = &b
		}
		return nil
	case "BOOL":
		return d.optBool(&w.BOOL)
	case "NULL":
		return d.optBool(&w.NULL)
	case "M":
		if d.literal("null") {
			w.M = nil
			return nil
		}
		if d.peek() != '{' {
			return d.deferTypeError(typeMap)
		}
		m, err := d.object()
		if err != nil {
			return err
		}
		mm := map[string]Value(m)
		w.M = &mm
		return nil
	case "L":
		if d.literal("null") {
			w.L = nil
			return nil
		}
		if d.peek() != '[' {
			return d.deferTypeError(typeList)
		}
		d.pos++
		l := []Value{}
		err := d.elements(func() error {
			var e Value
			if err := d.value(&e); err != nil {
				return err
			}
			l = append(l, e)
			return nil
		})
		if err != nil {
			return err
		}
		w.L = &l
		return nil
	case "SS":
		return d.optStrings(&w.SS)
	case "NS":
		return d.optStrings(&w.NS)
	case "BS":
		if d.literal("null") {
			w.BS = nil
			return nil
		}
		if d.peek() != '[' {
			return d.deferTypeError(typeByteSlice)
		}
		d.pos++
		bs := [][]byte{}
		err := d.elements(func() error {
			if d.literal("null") {
				bs = append(bs, nil)
				return nil
			}
			b, err := d.bytes()
			if err != nil {
				return err
			}
			bs = append(bs, b)
			return nil
		})
		if err != nil {
			return err
		}
		w.BS = &bs
		return nil
	}
	return d.skip()
}

// object decodes a JSON object of AttributeValues (cursor on '{').
func (d *jsonDecoder) object() (Item, error) {
	d.pos++
	m := Item{}
	err := d.members(func(name []byte) error {
		var v Value
		if err := d.value(&v); err != nil {
			return err
		}
		m[string(name)] = v
		return nil
	})
	return m, err
}

// optString decodes a string field: null clears it, another type is a
// deferred type error.
func (d *jsonDecoder) optString(dst **string) error {
	if d.literal("null") {
		*dst = nil
		return nil
	}
	if d.peek() != '"' {
		return d.deferTypeError(typeString)
	}
	s, err := d.str()
	if err != nil {
		return err
	}
	*dst = &s
	return nil
}

func (d *jsonDecoder) optBool(dst **bool) error {
	switch {
	case d.literal("null"):
		*dst = nil
	case d.literal("true"):
		t := true
		*dst = &t
	case d.literal("false"):
		f := false
		*dst = &f
	default:
		return d.deferTypeError(typeBool)
	}
	return nil
}

// optStrings decodes an array of strings; a null element is "".
func (d *jsonDecoder) optStrings(dst **[]string) error {
	if d.literal("null") {
		*dst = nil
		return nil
	}
	if d.peek() != '[' {
		return d.deferTypeError(typeStrings)
	}
	d.pos++
	ss := []string{}
	err := d.elements(func() error {
		switch d.peek() {
		case 'n':
			if !d.literal("null") {
				return errSyntax
			}
			ss = append(ss, "")
		case '"':
			s, err := d.str()
			if err != nil {
				return err
			}
			ss = append(ss, s)
		default:
			ss = append(ss, "")
			return d.deferTypeError(typeString)
		}
		return nil
	})
	if err != nil {
		return err
	}
	*dst = &ss
	return nil
}

// bytes decodes a base64 string (cursor on its value); a value of another
// type or bad base64 is a deferred error and yields nil.
func (d *jsonDecoder) bytes() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.deferTypeError(typeBytes)
	}
	s, err := d.str()
	if err != nil {
		return nil, err
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, []byte(s))
	if err != nil {
		if d.deferred == nil {
			d.deferred = err
		}
		return nil, nil
	}
	return b[:n], nil
}

// rawString returns the unquoted bytes of the string at the cursor; they
// alias the input when the string needs no unquoting.
func (d *jsonDecoder) rawString() ([]byte, error) {
	if d.peek() != '"' {
		return nil, errSyntax
	}
	start := d.pos + 1
	plain := true
	i := start
	for ; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			i++ // skip the escaped byte; \u's digits are plain
			continue
		}
		if c < 0x20 || c >= utf8.RuneSelf {
			plain = false
		}
	}
	if i >= len(d.data) {
		return nil, errSyntax
	}
	d.pos = i + 1
	if plain {
		return d.data[start:i], nil
	}
	// Escapes, control characters or non-ASCII: unquote exactly as
	// encoding/json does (invalid UTF-8 becomes U+FFFD).
	var s string
	if err := json.Unmarshal(d.data[start-1:i+1], &s); err != nil {
		return nil, errSyntax
	}
	return []byte(s), nil
}

func (d *jsonDecoder) str() (string, error) {
	b, err := d.rawString()
	return string(b), err
}

// skip consumes one JSON value of any type.
func (d *jsonDecoder) skip() error {
	d.ws()
	switch c := d.peek(); {
	case c == '"':
		_, err := d.rawString()
		return err
	case c == '{':
		d.pos++
		return d.members(func([]byte) error { return d.skip() })
	case c == '[':
		d.pos++
		return d.elements(d.skip)
	case c == 't':
		if d.literal("true") {
			return nil
		}
	case c == 'f':
		if d.literal("false") {
			return nil
		}
	case c == 'n':
		if d.literal("null") {
			return nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		start := d.pos
	digits:
		for d.pos < len(d.data) {
			switch c := d.data[d.pos]; {
			case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
				d.pos++
			default:
				break digits
			}
		}
		if d.pos > start {
			return nil
		}
	}
	return errSyntax
}

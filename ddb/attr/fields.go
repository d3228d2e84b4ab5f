package attr

import "errors"

// ErrNotSimple is returned by DecodeFields and Field's methods when the
// JSON is not of the simple shape they read: a value of another type than
// asked for, null, or malformed JSON. Callers then decode with
// encoding/json, whose behaviour (and error messages) is the reference.
var ErrNotSimple = errors.New("attr: not a simple request")

// Field is the cursor on one member's value during DecodeFields.
type Field struct{ d *jsonDecoder }

// DecodeFields reads data, a JSON object, member by member: f is called
// with each member's name (valid only during the call) and the Field on
// its value, which f must read with exactly one of Field's methods. It
// returns f's first error, or ErrNotSimple when data is not one JSON
// object; data must be valid JSON (json.Valid), which DecodeFields does
// not check in full.
//
// It is the fast path of request decoding: on success the values read
// through Field are those encoding/json would decode into *string, bool
// and Item fields; on any error the caller decodes with encoding/json.
func DecodeFields(data []byte, f func(name []byte, v Field) error) error {
	d := &jsonDecoder{data: data}
	d.ws()
	if d.peek() != '{' {
		return ErrNotSimple
	}
	d.pos++
	if err := d.members(func(name []byte) error { return f(name, Field{d}) }); err != nil {
		if err == errSyntax {
			return ErrNotSimple
		}
		return err
	}
	if d.end() != nil {
		return ErrNotSimple
	}
	return nil
}

// String reads a JSON string; any other value is ErrNotSimple.
func (f Field) String() (string, error) {
	if f.d.peek() != '"' {
		return "", ErrNotSimple
	}
	s, err := f.d.str()
	if err != nil {
		return "", ErrNotSimple
	}
	return s, nil
}

// Bool reads true or false; any other value is ErrNotSimple.
func (f Field) Bool() (bool, error) {
	switch {
	case f.d.literal("true"):
		return true, nil
	case f.d.literal("false"):
		return false, nil
	}
	return false, ErrNotSimple
}

// Item reads an item as Item.UnmarshalJSON does; null, any other value
// than an object, and an item Item.UnmarshalJSON would refuse are
// ErrNotSimple.
func (f Field) Item() (Item, error) {
	if f.d.peek() != '{' {
		return nil, ErrNotSimple
	}
	it, err := f.d.object()
	if err != nil || f.d.deferred != nil {
		return nil, ErrNotSimple
	}
	return it, nil
}

// Value reads an AttributeValue as Value.UnmarshalJSON does; null, any
// other value than an object, and a value Value.UnmarshalJSON would refuse
// are ErrNotSimple.
func (f Field) Value() (Value, error) {
	if f.d.peek() != '{' {
		return Value{}, ErrNotSimple
	}
	var v Value
	if err := f.d.value(&v); err != nil || f.d.deferred != nil {
		return Value{}, ErrNotSimple
	}
	return v, nil
}

// Object reads a JSON object member by member as DecodeFields does: member
// is called with each member's name (valid only during the call) and the
// Field on its value, which it must read with exactly one of Field's
// methods. Null and any other value than an object are ErrNotSimple.
func (f Field) Object(member func(name []byte, v Field) error) error {
	if f.d.peek() != '{' {
		return ErrNotSimple
	}
	f.d.pos++
	return f.d.members(func(name []byte) error { return member(name, f) })
}

// Array reads a JSON array element by element: element is called with the
// Field on each element, which it must read with exactly one of Field's
// methods. Null and any other value than an array are ErrNotSimple.
func (f Field) Array(element func(v Field) error) error {
	if f.d.peek() != '[' {
		return ErrNotSimple
	}
	f.d.pos++
	return f.d.elements(func() error { return element(f) })
}

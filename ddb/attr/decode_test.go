package attr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The reflection-free decoder must behave as decoding through encoding/json
// does. refValue is that reference, a decoder through encoding/json: the
// oracle of a differential test.

type refValue struct{ v Value }

// refItem is named, as Item is: the server's messages name its type.
type refItem map[string]refValue

type refWire struct {
	S    *string              `json:"S"`
	N    *string              `json:"N"`
	B    *[]byte              `json:"B"`
	BOOL *bool                `json:"BOOL"`
	NULL *bool                `json:"NULL"`
	M    *map[string]refValue `json:"M"`
	L    *[]refValue          `json:"L"`
	SS   *[]string            `json:"SS"`
	NS   *[]string            `json:"NS"`
	BS   *[][]byte            `json:"BS"`
}

func (r *refValue) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return verr("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	var rw refWire
	if err := json.Unmarshal(data, &rw); err != nil {
		return err
	}
	w := wire{S: rw.S, N: rw.N, B: rw.B, BOOL: rw.BOOL, NULL: rw.NULL, SS: rw.SS, NS: rw.NS, BS: rw.BS}
	if rw.M != nil {
		m := map[string]Value{}
		for k, e := range *rw.M {
			m[k] = e.v
		}
		w.M = &m
	}
	if rw.L != nil {
		l := []Value{}
		for _, e := range *rw.L {
			l = append(l, e.v)
		}
		w.L = &l
	}
	return r.v.fromWire(&w)
}

// outcome is what a client sees of a decode: the value, or the error as the
// wire protocol reports it.
func outcome(v any, err error) string {
	if err == nil {
		return fmt.Sprintf("ok %#v", v)
	}
	var ae *Error
	if errors.As(err, &ae) {
		return "validation: " + ae.Message
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "type: " + TypeErrorMessage(te)
	}
	return "serialization"
}

// deviates reports whether data relies on one of encoding/json's liberties
// the decoder does not take, as DynamoDB does not: matching field names
// case-insensitively, and taking a binary value as an array of numbers.
func deviates(data []byte) bool {
	var x any
	if json.Unmarshal(data, &x) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				if _, ok := e.([]any); ok && k == "B" {
					return true
				}
				if l, ok := e.([]any); ok && k == "BS" {
					for _, b := range l {
						if _, ok := b.([]any); ok {
							return true
						}
					}
				}
				for _, f := range kindNames[1:] {
					if k != f && strings.EqualFold(k, f) {
						return true
					}
				}
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(x)
}

var decodeCases = []string{
	`{"S":"x"}`, `{"S":""}`, `{"S":"caf\u00e9 \"q\" \\ \n"}`, "{\"S\":\"caf\xc3\xa9\"}", "{\"S\":\"bad \xff utf8\"}",
	`{"N":"01.10"}`, `{"N":"-0"}`, `{"N":"1e400"}`, `{"N":5}`, `{"N":null}`, `{"N":"x"}`,
	`{"B":"AAE="}`, `{"B":""}`, `{"B":"!!"}`, `{"B":5}`, `{"B":null,"S":"a"}`,
	`{"BOOL":true}`, `{"BOOL":false}`, `{"BOOL":"true"}`, `{"NULL":true}`, `{"NULL":false}`, `{"NULL":1}`,
	`{"M":{}}`, `{"M":{"a":{"S":"1"},"b":{"M":{"c":{"L":[{"N":"2"}]}}}}}`, `{"M":{"a":null}}`, `{"M":{"a":{}}}`, `{"M":[]}`, `{"M":"x"}`, `{"M":null}`,
	`{"L":[]}`, `{"L":[{"S":"a"},{"NULL":true}]}`, `{"L":[1]}`, `{"L":[null]}`, `{"L":{}}`, `{"L":[{"S":1}]}`,
	`{"SS":["a","b"]}`, `{"SS":[]}`, `{"SS":["a","a"]}`, `{"SS":["a",null]}`, `{"SS":["a",1,"b"]}`, `{"SS":"a"}`,
	`{"NS":["1","2.0"]}`, `{"NS":["1","1.0"]}`, `{"NS":["x"]}`, `{"NS":[1]}`,
	`{"BS":["AA=="]}`, `{"BS":[]}`, `{"BS":["AA==","AA=="]}`, `{"BS":[null,""]}`, `{"BS":[1]}`, `{"BS":["!"]}`,
	`{}`, `null`, `"S"`, `1`, `[]`, `true`, `{"S":"a","N":"1"}`, `{"S":"a","S":"b"}`, `{"S":"a","S":null}`,
	`{"X":{"deep":[1,2,{"a":"b"}]},"S":"a"}`, `{"S":1,"M":{"a":{}}}`, `{"SS":[1],"NULL":false}`,
	` { "S" : "spaced" } `, `{"S":"a",}`, `{"S":"a"`, `{"S":"a"}x`, `{S:"a"}`,
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, in := range decodeCases {
		checkDecode(t, []byte(in))
		checkDecode(t, []byte(`{"a":`+in+`,"b":{"S":"x"}}`))
	}
}

func FuzzDecodeValue(f *testing.F) {
	for _, in := range decodeCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
	})
}

// checkDecode decodes data as a Value and as an Item, through encoding/json
// (as requests are), with the new decoder and with the reference.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	if deviates(data) {
		return
	}
	var got Value
	var want refValue
	g := outcome(got, json.Unmarshal(data, &got))
	w := outcome(want.v, json.Unmarshal(data, &want))
	if g != w {
		t.Errorf("Value %q:\n got  %s\n want %s", data, g, w)
	}
	var gi Item
	var wi refItem
	gerr := json.Unmarshal(data, &gi)
	werr := json.Unmarshal(data, &wi)
	var wItem Item
	if wi != nil {
		wItem = Item{}
		for k, e := range wi {
			wItem[k] = e.v
		}
	}
	if g, w := outcome(gi, gerr), outcome(wItem, werr); g != w {
		t.Errorf("Item %q:\n got  %s\n want %s", data, g, w)
	}
}

func TestDecodeDirect(t *testing.T) {
	// Called directly, not through encoding/json: malformed input is an
	// error, never a panic.
	for _, in := range []string{``, `{`, `{"S"`, `{"S":`, `{"S":"a"`, `{"S":"a"}}`, `{"L":[`, `{"M":{"a":`, `"`, `{"S":"\`, `-`, `{"X":-}`} {
		var v Value
		if err := v.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
		var it Item
		if err := it.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("Item %q: no error", in)
		}
	}
	var it Item
	if err := it.UnmarshalJSON([]byte(`{"k":{"S":"v"}}`)); err != nil || !reflect.DeepEqual(it, Item{"k": Str("v")}) {
		t.Errorf("Item = %v, %v", it, err)
	}
}

func BenchmarkDecodeItem(b *testing.B) {
	data := []byte(`{"pk":{"S":"get#000123"},"sk":{"N":"0"},"n":{"N":"1234567"},"ts":{"N":"1764133200000"},"payload":{"S":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz"},"m":{"M":{"a":{"L":[{"N":"1"},{"S":"x"}]}}}}`)
	b.Run("attr", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var it Item
			if err := json.Unmarshal(data, &it); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var it refItem
			if err := json.Unmarshal(data, &it); err != nil {
				b.Fatal(err)
			}
		}
	})
}

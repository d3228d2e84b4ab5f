package attr

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// AppendBinaryJSON appends the JSON wire form of the binary item bin (as
// written by AppendBinary) to buf and returns the item's size (as Item.Size
// counts it), without building the item: reads that return stored items
// unchanged use it. The JSON is what Item.AppendJSON writes for the decoded
// item: the binary form keeps attribute names sorted, as the JSON does.
// On error buf is left as it was.
func AppendBinaryJSON(buf *bytes.Buffer, bin []byte) (size int, err error) {
	d := &decoder{b: bin}
	// Appending to the buffer's spare capacity and writing the result back
	// costs one copy at most, and none when the item fits.
	buf.Grow(2*len(bin) + 16)
	out, size, err := d.itemJSON(buf.AvailableBuffer())
	if err == nil && len(d.b) != 0 {
		err = ErrCorrupt
	}
	if err != nil {
		return 0, err
	}
	buf.Write(out)
	return size, nil
}

// itemJSON transcodes an item (or a map's members) and returns its size.
func (d *decoder) itemJSON(dst []byte) ([]byte, int, error) {
	n, err := d.uvarint()
	if err != nil || n > len(d.b) {
		return dst, 0, ErrCorrupt
	}
	size := 0
	dst = append(dst, '{')
	for i := 0; i < n; i++ {
		k, err := d.bytes()
		if err != nil {
			return dst, 0, err
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		var vs int
		if dst, vs, err = d.valueJSON(dst); err != nil {
			return dst, 0, err
		}
		size += len(k) + vs
	}
	return append(dst, '}'), size, nil
}

// valueJSON transcodes one value and returns its size.
func (d *decoder) valueJSON(dst []byte) ([]byte, int, error) {
	if len(d.b) == 0 {
		return dst, 0, ErrCorrupt
	}
	k := Kind(d.b[0])
	d.b = d.b[1:]
	size := 0
	switch k {
	case KindS, KindN, KindB:
		s, err := d.bytes()
		if err != nil {
			return dst, 0, err
		}
		switch k {
		case KindS:
			dst = appendJSONString(append(dst, `{"S":`...), s)
			size = len(s)
		case KindN:
			dst = append(append(append(dst, `{"N":"`...), s...), '"')
			size = numberSize(s)
		default:
			dst = appendB64(append(dst, `{"B":`...), s)
			size = len(s)
		}
	case KindBOOL:
		if len(d.b) == 0 {
			return dst, 0, ErrCorrupt
		}
		if d.b[0] == 1 {
			dst = append(dst, `{"BOOL":true`...)
		} else {
			dst = append(dst, `{"BOOL":false`...)
		}
		d.b = d.b[1:]
		size = 1
	case KindNULL:
		dst = append(dst, `{"NULL":true`...)
		size = 1
	case KindM:
		dst = append(dst, `{"M":`...)
		// A member of a map counts one byte more than an item's attribute.
		n, err := d.peekCount()
		if err != nil {
			return dst, 0, err
		}
		var ms int
		if dst, ms, err = d.itemJSON(dst); err != nil {
			return dst, 0, err
		}
		size = 3 + ms + n
	case KindL:
		n, err := d.uvarint()
		if err != nil || n > len(d.b) {
			return dst, 0, ErrCorrupt
		}
		dst = append(dst, `{"L":[`...)
		size = 3
		for i := 0; i < n; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			var es int
			if dst, es, err = d.valueJSON(dst); err != nil {
				return dst, 0, err
			}
			size += es + 1
		}
		dst = append(dst, ']')
	case KindSS, KindNS, KindBS:
		n, err := d.uvarint()
		if err != nil || n > len(d.b) {
			return dst, 0, ErrCorrupt
		}
		dst = append(append(append(dst, `{"`...), k.String()...), `":[`...)
		for i := 0; i < n; i++ {
			s, err := d.bytes()
			if err != nil {
				return dst, 0, err
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			switch k {
			case KindBS:
				dst = appendB64(dst, s)
				size += len(s)
			case KindNS:
				dst = appendJSONString(dst, s)
				size += numberSize(s)
			default:
				dst = appendJSONString(dst, s)
				size += len(s)
			}
		}
		dst = append(dst, ']')
	default:
		return dst, 0, ErrCorrupt
	}
	return append(dst, '}'), size, nil
}

// peekCount returns the member count an item encoding starts with, without
// consuming it.
func (d *decoder) peekCount() (int, error) {
	save := d.b
	n, err := d.uvarint()
	d.b = save
	return n, err
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it.
func appendJSONString(dst, s []byte) []byte {
	if isPlainASCII(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(string(s))
	return append(dst, b...)
}

// appendB64 appends b as a JSON string in standard base64.
func appendB64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

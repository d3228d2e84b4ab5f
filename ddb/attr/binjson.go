package attr

import "bytes"

// AppendBinaryJSON appends the JSON wire form of the binary item bin (as
// written by AppendBinary) to buf and returns the item's size (as Item.Size
// counts it), without building the item: reads that return stored items
// unchanged use it. The JSON is what Item.AppendJSON writes for the decoded
// item: the binary form keeps attribute names sorted, as the JSON does.
func AppendBinaryJSON(buf *bytes.Buffer, bin []byte) (size int, err error) {
	d := &decoder{b: bin}
	start := buf.Len()
	size, err = d.itemJSON(buf)
	if err == nil && len(d.b) != 0 {
		err = ErrCorrupt
	}
	if err != nil {
		buf.Truncate(start)
		return 0, err
	}
	return size, nil
}

// itemJSON transcodes an item (or a map's members) and returns its size.
func (d *decoder) itemJSON(buf *bytes.Buffer) (int, error) {
	n, err := d.uvarint()
	if err != nil || n > len(d.b) {
		return 0, ErrCorrupt
	}
	size := 0
	buf.WriteByte('{')
	for i := 0; i < n; i++ {
		k, err := d.bytes()
		if err != nil {
			return 0, err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		writeJSONString(buf, k)
		buf.WriteByte(':')
		vs, err := d.valueJSON(buf)
		if err != nil {
			return 0, err
		}
		size += len(k) + vs
	}
	buf.WriteByte('}')
	return size, nil
}

// valueJSON transcodes one value and returns its size.
func (d *decoder) valueJSON(buf *bytes.Buffer) (int, error) {
	if len(d.b) == 0 {
		return 0, ErrCorrupt
	}
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > 64 {
		return 0, ErrCorrupt
	}
	k := Kind(d.b[0])
	d.b = d.b[1:]
	size := 0
	switch k {
	case KindS, KindN, KindB:
		s, err := d.bytes()
		if err != nil {
			return 0, err
		}
		switch k {
		case KindS:
			buf.WriteString(`{"S":`)
			writeJSONString(buf, s)
			size = len(s)
		case KindN:
			buf.WriteString(`{"N":"`)
			buf.Write(s)
			buf.WriteByte('"')
			size = numberSize(s)
		default:
			buf.WriteString(`{"B":`)
			writeB64(buf, s)
			size = len(s)
		}
	case KindBOOL:
		if len(d.b) == 0 {
			return 0, ErrCorrupt
		}
		if d.b[0] == 1 {
			buf.WriteString(`{"BOOL":true`)
		} else {
			buf.WriteString(`{"BOOL":false`)
		}
		d.b = d.b[1:]
		size = 1
	case KindNULL:
		buf.WriteString(`{"NULL":true`)
		size = 1
	case KindM:
		buf.WriteString(`{"M":`)
		// A member of a map counts one byte more than an item's attribute.
		n, err := d.peekCount()
		if err != nil {
			return 0, err
		}
		ms, err := d.itemJSON(buf)
		if err != nil {
			return 0, err
		}
		size = 3 + ms + n
	case KindL:
		n, err := d.uvarint()
		if err != nil || n > len(d.b) {
			return 0, ErrCorrupt
		}
		buf.WriteString(`{"L":[`)
		size = 3
		for i := 0; i < n; i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			es, err := d.valueJSON(buf)
			if err != nil {
				return 0, err
			}
			size += es + 1
		}
		buf.WriteByte(']')
	case KindSS, KindNS, KindBS:
		n, err := d.uvarint()
		if err != nil || n > len(d.b) {
			return 0, ErrCorrupt
		}
		buf.WriteString(`{"` + k.String() + `":[`)
		for i := 0; i < n; i++ {
			s, err := d.bytes()
			if err != nil {
				return 0, err
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			switch k {
			case KindBS:
				writeB64(buf, s)
				size += len(s)
			case KindNS:
				writeJSONString(buf, s)
				size += numberSize(s)
			default:
				writeJSONString(buf, s)
				size += len(s)
			}
		}
		buf.WriteByte(']')
	default:
		return 0, ErrCorrupt
	}
	buf.WriteByte('}')
	return size, nil
}

// peekCount returns the member count an item encoding starts with, without
// consuming it.
func (d *decoder) peekCount() (int, error) {
	save := d.b
	n, err := d.uvarint()
	d.b = save
	return n, err
}

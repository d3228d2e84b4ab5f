package attr

import (
	"encoding/binary"
	"errors"
	"sort"
)

// The binary item format is the store's on-disk representation of an item:
// compact, and decoded without reflection or re-validation.
//
//	item  := uvarint(n) (name value)*n      names in sorted order
//	name  := uvarint(len) bytes
//	value := kind-byte payload
//	  S, N, B: uvarint(len) bytes     BOOL: 0|1     NULL: nothing
//	  M: item                         L: uvarint(n) value*n
//	  SS, NS, BS: uvarint(n) (uvarint(len) bytes)*n

// ErrCorrupt is returned when decoding bytes that are not a binary item.
var ErrCorrupt = errors.New("attr: corrupt binary item")

// AppendBinary appends the binary encoding of the item to dst.
func (it Item) AppendBinary(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(it)))
	if len(it) == 1 {
		for k, v := range it {
			dst = appendBytes(dst, k)
			dst = v.appendBinary(dst)
		}
		return dst
	}
	keys := make([]string, 0, len(it))
	for k := range it {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		dst = appendBytes(dst, k)
		dst = it[k].appendBinary(dst)
	}
	return dst
}

func appendBytes[T string | []byte](dst []byte, s T) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func (v Value) appendBinary(dst []byte) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case KindS, KindN:
		dst = appendBytes(dst, v.S)
	case KindB:
		dst = appendBytes(dst, v.B)
	case KindBOOL:
		if v.Bool {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	case KindM:
		dst = Item(v.M).AppendBinary(dst)
	case KindL:
		dst = binary.AppendUvarint(dst, uint64(len(v.L)))
		for _, e := range v.L {
			dst = e.appendBinary(dst)
		}
	case KindSS, KindNS:
		dst = binary.AppendUvarint(dst, uint64(len(v.SS)))
		for _, s := range v.SS {
			dst = appendBytes(dst, s)
		}
	case KindBS:
		dst = binary.AppendUvarint(dst, uint64(len(v.BS)))
		for _, b := range v.BS {
			dst = appendBytes(dst, b)
		}
	}
	return dst
}

// decoder reads the binary format. It has no depth limit of its own, so
// that it reads whatever AppendBinary writes, however deep (the store
// refuses values deeper than MaxNestingLevels, but the format does not
// depend on it): a level of nesting takes at least two bytes of input, so
// the recursion is bounded by the length of the input, and Go stacks grow
// as needed.
type decoder struct {
	b []byte
}

func (d *decoder) uvarint() (int, error) {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		return 0, ErrCorrupt
	}
	d.b = d.b[k:]
	return int(n), nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil || n > len(d.b) {
		return nil, ErrCorrupt
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out, nil
}

// DecodeBinary decodes an item written by AppendBinary. The result does not
// share memory with b.
func DecodeBinary(b []byte) (Item, error) {
	d := &decoder{b: b}
	it, err := d.item()
	if err != nil {
		return nil, err
	}
	if len(d.b) != 0 {
		return nil, ErrCorrupt
	}
	return it, nil
}

func (d *decoder) item() (Item, error) {
	n, err := d.uvarint()
	if err != nil || n > len(d.b) {
		return nil, ErrCorrupt
	}
	it := make(Item, n)
	for i := 0; i < n; i++ {
		k, err := d.bytes()
		if err != nil {
			return nil, err
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		it[string(k)] = v
	}
	return it, nil
}

func (d *decoder) value() (Value, error) {
	if len(d.b) == 0 {
		return Value{}, ErrCorrupt
	}
	k := Kind(d.b[0])
	d.b = d.b[1:]
	v := Value{Kind: k}
	switch k {
	case KindS, KindN:
		s, err := d.bytes()
		if err != nil {
			return v, err
		}
		v.S = string(s)
	case KindB:
		s, err := d.bytes()
		if err != nil {
			return v, err
		}
		v.B = append([]byte{}, s...)
	case KindBOOL:
		if len(d.b) == 0 {
			return v, ErrCorrupt
		}
		v.Bool = d.b[0] == 1
		d.b = d.b[1:]
	case KindNULL:
		v.Bool = true
	case KindM:
		m, err := d.item()
		if err != nil {
			return v, err
		}
		v.M = m
	case KindL:
		n, err := d.uvarint()
		if err != nil || n > len(d.b) {
			return v, ErrCorrupt
		}
		v.L = make([]Value, n)
		for i := range v.L {
			if v.L[i], err = d.value(); err != nil {
				return v, err
			}
		}
	case KindSS, KindNS:
		n, err := d.uvarint()
		if err != nil || n > len(d.b) {
			return v, ErrCorrupt
		}
		v.SS = make([]string, n)
		for i := range v.SS {
			s, err := d.bytes()
			if err != nil {
				return v, err
			}
			v.SS[i] = string(s)
		}
	case KindBS:
		n, err := d.uvarint()
		if err != nil || n > len(d.b) {
			return v, ErrCorrupt
		}
		v.BS = make([][]byte, n)
		for i := range v.BS {
			s, err := d.bytes()
			if err != nil {
				return v, err
			}
			v.BS[i] = append([]byte{}, s...)
		}
	default:
		return v, ErrCorrupt
	}
	return v, nil
}

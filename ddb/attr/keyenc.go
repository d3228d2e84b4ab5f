package attr

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
)

// AppendKey appends an order-preserving, self-delimiting encoding of a key
// value (S, N or B) to dst: for two values a, b of the same kind,
// bytes.Compare(AppendKey(nil, a), AppendKey(nil, b)) == Compare(a, b), and
// no encoding is a prefix of another.
//
// S and B are written with 0x00 escaped as 0x00 0xFF and terminated by
// 0x00 0x01. N is written as a sign byte, a biased exponent and one byte per
// digit, inverted for negative numbers.
func AppendKey(dst []byte, v Value) []byte {
	switch v.Kind {
	case KindS:
		return appendEscaped(dst, []byte(v.S))
	case KindB:
		return appendEscaped(dst, v.B)
	case KindN:
		return appendNumber(dst, v.S)
	}
	return dst
}

func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 1)
}

const expBias = 1 << 14

func appendNumber(dst []byte, s string) []byte {
	sign, digits, exp := numberParts(s)
	switch sign {
	case 0:
		return append(dst, 0x02)
	case 1:
		dst = append(dst, 0x03)
		dst = binary.BigEndian.AppendUint16(dst, uint16(exp+expBias))
		for i := 0; i < len(digits); i++ {
			dst = append(dst, digits[i]-'0'+1)
		}
		return append(dst, 0x00)
	default:
		dst = append(dst, 0x01)
		dst = binary.BigEndian.AppendUint16(dst, ^uint16(exp+expBias))
		for i := 0; i < len(digits); i++ {
			dst = append(dst, 10-(digits[i]-'0'))
		}
		return append(dst, 0xff)
	}
}

// ErrBadKeyEncoding is returned by DecodeKey for bytes that AppendKey did
// not produce.
var ErrBadKeyEncoding = errors.New("attr: bad key encoding")

// DecodeKey decodes one key value of kind k from the front of b and returns
// it with the remaining bytes.
func DecodeKey(b []byte, k Kind) (Value, []byte, error) {
	switch k {
	case KindS, KindB:
		var out []byte
		for i := 0; i < len(b); i++ {
			if b[i] != 0 {
				out = append(out, b[i])
				continue
			}
			if i+1 >= len(b) {
				return Value{}, nil, ErrBadKeyEncoding
			}
			switch b[i+1] {
			case 0xff:
				out = append(out, 0)
				i++
			case 1:
				if k == KindS {
					return Value{Kind: KindS, S: string(out)}, b[i+2:], nil
				}
				if out == nil {
					out = []byte{}
				}
				return Value{Kind: KindB, B: out}, b[i+2:], nil
			default:
				return Value{}, nil, ErrBadKeyEncoding
			}
		}
		return Value{}, nil, ErrBadKeyEncoding
	case KindN:
		if len(b) == 0 {
			return Value{}, nil, ErrBadKeyEncoding
		}
		switch b[0] {
		case 0x02:
			return Value{Kind: KindN, S: "0"}, b[1:], nil
		case 0x01, 0x03:
			if len(b) < 3 {
				return Value{}, nil, ErrBadKeyEncoding
			}
			neg := b[0] == 0x01
			e := binary.BigEndian.Uint16(b[1:3])
			if neg {
				e = ^e
			}
			exp := int(e) - expBias
			var digits []byte
			i := 3
			for ; i < len(b); i++ {
				c := b[i]
				if (!neg && c == 0) || (neg && c == 0xff) {
					break
				}
				if neg {
					digits = append(digits, '0'+(10-c))
				} else {
					digits = append(digits, '0'+c-1)
				}
			}
			if i >= len(b) || len(digits) == 0 {
				return Value{}, nil, ErrBadKeyEncoding
			}
			s := "0." + string(digits) + "E" + itoa(exp)
			if neg {
				s = "-" + s
			}
			c, err := CanonicalNumber(s)
			if err != nil {
				return Value{}, nil, ErrBadKeyEncoding
			}
			return Value{Kind: KindN, S: c}, b[i+1:], nil
		}
	}
	return Value{}, nil, ErrBadKeyEncoding
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// Hash32 returns a stable 32-bit hash of a key value, used to spread
// partitions over the key space the way DynamoDB hashes partition keys.
func Hash32(v Value) uint32 {
	h := fnv.New32a()
	h.Write([]byte{byte(v.Kind)})
	switch v.Kind {
	case KindB:
		h.Write(v.B)
	default:
		h.Write([]byte(v.S))
	}
	return h.Sum32()
}

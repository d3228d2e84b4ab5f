package explorer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is a DynamoDB item as the SDK holds it.
type Item = map[string]types.AttributeValue

// toDDBJSON returns av in DynamoDB JSON ({"S":"x"}, {"N":"1"}, …).
func toDDBJSON(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		out := make([]string, len(v.Value))
		for i, b := range v.Value {
			out[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": out}
	case *types.AttributeValueMemberL:
		out := make([]any, len(v.Value))
		for i, e := range v.Value {
			out[i] = toDDBJSON(e)
		}
		return map[string]any{"L": out}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": itemDDBJSON(v.Value)}
	}
	return nil
}

// itemDDBJSON returns an item in DynamoDB JSON.
func itemDDBJSON(it Item) map[string]any {
	out := make(map[string]any, len(it))
	for k, v := range it {
		out[k] = toDDBJSON(v)
	}
	return out
}

// toPlain returns av as plain JSON: numbers as JSON numbers, sets as
// arrays, binary as base64 strings.
func toPlain(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return json.Number(v.Value)
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value)
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberSS:
		return v.Value
	case *types.AttributeValueMemberNS:
		out := make([]json.Number, len(v.Value))
		for i, n := range v.Value {
			out[i] = json.Number(n)
		}
		return out
	case *types.AttributeValueMemberBS:
		return toDDBJSON(v).(map[string]any)["BS"]
	case *types.AttributeValueMemberL:
		out := make([]any, len(v.Value))
		for i, e := range v.Value {
			out[i] = toPlain(e)
		}
		return out
	case *types.AttributeValueMemberM:
		return itemPlain(v.Value)
	}
	return nil
}

// itemPlain returns an item as plain JSON.
func itemPlain(it Item) map[string]any {
	out := make(map[string]any, len(it))
	for k, v := range it {
		out[k] = toPlain(v)
	}
	return out
}

// pretty marshals v indented (map keys sorted by encoding/json).
func pretty(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimRight(buf.String(), "\n")
}

// compact marshals v on one line.
func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimRight(buf.String(), "\n")
}

// decodeJSON decodes text into v keeping numbers exact; trailing data is an
// error.
func decodeJSON(text string, v any) error {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("not valid JSON: data after the object")
	}
	return nil
}

// parseDDBItem parses an item written in DynamoDB JSON.
func parseDDBItem(text string) (Item, error) {
	var raw map[string]any
	if err := decodeJSON(text, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("the item must be a JSON object")
	}
	return fromDDBMap(raw, "")
}

func fromDDBMap(raw map[string]any, path string) (Item, error) {
	out := make(Item, len(raw))
	for k, v := range raw {
		av, err := fromDDBJSON(v, path+k)
		if err != nil {
			return nil, err
		}
		out[k] = av
	}
	return out, nil
}

// fromDDBJSON parses one attribute value in DynamoDB JSON; path names it in
// errors.
func fromDDBJSON(v any, path string) (types.AttributeValue, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("%s: an attribute value is an object with one type key, such as {\"S\": \"text\"} or {\"N\": \"1\"}", path)
	}
	for t, x := range m {
		bad := fmt.Errorf("%s: the value of %q has the wrong JSON type", path, t)
		switch t {
		case "S":
			s, ok := x.(string)
			if !ok {
				return nil, bad
			}
			return &types.AttributeValueMemberS{Value: s}, nil
		case "N":
			s, ok := numberText(x)
			if !ok {
				return nil, bad
			}
			return &types.AttributeValueMemberN{Value: s}, nil
		case "B":
			s, ok := x.(string)
			if !ok {
				return nil, bad
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("%s: B is not base64: %w", path, err)
			}
			return &types.AttributeValueMemberB{Value: b}, nil
		case "BOOL":
			b, ok := x.(bool)
			if !ok {
				return nil, bad
			}
			return &types.AttributeValueMemberBOOL{Value: b}, nil
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS", "NS", "BS":
			arr, ok := x.([]any)
			if !ok {
				return nil, bad
			}
			var ss []string
			var bs [][]byte
			for _, e := range arr {
				var s string
				var ok bool
				if t == "NS" {
					s, ok = numberText(e)
				} else {
					s, ok = e.(string)
				}
				if !ok {
					return nil, bad
				}
				if t == "BS" {
					b, err := base64.StdEncoding.DecodeString(s)
					if err != nil {
						return nil, fmt.Errorf("%s: BS member is not base64: %w", path, err)
					}
					bs = append(bs, b)
				} else {
					ss = append(ss, s)
				}
			}
			switch t {
			case "SS":
				return &types.AttributeValueMemberSS{Value: ss}, nil
			case "NS":
				return &types.AttributeValueMemberNS{Value: ss}, nil
			}
			return &types.AttributeValueMemberBS{Value: bs}, nil
		case "L":
			arr, ok := x.([]any)
			if !ok {
				return nil, bad
			}
			out := make([]types.AttributeValue, len(arr))
			for i, e := range arr {
				av, err := fromDDBJSON(e, fmt.Sprintf("%s[%d]", path, i))
				if err != nil {
					return nil, err
				}
				out[i] = av
			}
			return &types.AttributeValueMemberL{Value: out}, nil
		case "M":
			mm, ok := x.(map[string]any)
			if !ok {
				return nil, bad
			}
			it, err := fromDDBMap(mm, path+".")
			if err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberM{Value: it}, nil
		default:
			return nil, fmt.Errorf("%s: unknown type %q (S, N, B, BOOL, NULL, SS, NS, BS, L or M)", path, t)
		}
	}
	return nil, nil // unreachable
}

// numberText accepts a number written as a JSON string or a JSON number.
func numberText(x any) (string, bool) {
	switch n := x.(type) {
	case string:
		return n, true
	case json.Number:
		return n.String(), true
	}
	return "", false
}

// parsePlainItem parses an item written as plain JSON: strings become S,
// numbers N, booleans BOOL, null NULL, arrays L and objects M.
func parsePlainItem(text string) (Item, error) {
	var raw map[string]any
	if err := decodeJSON(text, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("the item must be a JSON object")
	}
	out := make(Item, len(raw))
	for k, v := range raw {
		out[k] = fromPlain(v)
	}
	return out, nil
}

func fromPlain(v any) types.AttributeValue {
	switch x := v.(type) {
	case string:
		return &types.AttributeValueMemberS{Value: x}
	case json.Number:
		return &types.AttributeValueMemberN{Value: x.String()}
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}
	case nil:
		return &types.AttributeValueMemberNULL{Value: true}
	case []any:
		out := make([]types.AttributeValue, len(x))
		for i, e := range x {
			out[i] = fromPlain(e)
		}
		return &types.AttributeValueMemberL{Value: out}
	case map[string]any:
		out := make(Item, len(x))
		for k, e := range x {
			out[k] = fromPlain(e)
		}
		return &types.AttributeValueMemberM{Value: out}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

// scalar returns a key attribute value of type t (S, N or B) from text.
func scalar(t, text string) (types.AttributeValue, error) {
	switch t {
	case "N":
		if _, ok := new(big.Float).SetString(strings.TrimSpace(text)); !ok {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return &types.AttributeValueMemberN{Value: strings.TrimSpace(text)}, nil
	case "B":
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return nil, fmt.Errorf("binary key values are written in base64: %w", err)
		}
		return &types.AttributeValueMemberB{Value: b}, nil
	}
	return &types.AttributeValueMemberS{Value: text}, nil
}

// scalarText shows a key attribute value.
func scalarText(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value)
	}
	return compact(toDDBJSON(av))
}

// encodeKey encodes a key (or a page's LastEvaluatedKey) for a URL.
func encodeKey(k Item) string {
	if len(k) == 0 {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(compact(itemDDBJSON(k))))
}

// decodeKey reverses encodeKey.
func decodeKey(s string) (Item, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("malformed key: %w", err)
	}
	return parseDDBItem(string(b))
}

package ddb_test

// The aws-sdk-go-v2 client of TestClients: a request in wire JSON is
// decoded into the operation's typed input by reflection (the SDK's field
// names are the wire's), sent over HTTP with the SDK's own serializer and
// signer, and the typed output turned back into wire JSON.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// goSDKClient calls the endpoint with aws-sdk-go-v2, one client per set of
// credentials.
type goSDKClient struct {
	ep      clientsEndpoint
	mu      sync.Mutex
	clients map[clientCreds]*dynamodb.Client
}

func startGoSDKClient(t *testing.T, ep clientsEndpoint) ddbTestClient {
	return &goSDKClient{ep: ep, clients: map[clientCreds]*dynamodb.Client{}}
}

func (g *goSDKClient) client(creds clientCreds) *dynamodb.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.clients[creds]
	if !ok {
		c = dynamodb.New(dynamodb.Options{
			Region:           g.ep.region,
			BaseEndpoint:     aws.String(g.ep.url),
			Credentials:      credentials.NewStaticCredentialsProvider(creds.ID, creds.Secret, ""),
			RetryMaxAttempts: 1,
		})
		g.clients[creds] = c
	}
	return c
}

func (g *goSDKClient) errorFields() bool { return true }

func (g *goSDKClient) call(ctx context.Context, op string, input map[string]any, creds clientCreds) (clientResult, error) {
	m := reflect.ValueOf(g.client(creds)).MethodByName(op)
	if !m.IsValid() {
		return clientResult{}, fmt.Errorf("aws-sdk-go-v2 has no operation %s", op)
	}
	in := reflect.New(m.Type().In(1).Elem())
	if err := wireToGo(input, in.Elem()); err != nil {
		return clientResult{}, fmt.Errorf("%sInput: %w", op, err)
	}
	outs := m.Call([]reflect.Value{reflect.ValueOf(ctx), in})
	if err, _ := outs[1].Interface().(error); err != nil {
		var ae smithy.APIError
		if !errors.As(err, &ae) {
			return clientResult{Fail: err.Error()}, nil
		}
		fields, _ := goToWire(reflect.ValueOf(ae), "Message", "ErrorCodeOverride")
		fm, _ := fields.(map[string]any)
		return clientResult{Error: &clientError{Type: ae.ErrorCode(), Message: ae.ErrorMessage(), Fields: fm}}, nil
	}
	out, _ := goToWire(outs[0], "ResultMetadata")
	om, _ := normalizeJSON(out).(map[string]any)
	if om == nil {
		om = map[string]any{}
	}
	return clientResult{Output: om}, nil
}

var attributeValueType = reflect.TypeOf((*types.AttributeValue)(nil)).Elem()

// wireToGo decodes v (wire JSON) into dst, a value of an SDK input type.
func wireToGo(v any, dst reflect.Value) error {
	if dst.Type() == attributeValueType {
		av, err := wireToAttributeValue(v)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(av))
		return nil
	}
	bad := func() error { return fmt.Errorf("cannot decode %s into %s", compactJSON(v), dst.Type()) }
	switch dst.Kind() {
	case reflect.Pointer:
		p := reflect.New(dst.Type().Elem())
		if err := wireToGo(v, p.Elem()); err != nil {
			return err
		}
		dst.Set(p)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		switch n := v.(type) {
		case float64:
			dst.SetInt(int64(n))
		case int:
			dst.SetInt(int64(n))
		default:
			return bad()
		}
	case reflect.Slice:
		xs, ok := v.([]any)
		if dst.Type().Elem().Kind() == reflect.Uint8 {
			s, ok := v.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if !ok || err != nil {
				return bad()
			}
			dst.SetBytes(b)
			return nil
		}
		if !ok {
			return bad()
		}
		out := reflect.MakeSlice(dst.Type(), len(xs), len(xs))
		for i, x := range xs {
			if err := wireToGo(x, out.Index(i)); err != nil {
				return err
			}
		}
		dst.Set(out)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := reflect.MakeMapWithSize(dst.Type(), len(m))
		for k, x := range m {
			e := reflect.New(dst.Type().Elem()).Elem()
			if err := wireToGo(x, e); err != nil {
				return err
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), e)
		}
		dst.Set(out)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for k, x := range m {
			f, ok := dst.Type().FieldByName(k)
			if !ok || !f.IsExported() {
				return fmt.Errorf("%s has no field %s", dst.Type(), k)
			}
			if err := wireToGo(x, dst.FieldByIndex(f.Index)); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	default:
		return bad()
	}
	return nil
}

// wireToAttributeValue decodes one attribute value in wire JSON.
func wireToAttributeValue(v any) (types.AttributeValue, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("not an attribute value: %s", compactJSON(v))
	}
	strs := func(x any) ([]string, error) {
		xs, _ := x.([]any)
		out := make([]string, len(xs))
		for i, e := range xs {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("not a string: %s", compactJSON(e))
			}
			out[i] = s
		}
		return out, nil
	}
	for k, x := range m {
		switch k {
		case "S":
			s, _ := x.(string)
			return &types.AttributeValueMemberS{Value: s}, nil
		case "N":
			s, _ := x.(string)
			return &types.AttributeValueMemberN{Value: s}, nil
		case "B":
			s, _ := x.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			return &types.AttributeValueMemberB{Value: b}, err
		case "BOOL":
			b, _ := x.(bool)
			return &types.AttributeValueMemberBOOL{Value: b}, nil
		case "NULL":
			b, _ := x.(bool)
			return &types.AttributeValueMemberNULL{Value: b}, nil
		case "SS":
			ss, err := strs(x)
			return &types.AttributeValueMemberSS{Value: ss}, err
		case "NS":
			ss, err := strs(x)
			return &types.AttributeValueMemberNS{Value: ss}, err
		case "BS":
			ss, err := strs(x)
			if err != nil {
				return nil, err
			}
			bs := make([][]byte, len(ss))
			for i, s := range ss {
				if bs[i], err = base64.StdEncoding.DecodeString(s); err != nil {
					return nil, err
				}
			}
			return &types.AttributeValueMemberBS{Value: bs}, nil
		case "L":
			xs, _ := x.([]any)
			out := make([]types.AttributeValue, len(xs))
			for i, e := range xs {
				av, err := wireToAttributeValue(e)
				if err != nil {
					return nil, err
				}
				out[i] = av
			}
			return &types.AttributeValueMemberL{Value: out}, nil
		case "M":
			xm, _ := x.(map[string]any)
			out := make(map[string]types.AttributeValue, len(xm))
			for n, e := range xm {
				av, err := wireToAttributeValue(e)
				if err != nil {
					return nil, err
				}
				out[n] = av
			}
			return &types.AttributeValueMemberM{Value: out}, nil
		}
	}
	return nil, fmt.Errorf("unknown attribute value %s", compactJSON(v))
}

// goToWire turns an SDK output or error value into wire JSON, leaving out
// nil pointers, slices and maps, and the top-level fields named in skip; it
// reports whether the value is present.
func goToWire(v reflect.Value, skip ...string) (any, bool) {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, false
		}
		if av, ok := v.Interface().(types.AttributeValue); ok {
			return attributeValueToWire(av), true
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil, false
		}
		return goToWire(v.Elem(), skip...)
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			return t.UTC().Format(time.RFC3339Nano), true
		}
		out := map[string]any{}
	fields:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			for _, s := range skip {
				if f.Name == s {
					continue fields
				}
			}
			if x, ok := goToWire(v.Field(i)); ok {
				out[f.Name] = x
			}
		}
		return out, true
	case reflect.Slice:
		if v.IsNil() {
			return nil, false
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return base64.StdEncoding.EncodeToString(v.Bytes()), true
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i], _ = goToWire(v.Index(i))
		}
		return out, true
	case reflect.Map:
		if v.IsNil() {
			return nil, false
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			out[it.Key().String()], _ = goToWire(it.Value())
		}
		return out, true
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Int, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return fmt.Sprintf("unsupported %s", v.Type()), true
}

// attributeValueToWire renders one attribute value in wire JSON.
func attributeValueToWire(av types.AttributeValue) any {
	switch av := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": av.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": av.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(av.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": av.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": av.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": av.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": av.Value}
	case *types.AttributeValueMemberBS:
		out := make([]string, len(av.Value))
		for i, b := range av.Value {
			out[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": out}
	case *types.AttributeValueMemberL:
		out := make([]any, len(av.Value))
		for i, e := range av.Value {
			out[i] = attributeValueToWire(e)
		}
		return map[string]any{"L": out}
	case *types.AttributeValueMemberM:
		out := make(map[string]any, len(av.Value))
		for k, e := range av.Value {
			out[k] = attributeValueToWire(e)
		}
		return map[string]any{"M": out}
	}
	return fmt.Sprintf("unknown attribute value %T", av)
}

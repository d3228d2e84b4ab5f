package ddb

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/quarrydb/quarry/ddb/attr"
)

// TestOutputEncodingMatchesEncodingJSON checks that the outputs that encode
// themselves write exactly what encoding/json writes for them.
func TestOutputEncodingMatchesEncodingJSON(t *testing.T) {
	item := attr.Item{"pk": attr.Str("a<b>&c"), "sk": attr.Num("-1.5"), "m": {Kind: attr.KindM, M: map[string]attr.Value{"x": attr.Boolean(true)}}}
	cc := &ConsumedCapacity{TableName: "t", CapacityUnits: 0.5, Table: &Capacity{CapacityUnits: 0.5}}
	items := []attr.Item{item, {"pk": attr.Str("é\u2028")}}
	empty := []attr.Item{}
	outs := []any{
		&GetItemOutput{},
		&GetItemOutput{Item: item},
		&GetItemOutput{Item: item, ConsumedCapacity: cc},
		&GetItemOutput{ConsumedCapacity: cc},
		&ItemOutput{},
		&ItemOutput{Attributes: item, ConsumedCapacity: cc, ItemCollectionMetrics: &ItemCollectionMetrics{ItemCollectionKey: attr.Item{"pk": attr.Str("a")}, SizeEstimateRangeGB: []float64{0, 1}}},
		&QueryOutput{},
		&QueryOutput{Items: &empty},
		&QueryOutput{Items: &items, Count: 2, ScannedCount: 7, LastEvaluatedKey: attr.Item{"pk": attr.Str("a")}},
		&QueryOutput{Count: 12345678901, ScannedCount: 3, ConsumedCapacity: cc},
	}
	// The one difference from encoding/json: an empty Item is present (a
	// projection that matched nothing), where omitempty would drop it.
	var empty1 bytes.Buffer
	if err := encodeOutput(&empty1, &GetItemOutput{Item: attr.Item{}}); err != nil || empty1.String() != `{"Item":{}}` {
		t.Errorf("GetItemOutput with an empty Item: %s, %v; want {\"Item\":{}}", empty1.Bytes(), err)
	}
	for _, out := range outs {
		want, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := encodeOutput(&buf, out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%T:\n got  %s\n want %s", out, buf.Bytes(), want)
		}
	}
	// Outputs without their own encoder go through encoding/json, without
	// its trailing newline.
	var buf bytes.Buffer
	if err := encodeOutput(&buf, map[string]any{"TableNames": []string{"a"}}); err != nil || buf.String() != `{"TableNames":["a"]}` {
		t.Errorf("fallback = %q, %v", buf.String(), err)
	}
}

package explorer

import "testing"

func TestJSONRoundTrip(t *testing.T) {
	in := `{"pk":{"S":"a"},"n":{"N":"1.50"},"b":{"B":"aGk="},"ok":{"BOOL":true},"z":{"NULL":true},` +
		`"ss":{"SS":["x","y"]},"ns":{"NS":["1","2"]},"l":{"L":[{"S":"q"},{"N":"3"}]},"m":{"M":{"k":{"S":"v"}}}}`
	it, err := parseDDBItem(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseDDBItem(compact(itemDDBJSON(it)))
	if err != nil {
		t.Fatal(err)
	}
	if compact(itemDDBJSON(back)) != compact(itemDDBJSON(it)) {
		t.Errorf("round trip: %s", compact(itemDDBJSON(back)))
	}
	if got := compact(itemPlain(it)["n"]); got != "1.50" {
		t.Errorf("plain number %s", got)
	}
	plain, err := parsePlainItem(`{"pk":"a","n":12.5,"l":[1,"x",null],"m":{"ok":false}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(itemDDBJSON(plain)); got != `{"l":{"L":[{"N":"1"},{"S":"x"},{"NULL":true}]},"m":{"M":{"ok":{"BOOL":false}}},"n":{"N":"12.5"},"pk":{"S":"a"}}` {
		t.Errorf("plain → DynamoDB JSON: %s", got)
	}
	for _, bad := range []string{`[]`, `{"a":{"X":"1"}}`, `{"a":"plain"}`, `{"a":{"S":1}}`, `{"a":{"S":"x"}} junk`} {
		if _, err := parseDDBItem(bad); err == nil {
			t.Errorf("parseDDBItem(%s) accepted", bad)
		}
	}
	k, err := decodeKey(encodeKey(it))
	if err != nil || len(k) != len(it) {
		t.Errorf("key round trip: %v %v", k, err)
	}
}

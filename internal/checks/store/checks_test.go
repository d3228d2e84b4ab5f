package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// TestNameAndTagsOnTheItem: name is a top-level string attribute of the
// CHECK item and tags a string set, each absent when empty (DynamoDB has
// no empty set), and a patch writes or removes them with the rest of the
// change in one update.
func TestNameAndTagsOnTheItem(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	raw := func(id string) map[string]types.AttributeValue {
		out, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.names.Checks),
			Key: map[string]types.AttributeValue{"PK": ddbitem.S(id), "SK": ddbitem.S("CHECK")}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	c, err := e.st.CreateCheck(ctx, store.Check{UserID: e.user.ID, Name: "Shop", Tags: []string{"prod", "eu"},
		URL: "https://shop.example/health", Type: "AVAILABILITY", DelayMs: 60000}, e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	it := raw(c.ID)
	if ddbitem.String(it, "name") != "Shop" {
		t.Errorf("name attribute %v", it["name"])
	}
	ss, ok := it["tags"].(*types.AttributeValueMemberSS)
	if !ok || !slices.Equal(slices.Sorted(slices.Values(ss.Value)), []string{"eu", "prod"}) {
		t.Errorf("tags attribute %#v, want the string set {eu, prod}", it["tags"])
	}
	got, err := e.st.GetCheck(ctx, e.user.ID, c.ID)
	if err != nil || got.Name != "Shop" || !slices.Equal(got.Tags, []string{"eu", "prod"}) {
		t.Fatalf("read back %+v %v", got, err)
	}

	empty, blank := "", []string{}
	url := "https://shop.example/other"
	if _, err := e.st.UpdateCheck(ctx, e.user.ID, c.ID, store.Patch{Name: &empty, Tags: &blank, URL: &url}); err != nil {
		t.Fatal(err)
	}
	it = raw(c.ID)
	if _, ok := it["name"]; ok {
		t.Errorf("name not removed: %v", it["name"])
	}
	if _, ok := it["tags"]; ok {
		t.Errorf("tags not removed: %v", it["tags"])
	}
	got, err = e.st.GetCheck(ctx, e.user.ID, c.ID)
	if err != nil || got.Name != "" || got.Tags != nil || got.URL != url || got.DisplayName() != "shop.example" {
		t.Fatalf("after the patch %+v %v", got, err)
	}

	plain, err := e.st.CreateCheck(ctx, store.Check{UserID: e.user.ID, URL: "https://plain.example/", Type: "AVAILABILITY", DelayMs: 60000}, e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	it = raw(plain.ID)
	for _, k := range []string{"name", "tags"} {
		if _, ok := it[k]; ok {
			t.Errorf("a check without %s has the attribute: %v", k, it[k])
		}
	}
}

// TestFilterMatch: the list filters on a check's tags, state and text.
func TestFilterMatch(t *testing.T) {
	up := store.Check{Name: "Shop", URL: "https://shop.example/a", Tags: []string{"eu", "prod"}, Status: store.CheckActive,
		LastResult: map[string]any{"status": "UP"}}
	down := store.Check{URL: "https://api.example/health", Status: store.CheckActive, LastResult: map[string]any{"status": "DOWN"}}
	pending := store.Check{URL: "https://new.example/", Status: store.CheckActive}
	paused := store.Check{URL: "https://old.example/", Status: store.CheckPaused, LastResult: map[string]any{"status": "UP"}}
	tests := []struct {
		name string
		f    store.Filter
		c    store.Check
		want bool
	}{
		{"empty filter", store.Filter{}, paused, true},
		{"tag", store.Filter{Tags: []string{"PROD"}}, up, true},
		{"every tag", store.Filter{Tags: []string{"prod", "us"}}, up, false},
		{"tag on an untagged check", store.Filter{Tags: []string{"prod"}}, down, false},
		{"UP", store.Filter{Status: "UP"}, up, true},
		{"UP is not a paused check's last run", store.Filter{Status: "UP"}, paused, false},
		{"DOWN", store.Filter{Status: "DOWN"}, down, true},
		{"PENDING", store.Filter{Status: "PENDING"}, pending, true},
		{"ACTIVE", store.Filter{Status: store.CheckActive}, down, true},
		{"PAUSED", store.Filter{Status: store.CheckPaused}, paused, true},
		{"q in the name", store.Filter{Q: "sho"}, up, true},
		{"q in the URL", store.Filter{Q: "/HEALTH"}, down, true},
		{"q in the default name (host)", store.Filter{Q: "api.example"}, down, true},
		{"q nowhere", store.Filter{Q: "zzz"}, up, false},
	}
	for _, tc := range tests {
		if got := tc.f.Match(tc.c); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

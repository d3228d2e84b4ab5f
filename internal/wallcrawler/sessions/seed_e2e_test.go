package sessions_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// TestManualSeeding writes the items the original design's seeding
// instructions describe straight into the tables (a project, and an API
// key with only apiKeyHash, projectId and projectIds), then uses the key:
// it authorizes, starts sessions in its primary and its additional
// project, and stops working for new sessions once the primary project is
// made INACTIVE (403 in Browserbase's error shape).
func TestManualSeeding(t *testing.T) {
	st := newStack(t, 1, sessions.Options{})
	client := ddb.NewClient(st.db)
	ctx := t.Context()
	const raw = "seeded-by-hand-0123456789"
	items := []struct {
		table string
		item  map[string]types.AttributeValue
	}{
		{"wallcrawler-projects", map[string]types.AttributeValue{ // every documented attribute
			"projectId": s("project_seed"), "name": s("Seeded"), "ownerId": s("owner_1"),
			"defaultTimeout": n("600"), "concurrency": n("2"), "status": s("ACTIVE"),
			"createdAt": s("2025-01-01T00:00:00Z"), "updatedAt": s("2025-01-01T00:00:00Z"), "billingTier": s("free"),
		}},
		{"wallcrawler-projects", map[string]types.AttributeValue{ // the least a project can be
			"projectId": s("project_extra"), "name": s("Extra"),
		}},
		{"wallcrawler-api-keys", map[string]types.AttributeValue{
			"apiKeyHash": s(auth.HashKey(raw)), "projectId": s("project_seed"),
			"projectIds": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("project_extra")}},
		}},
	}
	for _, it := range items {
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(it.table), Item: it.item}); err != nil {
			t.Fatal(err)
		}
	}
	hdr := []string{"X-BB-API-Key", raw}

	var proj struct{ ID, OwnerID string }
	if code := st.call(t, "GET", "/v1/projects/project_seed", nil, &proj, hdr...); code != http.StatusOK || proj.OwnerID != "owner_1" {
		t.Fatalf("GET project with the seeded key: %d %+v", code, proj)
	}
	for _, c := range []struct{ body map[string]any }{
		{map[string]any{}},
		{map[string]any{"projectId": "project_extra"}},
	} {
		var x sessionJSON
		if code := st.call(t, "POST", "/v1/sessions", c.body, &x, hdr...); code != http.StatusCreated {
			t.Fatalf("create %v with the seeded key: %d", c.body, code)
		}
		want := "project_seed"
		if p, ok := c.body["projectId"]; ok {
			want = p.(string)
		}
		if x.ProjectID != want || x.Status != "RUNNING" {
			t.Errorf("create %v: %+v", c.body, x)
		}
		if code := st.call(t, "POST", "/v1/sessions/"+x.ID, map[string]any{"status": "REQUEST_RELEASE"}, nil, hdr...); code != http.StatusOK {
			t.Fatalf("release: %d", code)
		}
	}

	inactive := auth.StatusInactive
	if _, err := st.auth.UpdateProject(ctx, "project_seed", auth.UpdateProjectInput{Status: &inactive}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", st.srv.URL+"/wallcrawler/v1/sessions", strings.NewReader(`{}`))
	req.Header.Set("X-BB-API-Key", raw)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		StatusCode     int
		Error, Message string
	}
	if err := json.Unmarshal(data, &e); err != nil || resp.StatusCode != http.StatusForbidden || e.StatusCode != 403 || e.Error != "Forbidden" || e.Message == "" {
		t.Fatalf("create in an INACTIVE project: %d %s", resp.StatusCode, data)
	}
	if st.mgr.Live() != 0 {
		t.Errorf("%d browsers running after the refused create", st.mgr.Live())
	}
}

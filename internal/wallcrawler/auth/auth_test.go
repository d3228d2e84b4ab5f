package auth_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

type bundle struct {
	client *dynamodb.Client
	names  tables.Names
	store  *auth.Store
}

func setup(t *testing.T) (*auth.Store, *bundle) {
	t.Helper()
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	client := ddb.NewClient(s)
	names, err := tables.EnsureTables(context.Background(), client, "")
	if err != nil {
		t.Fatal(err)
	}
	st := auth.New(client, names, nil)
	return st, &bundle{client: client, names: names, store: st}
}

func mustProject(t *testing.T, st *auth.Store, in auth.CreateProjectInput) auth.Project {
	t.Helper()
	p, err := st.CreateProject(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCreateProjectDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := setup(t)
	p := mustProject(t, st, auth.CreateProjectInput{Name: " demo "})
	if !strings.HasPrefix(p.ID, "proj_") || p.Name != "demo" || p.Concurrency != auth.DefaultConcurrency ||
		p.DefaultTimeout != 3600 || p.Status != auth.StatusActive || p.CreatedAt.IsZero() {
		t.Fatalf("project = %+v", p)
	}
	got, err := st.GetProject(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != p.ID || got.Name != p.Name || got.Concurrency != p.Concurrency || got.DefaultTimeout != p.DefaultTimeout ||
		got.Status != p.Status || !got.CreatedAt.Equal(p.CreatedAt.Truncate(time.Millisecond)) {
		t.Fatalf("GetProject = %+v, want %+v", got, p)
	}
	if _, err := st.CreateProject(ctx, auth.CreateProjectInput{ID: p.ID, Name: "again"}); !errors.Is(err, auth.ErrExists) {
		t.Fatalf("duplicate id: %v", err)
	}
	if _, err := st.CreateProject(ctx, auth.CreateProjectInput{Name: ""}); !errors.Is(err, auth.ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
	if _, err := st.GetProject(ctx, "proj_missing"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	q := mustProject(t, st, auth.CreateProjectInput{ID: "project_default", Name: "d", Concurrency: 5, DefaultTimeout: 600})
	if q.ID != "project_default" || q.Concurrency != 5 || q.DefaultTimeout != 600 {
		t.Fatalf("explicit project = %+v", q)
	}
	all, err := st.ListProjects(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("ListProjects = %v, %v", all, err)
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, b := setup(t)
	p1 := mustProject(t, st, auth.CreateProjectInput{Name: "one"})
	p2 := mustProject(t, st, auth.CreateProjectInput{Name: "two"})
	p3 := mustProject(t, st, auth.CreateProjectInput{Name: "three"})

	raw, key, err := st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: p1.ID, ProjectIDs: []string{p2.ID, p1.ID}, Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw, auth.KeyPrefix) || len(raw) != len(auth.KeyPrefix)+43 {
		t.Fatalf("raw key %q", raw)
	}
	// projectIds holds the additional projects only (the primary one,
	// repeated in the input, is left out), as the original design says.
	if key.Hash != auth.HashKey(raw) || len(key.Hash) != 64 || !slices.Equal(key.ProjectIDs, []string{p2.ID}) ||
		!slices.Equal(key.Projects(), []string{p1.ID, p2.ID}) {
		t.Fatalf("key = %+v", key)
	}

	// Valid key, no requested project: the primary project.
	pr, err := st.Authorize(ctx, raw, "")
	if err != nil {
		t.Fatal(err)
	}
	if pr.ProjectID != p1.ID || pr.KeyID != key.ID || !pr.CanUse(p2.ID) || pr.CanUse(p3.ID) {
		t.Fatalf("principal = %+v", pr)
	}
	// An additional project may be requested.
	if pr, err := st.Authorize(ctx, raw, p2.ID); err != nil || pr.ProjectID != p2.ID {
		t.Fatalf("Authorize(p2) = %+v, %v", pr, err)
	}
	// A project not in the key's list: 403.
	if _, err := st.Authorize(ctx, raw, p3.ID); !errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("other project: %v", err)
	}
	// Wrong, empty and oversized keys: 401.
	for _, bad := range []string{"", "wc_nope", raw + "x", strings.Repeat("a", 10000), auth.HashKey(raw)} {
		if _, err := st.Authorize(ctx, bad, ""); !errors.Is(err, auth.ErrUnauthorized) {
			t.Fatalf("bad key %.20q: %v", bad, err)
		}
	}
	// lastUsedAt is recorded.
	keys, err := st.ListKeys(ctx, p1.ID)
	if err != nil || len(keys) != 1 || keys[0].LastUsedAt.IsZero() || keys[0].ID != key.ID {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}

	// The raw key is stored nowhere: scan every table.
	for _, name := range b.names.All() {
		out, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			for attr, v := range it {
				if containsString(v, raw) || containsString(v, strings.TrimPrefix(raw, auth.KeyPrefix)) {
					t.Fatalf("raw key found in %s.%s", name, attr)
				}
			}
		}
	}
	out, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(b.names.APIKeys),
		Key:       map[string]types.AttributeValue{"apiKeyHash": &types.AttributeValueMemberS{Value: auth.HashKey(raw)}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("stored key: %v", err)
	}
	for _, attr := range []string{"apiKeyHash", "keyId", "projectId", "projectIds", "status", "createdAt", "name", "lastUsedAt"} {
		if _, ok := out.Item[attr]; !ok {
			t.Errorf("stored key lacks %s", attr)
		}
	}

	// Inactive project: denied with 403 (the key itself is valid).
	if err := st.SetProjectStatus(ctx, p2.ID, auth.StatusInactive); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Authorize(ctx, raw, p2.ID); !errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("inactive project: %v", err)
	}
	if _, err := st.Authorize(ctx, raw, ""); err != nil {
		t.Fatalf("primary project still active: %v", err)
	}

	// Revoked key: 401, by raw key and by id.
	if err := st.RevokeKey(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Authorize(ctx, raw, ""); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("revoked key: %v", err)
	}
	raw2, key2, err := st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: p3.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeKeyByID(ctx, p3.ID, key2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Authorize(ctx, raw2, ""); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("revoked key by id: %v", err)
	}
	if err := st.RevokeKey(ctx, "wc_unknown"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	if _, _, err := st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: "proj_missing"}); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("key for missing project: %v", err)
	}
}

func containsString(v types.AttributeValue, s string) bool {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return strings.Contains(v.Value, s)
	case *types.AttributeValueMemberL:
		for _, e := range v.Value {
			if containsString(e, s) {
				return true
			}
		}
	case *types.AttributeValueMemberM:
		for _, e := range v.Value {
			if containsString(e, s) {
				return true
			}
		}
	}
	return false
}

func TestAcquireSlotConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := setup(t)
	p := mustProject(t, st, auth.CreateProjectInput{Name: "limited", Concurrency: 3})
	var ok, limited atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := st.AcquireSlot(ctx, p.ID); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, auth.ErrConcurrencyLimit):
				limited.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 3 || limited.Load() != 17 {
		t.Fatalf("acquired %d, limited %d; want 3 and 17", ok.Load(), limited.Load())
	}
	if err := st.ReleaseSlot(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.AcquireSlot(ctx, p.ID); err != nil {
		t.Fatalf("after release: %v", err)
	}
	for range 5 { // over-release is a no-op
		if err := st.ReleaseSlot(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.GetProject(ctx, p.ID)
	if err != nil || got.ActiveSessions != 0 {
		t.Fatalf("activeSessions = %d, %v", got.ActiveSessions, err)
	}
	if err := st.SetProjectStatus(ctx, p.ID, auth.StatusInactive); err != nil {
		t.Fatal(err)
	}
	if err := st.AcquireSlot(ctx, p.ID); !errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("inactive project: %v", err)
	}
	if err := st.AcquireSlot(ctx, "proj_missing"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("missing project: %v", err)
	}
}

package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
)

// Get returns a session of one of the principal's projects.
func (m *Manager) Get(ctx context.Context, p auth.Principal, id string) (Session, error) {
	x, err := m.d.Repo.Get(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if !p.CanUse(x.ProjectID) {
		return Session{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return x, nil
}

// Recent returns at most limit sessions of the principal's selected
// project, newest first.
func (m *Manager) Recent(ctx context.Context, p auth.Principal, limit int) ([]Session, error) {
	return m.d.Repo.ListByProject(ctx, p.ProjectID, limit)
}

// List returns the sessions of the principal's selected project, newest
// first, optionally only those of an SDK status and those whose
// userMetadata matches q (see MatchQuery).
func (m *Manager) List(ctx context.Context, p auth.Principal, status, q string) ([]Session, error) {
	all, err := m.d.Repo.ListByProject(ctx, p.ProjectID, 0)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, x := range all {
		if status != "" && x.Status != status {
			continue
		}
		if q != "" && !MatchQuery(x.UserMetadata, q) {
			continue
		}
		out = append(out, x)
	}
	return out, nil
}

// MatchQuery reports whether userMetadata matches a ?q= query. The query
// is Browserbase's metadata filter: user_metadata['key']:'value' (nested
// keys as ['a']['b']); a bare word matches any string value containing
// it.
func MatchQuery(md map[string]any, q string) bool {
	q = strings.TrimSpace(q)
	if rest, ok := strings.CutPrefix(q, "user_metadata"); ok {
		var path []string
		for strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 0 {
				return false
			}
			path = append(path, strings.Trim(rest[1:end], `'"`))
			rest = rest[end+1:]
		}
		val, ok := strings.CutPrefix(rest, ":")
		if !ok || len(path) == 0 {
			return false
		}
		val = strings.Trim(val, `'"`)
		var cur any = md
		for _, k := range path {
			mm, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			cur = mm[k]
		}
		return fmt.Sprint(cur) == val
	}
	data, _ := json.Marshal(md)
	return q == "" || strings.Contains(strings.ToLower(string(data)), strings.ToLower(q))
}

package wallcrawler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/quarrydb/quarry/internal/console"
	wcauth "github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// Realm signs people in with Wallcrawler API keys, keeping the key's hash
// (never the key) and checking it on every request.
func Realm(st *wcauth.Store) console.Realm {
	return console.Realm{Kind: "wallcrawler", Label: "Wallcrawler API key", Auth: realm{st},
		Prefix: wcauth.KeyPrefix, Home: "/console/wallcrawler/"}
}

type realm struct{ st *wcauth.Store }

func (a realm) Authenticate(ctx context.Context, cred string) (console.Principal, error) {
	p, err := a.st.Authorize(ctx, cred, "")
	if err != nil {
		return console.Principal{}, err
	}
	return console.Principal{ID: wcauth.HashKey(cred), Name: p.Project.Name + " (" + p.ProjectID + ")"}, nil
}

// Valid ends the console sessions of a revoked key, or of a key whose
// primary project was made inactive.
func (a realm) Valid(ctx context.Context, hash string) error {
	_, err := a.st.AuthorizeHash(ctx, hash, "")
	return err
}

// Adapter is a Backend over Wallcrawler's stores.
type Adapter struct {
	auth     *wcauth.Store
	sessions *sessions.Manager
	contexts *contexts.Store
}

var _ Backend = Adapter{}

// Adapt returns the inspector's view of Wallcrawler's API keys and
// projects (auth), sessions and contexts.
func Adapt(auth *wcauth.Store, sessions *sessions.Manager, contexts *contexts.Store) Adapter {
	return Adapter{auth: auth, sessions: sessions, contexts: contexts}
}

// principal authorizes the key (by hash) for projectID; a project that is
// not the key's, or is inactive, is console.ErrNotFound.
func (w Adapter) principal(ctx context.Context, hash, projectID string) (wcauth.Principal, error) {
	p, err := w.auth.AuthorizeHash(ctx, hash, projectID)
	if errors.Is(err, wcauth.ErrForbidden) {
		return p, fmt.Errorf("%w: %v", console.ErrNotFound, err)
	}
	return p, err
}

// session reads a session of projectID (another project's, even one the
// key may use, is console.ErrNotFound: the URL names the project).
func (w Adapter) session(ctx context.Context, hash, projectID, id string) (wcauth.Principal, sessions.Session, error) {
	p, err := w.principal(ctx, hash, projectID)
	if err != nil {
		return p, sessions.Session{}, err
	}
	x, err := w.sessions.Get(ctx, p, id)
	if errors.Is(err, sessions.ErrNotFound) || (err == nil && x.ProjectID != projectID) {
		return p, sessions.Session{}, fmt.Errorf("%w: session %s", console.ErrNotFound, id)
	}
	return p, x, err
}

func (w Adapter) Projects(ctx context.Context, hash string) ([]Project, error) {
	p, err := w.auth.AuthorizeHash(ctx, hash, "")
	if err != nil {
		return nil, err
	}
	var out []Project
	for _, id := range p.ProjectIDs {
		pr, err := w.auth.GetProject(ctx, id)
		if errors.Is(err, wcauth.ErrNotFound) || (err == nil && pr.Status != wcauth.StatusActive) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Project{ID: pr.ID, Name: pr.Name, Concurrency: pr.Concurrency, Active: pr.ActiveSessions,
			BrowserMinutes: float64(pr.UsageBrowserMs) / 60000, ProxyBytes: pr.UsageProxyBytes})
	}
	return out, nil
}

func row(x sessions.Session) Session {
	s := Session{ID: x.ID, Status: x.Status, InternalStatus: x.InternalStatus, Region: x.Region, CreatedAt: x.CreatedAt,
		StartedAt: x.StartedAt, EndedAt: x.EndedAt, ExpiresAt: x.ExpiresAt, KeepAlive: x.KeepAlive, ContextID: x.ContextID,
		ProxyBytes: x.ProxyBytes, AvgCPU: x.AvgCPUUsage, Memory: x.MemoryUsage, Sampled: x.UsageSampled, Error: x.Error}
	if len(x.UserMetadata) > 0 {
		b, _ := json.Marshal(x.UserMetadata)
		s.Metadata = string(b)
	}
	return s
}

func (w Adapter) Sessions(ctx context.Context, hash, projectID string, limit int) ([]Session, error) {
	p, err := w.principal(ctx, hash, projectID)
	if err != nil {
		return nil, err
	}
	xs, err := w.sessions.Recent(ctx, p, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Session, len(xs))
	for i, x := range xs {
		out[i] = row(x)
	}
	return out, nil
}

// maxLogJSON bounds the request and response JSON shown per CDP command.
const maxLogJSON = 4 << 10

func cutJSON(b []byte) string {
	if len(b) > maxLogJSON {
		return string(b[:maxLogJSON]) + "…"
	}
	return string(b)
}

func (w Adapter) Session(ctx context.Context, hash, projectID, id string) (Detail, error) {
	p, x, err := w.session(ctx, hash, projectID, id)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Session: row(x)}
	for _, e := range x.Events {
		d.Events = append(d.Events, Event{Time: e.Time, Source: e.Source, From: e.From, To: e.To, Note: e.Reason})
	}
	logs, err := w.sessions.Logs(ctx, p, id)
	if err != nil {
		return Detail{}, err
	}
	for _, e := range logs {
		le := LogEntry{Time: time.UnixMilli(e.Timestamp).UTC(), Method: e.Method, CDPSession: e.SessionID}
		if e.Request != nil {
			le.Request = cutJSON(e.Request.Params)
			if le.Request == "" {
				le.Request = e.Request.RawBody
			}
		}
		if e.Response != nil {
			le.Response = cutJSON(e.Response.Result)
			if le.Response == "" {
				le.Response = e.Response.RawBody
			}
			if e.Request != nil && e.Response.Timestamp >= e.Request.Timestamp {
				le.DurationMs = float64(e.Response.Timestamp - e.Request.Timestamp)
			}
		}
		d.Logs = append(d.Logs, le)
	}
	rec, err := w.sessions.Recording(ctx, p, id)
	if err != nil {
		return Detail{}, err
	}
	for _, c := range rec.Console {
		d.Console = append(d.Console, ConsoleMessage{Time: c.Time, PageID: c.PageID, Level: c.Level, Source: c.Source, Text: c.Text, URL: c.URL})
	}
	for _, n := range rec.Network {
		d.Network = append(d.Network, Request{Time: n.Time, PageID: n.PageID, Method: n.Method, URL: n.URL, Type: n.Type,
			MimeType: n.MimeType, Status: n.Status, Size: n.Size, DurationMs: n.DurationMs, Error: n.Error, Done: n.Done})
	}
	for _, f := range rec.Frames {
		d.Frames = append(d.Frames, Frame{Time: f.Time, PageID: f.PageID})
	}
	seen := map[string]int{}
	for _, e := range rec.DOM {
		i, ok := seen[e.PageID]
		if !ok {
			i = len(d.DOMPages)
			seen[e.PageID] = i
			d.DOMPages = append(d.DOMPages, DOMPage{ID: e.PageID})
		}
		d.DOMPages[i].Events++
	}
	d.DroppedConsole, d.DroppedNetwork, d.DroppedFrames, d.DroppedDOM, d.RecordError = rec.Dropped.Console, rec.Dropped.Network, rec.Dropped.Frames, rec.Dropped.DOM, rec.Error
	return d, nil
}

func (w Adapter) DOM(ctx context.Context, hash, projectID, id, pageID string) ([]DOMEvent, error) {
	p, _, err := w.session(ctx, hash, projectID, id)
	if err != nil {
		return nil, err
	}
	rec, err := w.sessions.Recording(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if pageID == "" && len(rec.DOM) > 0 {
		pageID = rec.DOM[0].PageID
	}
	var out []DOMEvent
	for _, e := range rec.DOM {
		if e.PageID == pageID {
			out = append(out, DOMEvent{Type: e.Type, Timestamp: e.Timestamp, Data: e.Data})
		}
	}
	return out, nil
}

func (w Adapter) Frame(ctx context.Context, hash, projectID, id string, n int) ([]byte, error) {
	p, _, err := w.session(ctx, hash, projectID, id)
	if err != nil {
		return nil, err
	}
	b, err := w.sessions.ReplayFrame(ctx, p, id, n)
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", console.ErrNotFound, err)
	}
	return b, err
}

func (w Adapter) LiveView(ctx context.Context, hash, projectID, id string, viewOnly bool) (string, error) {
	_, x, err := w.session(ctx, hash, projectID, id)
	if err != nil {
		return "", err
	}
	if x.InternalStatus != sessions.StateReady {
		return "", fmt.Errorf("%w: session %s is not running", console.ErrNotFound, id)
	}
	tok, err := w.sessions.LiveToken(x, "", viewOnly)
	if err != nil {
		return "", fmt.Errorf("wallcrawler: live view of %s: %w", id, err)
	}
	return "/wallcrawler/live/" + url.PathEscape(x.ID) + "?token=" + url.QueryEscape(tok), nil
}

func (w Adapter) Downloads(ctx context.Context, hash, projectID, id string, out io.Writer) error {
	p, _, err := w.session(ctx, hash, projectID, id)
	if err != nil {
		return err
	}
	return w.sessions.Downloads(ctx, p, id, out)
}

func (w Adapter) Release(ctx context.Context, hash, projectID, id string) error {
	p, _, err := w.session(ctx, hash, projectID, id)
	if err != nil {
		return err
	}
	_, err = w.sessions.Release(ctx, p, id)
	return err
}

// maxConsoleContexts bounds the contexts listed.
const maxConsoleContexts = 500

func (w Adapter) Contexts(ctx context.Context, hash, projectID string) ([]BrowserContext, error) {
	if _, err := w.principal(ctx, hash, projectID); err != nil {
		return nil, err
	}
	cs, err := w.contexts.List(ctx, projectID, maxConsoleContexts)
	if err != nil {
		return nil, err
	}
	out := make([]BrowserContext, 0, len(cs))
	for _, c := range cs {
		size, err := w.contexts.ArchiveSize(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, BrowserContext{ID: c.ID, Name: c.Name, Status: c.Status, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Size: size})
	}
	return out, nil
}

package checks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"time"

	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Adapter is Checks as the dashboard sees it: a Backend over Checks'
// store (reads) and its API (writes, served on the signed-in user's
// behalf, so that the API's validation, scheduling and messages apply).
type Adapter struct {
	st  *checksstore.Store
	api *checksapi.Handler
	now func() time.Time
}

var _ Backend = (*Adapter)(nil)

// Adapt returns the dashboard's view of Checks: reads from st, writes
// through api (nil makes the dashboard read-only: writes fail).
func Adapt(st *checksstore.Store, api *checksapi.Handler) *Adapter {
	return &Adapter{st: st, api: api, now: time.Now}
}

// consoleCheck is c as the pages show it, its failure texts cut to their
// status line (failureLine).
func consoleCheck(c checksstore.Check) Check {
	last, _ := c.LastResult["status"].(string)
	kw, _ := c.Attributes["keyword"].(string)
	th := ""
	if v, ok := c.Attributes["threshold"].(float64); ok {
		th = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return Check{ID: c.ID, Name: c.DisplayName(), OwnName: c.Name, Tags: c.Tags, URL: c.URL, Type: c.Type,
		Keyword: kw, Threshold: th, DelayMs: c.DelayMs, Status: c.Status, Attrs: c.Attributes, Channels: c.Channels,
		LastExecutedAt: c.LastExecutedAt, LastStatus: last, FailureReason: failureLine(c.FailureReason),
		LastAlertAt: c.LastAlertAt, LastAlertError: failureLine(c.LastAlertError), LastAlertErrorAt: c.LastAlertErrorAt}
}

// mapErr turns the store's sentinels into the console's.
func mapErr(err error) error {
	switch {
	case errors.Is(err, checksstore.ErrNotFound):
		return fmt.Errorf("%w: %v", console.ErrNotFound, err)
	case errors.Is(err, checksstore.ErrInvalid):
		return fmt.Errorf("%w: %v", console.ErrInvalid, err)
	}
	return err
}

// Checks implements Backend, selecting as the API's list filters do
// (store.Filter).
func (k *Adapter) Checks(ctx context.Context, userID string, f Filter) ([]Check, error) {
	cs, err := k.st.ListChecks(ctx, userID)
	if err != nil {
		return nil, err
	}
	ws, err := k.st.ListMaintenance(ctx, userID)
	if err != nil {
		return nil, err
	}
	now := k.now()
	sf := checksstore.Filter{Status: f.Status, Q: f.Q}
	if f.Tag != "" {
		sf.Tags = []string{f.Tag}
	}
	out := make([]Check, 0, len(cs))
	for _, c := range cs {
		if sf.Match(c) {
			ck := consoleCheck(c)
			ck.Maintenance = checksstore.InMaintenance(ws, c, now)
			out = append(out, ck)
		}
	}
	return out, nil
}

// Check implements Backend.
func (k *Adapter) Check(ctx context.Context, userID, id string) (Check, error) {
	c, err := k.st.GetCheck(ctx, userID, id)
	if err != nil {
		return Check{}, mapErr(err)
	}
	ws, err := k.st.ListMaintenance(ctx, userID)
	if err != nil {
		return Check{}, err
	}
	ck := consoleCheck(c)
	ck.Maintenance = checksstore.InMaintenance(ws, c, k.now())
	return ck, nil
}

func runs(rs []checksstore.Run) []Run {
	out := make([]Run, 0, len(rs))
	for _, r := range rs {
		at, err := time.Parse(ddbitem.TimeLayout, r.At)
		if err != nil {
			continue
		}
		status, _ := r.Result["status"].(string)
		ms, _ := r.Result["responseTime"].(float64)
		run := Run{At: at, Up: status == "UP", ResponseTimeMs: int64(ms), Key: r.At}
		if !run.Up {
			e, _ := r.Result["error"].(string)
			run.Error = failureLine(e)
		}
		out = append(out, run)
	}
	return out
}

// Runs implements Backend.
func (k *Adapter) Runs(ctx context.Context, userID, id string, limit int) ([]Run, error) {
	rs, err := k.st.Results(ctx, userID, id, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return runs(rs), nil
}

// RunsBefore implements Backend.
func (k *Adapter) RunsBefore(ctx context.Context, userID, id, before string, limit int) ([]Run, error) {
	rs, err := k.st.ResultsBefore(ctx, userID, id, before, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return runs(rs), nil
}

// Days implements Backend.
func (k *Adapter) Days(ctx context.Context, userID, id string, since time.Time) ([]Day, error) {
	ds, err := k.st.Days(ctx, userID, id, since)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]Day, 0, len(ds))
	for _, d := range ds {
		t, err := time.Parse("2006-01-02", d.Date)
		if err != nil {
			continue
		}
		out = append(out, Day{Date: t, Runs: d.Runs, Up: d.Up, ResponseMs: d.ResponseMs})
	}
	return out, nil
}

// call makes one Checks API request as userID and returns the API's error
// message on failure.
func (k *Adapter) call(ctx context.Context, userID, method, path string, body any, out any) error {
	if k.api == nil {
		return errors.New("checks: the console is read-only here")
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	k.api.ServeAs(rec, req, userID)
	if rec.Code == http.StatusNotFound {
		return console.ErrNotFound
	}
	if rec.Code >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("checks API: %d", rec.Code)
	}
	if out != nil {
		return json.Unmarshal(rec.Body.Bytes(), out)
	}
	return nil
}

// interval checks a period typed in seconds against the API's bounds, so
// that the refusal is worded in seconds (the API's is in milliseconds).
func (k *Adapter) interval(ms int64) error {
	if k.api == nil {
		return nil
	}
	lo, hi := k.api.DelayBounds()
	if ms < lo.Milliseconds() || ms > hi.Milliseconds() {
		longest := hi.String()
		if day := 24 * time.Hour; hi%day == 0 {
			longest = fmt.Sprintf("%d days", hi/day)
		}
		return fmt.Errorf("interval must be between %s and %s seconds (%s), not %s", seconds(lo.Milliseconds()), seconds(hi.Milliseconds()), longest, seconds(ms))
	}
	return nil
}

// body is the API request body of a create or edit form; attrs are the
// check's attributes before an edit: those the form does not show are
// kept, and a JSON expected value typed as it was keeps its type.
func body(in CheckInput, attrs map[string]any) map[string]any {
	a := map[string]any{}
	for k, v := range attrs {
		a[k] = v
	}
	for _, k := range formAttrs {
		delete(a, k)
	}
	set := func(k string, v any, ok bool) {
		if ok {
			a[k] = v
		}
	}
	set("keyword", in.Keyword, in.Keyword != "")
	set("threshold", in.Threshold, in.Threshold > 0)
	set("method", in.Method, in.Method != "")
	set("headers", in.Headers, len(in.Headers) > 0)
	set("body", in.Body, in.Body != "")
	set("maxResponseMs", in.MaxResponseMs, in.MaxResponseMs != 0)
	set("jsonPath", in.JSONPath, in.JSONPath != "")
	if in.Expected != "" {
		a["expected"] = in.Expected
		if old, ok := attrs["expected"]; ok && old != nil && expectedText(old) == in.Expected {
			a["expected"] = old
		}
	}
	if in.DaysBeforeExpiry != nil {
		a["daysBeforeExpiry"] = *in.DaysBeforeExpiry
	}
	set("recordType", in.RecordType, in.RecordType != "")
	tags := in.Tags
	if tags == nil {
		tags = []string{}
	}
	channels := in.Channels
	if channels == nil {
		channels = []string{}
	}
	return map[string]any{"name": in.Name, "tags": tags, "url": in.URL, "checkType": in.Type, "delayMs": in.DelayMs,
		"attributes": a, "channels": channels}
}

// Create implements Backend.
func (k *Adapter) Create(ctx context.Context, userID string, in CheckInput) (Check, error) {
	if err := k.interval(in.DelayMs); err != nil {
		return Check{}, err
	}
	var c checksstore.Check
	if err := k.call(ctx, userID, http.MethodPost, "/v1/checks", body(in, nil), &c); err != nil {
		return Check{}, err
	}
	return consoleCheck(c), nil
}

// Update implements Backend through PATCH: the attributes the form does
// not show (expectedStatus, opposite, …) are kept.
func (k *Adapter) Update(ctx context.Context, userID, id string, in CheckInput) (Check, error) {
	if err := k.interval(in.DelayMs); err != nil {
		return Check{}, err
	}
	cur, err := k.st.GetCheck(ctx, userID, id)
	if err != nil {
		return Check{}, mapErr(err)
	}
	var c checksstore.Check
	if err := k.call(ctx, userID, http.MethodPatch, "/v1/checks/"+url.PathEscape(id), body(in, cur.Attributes), &c); err != nil {
		return Check{}, err
	}
	return consoleCheck(c), nil
}

// Act implements Backend.
func (k *Adapter) Act(ctx context.Context, userID, id, action string) error {
	path := "/v1/checks/" + url.PathEscape(id)
	switch action {
	case "delete":
		return k.call(ctx, userID, http.MethodDelete, path, nil, nil)
	case "pause", "resume", "run":
		return k.call(ctx, userID, http.MethodPost, path+"/"+action, nil, nil)
	}
	return fmt.Errorf("unknown action %q", action)
}

// Alerts implements Backend.
func (k *Adapter) Alerts(ctx context.Context, userID string) (AlertTargets, error) {
	u, err := k.st.GetUser(ctx, userID)
	if err != nil {
		return AlertTargets{}, mapErr(err)
	}
	return AlertTargets{WebhookURL: u.WebhookURL, HasSecret: u.WebhookSecret != "", Email: u.AlertEmail,
		LastAlertAt: u.LastAlertAt, LastAlertError: failureLine(u.LastAlertError), LastAlertErrorAt: u.LastAlertErrorAt}, nil
}

// SetAlerts implements Backend through PUT /v1/me/alerts.
func (k *Adapter) SetAlerts(ctx context.Context, userID string, in AlertTargets) error {
	secret := in.WebhookSecret
	if in.KeepSecret && secret == "" {
		u, err := k.st.GetUser(ctx, userID)
		if err != nil {
			return mapErr(err)
		}
		secret = u.WebhookSecret
	}
	return k.call(ctx, userID, http.MethodPut, "/v1/me/alerts",
		map[string]string{"webhookUrl": in.WebhookURL, "webhookSecret": secret, "email": in.Email}, nil)
}

// StatusPage implements Backend.
func (k *Adapter) StatusPage(ctx context.Context, userID string) (StatusPage, error) {
	u, err := k.st.GetUser(ctx, userID)
	if err != nil {
		return StatusPage{}, mapErr(err)
	}
	p, err := k.st.StatusPageSettings(ctx, userID)
	if err != nil {
		return StatusPage{}, mapErr(err)
	}
	return statusPageOf(u.StatusPage, p), nil
}

func statusPageOf(token string, p checksstore.StatusPageSettings) StatusPage {
	out := StatusPage{Enabled: token != "", Token: token, Title: p.Title, Description: p.Description}
	for _, g := range p.Groups {
		out.Groups = append(out.Groups, StatusGroup(g))
	}
	return out
}

// SetStatusPage implements Backend through PUT /v1/me/statuspage.
func (k *Adapter) SetStatusPage(ctx context.Context, userID string, in StatusPage) (StatusPage, error) {
	groups := make([]checksstore.StatusGroup, len(in.Groups))
	for i, g := range in.Groups {
		groups[i] = checksstore.StatusGroup(g)
	}
	body := map[string]any{"enabled": in.Enabled, "newToken": in.NewToken, "title": in.Title, "description": in.Description, "groups": groups}
	var out struct {
		Token string `json:"token"`
		checksstore.StatusPageSettings
	}
	if err := k.call(ctx, userID, http.MethodPut, "/v1/me/statuspage", body, &out); err != nil {
		return StatusPage{}, err
	}
	return statusPageOf(out.Token, out.StatusPageSettings), nil
}

// Incidents implements Backend.
func (k *Adapter) Incidents(ctx context.Context, userID string) ([]Incident, error) {
	l, err := k.st.ListIncidents(ctx, userID)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]Incident, len(l))
	for i, in := range l {
		out[i] = Incident{ID: in.ID, Title: in.Title, Status: in.Status, CreatedAt: ddbitem.ParseTime(in.CreatedAt),
			UpdatedAt: ddbitem.ParseTime(in.UpdatedAt)}
		if in.ResolvedAt != "" {
			out[i].ResolvedAt = ddbitem.ParseTime(in.ResolvedAt)
		}
		for _, u := range in.Updates {
			out[i].Updates = append(out[i].Updates, IncidentUpdate{At: ddbitem.ParseTime(u.At), Status: u.Status, Message: u.Message})
		}
	}
	return out, nil
}

// StatusPageUser implements Backend.
func (k *Adapter) StatusPageUser(ctx context.Context, token string) (string, error) {
	u, err := k.st.StatusPageUser(ctx, token)
	if err != nil {
		return "", mapErr(err)
	}
	return u.ID, nil
}

// Realm signs Checks users in with their API tokens; a deleted user's
// sessions end at their next request.
func Realm(st *checksstore.Store) console.Realm {
	return console.Realm{Kind: "checks", Label: "Checks API token", Auth: realm{st}}
}

type realm struct{ st *checksstore.Store }

func (a realm) Authenticate(ctx context.Context, cred string) (console.Principal, error) {
	u, err := a.st.Authenticate(ctx, cred)
	if err != nil {
		return console.Principal{}, err
	}
	return console.Principal{ID: u.ID, Name: u.Email}, nil
}

func (a realm) Valid(ctx context.Context, id string) error {
	_, err := a.st.GetUser(ctx, id)
	return err
}

// Package checksconsole is Checks as the web console sees it: it
// implements console.ChecksStore over Checks' store (reads) and its API
// (writes, served on the signed-in user's behalf, so the API's validation,
// scheduling and messages apply). cmd/quarry wires it; bench/consolebench
// measures it.
package checksconsole

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
	"time"

	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Store implements console.ChecksStore.
type Store struct {
	st  *checksstore.Store
	api *checksapi.Handler
}

var _ console.ChecksStore = (*Store)(nil)

// New returns the console's view of Checks: reads from st, writes through
// api (nil makes the console read-only: writes fail).
func New(st *checksstore.Store, api *checksapi.Handler) *Store { return &Store{st: st, api: api} }

func consoleCheck(c checksstore.Check) console.Check {
	last, _ := c.LastResult["status"].(string)
	return console.Check{ID: c.ID, URL: c.URL, Type: c.Type, DelayMs: c.DelayMs, Status: c.Status,
		LastExecutedAt: c.LastExecutedAt, LastStatus: last, FailureReason: c.FailureReason,
		LastAlertAt: c.LastAlertAt, LastAlertError: c.LastAlertError, LastAlertErrorAt: c.LastAlertErrorAt}
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

// Checks implements console.ChecksStore.
func (k *Store) Checks(ctx context.Context, userID string) ([]console.Check, error) {
	cs, err := k.st.ListChecks(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]console.Check, len(cs))
	for i, c := range cs {
		out[i] = consoleCheck(c)
	}
	return out, nil
}

// Check implements console.ChecksStore.
func (k *Store) Check(ctx context.Context, userID, id string) (console.Check, error) {
	c, err := k.st.GetCheck(ctx, userID, id)
	if err != nil {
		return console.Check{}, mapErr(err)
	}
	return consoleCheck(c), nil
}

func runs(rs []checksstore.Run) []console.Run {
	out := make([]console.Run, 0, len(rs))
	for _, r := range rs {
		at, err := time.Parse(ddbitem.TimeLayout, r.At)
		if err != nil {
			continue
		}
		status, _ := r.Result["status"].(string)
		ms, _ := r.Result["responseTime"].(float64)
		run := console.Run{At: at, Up: status == "UP", ResponseTimeMs: int64(ms), Key: r.At}
		if !run.Up {
			run.Error, _ = r.Result["error"].(string)
		}
		out = append(out, run)
	}
	return out
}

// Runs implements console.ChecksStore.
func (k *Store) Runs(ctx context.Context, userID, id string, limit int) ([]console.Run, error) {
	rs, err := k.st.Results(ctx, userID, id, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return runs(rs), nil
}

// RunsBefore implements console.ChecksStore.
func (k *Store) RunsBefore(ctx context.Context, userID, id, before string, limit int) ([]console.Run, error) {
	rs, err := k.st.ResultsBefore(ctx, userID, id, before, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return runs(rs), nil
}

// Days implements console.ChecksStore.
func (k *Store) Days(ctx context.Context, userID, id string, since time.Time) ([]console.Day, error) {
	ds, err := k.st.Days(ctx, userID, id, since)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]console.Day, 0, len(ds))
	for _, d := range ds {
		t, err := time.Parse("2006-01-02", d.Date)
		if err != nil {
			continue
		}
		out = append(out, console.Day{Date: t, Runs: d.Runs, Up: d.Up, ResponseMs: d.ResponseMs})
	}
	return out, nil
}

// call makes one Checks API request as userID and returns the API's error
// message on failure.
func (k *Store) call(ctx context.Context, userID, method, path string, body any, out any) error {
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

// Create implements console.ChecksStore.
func (k *Store) Create(ctx context.Context, userID string, in console.CheckInput) (console.Check, error) {
	body := map[string]any{"url": in.URL, "checkType": in.Type, "delayMs": in.DelayMs}
	if in.Keyword != "" {
		body["attributes"] = map[string]any{"keyword": in.Keyword}
	}
	var c checksstore.Check
	if err := k.call(ctx, userID, http.MethodPost, "/v1/checks", body, &c); err != nil {
		return console.Check{}, err
	}
	return consoleCheck(c), nil
}

// Act implements console.ChecksStore.
func (k *Store) Act(ctx context.Context, userID, id, action string) error {
	path := "/v1/checks/" + url.PathEscape(id)
	switch action {
	case "delete":
		return k.call(ctx, userID, http.MethodDelete, path, nil, nil)
	case "pause", "resume", "run":
		return k.call(ctx, userID, http.MethodPost, path+"/"+action, nil, nil)
	}
	return fmt.Errorf("unknown action %q", action)
}

// Alerts implements console.ChecksStore.
func (k *Store) Alerts(ctx context.Context, userID string) (console.AlertTargets, error) {
	u, err := k.st.GetUser(ctx, userID)
	if err != nil {
		return console.AlertTargets{}, mapErr(err)
	}
	return console.AlertTargets{WebhookURL: u.WebhookURL, HasSecret: u.WebhookSecret != "", Email: u.AlertEmail,
		LastAlertAt: u.LastAlertAt, LastAlertError: u.LastAlertError, LastAlertErrorAt: u.LastAlertErrorAt}, nil
}

// SetAlerts implements console.ChecksStore through PUT /v1/me/alerts.
func (k *Store) SetAlerts(ctx context.Context, userID string, in console.AlertTargets) error {
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

// StatusPage implements console.ChecksStore.
func (k *Store) StatusPage(ctx context.Context, userID string) (string, error) {
	u, err := k.st.GetUser(ctx, userID)
	if err != nil {
		return "", mapErr(err)
	}
	return u.StatusPage, nil
}

// SetStatusPage implements console.ChecksStore.
func (k *Store) SetStatusPage(ctx context.Context, userID string, on bool) (string, error) {
	if !on {
		return "", mapErr(k.st.DisableStatusPage(ctx, userID))
	}
	tok, err := k.st.EnableStatusPage(ctx, userID)
	return tok, mapErr(err)
}

// StatusPageUser implements console.ChecksStore.
func (k *Store) StatusPageUser(ctx context.Context, token string) (string, error) {
	u, err := k.st.StatusPageUser(ctx, token)
	if err != nil {
		return "", mapErr(err)
	}
	return u.ID, nil
}

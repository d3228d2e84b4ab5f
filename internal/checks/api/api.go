// Package api is Checks' REST API, mounted at /checks: users manage their
// monitors with an API token (Authorization: Bearer). Errors are JSON
// {"error": "..."}.
package api

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// Validator checks a check's target and attributes (probe.Prober).
type Validator interface {
	Validate(ctx context.Context, s probe.Spec) error
}

// Scheduler is told of changes so they take effect at once
// (scheduler.Scheduler).
type Scheduler interface {
	Schedule(id string, at time.Time)
	Remove(id string)
}

// Options configures the API. Zero values mean defaults.
type Options struct {
	// MinDelay is the shortest allowed delayMs; default 10s.
	MinDelay time.Duration
	// EmailEnabled says email alerts can be delivered (an SMTP server is
	// configured with --checks-smtp); without it an alert email is refused.
	EmailEnabled bool
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// maxDelay is the longest allowed period.
const maxDelay = 30 * 24 * time.Hour

// Handler serves the API.
type Handler struct {
	st    *store.Store
	val   Validator
	sched Scheduler
	o     Options
	mux   *http.ServeMux
}

// New returns the API over st; sched may be nil (no scheduler in this
// process: others pick changes up on their refresh).
func New(st *store.Store, val Validator, sched Scheduler, o Options) *Handler {
	if o.MinDelay <= 0 {
		o.MinDelay = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	h := &Handler{st: st, val: val, sched: sched, o: o, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /v1/me", h.me)
	h.mux.HandleFunc("PUT /v1/me/alerts", h.setAlerts)
	h.mux.HandleFunc("POST /v1/checks", h.create)
	h.mux.HandleFunc("GET /v1/checks", h.list)
	h.mux.HandleFunc("GET /v1/checks/{id}", h.get)
	h.mux.HandleFunc("PATCH /v1/checks/{id}", h.update)
	h.mux.HandleFunc("DELETE /v1/checks/{id}", h.delete)
	h.mux.HandleFunc("POST /v1/checks/{id}/pause", h.pause)
	h.mux.HandleFunc("POST /v1/checks/{id}/resume", h.resume)
	h.mux.HandleFunc("POST /v1/checks/{id}/run", h.runNow)
	h.mux.HandleFunc("GET /v1/checks/{id}/results", h.results)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.Error(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	return h
}

type userKey struct{}

// ServeHTTP authenticates the bearer token and dispatches.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		jsonhttp.Error(w, http.StatusUnauthorized, "missing API token: send Authorization: Bearer <token>")
		return
	}
	u, err := h.st.Authenticate(r.Context(), strings.TrimSpace(token))
	if errors.Is(err, store.ErrUnauthorized) {
		jsonhttp.Error(w, http.StatusUnauthorized, "invalid API token")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
}

// ServeAs serves r on behalf of the user userID, who the caller
// authenticated itself (the web console's session): no bearer token is
// read, and the answers, validation messages included, are the API's.
func (h *Handler) ServeAs(w http.ResponseWriter, r *http.Request, userID string) {
	u, err := h.st.GetUser(r.Context(), userID)
	if err != nil {
		jsonhttp.Error(w, http.StatusUnauthorized, "unknown user")
		return
	}
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
}

func user(r *http.Request) store.User { u, _ := r.Context().Value(userKey{}).(store.User); return u }

func (h *Handler) me(w http.ResponseWriter, r *http.Request) {
	jsonhttp.Write(w, http.StatusOK, user(r))
}

func (h *Handler) setAlerts(w http.ResponseWriter, r *http.Request) {
	var in struct {
		WebhookURL    string `json:"webhookUrl"`
		WebhookSecret string `json:"webhookSecret"`
		Email         string `json:"email"`
	}
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	if in.WebhookURL != "" {
		if err := h.val.Validate(r.Context(), probe.Spec{Type: probe.TypeAvailability, URL: in.WebhookURL}); err != nil {
			jsonhttp.Error(w, http.StatusBadRequest, fmt.Sprintf("webhookUrl %q cannot receive alerts: %s", in.WebhookURL, strings.TrimPrefix(plainReason(err), "url: ")))
			return
		}
	}
	if in.Email != "" && !h.o.EmailEnabled {
		jsonhttp.Error(w, http.StatusBadRequest, "email: email alerts cannot be delivered: this server has no SMTP server configured (start quarry with --checks-smtp host:port and --checks-smtp-from); use webhookUrl")
		return
	}
	u, err := h.st.SetAlerts(r.Context(), user(r).ID, in.WebhookURL, in.WebhookSecret, in.Email)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, u)
}

// checkInput is the body of create and update.
type checkInput struct {
	URL        *string        `json:"url"`
	CheckType  string         `json:"checkType"`
	DelayMs    *int64         `json:"delayMs"`
	Attributes map[string]any `json:"attributes"`
}

func (h *Handler) validDelay(d int64) error {
	if d < h.o.MinDelay.Milliseconds() || d > maxDelay.Milliseconds() {
		return fmt.Errorf("%w: delayMs must be between %d and %d", store.ErrInvalid, h.o.MinDelay.Milliseconds(), maxDelay.Milliseconds())
	}
	return nil
}

// validTarget validates a check's spec. A host that does not resolve now
// is accepted (probe.ErrUnresolved): the check runs DOWN with the DNS
// reason until it resolves, and every run applies the network policy to
// the addresses it connects to.
func (h *Handler) validTarget(ctx context.Context, s probe.Spec) error {
	if err := h.val.Validate(ctx, s); err != nil && !errors.Is(err, probe.ErrUnresolved) {
		return err
	}
	return nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	var in checkInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	if in.URL == nil || in.CheckType == "" || in.DelayMs == nil {
		jsonhttp.Error(w, http.StatusBadRequest, "url, checkType and delayMs are required")
		return
	}
	in.CheckType = strings.ToUpper(in.CheckType)
	if err := h.validDelay(*in.DelayMs); err != nil {
		h.fail(w, r, err)
		return
	}
	spec := probe.Spec{Type: in.CheckType, URL: *in.URL, Attributes: in.Attributes}
	if err := h.validTarget(r.Context(), spec); err != nil {
		jsonhttp.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.Attributes == nil {
		in.Attributes = map[string]any{}
	}
	u := user(r)
	first := h.o.Now().Add(jitter(time.Duration(*in.DelayMs) * time.Millisecond))
	c, err := h.st.CreateCheck(r.Context(), store.Check{UserID: u.ID, URL: *in.URL, Type: in.CheckType, DelayMs: *in.DelayMs, Attributes: in.Attributes}, first)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.sched != nil {
		h.sched.Schedule(c.ID, c.NextRunAt)
	}
	jsonhttp.Write(w, http.StatusCreated, c)
}

// jitter spreads first runs over the period (at most a minute) so that
// checks created together do not run together.
func jitter(period time.Duration) time.Duration {
	span := min(period, time.Minute)
	if span <= 0 {
		return 0
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return time.Duration(binary.LittleEndian.Uint64(b[:]) % uint64(span))
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	cs, err := h.st.ListChecks(r.Context(), user(r).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if cs == nil {
		cs = []store.Check{}
	}
	jsonhttp.Write(w, http.StatusOK, cs)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	c, err := h.st.GetCheck(r.Context(), user(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, c)
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request) {
	var in checkInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	u := user(r)
	cur, err := h.st.GetCheck(r.Context(), u.ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if in.CheckType != "" && !strings.EqualFold(in.CheckType, cur.Type) {
		jsonhttp.Error(w, http.StatusBadRequest, "checkType cannot be changed: create another check")
		return
	}
	if in.DelayMs != nil {
		if err := h.validDelay(*in.DelayMs); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	spec := probe.Spec{Type: cur.Type, URL: cur.URL, Attributes: cur.Attributes}
	if in.URL != nil {
		spec.URL = *in.URL
	}
	if in.Attributes != nil {
		spec.Attributes = in.Attributes
	}
	if err := h.validTarget(r.Context(), spec); err != nil {
		jsonhttp.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	p := store.Patch{URL: in.URL, DelayMs: in.DelayMs, Attributes: in.Attributes}
	delay := cur.DelayMs
	if in.DelayMs != nil {
		delay = *in.DelayMs
	}
	if next, ok := store.NextRunAfterChange(cur, in.URL != nil && *in.URL != cur.URL, delay, h.o.Now()); ok {
		p.NextRunAt = &next
	}
	c, err := h.st.UpdateCheck(r.Context(), u.ID, cur.ID, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.sched != nil && p.NextRunAt != nil && c.Status == store.CheckActive {
		h.sched.Schedule(c.ID, c.NextRunAt)
	}
	jsonhttp.Write(w, http.StatusOK, c)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := h.st.DeleteCheck(r.Context(), user(r).ID, id); err != nil {
		h.fail(w, r, err)
		return
	}
	if h.sched != nil {
		h.sched.Remove(id)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) pause(w http.ResponseWriter, r *http.Request) {
	c, err := h.st.SetCheckStatus(r.Context(), user(r).ID, r.PathValue("id"), []string{store.CheckActive, store.CheckPaused}, store.CheckPaused)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.sched != nil {
		h.sched.Remove(c.ID)
	}
	jsonhttp.Write(w, http.StatusOK, c)
}

func (h *Handler) resume(w http.ResponseWriter, r *http.Request) {
	c, err := h.st.SetCheckStatus(r.Context(), user(r).ID, r.PathValue("id"), []string{store.CheckActive, store.CheckPaused, store.CheckFailed}, store.CheckActive)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.sched != nil {
		h.sched.Schedule(c.ID, c.NextRunAt)
	}
	jsonhttp.Write(w, http.StatusOK, c)
}

func (h *Handler) runNow(w http.ResponseWriter, r *http.Request) {
	c, err := h.st.RunNow(r.Context(), user(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.sched != nil {
		h.sched.Schedule(c.ID, c.NextRunAt)
	}
	jsonhttp.Write(w, http.StatusAccepted, c)
}

func (h *Handler) results(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			jsonhttp.Error(w, http.StatusBadRequest, "limit must be 1 to 1000")
			return
		}
		limit = n
	}
	runs, err := h.st.Results(r.Context(), user(r).ID, r.PathValue("id"), limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, runs)
}

// plainReason is err's message without the words of the layers it passed
// through ("probe: invalid check: ", "fetch: address blocked: "): what a
// client reads is the reason alone, e.g. "url: 127.0.0.1:3000 is a loopback
// address (allow it with --allow-networks=127.0.0.1:3000)".
func plainReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), probe.ErrInvalid.Error()+": ")
	msg = strings.TrimPrefix(msg, probe.ErrUnresolved.Error()+": ")
	msg = strings.TrimPrefix(msg, store.ErrInvalid.Error()+": ")
	msg = strings.Replace(msg, fetch.ErrBlocked.Error()+": ", "", 1)
	msg = strings.Replace(msg, fetch.ErrNotHTTP.Error()+": scheme", "want an http:// or https:// URL, not the scheme", 1)
	return msg
}

// fail maps store errors to statuses.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonhttp.Error(w, http.StatusNotFound, "check not found")
	case errors.Is(err, store.ErrInvalid), errors.Is(err, probe.ErrInvalid):
		jsonhttp.Error(w, http.StatusBadRequest, plainReason(err))
	case errors.Is(err, store.ErrLimit):
		jsonhttp.Error(w, http.StatusForbidden, err.Error()+": upgrade the tier or delete a check")
	case errors.Is(err, store.ErrSuspended):
		jsonhttp.Error(w, http.StatusForbidden, "the account is suspended")
	case errors.Is(err, store.ErrState):
		jsonhttp.Error(w, http.StatusConflict, err.Error())
	default:
		h.o.Logger.ErrorContext(r.Context(), "checks: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		jsonhttp.Error(w, http.StatusInternalServerError, "internal error")
	}
}

// Package api is Checks' REST API, mounted at /checks: users manage their
// monitors with an API token (Authorization: Bearer). Errors are JSON
// {"error": "..."}.
package api

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	// Channels sends the test messages of POST /v1/me/channels/{id}/test;
	// nil answers 503 there.
	Channels ChannelTester
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
	h.channelRoutes()
	h.maintenanceRoutes()
	h.statusPageRoutes()
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
	Name       *string         `json:"name"`
	Tags       json.RawMessage `json:"tags"`
	URL        *string         `json:"url"`
	CheckType  string          `json:"checkType"`
	DelayMs    *int64          `json:"delayMs"`
	Attributes map[string]any  `json:"attributes"`
}

// Limits of names and tags.
const (
	// MaxNameRunes is the longest check name.
	MaxNameRunes = 100
	// MaxTags is the most tags a check may carry.
	MaxTags = 10
	// MaxTagRunes is the longest tag.
	MaxTagRunes = 32
)

// DelayBounds are the shortest and longest periods a check may have.
func (h *Handler) DelayBounds() (lo, hi time.Duration) { return h.o.MinDelay, maxDelay }

func (h *Handler) validDelay(d int64) error {
	if d < h.o.MinDelay.Milliseconds() || d > maxDelay.Milliseconds() {
		return fmt.Errorf("%w: delayMs must be between %d and %d (%s to %s)", store.ErrInvalid,
			h.o.MinDelay.Milliseconds(), maxDelay.Milliseconds(), human(h.o.MinDelay), human(maxDelay))
	}
	return nil
}

// human writes a period as people say it: "10 s", "1 min", "30 days".
func human(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		if d == 24*time.Hour {
			return "1 day"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// validName trims a name and checks it: at most MaxNameRunes characters,
// none of them a control character. "" means none (the URL's host).
func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(name); n > MaxNameRunes {
		return "", fmt.Errorf("%w: name must be at most %d characters (it has %d)", store.ErrInvalid, MaxNameRunes, n)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 || !utf8.ValidString(name) {
		return "", fmt.Errorf("%w: name must not contain control characters", store.ErrInvalid)
	}
	return name, nil
}

// validTags decodes and checks tags: a list of at most MaxTags strings,
// each 1 to MaxTagRunes characters once trimmed, with no comma or control
// character. Duplicates (ignoring case) are kept once; the result is
// sorted. null and [] mean no tags.
func validTags(raw json.RawMessage) ([]string, error) {
	var list []any
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%w: tags must be a list of strings, such as [\"prod\", \"eu\"]", store.ErrInvalid)
	}
	if len(list) > MaxTags {
		return nil, fmt.Errorf("%w: tags: at most %d tags (got %d)", store.ErrInvalid, MaxTags, len(list))
	}
	var out []string
	for i, v := range list {
		t, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: tags[%d] must be a string, not %s", store.ErrInvalid, i, jsonType(v))
		}
		t = strings.TrimSpace(t)
		switch n := utf8.RuneCountInString(t); {
		case n == 0:
			return nil, fmt.Errorf("%w: tags[%d] is empty", store.ErrInvalid, i)
		case n > MaxTagRunes:
			return nil, fmt.Errorf("%w: tags[%d] must be at most %d characters (%q has %d)", store.ErrInvalid, i, MaxTagRunes, t, n)
		case strings.ContainsRune(t, ','):
			return nil, fmt.Errorf("%w: tags[%d] %q must not contain a comma (give each tag as its own string)", store.ErrInvalid, i, t)
		case strings.IndexFunc(t, unicode.IsControl) >= 0 || !utf8.ValidString(t):
			return nil, fmt.Errorf("%w: tags[%d] must not contain control characters", store.ErrInvalid, i)
		}
		if !slices.ContainsFunc(out, func(have string) bool { return strings.EqualFold(have, t) }) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// jsonType names a decoded JSON value's type for error messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// view is a check as the API answers it: its name defaults to the URL's
// host, and tags is a list even when empty.
func view(c store.Check) store.Check {
	c.Name = c.DisplayName()
	if c.Tags == nil {
		c.Tags = []string{}
	}
	return c
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

// createInput is the body of create: a check and the notification
// channels its alerts go to (none: the user's defaults).
type createInput struct {
	checkInput
	Channels []string `json:"channels"`
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	var in createInput
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
	var name string
	if in.Name != nil {
		var err error
		if name, err = validName(*in.Name); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	var tags []string
	if in.Tags != nil {
		var err error
		if tags, err = validTags(in.Tags); err != nil {
			h.fail(w, r, err)
			return
		}
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
	if err := h.checkChannels(r.Context(), u.ID, in.Channels); err != nil {
		h.fail(w, r, err)
		return
	}
	first := h.o.Now().Add(jitter(time.Duration(*in.DelayMs) * time.Millisecond))
	c, err := h.st.CreateCheck(r.Context(), store.Check{UserID: u.ID, Name: name, Tags: tags, URL: *in.URL, Type: in.CheckType,
		DelayMs: *in.DelayMs, Attributes: in.Attributes, Channels: in.Channels}, first)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.sched != nil {
		h.sched.Schedule(c.ID, c.NextRunAt)
	}
	jsonhttp.Write(w, http.StatusCreated, view(c))
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

// ParseFilter reads the list filters of a query: tag (repeatable: every
// one), status (one of store.FilterStatuses, any case) and q. Errors wrap
// store.ErrInvalid.
func ParseFilter(q url.Values) (store.Filter, error) {
	f := store.Filter{Status: strings.ToUpper(strings.TrimSpace(q.Get("status"))), Q: strings.TrimSpace(q.Get("q"))}
	for _, t := range q["tag"] {
		if t = strings.TrimSpace(t); t != "" {
			f.Tags = append(f.Tags, t)
		}
	}
	if f.Status != "" && !slices.Contains(store.FilterStatuses, f.Status) {
		return store.Filter{}, fmt.Errorf("%w: status must be one of %s, not %q", store.ErrInvalid,
			strings.Join(store.FilterStatuses, ", "), q.Get("status"))
	}
	return f, nil
}

// list answers the user's checks (through the user-check index), those
// that ParseFilter's filters select. The filters are applied here rather
// than as a DynamoDB FilterExpression: they read the same items either
// way (a filter expression does not reduce what a query reads), and the
// name's default and the case-insensitive match are the API's.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	f, err := ParseFilter(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	cs, err := h.st.ListChecks(r.Context(), user(r).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []store.Check{}
	for _, c := range cs {
		if f.Match(c) {
			out = append(out, view(c))
		}
	}
	jsonhttp.Write(w, http.StatusOK, out)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	c, err := h.st.GetCheck(r.Context(), user(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, view(c))
}

// update applies a PATCH: any of name, tags, url, checkType, delayMs and
// attributes. The check as it would be after the change is validated as a
// create is, and the change is one conditional write: a request with one
// invalid field changes nothing.
// patchInput is the body of a PATCH: any field of a check, and its
// notification channels ([] returns it to the user's defaults).
type patchInput struct {
	checkInput
	Channels *[]string `json:"channels"`
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request) {
	var in patchInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	u := user(r)
	cur, err := h.st.GetCheck(r.Context(), u.ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var p store.Patch
	if in.Channels != nil {
		if err := h.checkChannels(r.Context(), u.ID, *in.Channels); err != nil {
			h.fail(w, r, err)
			return
		}
		p.Channels = in.Channels
	}
	if in.Name != nil {
		name, err := validName(*in.Name)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Name = &name
	}
	if in.Tags != nil {
		tags, err := validTags(in.Tags)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Tags = &tags
	}
	if in.DelayMs != nil {
		if err := h.validDelay(*in.DelayMs); err != nil {
			h.fail(w, r, err)
			return
		}
		p.DelayMs = in.DelayMs
	}
	spec := probe.Spec{Type: cur.Type, URL: cur.URL, Attributes: cur.Attributes}
	if in.CheckType != "" {
		if typ := strings.ToUpper(in.CheckType); typ != cur.Type {
			spec.Type, p.Type = typ, &typ
		}
	}
	if in.URL != nil {
		spec.URL, p.URL = *in.URL, in.URL
	}
	if in.Attributes != nil {
		spec.Attributes, p.Attributes = in.Attributes, in.Attributes
	}
	if err := h.validTarget(r.Context(), spec); err != nil {
		jsonhttp.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	delay := cur.DelayMs
	if in.DelayMs != nil {
		delay = *in.DelayMs
	}
	// A new target (URL or type) is checked at once.
	retarget := in.URL != nil && *in.URL != cur.URL || p.Type != nil
	if next, ok := store.NextRunAfterChange(cur, retarget, delay, h.o.Now()); ok {
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
	jsonhttp.Write(w, http.StatusOK, view(c))
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
	jsonhttp.Write(w, http.StatusOK, view(c))
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
	jsonhttp.Write(w, http.StatusOK, view(c))
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
	jsonhttp.Write(w, http.StatusAccepted, view(c))
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

package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/checks/alert"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// ChannelTester sends a test message to a notification channel at once
// (alert.Dispatcher).
type ChannelTester interface {
	TestChannel(ctx context.Context, ch alert.Channel) error
}

// maxChannelName bounds a channel's name.
const maxChannelName = 100

// channelRoutes adds the notification channel routes to h's mux.
func (h *Handler) channelRoutes() {
	h.mux.HandleFunc("POST /v1/me/channels", h.createChannel)
	h.mux.HandleFunc("GET /v1/me/channels", h.listChannels)
	h.mux.HandleFunc("GET /v1/me/channels/{id}", h.getChannel)
	h.mux.HandleFunc("PATCH /v1/me/channels/{id}", h.updateChannel)
	h.mux.HandleFunc("DELETE /v1/me/channels/{id}", h.deleteChannel)
	h.mux.HandleFunc("POST /v1/me/channels/{id}/test", h.testChannel)
}

// channelView is a channel as the API shows it: secrets masked.
func channelView(c store.Channel) store.Channel {
	c.Config = alert.MaskConfig(c.Type, c.Config)
	return c
}

// channelInput is the body of create and PATCH. Config values are strings
// (numbers are accepted and kept as their decimal text); in a PATCH, a
// key set to "" or null removes the field and a secret sent back as shown
// (masked) keeps its value.
type channelInput struct {
	Type    string         `json:"type"`
	Name    *string        `json:"name"`
	Config  map[string]any `json:"config"`
	Default *bool          `json:"default"`
}

// configStrings turns a JSON config into strings, or says which field is
// of the wrong kind.
func configStrings(in map[string]any) (map[string]string, map[string]bool, error) {
	out := make(map[string]string, len(in))
	removed := map[string]bool{}
	for k, v := range in {
		switch x := v.(type) {
		case nil:
			removed[k] = true
		case string:
			if x = strings.TrimSpace(x); x == "" {
				removed[k] = true
			} else {
				out[k] = x
			}
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return nil, nil, fmt.Errorf("config.%s: want a string", k)
		}
	}
	return out, removed, nil
}

func channelName(n string) (string, error) {
	n = strings.TrimSpace(n)
	if len(n) > maxChannelName || strings.ContainsAny(n, "\r\n\x00") {
		return "", fmt.Errorf("name: one line of at most %d bytes", maxChannelName)
	}
	return n, nil
}

// validChannel checks a channel's config at the edge: the type's fields
// (alert.ValidateConfig), the URLs it connects to against the network
// policy, and an email channel's address and the server's SMTP. The
// error names the field; it never quotes a secret.
func (h *Handler) validChannel(ctx context.Context, typ string, cfg map[string]string) error {
	if err := alert.ValidateConfig(typ, cfg); err != nil {
		return err
	}
	fields, _ := alert.ChannelFields(typ)
	for _, f := range fields {
		v := cfg[f.Name]
		if !f.URL || v == "" {
			continue
		}
		if err := h.val.Validate(ctx, probe.Spec{Type: probe.TypeAvailability, URL: v}); err != nil {
			reason := strings.TrimPrefix(plainReason(err), "url: ")
			if f.Secret {
				reason = strings.ReplaceAll(reason, v, alert.MaskValue(v, true))
			}
			return fmt.Errorf("config.%s cannot receive alerts: %s", f.Name, reason)
		}
	}
	if typ == alert.TypeEmail {
		if _, err := store.NormalizeEmail(cfg["to"]); err != nil {
			return fmt.Errorf("config.to: %q is not a valid address", cfg["to"])
		}
		if !h.o.EmailEnabled {
			return errors.New("config.to: email alerts cannot be delivered: this server has no SMTP server configured (start quarry with --checks-smtp host:port and --checks-smtp-from); use another channel type")
		}
	}
	return nil
}

func (h *Handler) createChannel(w http.ResponseWriter, r *http.Request) {
	var in channelInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	typ := strings.ToLower(strings.TrimSpace(in.Type))
	if typ == "" {
		jsonhttp.Error(w, http.StatusBadRequest, "type: required (one of "+strings.Join(alert.ChannelTypes(), ", ")+")")
		return
	}
	cfg, _, err := configStrings(in.Config)
	if err != nil {
		jsonhttp.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	name := typ
	if in.Name != nil {
		if name, err = channelName(*in.Name); err != nil {
			jsonhttp.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		if name == "" {
			name = typ
		}
	}
	if err := h.validChannel(r.Context(), typ, cfg); err != nil {
		jsonhttp.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	c, err := h.st.CreateChannel(r.Context(), user(r).ID, store.Channel{Type: typ, Name: name, Config: cfg, Default: in.Default != nil && *in.Default})
	if err != nil {
		h.failChannel(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, channelView(c))
}

func (h *Handler) listChannels(w http.ResponseWriter, r *http.Request) {
	cs, err := h.st.ListChannels(r.Context(), user(r).ID)
	if err != nil {
		h.failChannel(w, r, err)
		return
	}
	out := make([]store.Channel, len(cs))
	for i, c := range cs {
		out[i] = channelView(c)
	}
	jsonhttp.Write(w, http.StatusOK, out)
}

func (h *Handler) getChannel(w http.ResponseWriter, r *http.Request) {
	c, err := h.st.GetChannel(r.Context(), user(r).ID, r.PathValue("id"))
	if err != nil {
		h.failChannel(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, channelView(c))
}

func (h *Handler) updateChannel(w http.ResponseWriter, r *http.Request) {
	var in channelInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	u := user(r)
	cur, err := h.st.GetChannel(r.Context(), u.ID, r.PathValue("id"))
	if err != nil {
		h.failChannel(w, r, err)
		return
	}
	if in.Type != "" && !strings.EqualFold(strings.TrimSpace(in.Type), cur.Type) {
		jsonhttp.Error(w, http.StatusBadRequest, "type cannot be changed: create another channel")
		return
	}
	if in.Name != nil {
		name, err := channelName(*in.Name)
		if err != nil {
			jsonhttp.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		if name != "" {
			cur.Name = name
		}
	}
	if in.Default != nil {
		cur.Default = *in.Default
	}
	if in.Config != nil {
		set, removed, err := configStrings(in.Config)
		if err != nil {
			jsonhttp.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		fields, _ := alert.ChannelFields(cur.Type)
		secret := func(k string) (alert.Field, bool) {
			i := slices.IndexFunc(fields, func(f alert.Field) bool { return f.Name == k && f.Secret })
			if i < 0 {
				return alert.Field{}, false
			}
			return fields[i], true
		}
		for k, v := range set {
			if f, ok := secret(k); ok && cur.Config[k] != "" && v == alert.MaskValue(cur.Config[k], f.URL) {
				continue // sent back as shown: unchanged
			}
			cur.Config[k] = v
		}
		for k := range removed {
			delete(cur.Config, k)
		}
	}
	if err := h.validChannel(r.Context(), cur.Type, cur.Config); err != nil {
		jsonhttp.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	c, err := h.st.UpdateChannel(r.Context(), u.ID, cur)
	if err != nil {
		h.failChannel(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, channelView(c))
}

func (h *Handler) deleteChannel(w http.ResponseWriter, r *http.Request) {
	if err := h.st.DeleteChannel(r.Context(), user(r).ID, r.PathValue("id")); err != nil {
		h.failChannel(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// testResult is the answer of POST /v1/me/channels/{id}/test.
type testResult struct {
	OK      bool          `json:"ok"`
	Error   string        `json:"error,omitempty"`
	At      string        `json:"at"`
	Channel store.Channel `json:"channel"`
}

// testTimeout bounds a test delivery.
const testTimeout = 30 * time.Second

// testChannel sends a test message at once (one attempt) and answers its
// outcome, which is also recorded as the channel's last delivery: 200
// whether it was delivered or not (ok says which).
func (h *Handler) testChannel(w http.ResponseWriter, r *http.Request) {
	if h.o.Channels == nil {
		jsonhttp.Error(w, http.StatusServiceUnavailable, "this server cannot send test messages (no alert dispatcher)")
		return
	}
	u := user(r)
	c, err := h.st.GetChannel(r.Context(), u.ID, r.PathValue("id"))
	if err != nil {
		h.failChannel(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), testTimeout)
	defer cancel()
	terr := h.o.Channels.TestChannel(ctx, alert.Channel{ID: c.ID, Type: c.Type, Name: c.Name, Config: c.Config})
	at := h.o.Now().UTC()
	res := testResult{OK: terr == nil, At: at.Format(time.RFC3339Nano)}
	if terr != nil {
		res.Error = store.OneLine(terr.Error(), 500)
	}
	if err := h.st.RecordChannelDelivery(r.Context(), u.ID, c.ID, at, res.Error); err != nil {
		h.fail(w, r, err)
		return
	}
	if c, err = h.st.GetChannel(r.Context(), u.ID, c.ID); err != nil {
		h.failChannel(w, r, err)
		return
	}
	res.Channel = channelView(c)
	jsonhttp.Write(w, http.StatusOK, res)
}

// failChannel maps store errors of the channel routes to statuses.
func (h *Handler) failChannel(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonhttp.Error(w, http.StatusNotFound, "channel not found")
	case errors.Is(err, store.ErrLimit):
		jsonhttp.Error(w, http.StatusForbidden, fmt.Sprintf("at most %d notification channels: delete a channel first", store.MaxChannels))
	default:
		h.fail(w, r, err)
	}
}

// checkChannels validates the channels a check names: at most
// store.MaxChannels distinct ids, each one of the user's channels.
func (h *Handler) checkChannels(ctx context.Context, userID string, ids []string) error {
	if len(ids) > store.MaxChannels {
		return fmt.Errorf("%w: channels: at most %d", store.ErrInvalid, store.MaxChannels)
	}
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return fmt.Errorf("%w: channels: %q is listed twice", store.ErrInvalid, id)
		}
		if _, err := h.st.GetChannel(ctx, userID, id); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: channels: %q is not one of your notification channels (GET /v1/me/channels)", store.ErrInvalid, id)
		} else if err != nil {
			return err
		}
	}
	return nil
}

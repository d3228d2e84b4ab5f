package checks

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/quarrydb/quarry/internal/checks/alert"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
)

// Channel is a notification channel as the settings page shows it:
// secrets already masked by the API.
type Channel struct {
	ID      string
	Type    string
	Name    string
	Default bool
	Config  map[string]string
	// The last delivery: when (empty before the first), whether it was
	// delivered, and its error.
	LastAt    string
	LastOK    bool
	LastError string
}

// ConfigLines is the config as sorted "key: value" lines.
func (c Channel) ConfigLines() []string {
	var out []string
	for k, v := range c.Config {
		out = append(out, k+": "+v)
	}
	slices.Sort(out)
	return out
}

// ChannelInput is the add-channel form.
type ChannelInput struct {
	Type    string
	Name    string
	Default bool
	Config  map[string]string
}

// ChannelBackend is what the channels page needs of Checks, for the
// session's user. Errors of CreateChannel are the API's messages.
type ChannelBackend interface {
	Channels(ctx context.Context, userID string) ([]Channel, error)
	CreateChannel(ctx context.Context, userID string, in ChannelInput) error
	DeleteChannel(ctx context.Context, userID, id string) error
	// TestChannel sends a test message; "" on delivery, else the error.
	TestChannel(ctx context.Context, userID, id string) (string, error)
}

// mountChannels adds the channels page's routes.
func (a *Area) mountChannels(m *http.ServeMux) {
	m.HandleFunc("GET /console/checks/channels", a.channelsPage)
	m.HandleFunc("POST /console/checks/channels", a.channelsCreate)
	m.HandleFunc("POST /console/checks/channels/{id}/{action}", a.channelAct)
}

// channelField is one config field of the add form.
type channelField struct {
	alert.Field
	Value string
}

type channelsData struct {
	Channels []Channel
	Types    []string
	Type     string         // the type chosen for the add form
	Fields   []channelField // its fields
	Name     string
	Default  bool
	Error    string
	Msg      string
}

func (a *Area) channelBackend() (ChannelBackend, bool) {
	cb, ok := a.b.(ChannelBackend)
	return cb, ok
}

func (a *Area) channelsPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "checks"); !ok {
		return
	}
	q := r.URL.Query()
	d := channelsData{Type: q.Get("type"), Error: q.Get("error")}
	d.Msg = map[string]string{"created": "Channel added.", "delete": "Channel deleted.", "test": "Test message delivered."}[q.Get("msg")]
	a.renderChannels(w, r, http.StatusOK, d, nil)
}

// renderChannels renders the page with the user's channels and the add
// form of d.Type (values holds what was typed).
func (a *Area) renderChannels(w http.ResponseWriter, r *http.Request, status int, d channelsData, values map[string]string) {
	ss, _ := a.k.Session(w, r)
	cb, ok := a.channelBackend()
	if !ok {
		a.k.NotFound(w, r)
		return
	}
	chs, err := cb.Channels(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d.Channels = chs
	d.Types = alert.ChannelTypes()
	if fields, ok := alert.ChannelFields(d.Type); ok {
		for _, f := range fields {
			d.Fields = append(d.Fields, channelField{Field: f, Value: values[f.Name]})
		}
	} else {
		d.Type = ""
	}
	a.k.Render(w, r, status, "channels", d)
}

func (a *Area) channelsCreate(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	cb, ok := a.channelBackend()
	if !ok {
		a.k.NotFound(w, r)
		return
	}
	f := r.PostForm
	in := ChannelInput{Type: f.Get("type"), Name: strings.TrimSpace(f.Get("name")), Default: f.Get("default") == "yes", Config: map[string]string{}}
	fields, _ := alert.ChannelFields(in.Type)
	for _, fd := range fields {
		if v := strings.TrimSpace(f.Get("config." + fd.Name)); v != "" {
			in.Config[fd.Name] = v
		}
	}
	if err := cb.CreateChannel(r.Context(), ss.Subject, in); err != nil {
		typed := map[string]string{}
		for _, fd := range fields {
			if !fd.Secret { // a secret is typed again, never echoed
				typed[fd.Name] = in.Config[fd.Name]
			}
		}
		a.renderChannels(w, r, http.StatusBadRequest, channelsData{Type: in.Type, Name: in.Name, Default: in.Default, Error: err.Error()}, typed)
		return
	}
	http.Redirect(w, r, "/console/checks/channels?msg=created", http.StatusSeeOther)
}

func (a *Area) channelAct(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	cb, ok := a.channelBackend()
	if !ok {
		a.k.NotFound(w, r)
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	var err error
	switch action {
	case "delete":
		if r.PostForm.Get("confirm") != "yes" {
			a.k.Confirm(w, r, console.Confirm{Title: "Delete this channel?",
				Message: "The channel " + id + " will be deleted; checks that name it skip it.", Action: r.URL.Path,
				Back: "/console/checks/channels"})
			return
		}
		err = cb.DeleteChannel(r.Context(), ss.Subject, id)
	case "test":
		var failure string
		failure, err = cb.TestChannel(r.Context(), ss.Subject, id)
		if err == nil && failure != "" {
			err = errors.New("test message not delivered: " + failure)
		}
	default:
		a.k.NotFound(w, r)
		return
	}
	if errors.Is(err, console.ErrNotFound) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		http.Redirect(w, r, "/console/checks/channels?"+url.Values{"error": {err.Error()}}.Encode(), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/console/checks/channels?msg="+action, http.StatusSeeOther)
}

var _ ChannelBackend = (*Adapter)(nil)

// Channels implements ChannelBackend through GET /v1/me/channels (the
// API masks the secrets).
func (k *Adapter) Channels(ctx context.Context, userID string) ([]Channel, error) {
	var cs []checksstore.Channel
	if err := k.call(ctx, userID, http.MethodGet, "/v1/me/channels", nil, &cs); err != nil {
		return nil, err
	}
	out := make([]Channel, len(cs))
	for i, c := range cs {
		out[i] = Channel{ID: c.ID, Type: c.Type, Name: c.Name, Default: c.Default, Config: c.Config}
		if d := c.LastDelivery; d != nil {
			out[i].LastAt, out[i].LastOK, out[i].LastError = d.At, d.OK, d.Error
		}
	}
	return out, nil
}

// CreateChannel implements ChannelBackend through POST /v1/me/channels.
func (k *Adapter) CreateChannel(ctx context.Context, userID string, in ChannelInput) error {
	return k.call(ctx, userID, http.MethodPost, "/v1/me/channels",
		map[string]any{"type": in.Type, "name": in.Name, "default": in.Default, "config": in.Config}, nil)
}

// DeleteChannel implements ChannelBackend.
func (k *Adapter) DeleteChannel(ctx context.Context, userID, id string) error {
	return k.call(ctx, userID, http.MethodDelete, "/v1/me/channels/"+url.PathEscape(id), nil, nil)
}

// TestChannel implements ChannelBackend through POST
// /v1/me/channels/{id}/test.
func (k *Adapter) TestChannel(ctx context.Context, userID, id string) (string, error) {
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := k.call(ctx, userID, http.MethodPost, "/v1/me/channels/"+url.PathEscape(id)+"/test", nil, &res); err != nil {
		return "", err
	}
	if !res.OK {
		return res.Error, nil
	}
	return "", nil
}

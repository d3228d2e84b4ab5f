package checks

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	checksstore "github.com/quarrydb/quarry/internal/checks/store"
)

// TestCheckFormTypes: over Checks' store and API, the console's create
// form makes a check of each type with its attributes and the channels
// ticked; the edit form shows them and saves changes (channels unticked:
// the user's defaults); refusals are the form's or the API's, with what
// was typed kept; another user's channel and check are refused.
func TestCheckFormTypes(t *testing.T) {
	ctx := context.Background()
	tc := newTestConsole(t)
	csrf := tc.csrf()
	ch, err := tc.st.CreateChannel(ctx, tc.userID, checksstore.Channel{Type: "ntfy", Name: "phone", Config: map[string]string{"url": "https://ntfy.example/topic"}})
	if err != nil {
		t.Fatal(err)
	}
	other := tc.as("b@example.com")
	theirs, err := tc.st.CreateChannel(ctx, other.userID, checksstore.Channel{Type: "ntfy", Name: "theirs", Config: map[string]string{"url": "https://ntfy.example/b"}})
	if err != nil {
		t.Fatal(err)
	}
	if page := tc.page("/console/checks/"); !strings.Contains(page, `name="channel" value="`+ch.ID+`"`) || strings.Contains(page, theirs.ID) {
		t.Fatalf("the create form's channels:\n%s", page)
	}
	// Without JavaScript every type's fields are there, none hidden.
	for _, id := range []string{"fs-availability", "fs-tls", "fs-dns", "fs-ebay", "fs-channels"} {
		if m := regexp.MustCompile(`<fieldset[^>]*id="` + id + `"[^>]*>`).FindString(tc.page("/console/checks/")); m == "" || strings.Contains(m, "hidden") {
			t.Errorf("the create form's %s: %q, want it shown", id, m)
		}
	}
	form := func(kv ...string) url.Values {
		f := url.Values{"csrf": {csrf}, "delay": {"60"}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Add(kv[i], kv[i+1])
		}
		return f
	}
	created := func(name string) checksstore.Check {
		t.Helper()
		cs, err := tc.st.ListChecks(ctx, tc.userID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no check %q in %v", name, cs)
		return checksstore.Check{}
	}
	for _, c := range []struct {
		name     string
		form     url.Values
		typ      string
		attrs    map[string]any
		channels []string
	}{
		{"api", form("name", "api", "type", "AVAILABILITY", "url", "https://api.example/health", "method", "POST",
			"headers", "Authorization: Bearer t0ken\nAccept: application/json", "body", `{"ping":1}`, "maxResponseMs", "800",
			"jsonPath", "data.status", "jsonExpected", "ok", "channel", ch.ID),
			"AVAILABILITY", map[string]any{"method": "POST", "headers": map[string]any{"Authorization": "Bearer t0ken", "Accept": "application/json"},
				"body": `{"ping":1}`, "maxResponseMs": float64(800), "jsonPath": "data.status", "expected": "ok"}, []string{ch.ID}},
		{"db port", form("name", "db port", "type", "TCP", "url", "tcp://db.example:5432", "keyword", "ignored"), "TCP", map[string]any{}, nil},
		{"cert", form("name", "cert", "type", "TLS", "url", "https://shop.example/", "daysBeforeExpiry", "30"), "TLS",
			map[string]any{"daysBeforeExpiry": float64(30)}, nil},
		{"mail", form("name", "mail", "type", "DNS", "url", "dns://shop.example", "recordType", "MX", "dnsExpected", "mx.shop.example"), "DNS",
			map[string]any{"recordType": "MX", "expected": "mx.shop.example"}, nil},
	} {
		if code, body := tc.post("/console/checks/", c.form); code != 200 || !strings.Contains(body, "Check created.") {
			t.Fatalf("create %s = %d\n%s", c.name, code, body)
		}
		got := created(c.name)
		if page := tc.page("/console/checks/" + got.ID); (len(c.channels) > 0) != strings.Contains(page, `<dd id="alert-channels">phone <small>(ntfy)</small></dd>`) ||
			(len(c.channels) == 0) != strings.Contains(page, "your default channels and alert targets") {
			t.Errorf("%s: the check's page says where alerts go wrong", c.name)
		}
		if got.Type != c.typ || !reflect.DeepEqual(got.Attributes, c.attrs) || !slices.Equal(got.Channels, c.channels) {
			t.Errorf("%s: %s %#v channels %v, want %s %#v %v", c.name, got.Type, got.Attributes, got.Channels, c.typ, c.attrs, c.channels)
		}
	}

	// Refusals: the form's own, the API's, another user's channel; what
	// was typed stays in the form.
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{form("name", "bad days", "type", "TLS", "url", "https://shop.example/", "daysBeforeExpiry", "2 weeks"), "Days before expiry must be a whole number of days"},
		{form("name", "bad body", "type", "AVAILABILITY", "url", "https://shop.example/", "method", "GET", "body", "x"), "attributes.body needs attributes.method POST"},
		{form("name", "bad tcp", "type", "TCP", "url", "https://shop.example/"), "want a tcp://host:port URL"},
		{form("name", "bad channel", "type", "AVAILABILITY", "url", "https://shop.example/", "channel", theirs.ID), "is not one of your notification channels"},
	} {
		code, body := tc.post("/console/checks/", c.form)
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) || !strings.Contains(body, `value="`+c.form.Get("name")+`"`) {
			t.Errorf("%s = %d, want 400 with %q and the name kept\n%s", c.form.Get("name"), code, c.want, body)
		}
	}

	// Edit: the form holds the check's attributes and channel; saving
	// with the channel unticked returns the check to the defaults and
	// keeps the attributes the form does not show.
	api := created("api")
	if _, err := tc.st.UpdateCheck(ctx, tc.userID, api.ID, checksstore.Patch{Attributes: mergeAttrs(api.Attributes, map[string]any{"expectedStatus": float64(202)})}); err != nil {
		t.Fatal(err)
	}
	edit := tc.page("/console/checks/" + api.ID + "/edit")
	for _, want := range []string{`name="maxResponseMs" id="maxResponseMs" value="800"`, `name="jsonExpected" id="jsonExpected" value="ok"`,
		"Accept: application/json\nAuthorization: Bearer t0ken</textarea>", `<option selected>POST</option>`, `value="` + ch.ID + `" checked`} {
		if !strings.Contains(edit, want) {
			t.Errorf("the edit form lacks %q", want)
		}
	}
	code, body := tc.post("/console/checks/"+api.ID+"/edit", form("name", "api", "type", "AVAILABILITY", "url", "https://api.example/health",
		"method", "GET", "maxResponseMs", "250", "jsonPath", "data.status", "jsonExpected", "ok"))
	if code != 200 || !strings.Contains(body, "Check saved.") {
		t.Fatalf("edit = %d\n%s", code, body)
	}
	got := created("api")
	if want := map[string]any{"maxResponseMs": float64(250), "jsonPath": "data.status", "expected": "ok", "expectedStatus": float64(202)}; !reflect.DeepEqual(got.Attributes, want) || len(got.Channels) != 0 {
		t.Errorf("after the edit: %#v channels %v, want %#v and no channels", got.Attributes, got.Channels, want)
	}
	if code, _ := other.get("/console/checks/" + api.ID + "/edit"); code != http.StatusNotFound {
		t.Errorf("another user's edit page = %d, want 404", code)
	}
	if code, _ := other.post("/console/checks/"+api.ID+"/edit", url.Values{"csrf": {other.csrf()}, "type": {"TCP"}, "url": {"tcp://x.example:1"}, "delay": {"60"}}); code != http.StatusNotFound {
		t.Errorf("another user's edit = %d, want 404", code)
	}
}

// mergeAttrs is a with b's keys set.
func mergeAttrs(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

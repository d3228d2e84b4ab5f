package sessions_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// TestDOMRecording drives a session's pages as a tenant does and reads
// the inspector's DOM recording: each web document a page shows, the
// first document of a page created with its URL included (which may load
// before the recorder set the page up), is recorded
// as rrweb's meta event (its URL) and a full snapshot holding its text;
// Chromium's error page (a redirect to a file: URL it refused) is not,
// and the page still answers the tenant.
func TestDOMRecording(t *testing.T) {
	st := newStack(t, 1, sessions.Options{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/to-file" {
			http.Redirect(w, r, "file:///etc/hostname", http.StatusFound)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/")
		fmt.Fprintf(w, `<html><head><title>%s</title></head><body><p>text of %s</p></body></html>`, name, name)
	}))
	t.Cleanup(web.Close)
	s := st.create(t, nil)
	p := auth.Principal{ProjectID: st.project.ID, ProjectIDs: []string{st.project.ID}}
	r := dialCDP(t, s.ConnectURL)

	// recorded waits until the recording holds a meta event for u and a
	// full snapshot with the text of the document u.
	recorded := func(t *testing.T, u, text string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			rec, err := st.mgr.Recording(context.Background(), p, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			meta, full := false, false
			for _, e := range rec.DOM {
				meta = meta || e.Type == 4 && strings.Contains(string(e.Data), fmt.Sprintf(`"href":%q`, u))
				full = full || e.Type == 2 && strings.Contains(string(e.Data), text)
			}
			if meta && full {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no DOM recording of %s (meta %v, full snapshot %v) among %d events", u, meta, full, len(rec.DOM))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	var created struct{ TargetID string }
	var page string
	t.Run("first document of a new page", func(t *testing.T) {
		r.t = t
		r.ok("", "Target.createTarget", fmt.Sprintf(`{"url":%q}`, web.URL+"/first"), &created)
		var attached struct{ SessionID string }
		r.ok("", "Target.attachToTarget", fmt.Sprintf(`{"targetId":%q,"flatten":true}`, created.TargetID), &attached)
		page = attached.SessionID
		r.ok(page, "Runtime.enable", "", nil)
		r.waitFor(page, "document.readyState === 'complete' && document.title === 'first'")
		recorded(t, web.URL+"/first", "text of first")
	})
	t.Run("later documents", func(t *testing.T) {
		r.t = t
		r.navigate(page, web.URL+"/second", "second")
		recorded(t, web.URL+"/second", "text of second")
	})
	t.Run("error page", func(t *testing.T) {
		r.t = t
		r.ok(page, "Page.navigate", fmt.Sprintf(`{"url":%q}`, web.URL+"/to-file"), nil)
		r.waitFor(page, "location.protocol === 'chrome-error:' && document.readyState === 'complete'")
		rec, err := st.mgr.Recording(context.Background(), p, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rec.DOM {
			if strings.Contains(string(e.Data), "chrome-error:") {
				t.Fatalf("the error page is recorded: %.200s", e.Data)
			}
		}
		r.navigate(page, web.URL+"/after", "after")
		recorded(t, web.URL+"/after", "text of after")
	})
}

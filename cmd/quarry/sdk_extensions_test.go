package main

import (
	"archive/zip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeExtensionZip writes a zip of files (name, content pairs) to a new
// file and returns its path.
func writeExtensionZip(t *testing.T, files ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "extension.zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for i := 0; i+1 < len(files); i += 2 {
		w, err := zw.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// sdkRefusal is an SDK call that threw: the HTTP status and the message
// of the Browserbase-shaped error (status 0: it did not throw).
type sdkRefusal struct {
	Status  int
	Message string
}

// TestBrowserbaseSDKExtensions uploads an extension with the stock SDK's
// extensions.create, reads and deletes it, and starts a session with its
// extensionId whose browser runs the extension's content script on a
// loopback page (testdata/browserbase_sdk_extensions.mjs). Another
// project's key gets 404 for the extension and 400 for a session naming
// it; an extension asking for the proxy permission is refused with 400
// naming it.
func TestBrowserbaseSDKExtensions(t *testing.T) {
	t.Parallel()
	node, peers := sdkPeers(t)
	script, err := filepath.Abs(filepath.Join("testdata", "browserbase_sdk_extensions.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>plain page</title><body>page</body>`)
	}))
	defer site.Close()
	s := startSDKServe(t, "--allow-networks", site.Listener.Addr().String())
	s.cli("wallcrawler", "project", "create", "--name", "other", "--id", "project_other")
	otherKey := s.cli("wallcrawler", "key", "create", "--project", "project_other")

	good := writeExtensionZip(t,
		"title-setter/manifest.json", `{"manifest_version": 3, "name": "Title setter", "version": "1.2.3",
			"content_scripts": [{"matches": ["<all_urls>"], "js": ["cs.js"], "run_at": "document_end"}]}`,
		"title-setter/cs.js", `document.title = "extension was here: " + location.host;`)
	bad := writeExtensionZip(t, "manifest.json", `{"manifest_version": 3, "name": "Escaper", "version": "1", "permissions": ["proxy"]}`)

	var res struct {
		Step, Error string
		Created     struct {
			ID, FileName, ProjectID, CreatedAt, UpdatedAt string
		}
		Retrieved struct {
			ID, ProjectID string
		}
		RefusedUpload, OtherRetrieve, OtherDelete, OtherSession sdkRefusal
		AfterDelete, SessionAfterDelete                         sdkRefusal
		Title                                                   string
	}
	runNode(t, node, script, &res, "KEY="+s.key, "OTHER_KEY="+otherKey, "BASE_URL=http://"+s.api+"/wallcrawler",
		"PROJECT="+s.project, "OTHER_PROJECT=project_other", "PAGE_URL="+site.URL+"/",
		"EXT_ZIP="+good, "BAD_ZIP="+bad, "PEERS_DIR="+peers)
	if res.Error != "" {
		t.Fatalf("SDK step %s failed: %s", res.Step, res.Error)
	}
	c := res.Created
	if !strings.HasPrefix(c.ID, "ext_") || c.FileName != "extension.zip" || c.ProjectID != s.project || c.CreatedAt == "" || c.UpdatedAt == "" {
		t.Errorf("extensions.create answered %+v", c)
	}
	if res.Retrieved.ID != c.ID || res.Retrieved.ProjectID != s.project {
		t.Errorf("extensions.retrieve answered %+v", res.Retrieved)
	}
	wantTitle := "extension was here: " + site.Listener.Addr().String()
	if res.Title != wantTitle {
		t.Errorf("the page's title is %q, want %q (set by the extension's content script)", res.Title, wantTitle)
	}
	for _, r := range []struct {
		what   string
		got    sdkRefusal
		status int
		msg    string
	}{
		{"an extension with the proxy permission", res.RefusedUpload, 400, `permission "proxy" is not allowed`},
		{"another project's retrieve", res.OtherRetrieve, 404, "Extension not found"},
		{"another project's delete", res.OtherDelete, 404, "Extension not found"},
		{"another project's session", res.OtherSession, 400, "not found"},
		{"retrieve after delete", res.AfterDelete, 404, "Extension not found"},
		{"a session after delete", res.SessionAfterDelete, 400, "not found"},
	} {
		if r.got.Status != r.status || !strings.Contains(r.got.Message, r.msg) {
			t.Errorf("%s: %+v, want %d with %q", r.what, r.got, r.status, r.msg)
		}
	}
}

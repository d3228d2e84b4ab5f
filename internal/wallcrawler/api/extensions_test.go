package api_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/wallcrawler/api"
)

// extensionZip returns a zip archive holding manifest.json with body.
func extensionZip(t *testing.T, manifest string, extra ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := append([]string{"manifest.json", manifest}, extra...)
	for i := 0; i+1 < len(files); i += 2 {
		w, err := zw.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(files[i+1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// postExtension uploads data as the multipart part field (file name
// name) and returns the status and body.
func (e *ctxEnv) postExtension(t *testing.T, key, field, name string, data []byte) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("note", "ignored")
	fw, err := mw.CreateFormFile(field, name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", e.srv.URL+"/wallcrawler/v1/extensions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set(api.HeaderBBAPIKey, key)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type extensionAnswer struct {
	ID, FileName, ProjectID, CreatedAt, UpdatedAt, Name, Version string
}

const goodManifest = `{"manifest_version": 3, "name": "Title setter", "version": "1.0",
	"permissions": ["storage"], "host_permissions": ["<all_urls>"],
	"content_scripts": [{"matches": ["<all_urls>"], "js": ["cs.js"]}]}`

// TestExtensionsFlow uploads an extension, reads it back with the key of
// its project, fails to read or delete it with another project's key,
// deletes it, and finds it gone.
func TestExtensionsFlow(t *testing.T) {
	t.Parallel()
	e := setupContexts(t)
	status, b := e.postExtension(t, e.key, "file", "dir/title-setter.zip", extensionZip(t, goodManifest, "cs.js", "document.title = 'x'"))
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/extensions: %d %s", status, b)
	}
	var created extensionAnswer
	if err := json.Unmarshal(b, &created); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^ext_[0-9a-f]{32}$`).MatchString(created.ID) || created.ProjectID != e.p1.ID ||
		created.FileName != "title-setter.zip" || created.Name != "Title setter" || created.Version != "1.0" ||
		created.CreatedAt != "2026-05-06T07:08:09.123Z" || created.UpdatedAt != created.CreatedAt {
		t.Fatalf("created %s", b)
	}
	status, b = e.call(t, "GET", "/v1/extensions/"+created.ID, e.key, "")
	var got extensionAnswer
	if err := json.Unmarshal(b, &got); status != http.StatusOK || err != nil || got != created {
		t.Fatalf("GET: %d %s, want %+v", status, b, created)
	}
	for _, m := range []string{"GET", "DELETE"} {
		status, b = e.call(t, m, "/v1/extensions/"+created.ID, e.key3, "")
		wantCtxError(t, status, b, http.StatusNotFound, "Extension not found")
	}
	// The list: the project's own extensions, none of another project's.
	list := func(key string) []extensionAnswer {
		t.Helper()
		status, b := e.call(t, "GET", "/v1/extensions", key, "")
		var l []extensionAnswer
		if err := json.Unmarshal(b, &l); status != http.StatusOK || err != nil || l == nil {
			t.Fatalf("GET /v1/extensions: %d %s", status, b)
		}
		return l
	}
	if l := list(e.key); len(l) != 1 || l[0] != created {
		t.Fatalf("list: %+v, want [%+v]", l, created)
	}
	if l := list(e.key3); len(l) != 0 {
		t.Fatalf("another project's list: %+v", l)
	}
	if status, b = e.call(t, "DELETE", "/v1/extensions/"+created.ID, e.key, ""); status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", status, b)
	}
	for _, m := range []string{"GET", "DELETE"} {
		status, b = e.call(t, m, "/v1/extensions/"+created.ID, e.key, "")
		wantCtxError(t, status, b, http.StatusNotFound, "Extension not found")
	}
	if l := list(e.key); len(l) != 0 {
		t.Fatalf("list after delete: %+v", l)
	}
}

// TestExtensionsRefused sends uploads and ids the API must refuse, each
// answered with the Browserbase error shape and what to fix; nothing is
// stored.
func TestExtensionsRefused(t *testing.T) {
	t.Parallel()
	e := setupContexts(t)
	uploads := []struct {
		name       string
		field      string
		data       []byte
		wantStatus int
		want       string
	}{
		{"proxy permission", "file", extensionZip(t, `{"manifest_version":3,"name":"a","version":"1","permissions":["proxy"]}`), 400, `permission "proxy" is not allowed`},
		{"debugger permission", "file", extensionZip(t, `{"manifest_version":3,"name":"a","version":"1","permissions":["debugger"]}`), 400, `permission "debugger" is not allowed`},
		{"file hosts", "file", extensionZip(t, `{"manifest_version":3,"name":"a","version":"1","host_permissions":["file:///*"]}`), 400, "no access to the host's files"},
		{"manifest v2", "file", extensionZip(t, `{"manifest_version":2,"name":"a","version":"1"}`), 400, "manifest_version must be 3"},
		{"not a zip", "file", []byte("MZ not a zip"), 400, "not a zip archive"},
		{"climbing entry", "file", extensionZip(t, `{"manifest_version":3,"name":"a","version":"1"}`, "../../etc/cron.d/x", "x"), 400, "leaves the extension's directory"},
		{"other field", "archive", extensionZip(t, goodManifest), 400, `No part named "file"`},
		{"too large", "file", bytes.Repeat([]byte("z"), 2<<20), 413, "cap: more than 65536 archive bytes"},
	}
	for _, u := range uploads {
		status, b := e.postExtension(t, e.key, u.field, "ext.zip", u.data)
		t.Run(u.name, func(t *testing.T) { wantCtxError(t, status, b, u.wantStatus, u.want) })
	}
	status, b := e.call(t, "POST", "/v1/extensions", e.key, `{"file": "x"}`)
	wantCtxError(t, status, b, http.StatusBadRequest, "multipart/form-data")
	status, b = e.postExtension(t, "", "file", "ext.zip", extensionZip(t, goodManifest))
	if status != http.StatusUnauthorized {
		t.Errorf("upload without a key: %d %s", status, b)
	}
	for _, id := range []string{"ext_" + strings.Repeat("0", 32), "..%2F..%2Fsecret", "ext_" + strings.Repeat("A", 32), strings.Repeat("e", 300)} {
		status, b = e.call(t, "GET", "/v1/extensions/"+id, e.key, "")
		wantCtxError(t, status, b, http.StatusNotFound, "Extension not found")
	}
	var objects int
	if lst, err := e.blobs.List(t.Context(), "", "", 100); err == nil {
		objects = len(lst)
	}
	if objects != 0 {
		t.Errorf("%d objects stored after refusals", objects)
	}
}

// TestExtensionsQuota uploads past a project's extension cap (3 here):
// the upload is refused with 403 and what to do, nothing more is stored,
// another project still uploads, and a delete makes room again.
func TestExtensionsQuota(t *testing.T) {
	t.Parallel()
	e := setupContexts(t)
	var ids []string
	for i := range 3 {
		status, b := e.postExtension(t, e.key, "file", "ext.zip", extensionZip(t, goodManifest))
		if status != http.StatusCreated {
			t.Fatalf("upload %d: %d %s", i+1, status, b)
		}
		var a extensionAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	before, err := e.blobs.List(t.Context(), "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	status, b := e.postExtension(t, e.key, "file", "ext.zip", extensionZip(t, goodManifest))
	wantCtxError(t, status, b, http.StatusForbidden, "This project has 3 extensions, the most allowed: delete one (DELETE /v1/extensions/{id})")
	if after, err := e.blobs.List(t.Context(), "", "", 100); err != nil || len(after) != len(before) {
		t.Fatalf("%d objects stored after the refusal, %d before (%v)", len(after), len(before), err)
	}
	if status, b := e.postExtension(t, e.key3, "file", "ext.zip", extensionZip(t, goodManifest)); status != http.StatusCreated {
		t.Fatalf("another project's upload: %d %s", status, b)
	}
	if status, b := e.call(t, "DELETE", "/v1/extensions/"+ids[0], e.key, ""); status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", status, b)
	}
	if status, b := e.postExtension(t, e.key, "file", "ext.zip", extensionZip(t, goodManifest)); status != http.StatusCreated {
		t.Fatalf("upload after a delete: %d %s", status, b)
	}
}

package sessions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// upload posts content as the multipart part "file" named name to the
// session's uploads endpoint with key, and returns the status and the
// decoded JSON answer.
func (st *stack) upload(t *testing.T, key, id, name string, content []byte) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(content)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", st.srv.URL+"/wallcrawler/v1/sessions/"+id+"/uploads", &body)
	req.Header.Set("X-BB-API-Key", key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("upload %s: answer %d %q: %v", name, resp.StatusCode, data, err)
	}
	return resp.StatusCode, out
}

// sessionUploadDir is where the session's uploaded files are kept.
func sessionUploadDir(t *testing.T, st *stack, id string) string {
	t.Helper()
	return filepath.Join(filepath.Dir(sessionDownloadDir(t, st, id)), "uploads")
}

// TestSessionUploads uploads files to two sessions and hands them to a
// page: by the path Browserbase gives them (/tmp/.uploads/<name>) and by
// host path; the page reads the file's content. A tenant naming another
// session's upload, a host file or a path escaping the directory is
// refused by the CDP filter; an upload over the per-file cap or the
// session's quota is answered 413 in Browserbase's shape and leaves
// nothing; another project's session is 404, an ended one 409.
func TestSessionUploads(t *testing.T) {
	st := newStack(t, 2, sessions.Options{UploadMaxBytes: 1 << 20, UploadQuota: 1<<20 + 1<<19})
	web := attackSite(t, "about:blank")
	s1, s2 := st.create(t, nil), st.create(t, nil)
	mine, theirs := "mine-"+randomHex(t), "theirs-"+randomHex(t)

	code, ans := st.upload(t, st.key, s1.ID, "cv.txt", []byte(mine))
	if code != http.StatusOK || ans["message"] != "File uploaded successfully" || ans["path"] != "/tmp/.uploads/cv.txt" || ans["size"] != float64(len(mine)) {
		t.Fatalf("upload: %d %v", code, ans)
	}
	// A client's directories are not kept: the name is the last element.
	if code, ans := st.upload(t, st.key, s2.ID, `..\../../cv.txt`, []byte(theirs)); code != http.StatusOK || ans["name"] != "cv.txt" {
		t.Fatalf("upload to s2: %d %v", code, ans)
	}
	up1, up2 := sessionUploadDir(t, st, s1.ID), sessionUploadDir(t, st, s2.ID)
	fi, err := os.Stat(filepath.Join(up1, "cv.txt"))
	if err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("stored file: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(filepath.Join(up2, "cv.txt")); string(got) != theirs {
		t.Fatalf("s2's file holds %q", got)
	}

	r := dialCDP(t, s1.ConnectURL)
	_, sess := r.newPage()
	r.navigate(sess, web.URL+"/title", "fixture")
	var input struct {
		Result struct{ ObjectID string } `json:"result"`
	}
	r.ok(sess, "Runtime.evaluate", `{"expression":"document.getElementById('f')"}`, &input)
	setFiles := func(files ...string) string {
		list, _ := json.Marshal(append([]string{}, files...))
		return fmt.Sprintf(`{"files":%s,"objectId":%q}`, list, input.Result.ObjectID)
	}
	content := func() string {
		return r.eval(sess, "(async () => { const f = document.getElementById('f').files[0]; return f ? f.name + ':' + await f.text() : ''; })()")
	}
	r.ok(sess, "DOM.setFileInputFiles", setFiles("/tmp/.uploads/cv.txt"), nil)
	if got := content(); got != fmt.Sprintf("%q", "cv.txt:"+mine) {
		t.Fatalf("page read %s through /tmp/.uploads", got)
	}
	clear := func() { r.eval(sess, "document.getElementById('f').value = ''") }
	clear()
	r.ok(sess, "DOM.setFileInputFiles", setFiles(filepath.Join(up1, "cv.txt")), nil)
	if got := content(); got != fmt.Sprintf("%q", "cv.txt:"+mine) {
		t.Fatalf("page read %s through the host path", got)
	}

	// What the tenant may not hand its page.
	clear()
	for _, p := range []string{
		filepath.Join(up2, "cv.txt"), // another session's upload
		"/tmp/.uploads/../" + filepath.Base(filepath.Dir(filepath.Dir(up2))) + "/uploads/cv.txt", // the same by ".."
		up1 + "/../../" + filepath.Base(filepath.Dir(up2)) + "/uploads/cv.txt",
		"/etc/passwd",
		"/tmp/.uploads/../../../../../../../etc/passwd",
		"/tmp/.uploads/nothing.txt",
	} {
		r.refused(sess, "DOM.setFileInputFiles", setFiles(p))
		r.refused(sess, "DOM.setFileInputFiles", setFiles("/tmp/.uploads/cv.txt", p))
	}
	if got := content(); got != `""` {
		t.Fatalf("after the refusals the input holds %s", got)
	}

	// Caps: the file's, then the session's quota; nothing is left of
	// either.
	code, ans = st.upload(t, st.key, s1.ID, "big.bin", bytes.Repeat([]byte("x"), 1<<20+1))
	if code != http.StatusRequestEntityTooLarge || ans["statusCode"] != float64(413) || ans["error"] != "Request Entity Too Large" ||
		!strings.Contains(fmt.Sprint(ans["message"]), "--wallcrawler-upload-max-bytes") {
		t.Fatalf("oversize upload: %d %v", code, ans)
	}
	if code, ans := st.upload(t, st.key, s1.ID, "one.bin", bytes.Repeat([]byte("y"), 1<<20)); code != http.StatusOK {
		t.Fatalf("upload at the file cap: %d %v", code, ans)
	}
	code, ans = st.upload(t, st.key, s1.ID, "two.bin", bytes.Repeat([]byte("z"), 1<<19))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(fmt.Sprint(ans["message"]), "--wallcrawler-upload-quota") {
		t.Fatalf("upload past the quota: %d %v", code, ans)
	}
	// Replacing a file frees its share.
	if code, ans := st.upload(t, st.key, s1.ID, "one.bin", []byte("small")); code != http.StatusOK {
		t.Fatalf("replace: %d %v", code, ans)
	}
	if code, ans := st.upload(t, st.key, s1.ID, "two.bin", bytes.Repeat([]byte("z"), 1<<19)); code != http.StatusOK {
		t.Fatalf("upload after the replace: %d %v", code, ans)
	}
	entries, _ := os.ReadDir(up1)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "cv.txt,one.bin,two.bin" {
		t.Fatalf("upload dir holds %v", names)
	}

	// Another project's key: its session does not exist for it.
	ctx := context.Background()
	other, err := st.auth.CreateProject(ctx, auth.CreateProjectInput{Name: "other", Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := st.auth.CreateKey(ctx, auth.CreateKeyInput{ProjectID: other.ID})
	if err != nil {
		t.Fatal(err)
	}
	if code, ans := st.upload(t, otherKey, s1.ID, "x.txt", []byte("x")); code != http.StatusNotFound || ans["statusCode"] != float64(404) {
		t.Fatalf("other project's upload: %d %v", code, ans)
	}
	if code, ans := st.upload(t, st.key, s1.ID, ".quarry-upload-x", []byte("x")); code != http.StatusBadRequest {
		t.Fatalf("reserved name: %d %v", code, ans)
	}
	st.release(t, s2.ID)
	if code, ans := st.upload(t, st.key, s2.ID, "late.txt", []byte("x")); code != http.StatusConflict {
		t.Fatalf("upload to an ended session: %d %v", code, ans)
	}
}

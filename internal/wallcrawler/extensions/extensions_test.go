package extensions

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/platform/blob"
)

// entry is one member of a test archive.
type entry struct {
	name string
	body string
	mode fs.FileMode // 0: a regular file 0644 (or a directory for names ending in /)
}

// zipOf returns a zip archive of entries.
func zipOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch {
		case e.mode != 0:
			h.SetMode(e.mode)
		case strings.HasSuffix(e.name, "/"):
			h.SetMode(fs.ModeDir | 0o755)
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manifest returns a Manifest V3 manifest.json with extra fields.
func manifest(extra string) entry {
	body := `{"manifest_version": 3, "name": "Title setter", "version": "1.0.2"` + extra + `}`
	return entry{name: "manifest.json", body: body}
}

func newStore(t *testing.T, opts *Options) *Store {
	t.Helper()
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &Options{}
	}
	opts.TempDir = t.TempDir()
	return New(blobs, opts)
}

// TestCreateRefuses uploads archives Wallcrawler must refuse and checks
// that each is refused with a message naming what to fix, and that
// nothing is stored.
func TestCreateRefuses(t *testing.T) {
	t.Parallel()
	cs := entry{name: "cs.js", body: "document.title = 'x'"}
	cases := []struct {
		name    string
		zip     []byte
		wantErr error
		want    string // in the message
	}{
		{"not a zip", []byte("plain text"), ErrInvalid, "not a zip archive"},
		{"no manifest", zipOf(t, cs), ErrInvalid, "no manifest.json"},
		{"manifest v2", zipOf(t, entry{name: "manifest.json", body: `{"manifest_version":2,"name":"a","version":"1"}`}), ErrInvalid, "manifest_version must be 3"},
		{"manifest not JSON", zipOf(t, entry{name: "manifest.json", body: `{"manifest_version":3,`}), ErrInvalid, "not a JSON object"},
		{"no name", zipOf(t, entry{name: "manifest.json", body: `{"manifest_version":3,"version":"1"}`}), ErrInvalid, "name must be"},
		{"bad version", zipOf(t, entry{name: "manifest.json", body: `{"manifest_version":3,"name":"a","version":"1.02"}`}), ErrInvalid, "version must be"},
		{"proxy", zipOf(t, manifest(`,"permissions":["storage","proxy"]`)), ErrInvalid, `permission "proxy" is not allowed`},
		{"debugger", zipOf(t, manifest(`,"permissions":["debugger"]`)), ErrInvalid, `permission "debugger" is not allowed`},
		{"nativeMessaging", zipOf(t, manifest(`,"optional_permissions":["nativeMessaging"]`)), ErrInvalid, `optional_permissions: permission "nativeMessaging"`},
		{"webRequestBlocking", zipOf(t, manifest(`,"permissions":["webRequestBlocking"]`)), ErrInvalid, `permission "webRequestBlocking" is not allowed`},
		{"privacy", zipOf(t, manifest(`,"permissions":["privacy"]`)), ErrInvalid, `permission "privacy" is not allowed`},
		{"enterprise", zipOf(t, manifest(`,"permissions":["enterprise.platformKeys"]`)), ErrInvalid, `permission "enterprise.platformKeys" is not allowed`},
		{"unknown permission", zipOf(t, manifest(`,"permissions":["teleport"]`)), ErrInvalid, `"teleport" is not on this server's list`},
		{"file host", zipOf(t, manifest(`,"host_permissions":["file:///*"]`)), ErrInvalid, `"file:///*" is not allowed`},
		{"file content script", zipOf(t, manifest(`,"content_scripts":[{"matches":["FILE:///etc/*"],"js":["cs.js"]}]`), cs), ErrInvalid, "content_scripts[0].matches"},
		{"climbs out", zipOf(t, manifest(""), entry{name: "../evil.js", body: "x"}), ErrInvalid, "leaves the extension's directory"},
		{"absolute", zipOf(t, manifest(""), entry{name: "/etc/evil.js", body: "x"}), ErrInvalid, "not a relative path"},
		{"backslash", zipOf(t, manifest(""), entry{name: `a\..\..\evil.js`, body: "x"}), ErrInvalid, "not a relative path"},
		{"symlink", zipOf(t, manifest(""), entry{name: "passwd", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777}), ErrInvalid, "not a regular file"},
		{"twice", zipOf(t, manifest(""), cs, cs), ErrInvalid, `"cs.js" twice`},
		{"two tops", zipOf(t, entry{name: "a/manifest.json", body: "{}"}, entry{name: "b/x.js"}), ErrInvalid, "no manifest.json"},
		{"too many entries", zipOf(t, manifest(""), entry{name: "1"}, entry{name: "2"}, entry{name: "3"}), ErrTooLarge, "more than 3 entries"},
		{"unpacks too large", zipOf(t, manifest(""), entry{name: "big.bin", body: strings.Repeat("a", 5000)}), ErrTooLarge, "more than 4096 unpacked bytes"},
		{"archive too large", zipOf(t, manifest(""), entry{name: "noise.bin", body: randomText(12000)}), ErrTooLarge, "more than 8192 archive bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, &Options{MaxEntries: 3, MaxUnpackBytes: 4096, MaxZipBytes: 8192})
			_, err := s.Create(context.Background(), "proj_a", "ext.zip", bytes.NewReader(c.zip))
			if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Create: %v, want %v with %q", err, c.wantErr, c.want)
			}
			if n := countFiles(t, s); n != 0 {
				t.Errorf("%d objects stored after a refusal", n)
			}
		})
	}
}

// randomText returns n bytes that deflate does not shrink much.
func randomText(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte('!' + x%90)
	}
	return string(b)
}

// countFiles counts the objects of s's blob directory.
func countFiles(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(s.blobs.(*blob.Dir).Root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestExtensionLifecycle creates, reads, unpacks and deletes an extension,
// and checks that another project's id space never reaches it.
func TestExtensionLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil)
	archive := zipOf(t,
		entry{name: "title-setter/"},
		entry{name: "title-setter/manifest.json", body: `{"manifest_version":3,"name":"Title setter","version":"2.1","permissions":["storage","scripting"],"host_permissions":["<all_urls>"],"content_scripts":[{"matches":["<all_urls>"],"js":["js/cs.js"]}]}`},
		entry{name: "title-setter/js/cs.js", body: "document.title = 'set'"},
	)
	e, err := s.Create(ctx, "proj_a", "title-setter.zip", bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if !validID(e.ID) || e.ProjectID != "proj_a" || e.FileName != "title-setter.zip" || e.Name != "Title setter" || e.Version != "2.1" || e.Size != int64(len(archive)) {
		t.Fatalf("created %+v", e)
	}
	got, err := s.GetIn(ctx, []string{"proj_b", "proj_a"}, e.ID)
	if err != nil || got != e {
		t.Fatalf("GetIn = %+v, %v; want %+v", got, err, e)
	}
	for _, c := range []struct{ project, id string }{
		{"proj_b", e.ID}, {"proj_a", "ext_" + strings.Repeat("0", 32)}, {"proj_a", "../proj_a/extensions/" + e.ID}, {"..", e.ID}, {"proj_a", ""},
	} {
		if _, err := s.Get(ctx, c.project, c.id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q, %q) = %v, want ErrNotFound", c.project, c.id, err)
		}
	}
	if err := s.Delete(ctx, "proj_b", e.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("another project's Delete = %v, want ErrNotFound", err)
	}

	dir := t.TempDir()
	if err := s.Unpack(ctx, e, dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "js", "cs.js"))
	if err != nil || string(data) != "document.title = 'set'" {
		t.Errorf("unpacked js/cs.js = %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		t.Errorf("manifest.json is not at the top of the unpacked directory: %v", err)
	}

	if err := s.Delete(ctx, "proj_a", e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "proj_a", e.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if err := s.Unpack(ctx, e, t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Unpack after Delete = %v, want ErrNotFound", err)
	}
	if n := countFiles(t, s); n != 0 {
		t.Errorf("%d objects left after Delete", n)
	}
}

// TestUnpackChecksAgain replaces a stored archive behind the store's back
// with one whose manifest asks for the proxy permission: Unpack refuses
// it as Create would have, and writes nothing.
func TestUnpackChecksAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil)
	e, err := s.Create(ctx, "proj_a", "ok.zip", bytes.NewReader(zipOf(t, manifest(""))))
	if err != nil {
		t.Fatal(err)
	}
	crafted := zipOf(t, manifest(`,"permissions":["proxy"]`), entry{name: "sw.js", body: "chrome.proxy.settings.set({value: {mode: 'direct'}})"})
	if err := s.blobs.Put(ctx, archiveKey(e.ProjectID, e.ID), bytes.NewReader(crafted)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err = s.Unpack(ctx, e, dir)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"proxy"`) {
		t.Fatalf("Unpack of a crafted archive = %v, want ErrInvalid naming proxy", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Unpack wrote %d entries of a refused archive", len(entries))
	}
}

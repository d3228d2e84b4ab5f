package contexts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	store  *contexts.Store
	client *dynamodb.Client
	names  tables.Names
	blobs  *blob.Dir
	clock  *clock
}

func setup(t *testing.T) *env {
	t.Helper()
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	client := ddb.NewClient(s)
	names, err := tables.EnsureTables(context.Background(), client, "")
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.UTC)}
	return &env{store: contexts.New(client, names, blobs, &contexts.Options{Now: c.now}), client: client, names: names, blobs: blobs, clock: c}
}

func (e *env) create(t *testing.T, projectID string) contexts.Context {
	t.Helper()
	c, err := e.store.Create(context.Background(), projectID, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCRUD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	created := time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.UTC)
	c, err := e.store.Create(ctx, "proj_a", "shop login")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^ctx_[0-9a-f]{32}$`).MatchString(c.ID) {
		t.Fatalf("id %q", c.ID)
	}
	want := contexts.Context{
		ID: c.ID, ProjectID: "proj_a", Name: "shop login",
		StorageKey: "proj_a/" + c.ID + "/profile.tar.gz", Status: contexts.StatusCreated,
		CreatedAt: created, UpdatedAt: created,
	}
	if c != want {
		t.Fatalf("Create = %+v, want %+v", c, want)
	}
	if k := contexts.StorageKey("p", "ctx_1"); k != "p/ctx_1/profile.tar.gz" {
		t.Fatalf("StorageKey = %q", k)
	}
	got, err := e.store.Get(ctx, "proj_a", c.ID)
	if err != nil || got != want {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
	}
	if got, err := e.store.GetIn(ctx, []string{"proj_x", "proj_a"}, c.ID); err != nil || got != want {
		t.Fatalf("GetIn = %+v, %v", got, err)
	}
	other, err := e.store.Create(ctx, "proj_a", "")
	if err != nil || other.ID == c.ID || other.Name != "" {
		t.Fatalf("second Create = %+v, %v", other, err)
	}

	e.clock.add(90 * time.Second)
	touched, err := e.store.Touch(ctx, "proj_a", c.ID)
	want.UpdatedAt = created.Add(90 * time.Second)
	if err != nil || touched != want {
		t.Fatalf("Touch = %+v, %v; want %+v", touched, err, want)
	}
	if got, _ := e.store.Get(ctx, "proj_a", c.ID); got != want {
		t.Fatalf("Get after Touch = %+v", got)
	}

	// Unknown ids and other projects' contexts look the same.
	notFound := []struct {
		name    string
		project string
		id      string
	}{
		{"other project", "proj_b", c.ID},
		{"unknown id", "proj_a", "ctx_00000000000000000000000000000000"},
		{"empty id", "proj_a", ""},
		{"empty project", "", c.ID},
	}
	for _, tt := range notFound {
		if _, err := e.store.Get(ctx, tt.project, tt.id); !errors.Is(err, contexts.ErrNotFound) {
			t.Errorf("%s: Get = %v", tt.name, err)
		}
		if _, err := e.store.Touch(ctx, tt.project, tt.id); !errors.Is(err, contexts.ErrNotFound) {
			t.Errorf("%s: Touch = %v", tt.name, err)
		}
		if err := e.store.Delete(ctx, tt.project, tt.id); !errors.Is(err, contexts.ErrNotFound) {
			t.Errorf("%s: Delete = %v", tt.name, err)
		}
	}

	if err := e.store.Delete(ctx, "proj_a", c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Get(ctx, "proj_a", c.ID); !errors.Is(err, contexts.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if err := e.store.Delete(ctx, "proj_a", c.ID); !errors.Is(err, contexts.ErrNotFound) {
		t.Fatalf("second Delete = %v", err)
	}
	if _, err := e.store.Get(ctx, "proj_a", other.ID); err != nil {
		t.Fatalf("the other context: %v", err)
	}
}

// tree describes a directory: slash paths to file contents ("" + dir mode
// for directories, see mkTree).
type entry struct {
	dir  bool
	mode fs.FileMode
	data string
}

func mkTree(t *testing.T, root string, tree map[string]entry) {
	t.Helper()
	names := make([]string, 0, len(tree))
	for n := range tree {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		en := tree[n]
		if en.dir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(en.data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, en.mode); err != nil {
			t.Fatal(err)
		}
	}
	// Directory modes last, so that the files could be written.
	for _, n := range names {
		if en := tree[n]; en.dir {
			if err := os.Chmod(filepath.Join(root, filepath.FromSlash(n)), en.mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// readTree lists every entry under root (not following links).
func readTree(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		en := entry{dir: d.IsDir(), mode: fi.Mode().Perm()}
		switch {
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			en.data = string(b)
		case !d.IsDir():
			en.mode = fi.Mode() // marks links and specials
		}
		out[filepath.ToSlash(rel)] = en
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPersistRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	c := e.create(t, "proj_a")
	src := t.TempDir()
	kept := map[string]entry{
		"Local State":                           {mode: 0o600, data: `{"profile":{}}`},
		"Default":                               {dir: true, mode: 0o700},
		"Default/Cookies":                       {mode: 0o600, data: "cookie jar"},
		"Default/Preferences":                   {mode: 0o644, data: "{}"},
		"Default/Local Storage":                 {dir: true, mode: 0o750},
		"Default/Local Storage/leveldb":         {dir: true, mode: 0o755},
		"Default/Local Storage/leveldb/LOG":     {mode: 0o640, data: strings.Repeat("log line\n", 1000)},
		"Default/Extensions/run.sh":             {mode: 0o755, data: "#!/bin/sh\n"},
		"Default/Extensions":                    {dir: true, mode: 0o755},
		"Default/empty":                         {mode: 0o600},
		"Default/IndexedDB":                     {dir: true, mode: 0o700},
		"Default/Service Worker":                {dir: true, mode: 0o700},
		"Default/Service Worker/CacheStorage/x": {mode: 0o600, data: "not a Cache dir"},
		"Default/Service Worker/CacheStorage":   {dir: true, mode: 0o700},
	}
	skipped := map[string]entry{
		"SingletonLock":                   {mode: 0o600, data: "host-123"},
		"SingletonCookie":                 {mode: 0o600, data: "1"},
		"SingletonSocket":                 {mode: 0o600, data: "x"},
		"DevToolsActivePort":              {mode: 0o600, data: "9222\n/devtools/browser/x"},
		"RunningChromeVersion":            {mode: 0o600, data: "120"},
		"Default/Cache/Cache_Data/data_0": {mode: 0o600, data: "cached"},
		"Default/Code Cache/js/index":     {mode: 0o600, data: "code"},
		"Default/GPUCache/index":          {mode: 0o600, data: "gpu"},
		"ShaderCache/data":                {mode: 0o600, data: "s"},
		"GrShaderCache/data":              {mode: 0o600, data: "s"},
		"GraphiteDawnCache/data":          {mode: 0o600, data: "s"},
		"component_crx_cache/abc":         {mode: 0o600, data: "crx"},
		"Crashpad/settings.dat":           {mode: 0o600, data: "crash"},
	}
	all := map[string]entry{}
	for k, v := range kept {
		all[k] = v
	}
	for k, v := range skipped {
		all[k] = v
	}
	mkTree(t, src, all)
	// Links are not archived either.
	if err := os.Symlink("Default/Cookies", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	mkSpecial(t, src)

	e.clock.add(time.Hour)
	if err := e.store.Persist(ctx, c, src); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.store.Get(ctx, "proj_a", c.ID); !got.UpdatedAt.Equal(c.UpdatedAt.Add(time.Hour)) {
		t.Fatalf("updatedAt after Persist = %v, want %v", got.UpdatedAt, c.UpdatedAt.Add(time.Hour))
	}

	// Restore into a new directory (created), and into an existing one.
	for _, dst := range []string{filepath.Join(t.TempDir(), "new", "profile"), t.TempDir()} {
		ok, err := e.store.Restore(ctx, c, dst)
		if err != nil || !ok {
			t.Fatalf("Restore = %v, %v", ok, err)
		}
		got := readTree(t, dst)
		for name, want := range kept {
			if g, ok := got[name]; !ok || g != want {
				t.Errorf("%s: restored %+v (present %v), want %+v", name, g, ok, want)
			}
		}
		for name := range got {
			if _, ok := kept[name]; !ok {
				t.Errorf("%s: restored but should have been skipped", name)
			}
		}
	}

	// A second Persist replaces the archive.
	if err := os.WriteFile(filepath.Join(src, "Default", "Cookies"), []byte("new jar"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Persist(ctx, c, src); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if ok, err := e.store.Restore(ctx, c, dst); err != nil || !ok {
		t.Fatalf("Restore = %v, %v", ok, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "Default", "Cookies")); string(b) != "new jar" {
		t.Fatalf("Cookies = %q", b)
	}

	// Delete removes the archive too.
	if err := e.store.Delete(ctx, "proj_a", c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.blobs.Get(ctx, c.StorageKey); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("archive after Delete: %v", err)
	}
	if err := e.store.Persist(ctx, c, src); !errors.Is(err, contexts.ErrNotFound) {
		t.Fatalf("Persist of a deleted context = %v", err)
	}
	if _, err := e.blobs.Get(ctx, c.StorageKey); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("archive after Persist of a deleted context: %v", err)
	}
}

func TestRestoreWithoutArchive(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.create(t, "proj_a")
	ok, err := e.store.Restore(context.Background(), c, filepath.Join(t.TempDir(), "p"))
	if ok || err != nil {
		t.Fatalf("Restore = %v, %v; want false, nil", ok, err)
	}
}

func TestPersistFailureKeepsArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	c := e.create(t, "proj_a")
	src := t.TempDir()
	mkTree(t, src, map[string]entry{"a": {mode: 0o600, data: "one"}})
	if err := e.store.Persist(ctx, c, src); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Persist(ctx, c, filepath.Join(src, "missing")); err == nil {
		t.Fatal("Persist of a missing directory succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.store.Persist(cctx, c, src); err == nil {
		t.Fatal("Persist with a cancelled context succeeded")
	}
	dst := t.TempDir()
	if ok, err := e.store.Restore(ctx, c, dst); err != nil || !ok {
		t.Fatalf("Restore = %v, %v", ok, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "a")); string(b) != "one" {
		t.Fatalf("a = %q", b)
	}
}

// archive builds a tar.gz of hdrs; regular entries get body "x".
func archive(t *testing.T, hdrs ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = 1
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRestoreRefusesUnsafeArchives(t *testing.T) {
	t.Parallel()
	reg := func(name string) tar.Header { return tar.Header{Typeflag: tar.TypeReg, Name: name} }
	sym := func(name, target string) tar.Header {
		return tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target}
	}
	tests := []struct {
		name string
		hdrs []tar.Header
	}{
		{"parent", []tar.Header{reg("ok"), reg("../evil")}},
		{"nested parent", []tar.Header{reg("a/../../evil")}},
		{"absolute", []tar.Header{reg("/tmp/evil")}},
		{"absolute dir", []tar.Header{{Typeflag: tar.TypeDir, Name: "/tmp/evildir/"}}},
		{"symlink outside", []tar.Header{sym("link", "../outside"), reg("link/evil")}},
		{"symlink absolute", []tar.Header{sym("link", "/etc")}},
		{"symlink climbing", []tar.Header{sym("a/b/link", "../../../x")}},
		{"hard link outside", []tar.Header{{Typeflag: tar.TypeLink, Name: "h", Linkname: "../outside"}}},
		{"empty name", []tar.Header{reg("")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			c := e.create(t, "proj_a")
			if err := e.blobs.Put(context.Background(), c.StorageKey, bytes.NewReader(archive(t, tt.hdrs...))); err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "sub", "profile")
			ok, err := e.store.Restore(context.Background(), c, dir)
			if !errors.Is(err, contexts.ErrUnsafeArchive) || ok {
				t.Fatalf("Restore = %v, %v; want ErrUnsafeArchive", ok, err)
			}
			for name, en := range readTree(t, parent) {
				if name != "sub" && name != "sub/profile" && !strings.HasPrefix(name, "sub/profile/") {
					t.Errorf("written outside dir: %s %+v", name, en)
				}
			}
			if _, err := os.Lstat("/tmp/evil"); err == nil && tt.name == "absolute" {
				t.Error("/tmp/evil exists")
			}
		})
	}
}

func TestRestoreSafeOddities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	c := e.create(t, "proj_a")
	data := archive(t,
		tar.Header{Typeflag: tar.TypeDir, Name: "./"},
		tar.Header{Typeflag: tar.TypeReg, Name: "./a/b/file", Mode: 0o640},
		tar.Header{Typeflag: tar.TypeSymlink, Name: "a/inside", Linkname: "b/file"},
		tar.Header{Typeflag: tar.TypeLink, Name: "a/hard", Linkname: "a/b/file"},
		tar.Header{Typeflag: tar.TypeFifo, Name: "fifo"},
		tar.Header{Typeflag: tar.TypeReg, Name: "escape"},
	)
	if err := e.blobs.Put(ctx, c.StorageKey, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "profile")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A symlink already in dir must not redirect a write outside.
	outside := filepath.Join(parent, "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.Restore(ctx, c, dir); err != nil || !ok {
		t.Fatalf("Restore = %v, %v", ok, err)
	}
	want := map[string]entry{
		"a":        {dir: true, mode: 0o700},
		"a/b":      {dir: true, mode: 0o700},
		"a/b/file": {mode: 0o640, data: "x"},
		"escape":   {mode: 0o644, data: "x"},
	}
	got := readTree(t, dir)
	if len(got) != len(want) {
		t.Errorf("restored %v, want %v", got, want)
	}
	for name, w := range want {
		if g := got[name]; g.data != w.data || g.dir != w.dir || (!w.dir && g.mode != w.mode) {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatalf("outside file changed: %q", b)
	}
}

func TestRestoreCorruptArchive(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.create(t, "proj_a")
	if err := e.blobs.Put(context.Background(), c.StorageKey, strings.NewReader("not gzip")); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.Restore(context.Background(), c, t.TempDir()); err == nil || ok {
		t.Fatalf("Restore = %v, %v", ok, err)
	}
}

// TestDeleteUncounted deletes a context its project's count does not
// know (written before the project had one): the delete succeeds, and the
// count never goes below zero, so the project can still create up to its
// cap.
func TestDeleteUncounted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := e.create(t, "proj_a")
	if _, err := e.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(e.names.Projects),
		Key:              map[string]types.AttributeValue{"projectId": &types.AttributeValueMemberS{Value: "proj_a"}},
		UpdateExpression: aws.String("REMOVE contextCount"),
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, "proj_a", c.ID); err != nil {
		t.Fatalf("delete of an uncounted context: %v", err)
	}
	if _, err := e.store.Get(ctx, "proj_a", c.ID); !errors.Is(err, contexts.ErrNotFound) {
		t.Fatalf("after delete: %v, want ErrNotFound", err)
	}
	for i := range contexts.DefaultMaxPerProject {
		if _, err := e.store.Create(ctx, "proj_a", ""); err != nil {
			t.Fatalf("create %d of %d: %v", i+1, contexts.DefaultMaxPerProject, err)
		}
	}
	if _, err := e.store.Create(ctx, "proj_a", ""); !errors.Is(err, contexts.ErrQuota) {
		t.Fatalf("create past the cap: %v, want ErrQuota", err)
	}
}

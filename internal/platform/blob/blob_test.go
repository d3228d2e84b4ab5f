package blob

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := ContentKey("images", []byte("cover"), ".jpg")
	if !strings.HasPrefix(key, "images/") || !strings.HasSuffix(key, ".jpg") || key != ContentKey("images/", []byte("cover"), ".jpg") {
		t.Fatalf("key %q", key)
	}
	if err := d.Put(ctx, key, bytes.NewReader([]byte("cover"))); err != nil {
		t.Fatal(err)
	}
	rc, err := d.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "cover" {
		t.Fatalf("got %q", b)
	}
	if err := d.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := d.Delete(ctx, key); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", `a\b`} {
		if err := d.Put(ctx, bad, strings.NewReader("x")); !errors.Is(err, ErrBadKey) {
			t.Errorf("Put(%q) = %v, want ErrBadKey", bad, err)
		}
	}
	// A failed write leaves nothing behind.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Put(cctx, "x/y", strings.NewReader("data")); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	if _, err := d.Get(ctx, "x/y"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("half-written object visible: %v", err)
	}
}

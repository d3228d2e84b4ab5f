package explorer

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestFlashes: a refused form is read back by its session's subject only,
// until it expires; the forms kept stay within their count and bytes.
func TestFlashes(t *testing.T) {
	var fs flashes
	now := time.Unix(1_700_000_000, 0)
	id := fs.put(now, "root", "refused", url.Values{"item": {"text"}})
	if f, ok := fs.get(now, "root", id); !ok || f.Error != "refused" || f.Form.Get("item") != "text" {
		t.Fatalf("get: %v %+v", ok, f)
	}
	if _, ok := fs.get(now, "other", id); ok {
		t.Error("another subject read the form")
	}
	if _, ok := fs.get(now.Add(flashTTL+time.Second), "root", id); ok {
		t.Error("an expired form was read")
	}
	big := url.Values{"item": {strings.Repeat("x", 1<<20)}}
	for range 40 {
		fs.put(now, "root", "big", big)
	}
	if fs.bytes > maxFlashBytes || len(fs.byID) != len(fs.order) || len(fs.order) > maxFlashBytes>>20 {
		t.Errorf("%d bytes in %d forms kept", fs.bytes, len(fs.order))
	}
	if _, ok := fs.get(now, "root", id); ok {
		t.Error("the oldest form outlived the byte bound")
	}
	for range maxFlashes + 10 {
		fs.put(now, "root", "small", nil)
	}
	if len(fs.order) != maxFlashes || len(fs.byID) != maxFlashes {
		t.Errorf("%d forms kept, at most %d", len(fs.order), maxFlashes)
	}
}

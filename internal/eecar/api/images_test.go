package api_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
)

// TestImages uploads a part image through the API and reads it back with
// another company's key; non-images, oversized bodies, requests without
// a key and keys that climb out of the image folder are refused.
func TestImages(t *testing.T) {
	e := newEnv(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 3, 3))); err != nil {
		t.Fatal(err)
	}
	var up struct{ Key, URL string }
	if code, text := e.do(e.ka, http.MethodPost, "/eecar/images", buf.String(), &up); code != http.StatusCreated {
		t.Fatalf("upload = %d %s", code, text)
	}
	if !strings.HasPrefix(up.URL, "/eecar/images/img_") || !strings.HasSuffix(up.URL, ".png") {
		t.Fatalf("upload answered %+v", up)
	}
	resp, data := e.raw(e.kb, http.MethodGet, up.URL, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !bytes.Equal(data, buf.Bytes()) ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET %s = %d %s, %d bytes", up.URL, resp.StatusCode, resp.Header.Get("Content-Type"), len(data))
	}
	// A part lists it.
	part := map[string]any{"name": "pack", "category": "battery", "manufacturer": "LG", "price": 1, "images": []string{up.URL}}
	var p struct{ Images []string }
	if code, text := e.do(e.ka, http.MethodPost, "/eecar/parts", part, &p); code != http.StatusCreated || len(p.Images) != 1 {
		t.Fatalf("part with the image = %d %s", code, text)
	}
	e.wantError(e.ka, http.MethodPost, "/eecar/images", "<svg onload=alert(1)></svg>", http.StatusBadRequest, "PNG, JPEG, GIF or WebP")
	e.wantError(e.ka, http.MethodPost, "/eecar/images", "", http.StatusBadRequest, "empty")
	e.wantError(e.ka, http.MethodPost, "/eecar/images", strings.Repeat("x", 5<<20+1), http.StatusRequestEntityTooLarge, "5 MB")
	e.wantError("", http.MethodGet, up.URL, nil, http.StatusUnauthorized)
	for _, bad := range []string{"/eecar/images/..%2Fvectors%2Fx.f32", "/eecar/images/img_1.png", "/eecar/images/" + strings.TrimSuffix(up.Key, ".png") + ".html"} {
		resp, data := e.raw(e.kb, http.MethodGet, bad, nil)
		var out struct{ Error string }
		if resp.StatusCode != http.StatusNotFound || json.Unmarshal(data, &out) != nil {
			t.Errorf("GET %s = %d %s", bad, resp.StatusCode, data)
		}
	}

	// Usage, and deleting: only by the company that uploaded it.
	var u struct{ ImageBytes, ImageCount, QuotaBytes int64 }
	if code, text := e.do(e.ka, http.MethodGet, "/eecar/images", nil, &u); code != http.StatusOK ||
		u.ImageBytes != int64(buf.Len()) || u.ImageCount != 1 || u.QuotaBytes != 1<<30 {
		t.Fatalf("GET /eecar/images = %d %s", code, text)
	}
	e.wantError(e.kb, http.MethodDelete, up.URL, nil, http.StatusNotFound)
	if resp, _ := e.raw(e.ka, http.MethodDelete, up.URL, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE %s by its owner = %d", up.URL, resp.StatusCode)
	}
	e.wantError(e.kb, http.MethodGet, up.URL, nil, http.StatusNotFound)
	if code, text := e.do(e.ka, http.MethodGet, "/eecar/images", nil, &u); code != http.StatusOK || u.ImageBytes != 0 || u.ImageCount != 0 {
		t.Fatalf("GET /eecar/images after the delete = %d %s", code, text)
	}
}

// TestImageQuotaAPI: an upload that would take a company past its image
// quota is refused with 403 and a message naming the way out.
func TestImageQuotaAPI(t *testing.T) {
	e := newEnvWith(t, envOptions{imageQuota: 1 << 10})
	png := func(n byte) string { return "\x89PNG\r\n\x1a\n" + strings.Repeat(string(rune('a'+n)), 600) }
	if code, text := e.do(e.ka, http.MethodPost, "/eecar/images", png(0), nil); code != http.StatusCreated {
		t.Fatalf("first upload = %d %s", code, text)
	}
	e.wantError(e.ka, http.MethodPost, "/eecar/images", png(1), http.StatusForbidden, "quota")
	if code, text := e.do(e.kb, http.MethodPost, "/eecar/images", png(1), nil); code != http.StatusCreated {
		t.Fatalf("another company's upload = %d %s", code, text)
	}
}

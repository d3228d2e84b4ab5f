package market

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// MaxImageSize bounds an uploaded part image.
const MaxImageSize = 5 << 20

// ImagePath is the path prefix of uploaded images as parts reference them
// in their images list: ImagePath + key, answered by GET /eecar/images/{key}.
const ImagePath = "/eecar/images/"

// imageExt maps the image types accepted (sniffed from the bytes, never
// taken from the client) to their extension.
var imageExt = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}

var imageKeyRE = regexp.MustCompile(`^img_[0-9a-f]{64}\.(png|jpg|gif|webp)$`)

// PutImage stores an image (PNG, JPEG, GIF or WebP, at most MaxImageSize
// bytes) in the blob store under a key derived from its content, and
// returns that key (img_{sha256}.{ext}); the same bytes give the same key.
func (m *Market) PutImage(ctx context.Context, data []byte) (string, error) {
	if len(data) == 0 {
		return "", fmt.Errorf("%w: the image is empty", store.ErrInvalid)
	}
	if len(data) > MaxImageSize {
		return "", fmt.Errorf("%w: an image may be at most %d MB", store.ErrInvalid, MaxImageSize>>20)
	}
	ext, ok := imageExt[http.DetectContentType(data)]
	if !ok {
		return "", fmt.Errorf("%w: an image must be PNG, JPEG, GIF or WebP", store.ErrInvalid)
	}
	sum := sha256.Sum256(data)
	key := "img_" + hex.EncodeToString(sum[:]) + ext
	if err := m.blobs.Put(ctx, "images/"+key, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("eecar: store image: %w", err)
	}
	return key, nil
}

// Image opens a stored image and names its content type; ErrNotFound for
// a key that is malformed or holds nothing. The caller MUST close it.
func (m *Market) Image(ctx context.Context, key string) (io.ReadCloser, string, error) {
	if !imageKeyRE.MatchString(key) {
		return nil, "", fmt.Errorf("%w: image %q", store.ErrNotFound, key)
	}
	rc, err := m.blobs.Get(ctx, "images/"+key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, "", fmt.Errorf("%w: image %s", store.ErrNotFound, key)
	}
	if err != nil {
		return nil, "", fmt.Errorf("eecar: image: %w", err)
	}
	for t, ext := range imageExt {
		if strings.HasSuffix(key, ext) {
			return rc, t, nil
		}
	}
	return rc, "application/octet-stream", nil
}

// ImageKey returns the key of an uploaded image's reference
// (ImagePath + key), or false for another URL.
func ImageKey(ref string) (string, bool) {
	k, ok := strings.CutPrefix(ref, ImagePath)
	return k, ok && imageKeyRE.MatchString(k)
}

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

// DefaultImageQuota is the default bound of the bytes of one company's
// uploaded images (Options.ImageQuota).
const DefaultImageQuota = 1 << 30

// PutImage stores an image (PNG, JPEG, GIF or WebP, at most MaxImageSize
// bytes) uploaded by a company in the blob store, and returns its key
// (img_{sha256 of the company and the bytes}.{ext}): the same bytes from
// the same company give the same key and are counted once. The image is
// recorded under the company and counted against its quota
// (Options.ImageQuota) before its bytes are stored: past the quota the
// answer is store.ErrQuota and nothing is stored.
func (m *Market) PutImage(ctx context.Context, companyID string, data []byte) (string, error) {
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
	h := sha256.New()
	h.Write([]byte(companyID))
	h.Write([]byte{0})
	h.Write(data)
	key := "img_" + hex.EncodeToString(h.Sum(nil)) + ext
	fresh, err := m.st.ReserveImage(ctx, companyID, key, int64(len(data)), m.imageQuota())
	if err != nil {
		return "", err
	}
	if err := m.blobs.Put(ctx, "images/"+key, bytes.NewReader(data)); err != nil {
		if fresh {
			// Give the reservation back, also when the caller has gone.
			if rerr := m.st.ReleaseImage(context.WithoutCancel(ctx), companyID, key); rerr != nil {
				m.log.WarnContext(ctx, "eecar: image reservation not released", "company", companyID, "key", key, "err", rerr)
			}
		}
		return "", fmt.Errorf("eecar: store image: %w", err)
	}
	return key, nil
}

func (m *Market) imageQuota() int64 {
	switch q := m.o.ImageQuota; {
	case q < 0:
		return 0
	case q == 0:
		return DefaultImageQuota
	default:
		return q
	}
}

// DeleteImage deletes an image the company uploaded and gives its bytes
// back to the company's quota; parts that still list it show it no more.
// ErrNotFound when the company has no such image.
func (m *Market) DeleteImage(ctx context.Context, companyID, key string) error {
	if !imageKeyRE.MatchString(key) {
		return fmt.Errorf("%w: image %q", store.ErrNotFound, key)
	}
	if err := m.st.ReleaseImage(ctx, companyID, key); err != nil {
		return err
	}
	if err := m.blobs.Delete(ctx, "images/"+key); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("eecar: delete image: %w", err)
	}
	return nil
}

// ImageUsage is what a company's uploaded images take, with its quota
// (0: none).
type ImageUsage struct {
	store.ImageUsage
	QuotaBytes int64 `json:"quotaBytes"`
}

// ImageUsage returns what the company's uploaded images take.
func (m *Market) ImageUsage(ctx context.Context, companyID string) (ImageUsage, error) {
	u, err := m.st.ImageUsageOf(ctx, companyID)
	return ImageUsage{ImageUsage: u, QuotaBytes: m.imageQuota()}, err
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

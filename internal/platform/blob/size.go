package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Sizer is implemented by stores that can tell an object's size without
// reading it.
type Sizer interface {
	// Size returns the object's size in bytes; a missing one is
	// ErrNotFound.
	Size(ctx context.Context, key string) (int64, error)
}

var (
	_ Sizer = (*Dir)(nil)
	_ Sizer = (*S3)(nil)
)

// Size returns the size of the object at key: through Sizer when store
// implements it, else by reading the object.
func Size(ctx context.Context, store Store, key string) (int64, error) {
	if s, ok := store.(Sizer); ok {
		return s.Size(ctx, key)
	}
	rc, err := store.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err != nil {
		return 0, fmt.Errorf("blob: size of %s: %w", key, err)
	}
	return n, nil
}

// Size returns the size of the object's file.
func (d *Dir) Size(ctx context.Context, key string) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return 0, fmt.Errorf("blob: %w", err)
	}
	return st.Size(), nil
}

// Size returns the object's size (HeadObject).
func (s *S3) Size(ctx context.Context, key string) (int64, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return 0, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if isNotFound(err) {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return 0, fmt.Errorf("blob: s3 head %s: %w", key, err)
	}
	return aws.ToInt64(out.ContentLength), nil
}

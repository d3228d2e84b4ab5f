package blob

import (
	"context"
	"fmt"
)

// Settings say where the systems' blobs live: under a local directory
// when Bucket is empty, else in that S3 bucket (Endpoint empty: AWS S3),
// each system under its own prefix.
type Settings struct {
	Bucket, Endpoint, Region string
	PathStyle                bool
}

// Open returns the blob store of the system called name: a directory
// at localDir when s names no bucket, else that bucket under the
// prefix "<name>/" (credentials from the AWS environment), checked with
// HeadBucket so that a wrong bucket, endpoint or credentials stop the start.
// up is the S3 store's presigned upload URLs, nil for the directory (the
// caller serves its own signed URLs then).
func Open(ctx context.Context, s Settings, name, localDir string) (store Store, up Uploader, err error) {
	if s.Bucket == "" {
		d, err := NewDir(localDir)
		if err != nil {
			return nil, nil, err
		}
		return d, nil, nil
	}
	b, err := OpenS3(ctx, s, name)
	if err != nil {
		return nil, nil, err
	}
	if err := b.CheckBucket(ctx); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, b, nil
}

// OpenS3 returns the bucket of s under the prefix "<name>/", without
// sending a request.
func OpenS3(ctx context.Context, s Settings, name string) (*S3, error) {
	b, err := NewS3(ctx, S3Options{Bucket: s.Bucket, Prefix: name + "/", Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

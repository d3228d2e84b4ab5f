package main

import (
	"context"
	"fmt"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
)

// openBlobs returns the blob store of the system called name: a directory
// at localDir by default, or, with --blob-s3-bucket, that bucket under the
// prefix "<name>/" (credentials from the AWS environment), checked with
// HeadBucket so that a wrong bucket, endpoint or credentials stop the start.
// up is the S3 store's presigned upload URLs, nil for the directory (the
// caller serves its own signed URLs then).
func openBlobs(ctx context.Context, c *config.Config, name, localDir string) (store blob.Store, up blob.Uploader, err error) {
	if c.BlobS3Bucket == "" {
		d, err := blob.NewDir(localDir)
		if err != nil {
			return nil, nil, err
		}
		return d, nil, nil
	}
	s, err := newS3Blobs(ctx, c, name)
	if err != nil {
		return nil, nil, err
	}
	if err := s.CheckBucket(ctx); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, s, nil
}

// newS3Blobs returns the bucket of --blob-s3-bucket under the prefix
// "<name>/", without sending a request.
func newS3Blobs(ctx context.Context, c *config.Config, name string) (*blob.S3, error) {
	region := c.BlobS3Region
	if region == "" {
		region = c.Region
	}
	s, err := blob.NewS3(ctx, blob.S3Options{
		Bucket:    c.BlobS3Bucket,
		Prefix:    name + "/",
		Endpoint:  c.BlobS3Endpoint,
		Region:    region,
		PathStyle: c.BlobS3PathStyle,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

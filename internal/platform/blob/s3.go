package blob

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/quarrydb/quarry/internal/platform/awsclient"
)

// S3Options configures an S3 store.
type S3Options struct {
	// Bucket holds the objects; required. It must exist: NewS3 does not
	// create it.
	Bucket string
	// Prefix is prepended to every key ("wallcrawler/"), so that several
	// systems can share one bucket. Empty: keys are used as they are.
	Prefix string
	// Endpoint, when set, is the base URL of an S3-compatible service
	// (MinIO, Ceph RGW, Cloudflare R2, ...), e.g. http://127.0.0.1:9000.
	// Empty: AWS S3 in Region.
	Endpoint string
	// Region signs the requests; empty: the AWS environment's
	// (AWS_REGION, the shared config), which may also be empty for most
	// S3-compatible services.
	Region string
	// PathStyle addresses the bucket in the path (http://host/bucket/key)
	// instead of the host name (http://bucket.host/key). Most
	// S3-compatible services need it.
	PathStyle bool
	// Credentials signs the requests; nil: the default AWS chain
	// (environment, shared files, IAM role).
	Credentials aws.CredentialsProvider
	// HTTPClient sends the requests; nil: the SDK's client with a connect
	// timeout of DefaultS3DialTimeout and a response-header timeout of
	// ResponseHeaderTimeout, so that a silent endpoint fails a call
	// instead of holding it (and a node's start) for the operating
	// system's TCP timeouts. Either way the requests go through
	// awsclient.PlainBodyClient.
	HTTPClient aws.HTTPClient
	// ResponseHeaderTimeout bounds the wait for a response's headers once
	// a request is sent, for the default HTTPClient; default
	// DefaultS3HeaderTimeout. Bodies (downloads) are not bounded by it.
	ResponseHeaderTimeout time.Duration
	// MaxAttempts bounds the SDK's attempts per call (retries of
	// throttling and transient errors included); default
	// DefaultS3MaxAttempts.
	MaxAttempts int
	// TempDir holds the spool files of Put for readers that cannot seek;
	// empty: os.TempDir().
	TempDir string
	// MaxUploadTTL caps the validity of presigned upload URLs (UploadURL);
	// default DefaultMaxUploadTTL. A presigned URL cannot be revoked: it
	// works until it expires even when what it was issued for is deleted.
	MaxUploadTTL time.Duration
}

// Bounds of the default S3 client: an unreachable or silent endpoint costs
// a call at most DefaultS3MaxAttempts attempts, each of at most
// DefaultS3DialTimeout to connect and DefaultS3HeaderTimeout to answer,
// with backoffs of at most 2 s between them.
const (
	DefaultS3DialTimeout   = 5 * time.Second
	DefaultS3HeaderTimeout = 30 * time.Second
	DefaultS3MaxAttempts   = 3
)

// DefaultMaxUploadTTL is the default cap on a presigned upload URL's
// validity: short, because S3 cannot be told to refuse a presigned PUT
// once what it was issued for is gone.
const DefaultMaxUploadTTL = 5 * time.Minute

// S3 is a Store in a bucket of AWS S3 or an S3-compatible service. It also
// issues presigned upload URLs (Uploader). It is safe for concurrent use.
type S3 struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string
	tempDir string
	maxTTL  time.Duration
}

var (
	_ Store    = (*S3)(nil)
	_ Uploader = (*S3)(nil)
)

// NewS3 returns an S3 store. It loads the AWS configuration (region and,
// unless opts.Credentials is set, the credential chain) but sends no
// request: a wrong bucket or missing permission shows on first use.
func NewS3(ctx context.Context, opts S3Options) (*S3, error) {
	if opts.Bucket == "" {
		return nil, errors.New("blob: s3: bucket must not be empty")
	}
	if opts.Prefix != "" {
		if err := checkKey(strings.TrimSuffix(opts.Prefix, "/")); err != nil {
			return nil, fmt.Errorf("blob: s3: prefix %q: %w", opts.Prefix, ErrBadKey)
		}
	}
	var loads []func(*awsconfig.LoadOptions) error
	if opts.Region != "" {
		loads = append(loads, awsconfig.WithRegion(opts.Region))
	}
	if opts.Credentials != nil {
		loads = append(loads, awsconfig.WithCredentialsProvider(opts.Credentials))
	}
	httpClient := opts.HTTPClient
	if httpClient == nil {
		header := cmp.Or(max(opts.ResponseHeaderTimeout, 0), DefaultS3HeaderTimeout)
		httpClient = awshttp.NewBuildableClient().
			WithDialerOptions(func(d *net.Dialer) { d.Timeout = DefaultS3DialTimeout }).
			WithTransportOptions(func(t *http.Transport) { t.ResponseHeaderTimeout = header })
	}
	attempts := cmp.Or(max(opts.MaxAttempts, 0), DefaultS3MaxAttempts)
	loads = append(loads, awsconfig.WithHTTPClient(httpClient), awsconfig.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = 2 * time.Second
		})
	}))
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("blob: s3: aws config: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.PathStyle
		o.HTTPClient = awsclient.PlainBodies(o.HTTPClient)
		// Checksums only where the API requires them: the SDK's default
		// (a CRC trailer in aws-chunked encoding on every upload, and in
		// presigned URLs) is refused by several S3-compatible services.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &S3{
		client:  client,
		presign: s3.NewPresignClient(client),
		bucket:  opts.Bucket,
		prefix:  opts.Prefix,
		tempDir: opts.TempDir,
		maxTTL:  cmp.Or(max(opts.MaxUploadTTL, 0), DefaultMaxUploadTTL),
	}, nil
}

// CheckBucket sends HeadBucket, so that a wrong bucket, endpoint or
// credentials show at start instead of at the first upload. It needs the
// s3:ListBucket permission.
func (s *S3) CheckBucket(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		return fmt.Errorf("blob: s3 bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Ping sends one HeadBucket, without the client's retries, so that an
// unreachable endpoint shows in /healthz.
func (s *S3) Ping(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}, func(o *s3.Options) { o.RetryMaxAttempts = 1 }); err != nil {
		return fmt.Errorf("blob: s3 bucket %s: %w", s.bucket, err)
	}
	return nil
}

func (s *S3) objectKey(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Put uploads the object with one PutObject, which S3 makes visible whole
// or not at all. PutObject needs the length up front: a reader that can
// seek (bytes.Reader, strings.Reader, os.File) is sent from its current
// offset as it is; any other is first spooled to a temporary file.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	body, size, cleanup, err := s.sizedBody(ctx, r)
	if err != nil {
		return fmt.Errorf("blob: write %s: %w", key, err)
	}
	defer cleanup()
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(k),
		Body:          body,
		ContentLength: aws.Int64(size),
	})
	if err != nil {
		return fmt.Errorf("blob: s3 put %s: %w", key, err)
	}
	return nil
}

// sizedBody returns r with its remaining length, spooling it to a
// temporary file when it cannot seek. (The SDK sends and, on a retry,
// re-sends a seekable body from the offset it had when handed over.)
func (s *S3) sizedBody(ctx context.Context, r io.Reader) (io.ReadSeeker, int64, func(), error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if cur, err := rs.Seek(0, io.SeekCurrent); err == nil {
			end, err := rs.Seek(0, io.SeekEnd)
			if _, err2 := rs.Seek(cur, io.SeekStart); err == nil && err2 == nil {
				return rs, end - cur, func() {}, nil
			} else if err2 != nil {
				return nil, 0, nil, err2
			}
		}
	}
	f, err := os.CreateTemp(s.tempDir, "quarry-blob-*")
	if err != nil {
		return nil, 0, nil, err
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	n, err := io.Copy(f, readerWithContext{ctx, r})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, 0, nil, err
	}
	return f, n, cleanup, nil
}

// Get opens the object; a missing one is ErrNotFound.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if isNotFound(err) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: s3 get %s: %w", key, err)
	}
	return out.Body, nil
}

var _ Lister = (*S3)(nil)

// List implements Lister with one ListObjectsV2 call per page of at most
// 1,000 keys, under the store's prefix.
func (s *S3) List(ctx context.Context, prefix, after string, limit int) ([]Object, error) {
	var out []Object
	start := ""
	if after != "" {
		start = s.prefix + after
	}
	for len(out) < limit {
		in := &s3.ListObjectsV2Input{
			Bucket:  aws.String(s.bucket),
			Prefix:  aws.String(s.prefix + prefix),
			MaxKeys: aws.Int32(int32(min(limit-len(out), 1000))),
		}
		if start != "" {
			in.StartAfter = aws.String(start)
		}
		page, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("blob: s3 list %q: %w", prefix, err)
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			out = append(out, Object{Key: k, ModTime: aws.ToTime(o.LastModified)})
			start = aws.ToString(o.Key)
		}
		if !aws.ToBool(page.IsTruncated) || len(page.Contents) == 0 {
			break
		}
	}
	return out, nil
}

// Delete removes the object; S3 answers a missing key like a deleted one.
func (s *S3) Delete(ctx context.Context, key string) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("blob: s3 delete %s: %w", key, err)
	}
	return nil
}

// UploadURL returns a presigned PutObject URL for key, valid for ttl but
// at most S3Options.MaxUploadTTL (default 5 minutes). origin is not used:
// the URL points at the bucket. The client PUTs the bytes with no further
// headers; S3 enforces the expiry and signature, and its own 5 GiB limit
// of one PUT, but no smaller size limit, and nothing stops the PUT when
// what the URL was issued for has been deleted meanwhile: hence the short
// validity.
func (s *S3) UploadURL(ctx context.Context, origin, key string, ttl time.Duration) (string, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return "", err
	}
	ttl = min(ttl, s.maxTTL)
	req, err := s.presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("blob: s3 presign %s: %w", key, err)
	}
	return req.URL, nil
}

// isNotFound reports whether err is S3's NoSuchKey or another HTTP 404
// (some S3-compatible services answer without an error code), except
// NoSuchBucket.
func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		case "NoSuchBucket": // a 404 too, but a configuration error
			return false
		}
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

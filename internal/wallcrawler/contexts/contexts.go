// Package contexts holds Wallcrawler's browser contexts: the
// wallcrawler-contexts table and the Chrome profile archives kept in the
// blob store at <projectId>/<contextId>/profile.tar.gz.
//
// Everything goes through aws-sdk-go-v2 and the blob.Store interface, so the
// package runs unchanged against quarry's embedded store or DynamoDB and S3.
package contexts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// Errors returned by the package. Callers match them with errors.Is; the
// returned errors may wrap them with detail.
var (
	// ErrNotFound means the context does not exist or belongs to a project
	// the caller did not name (the two are indistinguishable on purpose).
	ErrNotFound = errors.New("contexts: not found")
	// ErrUnsafeArchive means an archive holds an entry that would land
	// outside the target directory.
	ErrUnsafeArchive = errors.New("contexts: unsafe archive entry")
	// ErrArchiveTooLarge means an archive passes one of the unpack caps
	// (Options.MaxUnpackBytes, Options.MaxUnpackEntries, or the bound on
	// its uncompressed tar stream derived from them); the error is a
	// *LimitError naming the cap.
	ErrArchiveTooLarge = errors.New("contexts: archive too large")
	// ErrCorruptArchive means an archive is not a valid tar.gz (bad gzip
	// data, a malformed tar header, an entry shorter or longer than its
	// header says).
	ErrCorruptArchive = errors.New("contexts: corrupt archive")
	// ErrQuota means the project holds Options.MaxPerProject contexts
	// already.
	ErrQuota = errors.New("contexts: the project has the most contexts allowed")
)

// DefaultMaxPerProject caps a project's contexts, so that one tenant
// cannot fill the blob store with profile archives (each up to
// Store.MaxArchiveBytes).
const DefaultMaxPerProject = 100

// countAttr is the attribute of the project's item (wallcrawler-projects)
// that counts its contexts: Create adds one in the same transaction that
// writes the context, Delete takes one away in the transaction that
// removes it, so the count cannot drift, and the cap holds under
// concurrent creates.
const countAttr = "contextCount"

// Default unpack caps of a context archive.
const (
	DefaultMaxUnpackBytes   = 1 << 30 // 1 GiB written to disk
	DefaultMaxUnpackEntries = 100_000 // tar entries of any type
)

// streamOverheadPerEntry is what each allowed entry adds to the bound on
// an archive's uncompressed tar stream: its 512-byte header, the padding
// of its data, and a PAX or GNU long-name header; streamSlack covers the
// end-of-archive blocks.
const (
	streamOverheadPerEntry = 4 << 10
	streamSlack            = 1 << 20
)

// LimitError reports which unpack cap an archive passed. It matches
// ErrArchiveTooLarge with errors.Is.
type LimitError struct {
	// What names the capped quantity: "unpacked bytes", "entries" or
	// "uncompressed archive bytes".
	What string
	// Limit is the cap.
	Limit int64
}

// Error names the cap.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: more than %d %s", ErrArchiveTooLarge, e.Limit, e.What)
}

// Is reports whether target is ErrArchiveTooLarge.
func (e *LimitError) Is(target error) bool { return target == ErrArchiveTooLarge }

// Context statuses. A context is CREATED until Delete marks it DELETING,
// just before removing its archive and then its item.
const (
	StatusCreated  = "CREATED"
	StatusDeleting = "DELETING"
)

// Context is an item of the wallcrawler-contexts table.
type Context struct {
	ID         string // "ctx_" + 32 hex digits
	ProjectID  string // owning project
	Name       string // optional label
	StorageKey string // blob key of the profile archive
	Status     string // StatusCreated, or StatusDeleting while Delete runs
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Options configures a Store. The zero value of each field means its
// default.
type Options struct {
	// Now returns the current time; default time.Now.
	Now func() time.Time
	// Rand is the source of identifiers; default crypto/rand.Reader.
	Rand io.Reader
	// MaxUnpackBytes caps the bytes Restore writes to disk for one
	// archive; default DefaultMaxUnpackBytes.
	MaxUnpackBytes int64
	// MaxUnpackEntries caps the entries (files, directories, links, any
	// type) Restore reads from one archive; default
	// DefaultMaxUnpackEntries.
	MaxUnpackEntries int
	// MaxPerProject caps the contexts of one project; default
	// DefaultMaxPerProject.
	MaxPerProject int
}

// Store reads and writes contexts and their archives. It is safe for
// concurrent use and holds no state beyond its configuration.
type Store struct {
	client *dynamodb.Client
	names  tables.Names
	blobs  blob.Store
	opts   Options
}

// New returns a Store over the contexts table named by names (see
// tables.EnsureTables) keeping archives in blobs. opts may be nil.
func New(client *dynamodb.Client, names tables.Names, blobs blob.Store, opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.MaxUnpackBytes <= 0 {
		o.MaxUnpackBytes = DefaultMaxUnpackBytes
	}
	if o.MaxUnpackEntries <= 0 {
		o.MaxUnpackEntries = DefaultMaxUnpackEntries
	}
	if o.MaxPerProject <= 0 {
		o.MaxPerProject = DefaultMaxPerProject
	}
	return &Store{client: client, names: names, blobs: blobs, opts: o}
}

// MaxArchiveBytes is the bound on an archive's uncompressed tar stream:
// MaxUnpackBytes plus 4 KiB of headers and padding per allowed entry plus
// 1 MiB. A compressed archive larger than this cannot be restored, so it
// is also a sensible bound on uploads.
func (s *Store) MaxArchiveBytes() int64 {
	return s.opts.MaxUnpackBytes + int64(s.opts.MaxUnpackEntries)*streamOverheadPerEntry + streamSlack
}

// StorageKey returns the blob key of a context's profile archive:
// "<projectId>/<contextId>/profile.tar.gz".
func StorageKey(projectID, contextID string) string {
	return projectID + "/" + contextID + "/profile.tar.gz"
}

// Create writes a new context of project projectID with an optional name.
// A project that holds MaxPerProject contexts is refused with ErrQuota.
func (s *Store) Create(ctx context.Context, projectID, name string) (Context, error) {
	if projectID == "" {
		return Context{}, errors.New("contexts: create: project id is required")
	}
	b := make([]byte, 16)
	if _, err := io.ReadFull(s.opts.Rand, b); err != nil {
		return Context{}, fmt.Errorf("contexts: random: %w", err)
	}
	now := s.now()
	c := Context{
		ID:        "ctx_" + hex.EncodeToString(b),
		ProjectID: projectID,
		Name:      name,
		Status:    StatusCreated,
		CreatedAt: now,
		UpdatedAt: now,
	}
	c.StorageKey = StorageKey(projectID, c.ID)
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: s.count(projectID, 1, "attribute_not_exists(#n) OR #n < :b", s.opts.MaxPerProject)},
		{Put: &types.Put{
			TableName:           aws.String(s.names.Contexts),
			Item:                item(c),
			ConditionExpression: aws.String("attribute_not_exists(contextId)"),
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return Context{}, fmt.Errorf("%w: %d", ErrQuota, s.opts.MaxPerProject)
	}
	if err != nil {
		return Context{}, fmt.Errorf("contexts: create: %w", err)
	}
	return c, nil
}

// count is the transaction item that adds delta to project projectID's
// context count when cond holds; cond names the count #n and bound :b.
func (s *Store) count(projectID string, delta int, cond string, bound int) *types.Update {
	return &types.Update{
		TableName:                aws.String(s.names.Projects),
		Key:                      map[string]types.AttributeValue{"projectId": &types.AttributeValueMemberS{Value: projectID}},
		UpdateExpression:         aws.String("ADD #n :d"),
		ConditionExpression:      aws.String(cond),
		ExpressionAttributeNames: map[string]string{"#n": countAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d": &types.AttributeValueMemberN{Value: strconv.Itoa(delta)},
			":b": &types.AttributeValueMemberN{Value: strconv.Itoa(bound)},
		},
	}
}

// MaxPerProject returns the cap on a project's contexts.
func (s *Store) MaxPerProject() int { return s.opts.MaxPerProject }

// maxIDBytes bounds the context IDs looked up: quarry's own are "ctx_" and hex,
// and a longer one (from a request body) cannot name a context, where
// DynamoDB would refuse the key (over 2048 bytes) as a ValidationException.
const maxIDBytes = 256

// idFits reports whether id can name a context.
func idFits(id string) bool { return id != "" && len(id) <= maxIDBytes }

// Get reads context id of project projectID (strongly consistent). It
// fails with ErrNotFound when the context does not exist or belongs to
// another project.
func (s *Store) Get(ctx context.Context, projectID, id string) (Context, error) {
	return s.GetIn(ctx, []string{projectID}, id)
}

// GetIn reads context id when it belongs to one of projectIDs (for API keys
// that may use several projects); otherwise it fails with ErrNotFound.
func (s *Store) GetIn(ctx context.Context, projectIDs []string, id string) (Context, error) {
	if !idFits(id) {
		return Context{}, fmt.Errorf("%w: context %.80q", ErrNotFound, id)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.names.Contexts),
		Key:            key(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Context{}, fmt.Errorf("contexts: get: %w", err)
	}
	if out.Item == nil {
		return Context{}, fmt.Errorf("%w: context %s", ErrNotFound, id)
	}
	c := parse(out.Item)
	for _, p := range projectIDs {
		if p != "" && p == c.ProjectID {
			return c, nil
		}
	}
	return Context{}, fmt.Errorf("%w: context %s", ErrNotFound, id)
}

// Touch sets the context's updatedAt to now and returns the context. It
// fails with ErrNotFound when the context does not exist, belongs to
// another project or is being deleted.
func (s *Store) Touch(ctx context.Context, projectID, id string) (Context, error) {
	if !idFits(id) || projectID == "" {
		return Context{}, fmt.Errorf("%w: context %.80q", ErrNotFound, id)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.names.Contexts),
		Key:                      key(id),
		UpdateExpression:         aws.String("SET updatedAt = :u"),
		ConditionExpression:      aws.String("projectId = :p AND (attribute_not_exists(#s) OR #s <> :d)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": &types.AttributeValueMemberS{Value: ddbitem.FormatTime(s.now())},
			":p": &types.AttributeValueMemberS{Value: projectID},
			":d": &types.AttributeValueMemberS{Value: StatusDeleting},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if ddbitem.ConditionFailed(err) {
		return Context{}, fmt.Errorf("%w: context %s", ErrNotFound, id)
	}
	if err != nil {
		return Context{}, fmt.Errorf("contexts: touch: %w", err)
	}
	return parse(out.Attributes), nil
}

// Delete removes the context and its archive. It fails with ErrNotFound
// when the context does not exist or belongs to another project. It first
// marks the context DELETING (from then on uploads, updates, persists and
// new sessions treat it as gone), then removes the archive, then the
// item: an upload or persist that stored an archive before the mark has
// it removed here, one that stores it after sees the mark and removes it
// itself. A failed Delete leaves the context DELETING and can be retried.
func (s *Store) Delete(ctx context.Context, projectID, id string) error {
	c, err := s.Get(ctx, projectID, id)
	if err != nil {
		return err
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.names.Contexts),
		Key:                      key(id),
		UpdateExpression:         aws.String("SET #s = :d"),
		ConditionExpression:      aws.String("projectId = :p"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d": &types.AttributeValueMemberS{Value: StatusDeleting},
			":p": &types.AttributeValueMemberS{Value: projectID},
		},
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: context %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("contexts: delete: mark: %w", err)
	}
	if err := s.blobs.Delete(ctx, c.StorageKey); err != nil {
		return fmt.Errorf("contexts: delete archive: %w", err)
	}
	return s.deleteItem(ctx, projectID, id)
}

// deleteItem removes the context's item and takes it off its project's
// count in one transaction. A context written before the project had a
// count (the count's condition fails) is removed alone.
func (s *Store) deleteItem(ctx context.Context, projectID, id string) error {
	del := &types.Delete{
		TableName:           aws.String(s.names.Contexts),
		Key:                 key(id),
		ConditionExpression: aws.String("projectId = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: projectID},
		},
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: del},
		{Update: s.count(projectID, -1, "#n > :b", 0)},
	}})
	r := ddbitem.CancelReasons(err)
	switch {
	case len(r) > 0 && r[0] == "ConditionalCheckFailed":
		return fmt.Errorf("%w: context %s", ErrNotFound, id)
	case len(r) > 1 && r[1] == "ConditionalCheckFailed":
		_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: del.TableName, Key: del.Key,
			ConditionExpression: del.ConditionExpression, ExpressionAttributeValues: del.ExpressionAttributeValues,
		})
		if ddbitem.ConditionFailed(err) {
			return fmt.Errorf("%w: context %s", ErrNotFound, id)
		}
	}
	if err != nil {
		return fmt.Errorf("contexts: delete: %w", err)
	}
	return nil
}

// Deleting reports whether Delete has started on c: it is no longer
// usable (sessions, uploads, updates), only deletable.
func (c Context) Deleting() bool { return c.Status == StatusDeleting }

// AllowUpload is the blob.HandlerOptions.Allow hook of context archive
// uploads: it returns an error matching blob.ErrNotFound (and ErrNotFound)
// unless key is the archive key of an existing context that is not being
// deleted. The signed upload handler asks it before and after storing an
// archive, so that an upload URL dies with its context.
func (s *Store) AllowUpload(ctx context.Context, key string) error {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[2] != "profile.tar.gz" {
		return fmt.Errorf("%w: %w: %q is not a context archive key", ErrNotFound, blob.ErrNotFound, key)
	}
	c, err := s.Get(ctx, parts[0], parts[1])
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %w", err, blob.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if c.Deleting() || c.StorageKey != key {
		return fmt.Errorf("%w: %w: context %s", ErrNotFound, blob.ErrNotFound, c.ID)
	}
	return nil
}

// now is the current time at the precision that is stored.
func (s *Store) now() time.Time { return s.opts.Now().UTC().Truncate(time.Millisecond) }

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"contextId": &types.AttributeValueMemberS{Value: id}}
}

func item(c Context) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"contextId":  &types.AttributeValueMemberS{Value: c.ID},
		"projectId":  &types.AttributeValueMemberS{Value: c.ProjectID},
		"storageKey": &types.AttributeValueMemberS{Value: c.StorageKey},
		"status":     &types.AttributeValueMemberS{Value: c.Status},
		"createdAt":  &types.AttributeValueMemberS{Value: ddbitem.FormatTime(c.CreatedAt)},
		"updatedAt":  &types.AttributeValueMemberS{Value: ddbitem.FormatTime(c.UpdatedAt)},
	}
	if c.Name != "" {
		it["name"] = &types.AttributeValueMemberS{Value: c.Name}
	}
	return it
}

func parse(it map[string]types.AttributeValue) Context {
	c := Context{
		ID:         ddbitem.String(it, "contextId"),
		ProjectID:  ddbitem.String(it, "projectId"),
		Name:       ddbitem.String(it, "name"),
		StorageKey: ddbitem.String(it, "storageKey"),
		Status:     ddbitem.String(it, "status"),
		CreatedAt:  ddbitem.ParseTime(ddbitem.String(it, "createdAt")),
		UpdatedAt:  ddbitem.ParseTime(ddbitem.String(it, "updatedAt")),
	}
	if c.StorageKey == "" {
		c.StorageKey = StorageKey(c.ProjectID, c.ID)
	}
	return c
}

package ddb

// DynamoDB Streams (API DynamoDBStreams_20120810: ListStreams,
// DescribeStream, GetShardIterator, GetRecords), served from the change log
// (changelog.go).
//
// Every enablement of a table's stream is one stream, named by its label,
// with exactly one shard. The stream's records are the change records whose
// StreamLabel is that label; a stream record's SequenceNumber is the change
// record's global sequence number, zero-padded to 21 digits, so sequence
// numbers are strictly increasing within a shard (not contiguous).
//
// Records of one stream are contiguous in the table's log: UpdateTable
// holds the table's ddl lock exclusively while it switches streams, and
// every item write holds it for reading from the moment it stages its
// record until it commits.
//
// A shard iterator is "<stream arn>|1|<base64 payload>", the payload holding
// the table id, the next sequence number to read, the issue time and an
// HMAC under a random key made once per data directory and kept in it
// (nsSecret): iterators are tamper-evident, not secret, and stay valid
// across restarts of the store for their 15 minutes, as on DynamoDB. An
// iterator whose MAC does not verify but which names another opening of
// the store (its instance id) reads as expired, not invalid, so clients
// re-acquire it as they do after any expiry.
//
// Records are readable for 24 hours (streamRetention) and are physically
// deleted by trimStreams once older than logRetention. A PutItem or
// UpdateItem that leaves an item unchanged produces no stream record (its
// change record is kept for the log but never served), as in DynamoDB.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
)

const (
	// streamRetention is how long stream records stay readable.
	streamRetention = 24 * time.Hour
	// shardIteratorTTL is how long a shard iterator stays valid.
	shardIteratorTTL = 15 * time.Minute
	// maxGetRecords and maxGetRecordsBytes bound one GetRecords response.
	maxGetRecords      = 1000
	maxGetRecordsBytes = 1 << 20
	// streamScanBudget bounds the change records one GetRecords call
	// examines (records of other streams included); the caller continues
	// with NextShardIterator.
	streamScanBudget = 10000
	// maxListStreams is the largest (and default) ListStreams page.
	maxListStreams = 100
)

// NewStreamsClient returns an aws-sdk-go-v2 DynamoDB Streams client wired to
// s in-process, like NewClient. optFns may adjust the client's options.
func NewStreamsClient(s *Store, optFns ...func(*dynamodbstreams.Options)) *dynamodbstreams.Client {
	opts := dynamodbstreams.Options{
		Region:       s.opts.Region,
		BaseEndpoint: aws.String("http://ddb.in-process"),
		Credentials:  aws.AnonymousCredentials{}, // trusted: see NewClient
		HTTPClient:   &http.Client{Transport: HandlerTransport{Handler: s.trustedHandler()}},
	}
	return dynamodbstreams.New(opts, optFns...)
}

// logRetention is how long the change log keeps the records of t: the
// stream retention, or longer while point-in-time recovery needs them.
func (s *Store) logRetention(t *table) time.Duration {
	return max(24*time.Hour, s.pitrLogRetention(t))
}

// ---------------------------------------------------------------------------
// Per-store state.

// streamsState is the in-memory state of the streams of a store; the zero
// value is ready for use.
type streamsState struct {
	once     sync.Once
	key      []byte  // HMAC key of shard iterators
	instance [8]byte // identifies this opening of the store in iterators

	mu      sync.Mutex
	bounds  map[streamKey]streamBounds
	trimmed map[streamKey]uint64 // highest sequence number trimmed per stream
}

type streamKey struct {
	table uint64
	label string
}

// streamBounds is what is known of the extent of a stream.
type streamBounds struct {
	first   uint64 // first record; 0 while none was seen
	last    uint64 // last record seen
	scanned uint64 // every record up to here was examined
	closed  bool   // disabled and every record known: last is final
}

// nsSecret holds secrets made once per data directory: c<name> → bytes.
const nsSecret = 'c'

// iteratorKeyName names the shard-iterator HMAC key among the secrets.
const iteratorKeyName = "shard-iterator-key"

// loadSecret returns the secret called name, making and storing n random
// bytes (synced) the first time.
func (s *Store) loadSecret(name string, n int) ([]byte, error) {
	k := append([]byte{nsSecret}, name...)
	var v []byte
	found, err := readValue(s.db, k, func(b []byte) error {
		if len(b) != n {
			return fmt.Errorf("ddb: secret %s: %d bytes, want %d", name, len(b), n)
		}
		v = bytes.Clone(b)
		return nil
	})
	if err != nil || found {
		return v, err
	}
	v = make([]byte, n)
	if _, err := rand.Read(v); err != nil {
		return nil, fmt.Errorf("ddb: random: %w", err)
	}
	if err := s.db.Set(k, v, pebble.Sync); err != nil {
		return nil, fmt.Errorf("ddb: store secret %s: %w", name, err)
	}
	return v, nil
}

func (st *streamsState) init() {
	st.once.Do(func() {
		if st.key == nil { // a store opened by Open has its durable key
			st.key = make([]byte, 32)
			if _, err := rand.Read(st.key); err != nil {
				panic("ddb: random: " + err.Error())
			}
		}
		rand.Read(st.instance[:])
		st.bounds = map[streamKey]streamBounds{}
		st.trimmed = map[streamKey]uint64{}
	})
}

func (st *streamsState) trimmedThrough(k streamKey) uint64 {
	st.init()
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.trimmed[k]
}

// lastIssued returns the last sequence number allocated.
func (s *seqTracker) lastIssued() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// ---------------------------------------------------------------------------
// Wire shapes.

// ListStreamsInput is the request of ListStreams.
type ListStreamsInput struct {
	TableName               *string `json:"TableName"`
	Limit                   *int64  `json:"Limit"`
	ExclusiveStartStreamArn *string `json:"ExclusiveStartStreamArn"`
}

// StreamSummary is one entry of ListStreams.
type StreamSummary struct {
	StreamArn   string `json:"StreamArn"`
	TableName   string `json:"TableName"`
	StreamLabel string `json:"StreamLabel"`
}

// ListStreamsOutput is the response of ListStreams.
type ListStreamsOutput struct {
	Streams                []StreamSummary `json:"Streams"`
	LastEvaluatedStreamArn *string         `json:"LastEvaluatedStreamArn,omitempty"`
}

// DescribeStreamInput is the request of DescribeStream.
type DescribeStreamInput struct {
	StreamArn             *string `json:"StreamArn"`
	Limit                 *int64  `json:"Limit"`
	ExclusiveStartShardId *string `json:"ExclusiveStartShardId"`
	ShardFilter           *struct {
		Type    string  `json:"Type"`
		ShardId *string `json:"ShardId"`
	} `json:"ShardFilter"`
}

// SequenceNumberRange is the range of sequence numbers of a shard; the
// ending one is set once the shard is closed.
type SequenceNumberRange struct {
	StartingSequenceNumber string `json:"StartingSequenceNumber,omitempty"`
	EndingSequenceNumber   string `json:"EndingSequenceNumber,omitempty"`
}

// StreamShard is one shard of a stream.
type StreamShard struct {
	ShardId             string              `json:"ShardId"`
	SequenceNumberRange SequenceNumberRange `json:"SequenceNumberRange"`
	ParentShardId       *string             `json:"ParentShardId,omitempty"`
}

// StreamDescription describes a stream.
type StreamDescription struct {
	StreamArn               string             `json:"StreamArn"`
	StreamLabel             string             `json:"StreamLabel"`
	StreamStatus            string             `json:"StreamStatus"`
	StreamViewType          string             `json:"StreamViewType,omitempty"`
	CreationRequestDateTime float64            `json:"CreationRequestDateTime"`
	TableName               string             `json:"TableName"`
	KeySchema               []KeySchemaElement `json:"KeySchema"`
	Shards                  []StreamShard      `json:"Shards"`
	LastEvaluatedShardId    *string            `json:"LastEvaluatedShardId,omitempty"`
}

// DescribeStreamOutput is the response of DescribeStream.
type DescribeStreamOutput struct {
	StreamDescription *StreamDescription `json:"StreamDescription"`
}

// GetShardIteratorInput is the request of GetShardIterator.
type GetShardIteratorInput struct {
	StreamArn         *string  `json:"StreamArn"`
	ShardId           *string  `json:"ShardId"`
	ShardIteratorType *string  `json:"ShardIteratorType"`
	SequenceNumber    *string  `json:"SequenceNumber"`
	Timestamp         *float64 `json:"Timestamp"`
}

// GetShardIteratorOutput is the response of GetShardIterator.
type GetShardIteratorOutput struct {
	ShardIterator string `json:"ShardIterator"`
}

// GetRecordsInput is the request of GetRecords.
type GetRecordsInput struct {
	ShardIterator *string `json:"ShardIterator"`
	Limit         *int64  `json:"Limit"`
}

// GetRecordsOutput is the response of GetRecords. NextShardIterator is nil
// once a closed (disabled) shard has been read to its end.
type GetRecordsOutput struct {
	Records           []*StreamRecord `json:"Records"`
	NextShardIterator *string         `json:"NextShardIterator,omitempty"`
}

// StreamRecord is one record of GetRecords.
type StreamRecord struct {
	AwsRegion    string             `json:"awsRegion"`
	Dynamodb     StreamRecordChange `json:"dynamodb"`
	EventID      string             `json:"eventID"`
	EventName    string             `json:"eventName"`
	EventSource  string             `json:"eventSource"`
	EventVersion string             `json:"eventVersion"`
	UserIdentity *StreamIdentity    `json:"userIdentity,omitempty"`
}

// StreamRecordChange is the "dynamodb" part of a stream record.
type StreamRecordChange struct {
	ApproximateCreationDateTime int64     `json:"ApproximateCreationDateTime"`
	Keys                        attr.Item `json:"Keys"`
	NewImage                    attr.Item `json:"NewImage,omitempty"`
	OldImage                    attr.Item `json:"OldImage,omitempty"`
	SequenceNumber              string    `json:"SequenceNumber"`
	SizeBytes                   int64     `json:"SizeBytes"`
	StreamViewType              string    `json:"StreamViewType"`
}

// StreamIdentity names who made a change; set on TTL deletions only.
type StreamIdentity struct {
	PrincipalId string `json:"PrincipalId"`
	Type        string `json:"Type"`
}

// ---------------------------------------------------------------------------
// Errors.

func streamNotFound(arn string) *Error {
	return notFound("Requested resource not found: Stream: %s not found", arn)
}

func invalidShardIterator() *Error { return validationf("Invalid ShardIterator") }

// javaTime formats t like DynamoDB's messages (java.util.Date.toString).
func javaTime(t time.Time) string { return t.UTC().Format("Mon Jan 02 15:04:05 MST 2006") }

func iteratorExpired(created, now time.Time) *Error {
	return &Error{Type: "ExpiredIteratorException", Message: fmt.Sprintf(
		"Iterator expired. The iterator was created at time %s while right now it's %s. The iterator is valid for 15 minutes.",
		javaTime(created), javaTime(now))}
}

func trimmedData(arn string) *Error {
	return &Error{Type: "TrimmedDataAccessException", Message: fmt.Sprintf(
		"Attempted to access data in stream %s that has been trimmed: records are kept for 24 hours", arn)}
}

// ---------------------------------------------------------------------------
// Streams of a table.

// streamRef is a stream resolved to its table.
type streamRef struct {
	t       *table
	meta    streamMeta
	enabled bool
	arn     string
}

func (r *streamRef) key() streamKey { return streamKey{r.t.meta.ID, r.meta.Label} }

func (s *Store) streamArn(tableName, label string) string {
	return s.arn(tableName) + "/stream/" + label
}

var streamArnPattern = regexp.MustCompile(`^arn:aws[a-z-]*:dynamodb:([^:]*):([^:]*):table/([a-zA-Z0-9_.-]+)/stream/([^/|]+)$`)

// parseStreamArn splits a stream ARN of this store into table name and
// label; ours is false for a well-formed ARN of another region or account.
func (s *Store) parseStreamArn(arn string) (table, label string, ours bool, err *Error) {
	m := streamArnPattern.FindStringSubmatch(arn)
	if m == nil {
		return "", "", false, validationf("Invalid StreamArn")
	}
	return m[3], m[4], m[1] == s.opts.Region && m[2] == s.opts.AccountID, nil
}

const streamLabelLayout = "2006-01-02T15:04:05.000"

// tableStreams returns every stream the table has had, oldest first.
func tableStreams(m *tableMeta) []streamMeta {
	out := m.Streams
	if m.StreamLabel == "" {
		return out
	}
	for _, sm := range out {
		if sm.Label == m.StreamLabel {
			return out
		}
	}
	// Metadata written before Streams existed: only the latest stream.
	sm := streamMeta{Label: m.StreamLabel}
	if m.Stream != nil {
		sm.ViewType = m.Stream.StreamViewType
	}
	if t, err := time.Parse(streamLabelLayout, m.StreamLabel); err == nil {
		sm.CreatedMillis = t.UnixMilli()
	}
	return append(out[:len(out):len(out)], sm)
}

// streamVisible reports whether a stream is still listed and readable: an
// enabled stream, or one disabled less than 24 hours ago.
func streamVisible(sm streamMeta, enabled bool, now time.Time) bool {
	return enabled || sm.DisabledMillis == 0 || now.UnixMilli()-sm.DisabledMillis < streamRetention.Milliseconds()
}

// visibleStreams returns the streams of m that are listed and readable at
// now, oldest first.
func visibleStreams(m *tableMeta, now time.Time) []streamMeta {
	var out []streamMeta
	for _, sm := range tableStreams(m) {
		if streamVisible(sm, m.Stream != nil && m.StreamLabel == sm.Label, now) {
			out = append(out, sm)
		}
	}
	return out
}

// streamOf returns the visible stream label of t, or nil.
func (s *Store) streamOf(t *table, label string, now time.Time) *streamRef {
	m := t.meta
	for _, sm := range tableStreams(m) {
		if sm.Label != label {
			continue
		}
		enabled := m.Stream != nil && m.StreamLabel == label
		if !streamVisible(sm, enabled, now) {
			return nil
		}
		if enabled && sm.ViewType == "" {
			sm.ViewType = m.Stream.StreamViewType
		}
		return &streamRef{t: t, meta: sm, enabled: enabled, arn: s.streamArn(m.Name, label)}
	}
	return nil
}

// findStream resolves a stream ARN.
func (s *Store) findStream(arn string) (*streamRef, *Error) {
	name, label, ours, err := s.parseStreamArn(arn)
	if err != nil {
		return nil, err
	}
	if !ours {
		return nil, streamNotFound(arn)
	}
	now := s.opts.Now()
	if t, terr := s.table(name); terr == nil {
		if ref := s.streamOf(t, label, now); ref != nil {
			return ref, nil
		}
	}
	if ref := s.retiredStream(name, label, 0, now); ref != nil {
		return ref, nil
	}
	return nil, streamNotFound(arn)
}

// shardID returns the id of the single shard of a stream.
func shardID(t *table, sm streamMeta) string {
	h := sha256.Sum256([]byte(t.meta.TableID + "/" + sm.Label))
	return fmt.Sprintf("shardId-%020d-%x", sm.CreatedMillis, h[:4])
}

func fmtSeq(q uint64) string { return fmt.Sprintf("%021d", q) }

// parseSeq parses a sequence number; 0 means invalid.
func parseSeq(v string) uint64 {
	if v == "" || len(v) > 40 {
		return 0
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0
		}
	}
	q, err := strconv.ParseUint(strings.TrimLeft(v, "0"), 10, 64)
	if err != nil {
		return 0
	}
	return q
}

// ---------------------------------------------------------------------------
// Reading the log.

// logHead is the part of a change record needed to route it.
type logHead struct {
	Seq         uint64 `json:"seq"`
	TimeMillis  int64  `json:"t"`
	StreamLabel string `json:"sl"`
}

// scanLog calls fn for every committed record of table id with sequence
// number in [from, to], in order, until fn returns false. raw is valid
// only during the call.
func (s *Store) scanLog(tableID, from, to uint64, fn func(h *logHead, raw []byte) (bool, error)) error {
	if from > to {
		return nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logKey(tableID, from), UpperBound: logKey(tableID, to+1)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		var h logHead
		if err := json.Unmarshal(it.Value(), &h); err != nil {
			return fmt.Errorf("ddb: corrupt change record: %w", err)
		}
		more, err := fn(&h, it.Value())
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return it.Error()
}

// boundsOf returns what is known of the extent of a stream, scanning the
// log past what was examined before.
func (s *Store) boundsOf(ref *streamRef) (streamBounds, error) {
	st := &s.streams
	st.init()
	st.mu.Lock()
	defer st.mu.Unlock()
	k := ref.key()
	b := st.bounds[k]
	if b.closed || (ref.enabled && b.first != 0) {
		return b, nil
	}
	var lastNow uint64
	if !ref.enabled {
		lastNow = s.seq.lastIssued() // no record of the stream comes after this
	}
	hi := s.seq.stable()
	done := false
	err := s.scanLog(k.table, b.scanned+1, hi, func(h *logHead, _ []byte) (bool, error) {
		if h.StreamLabel == k.label {
			if b.first == 0 {
				b.first = h.Seq
			}
			b.last = h.Seq
			b.scanned = h.Seq
			if ref.enabled {
				done = true
				return false, nil
			}
			return true, nil
		}
		if b.first != 0 && !ref.enabled {
			// The stream's records are contiguous: this one follows its last.
			b.closed, done = true, true
			return false, nil
		}
		b.scanned = h.Seq
		return true, nil
	})
	if err != nil {
		return streamBounds{}, err
	}
	if !done {
		b.scanned = max(b.scanned, hi)
		if !ref.enabled && hi >= lastNow {
			b.closed = true
		}
	}
	st.bounds[k] = b
	return b, nil
}

// streamItemsEqual reports whether two items hold the same attributes.
func streamItemsEqual(a, b attr.Item) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !attr.Equal(av, bv) {
			return false
		}
	}
	return true
}

// streamRecordOf renders a change record of t as a stream record.
func (s *Store) streamRecordOf(t *table, r *changeRecord) *StreamRecord {
	h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte(t.meta.TableID), r.Seq))
	out := &StreamRecord{
		AwsRegion:    s.opts.Region,
		EventID:      hex.EncodeToString(h[:16]),
		EventName:    r.Event,
		EventSource:  "aws:dynamodb",
		EventVersion: "1.1",
		Dynamodb: StreamRecordChange{
			ApproximateCreationDateTime: r.TimeMillis / 1000,
			Keys:                        r.Keys,
			SequenceNumber:              fmtSeq(r.Seq),
			StreamViewType:              r.ViewType,
		},
	}
	d := &out.Dynamodb
	switch r.ViewType {
	case "NEW_IMAGE":
		d.NewImage = r.New
	case "OLD_IMAGE":
		d.OldImage = r.Old
	case "NEW_AND_OLD_IMAGES":
		d.NewImage, d.OldImage = r.New, r.Old
	}
	d.SizeBytes = int64(d.Keys.Size() + d.NewImage.Size() + d.OldImage.Size())
	if r.ByTTL {
		out.UserIdentity = &StreamIdentity{PrincipalId: "dynamodb.amazonaws.com", Type: "Service"}
	}
	return out
}

// ---------------------------------------------------------------------------
// Shard iterators.

// shardIter is a decoded shard iterator.
type shardIter struct {
	tableID   uint64
	tableName string
	label     string
	pos       uint64 // next sequence number to read
	// exact iterators point at a definite position: reaching trimmed data
	// from them is an error. Others (TRIM_HORIZON, LATEST, AT_TIMESTAMP)
	// silently start at the oldest record still readable.
	exact bool
}

const (
	iterVersion    = 1
	iterPayloadLen = 1 + 8 + 8 + 8 + 8 + 1
	iterMACLen     = 16
)

func (s *Store) iterMAC(arn string, payload []byte) []byte {
	m := hmac.New(sha256.New, s.streams.key)
	m.Write([]byte(arn))
	m.Write([]byte{'|'})
	m.Write(payload)
	return m.Sum(nil)[:iterMACLen]
}

func (s *Store) encodeIterator(ref *streamRef, pos uint64, exact bool, now time.Time) string {
	s.streams.init()
	p := make([]byte, 0, iterPayloadLen+iterMACLen)
	p = append(p, iterVersion)
	p = append(p, s.streams.instance[:]...)
	p = binary.BigEndian.AppendUint64(p, ref.t.meta.ID)
	p = binary.BigEndian.AppendUint64(p, uint64(now.UnixMilli()))
	p = binary.BigEndian.AppendUint64(p, pos)
	var flags byte
	if exact {
		flags = 1
	}
	p = append(p, flags)
	p = append(p, s.iterMAC(ref.arn, p)...)
	return ref.arn + "|1|" + base64.RawURLEncoding.EncodeToString(p)
}

func (s *Store) decodeIterator(v string, now time.Time) (*shardIter, *Error) {
	s.streams.init()
	i := strings.LastIndexByte(v, '|')
	if i < 0 || !strings.HasSuffix(v[:i], "|1") {
		return nil, invalidShardIterator()
	}
	arn := v[:i-2]
	p, err := base64.RawURLEncoding.DecodeString(v[i+1:])
	if err != nil || len(p) != iterPayloadLen+iterMACLen || p[0] != iterVersion || p[iterPayloadLen-1] > 1 {
		return nil, invalidShardIterator()
	}
	name, label, ours, perr := s.parseStreamArn(arn)
	if perr != nil || !ours {
		return nil, invalidShardIterator()
	}
	created := time.UnixMilli(int64(binary.BigEndian.Uint64(p[17:25])))
	if !hmac.Equal(p[iterPayloadLen:], s.iterMAC(arn, p[:iterPayloadLen])) {
		if !bytes.Equal(p[1:9], s.streams.instance[:]) {
			// Issued by another opening of the store, under another key.
			return nil, iteratorExpired(created, now)
		}
		return nil, invalidShardIterator()
	}
	if now.Sub(created) > shardIteratorTTL {
		return nil, iteratorExpired(created, now)
	}
	return &shardIter{
		tableID:   binary.BigEndian.Uint64(p[9:17]),
		tableName: name,
		label:     label,
		pos:       binary.BigEndian.Uint64(p[25:33]),
		exact:     p[iterPayloadLen-1] == 1,
	}, nil
}

// ---------------------------------------------------------------------------
// Operations.

func checkLimit(c *constraintErrors, limit *int64, maxv int64) {
	if limit == nil {
		return
	}
	if *limit < 1 {
		c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *limit)
	} else if *limit > maxv {
		c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to %d", *limit, maxv)
	}
}

func checkStreamArn(c *constraintErrors, arn *string) {
	switch {
	case arn == nil:
		c.add("Value null at 'streamArn' failed to satisfy constraint: Member must not be null")
	case len(*arn) < 37:
		c.add("Value '%s' at 'streamArn' failed to satisfy constraint: Member must have length greater than or equal to 37", *arn)
	case len(*arn) > 1024:
		c.add("Value '%s' at 'streamArn' failed to satisfy constraint: Member must have length less than or equal to 1024", *arn)
	}
}

// ListStreams lists the streams of every table, or of one, ordered by
// table name and creation; disabled streams are listed for 24 hours.
func (s *Store) ListStreams(in *ListStreamsInput) (*ListStreamsOutput, error) {
	var c constraintErrors
	checkLimit(&c, in.Limit, maxListStreams)
	if in.TableName != nil {
		checkName(&c, "tableName", *in.TableName)
	}
	if in.ExclusiveStartStreamArn != nil {
		checkStreamArn(&c, in.ExclusiveStartStreamArn)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	limit := maxListStreams
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	var startTable, startLabel string
	if in.ExclusiveStartStreamArn != nil {
		var err *Error
		if startTable, startLabel, _, err = s.parseStreamArn(*in.ExclusiveStartStreamArn); err != nil {
			return nil, err
		}
	}
	// Every visible stream of the live tables and of the deleted ones whose
	// streams are kept, in (table name, label) order.
	now := s.opts.Now()
	var tables []*table
	for _, name := range s.tableNames() {
		if t, err := s.table(name); err == nil {
			tables = append(tables, t)
		}
	}
	tables = append(tables, s.retiredTables()...)
	var all []StreamSummary
	found := false
	for _, t := range tables {
		m := t.meta
		if in.TableName != nil && m.Name != *in.TableName {
			continue
		}
		found = found || m.DeletedMillis == 0
		for _, sm := range visibleStreams(m, now) {
			all = append(all, StreamSummary{StreamArn: s.streamArn(m.Name, sm.Label), TableName: m.Name, StreamLabel: sm.Label})
		}
	}
	if in.TableName != nil && !found && len(all) == 0 {
		return nil, notFound("Requested resource not found: Table: %s not found", *in.TableName)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].TableName != all[j].TableName {
			return all[i].TableName < all[j].TableName
		}
		return all[i].StreamLabel < all[j].StreamLabel
	})
	out := &ListStreamsOutput{Streams: []StreamSummary{}}
	for _, sum := range all {
		if in.ExclusiveStartStreamArn != nil && (sum.TableName < startTable || (sum.TableName == startTable && sum.StreamLabel <= startLabel)) {
			continue
		}
		if len(out.Streams) == limit {
			last := out.Streams[limit-1].StreamArn
			out.LastEvaluatedStreamArn = &last
			return out, nil
		}
		out.Streams = append(out.Streams, sum)
	}
	return out, nil
}

// DescribeStream describes a stream and its single shard.
func (s *Store) DescribeStream(in *DescribeStreamInput) (*DescribeStreamOutput, error) {
	var c constraintErrors
	checkStreamArn(&c, in.StreamArn)
	checkLimit(&c, in.Limit, 100)
	if f := in.ShardFilter; f != nil && f.Type != "CHILD_SHARDS" {
		c.add("Value '%s' at 'shardFilter.type' failed to satisfy constraint: Member must satisfy enum value set: [CHILD_SHARDS]", f.Type)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	ref, err := s.findStream(*in.StreamArn)
	if err != nil {
		return nil, err
	}
	m := ref.t.meta
	d := &StreamDescription{
		StreamArn:               ref.arn,
		StreamLabel:             ref.meta.Label,
		StreamStatus:            "ENABLED",
		StreamViewType:          ref.meta.ViewType,
		CreationRequestDateTime: epochSeconds(ref.meta.CreatedMillis),
		TableName:               m.Name,
		KeySchema:               m.KeySchema,
		Shards:                  []StreamShard{},
	}
	if !ref.enabled {
		d.StreamStatus = "DISABLED"
	}
	id := shardID(ref.t, ref.meta)
	// The one shard has no parent and no children.
	if in.ShardFilter == nil && (in.ExclusiveStartShardId == nil || *in.ExclusiveStartShardId < id) {
		b, berr := s.boundsOf(ref)
		if berr != nil {
			return nil, internal(berr)
		}
		var r SequenceNumberRange
		switch {
		case b.first != 0:
			r.StartingSequenceNumber = fmtSeq(b.first)
		case b.closed:
			r.StartingSequenceNumber = fmtSeq(b.scanned)
		default:
			r.StartingSequenceNumber = fmtSeq(s.seq.stable() + 1)
		}
		if b.closed {
			r.EndingSequenceNumber = r.StartingSequenceNumber
			if b.first != 0 {
				r.EndingSequenceNumber = fmtSeq(b.last)
			}
		}
		d.Shards = append(d.Shards, StreamShard{ShardId: id, SequenceNumberRange: r})
	}
	return &DescribeStreamOutput{StreamDescription: d}, nil
}

// GetShardIterator returns an iterator into a stream's shard.
func (s *Store) GetShardIterator(in *GetShardIteratorInput) (*GetShardIteratorOutput, error) {
	var c constraintErrors
	checkStreamArn(&c, in.StreamArn)
	if in.ShardId == nil {
		c.add("Value null at 'shardId' failed to satisfy constraint: Member must not be null")
	} else if n := len(*in.ShardId); n < 28 || n > 65 {
		c.add("Value '%s' at 'shardId' failed to satisfy constraint: Member must have length between 28 and 65", *in.ShardId)
	}
	typ := ""
	if in.ShardIteratorType == nil {
		c.add("Value null at 'shardIteratorType' failed to satisfy constraint: Member must not be null")
	} else {
		typ = *in.ShardIteratorType
		switch typ {
		case "TRIM_HORIZON", "LATEST", "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER", "AT_TIMESTAMP":
		default:
			c.add("Value '%s' at 'shardIteratorType' failed to satisfy constraint: Member must satisfy enum value set: [AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, AT_TIMESTAMP, LATEST, TRIM_HORIZON]", typ)
		}
	}
	if in.SequenceNumber != nil && (len(*in.SequenceNumber) < 21 || len(*in.SequenceNumber) > 40) {
		c.add("Value '%s' at 'sequenceNumber' failed to satisfy constraint: Member must have length between 21 and 40", *in.SequenceNumber)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	ref, err := s.findStream(*in.StreamArn)
	if err != nil {
		return nil, err
	}
	if *in.ShardId != shardID(ref.t, ref.meta) {
		return nil, notFound("Requested resource not found: Shard does not exist")
	}
	if in.SequenceNumber != nil && (typ == "TRIM_HORIZON" || typ == "LATEST") {
		return nil, validationf("Invalid request: SequenceNumber cannot be specified with ShardIteratorType %s", typ)
	}
	now := s.opts.Now()
	var pos uint64
	exact := false
	switch typ {
	case "TRIM_HORIZON":
		pos = 0
	case "LATEST":
		pos = s.seq.stable() + 1
	case "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER":
		if in.SequenceNumber == nil {
			return nil, validationf("Must specify a SequenceNumber for ShardIteratorType %s", typ)
		}
		q := parseSeq(*in.SequenceNumber)
		if ok, berr := s.isShardStart(ref, q); berr != nil {
			return nil, internal(berr)
		} else if ok {
			// The shard's advertised start, valid even while the shard
			// holds no record there (or none at all).
			pos = q
			if typ == "AFTER_SEQUENCE_NUMBER" {
				pos++
			}
			break
		}
		if q == 0 || q > s.seq.lastIssued() {
			return nil, validationf("Invalid SequenceNumber %s for shard %s", *in.SequenceNumber, *in.ShardId)
		}
		if err := s.checkSeq(ref, q, now); err != nil {
			return nil, err
		}
		pos, exact = q, true
		if typ == "AFTER_SEQUENCE_NUMBER" {
			pos++
		}
	case "AT_TIMESTAMP":
		if in.Timestamp == nil {
			return nil, validationf("Must specify a Timestamp for ShardIteratorType AT_TIMESTAMP")
		}
		at := int64(*in.Timestamp * 1000)
		if at > now.UnixMilli() {
			return nil, validationf("The timestamp %v is in the future", *in.Timestamp)
		}
		var perr error
		if pos, perr = s.seqAtTime(ref, at); perr != nil {
			return nil, internal(perr)
		}
	}
	return &GetShardIteratorOutput{ShardIterator: s.encodeIterator(ref, pos, exact, now)}, nil
}

// isShardStart reports whether q is, or was, the StartingSequenceNumber
// DescribeStream advertises for the stream's shard while it holds no record
// at q: the shard's start while it is empty (which follows the store's
// sequence numbers until the shard's first record), or the start of a
// closed shard that never held one.
func (s *Store) isShardStart(ref *streamRef, q uint64) (bool, error) {
	if q == 0 {
		return false, nil
	}
	b, err := s.boundsOf(ref)
	if err != nil {
		return false, err
	}
	switch {
	case b.first != 0:
		return false, nil // q is checked against the shard's records
	case b.closed:
		return q == b.scanned, nil
	default:
		return q <= s.seq.stable()+1 && q > s.streams.trimmedThrough(ref.key()), nil
	}
}

// checkSeq checks that sequence number q of a stream can still be read.
func (s *Store) checkSeq(ref *streamRef, q uint64, now time.Time) *Error {
	k := ref.key()
	if q <= s.streams.trimmedThrough(k) {
		return trimmedData(ref.arn)
	}
	v, closer, err := s.db.Get(logKey(k.table, q))
	if err == nil {
		var h logHead
		jerr := json.Unmarshal(v, &h)
		closer.Close()
		if jerr != nil {
			return internal(jerr)
		}
		if h.StreamLabel != k.label {
			return validationf("Invalid SequenceNumber %s: not a record of stream %s", fmtSeq(q), ref.arn)
		}
		if h.TimeMillis < now.Add(-streamRetention).UnixMilli() {
			return trimmedData(ref.arn)
		}
		return nil
	}
	if err != pebble.ErrNotFound {
		return internal(err)
	}
	// Absent: trimmed if older than everything the table's log holds.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logPrefix(k.table), UpperBound: prefixSuccessor(logPrefix(k.table))})
	if err != nil {
		return internal(err)
	}
	defer it.Close()
	if !it.First() || binary.BigEndian.Uint64(it.Key()[9:]) > q {
		return trimmedData(ref.arn)
	}
	return nil
}

// seqAtTime returns the position of the first record of the stream
// committed at or after at (Unix ms); past the end when there is none.
func (s *Store) seqAtTime(ref *streamRef, at int64) (uint64, error) {
	hi := s.seq.stable()
	pos := hi + 1
	err := s.scanLog(ref.t.meta.ID, 0, hi, func(h *logHead, _ []byte) (bool, error) {
		if h.StreamLabel == ref.meta.Label && h.TimeMillis >= at {
			pos = h.Seq
			return false, nil
		}
		return true, nil
	})
	return pos, err
}

// streamByID resolves the stream of a shard iterator.
func (s *Store) streamByID(it *shardIter, now time.Time) (*streamRef, *Error) {
	arn := s.streamArn(it.tableName, it.label)
	if t, err := s.table(it.tableName); err == nil && t.meta.ID == it.tableID {
		if ref := s.streamOf(t, it.label, now); ref != nil {
			return ref, nil
		}
	}
	if ref := s.retiredStream(it.tableName, it.label, it.tableID, now); ref != nil {
		return ref, nil
	}
	return nil, streamNotFound(arn)
}

// GetRecords reads the records of a shard from an iterator's position.
func (s *Store) GetRecords(in *GetRecordsInput) (*GetRecordsOutput, error) {
	var c constraintErrors
	if in.ShardIterator == nil {
		c.add("Value null at 'shardIterator' failed to satisfy constraint: Member must not be null")
	} else if n := len(*in.ShardIterator); n < 1 || n > 2048 {
		c.add("Value '%s' at 'shardIterator' failed to satisfy constraint: Member must have length between 1 and 2048", *in.ShardIterator)
	}
	checkLimit(&c, in.Limit, maxGetRecords)
	if err := c.err(); err != nil {
		return nil, err
	}
	limit := maxGetRecords
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	now := s.opts.Now()
	it, ierr := s.decodeIterator(*in.ShardIterator, now)
	if ierr != nil {
		return nil, ierr
	}
	ref, rerr := s.streamByID(it, now)
	if rerr != nil {
		return nil, rerr
	}
	k := ref.key()
	if it.exact && it.pos <= s.streams.trimmedThrough(k) {
		return nil, trimmedData(ref.arn)
	}
	closed := false
	hi := s.seq.stable()
	if !ref.enabled {
		b, err := s.boundsOf(ref)
		if err != nil {
			return nil, internal(err)
		}
		if b.closed {
			closed = true
			hi = min(hi, b.last) // b.last is 0 for an empty stream
		}
	}
	cutoff := now.Add(-streamRetention).UnixMilli()
	out := &GetRecordsOutput{Records: []*StreamRecord{}}
	pos, size, examined := it.pos, 0, 0
	exhausted, fresh := true, false
	var failure *Error
	err := s.scanLog(k.table, pos, hi, func(h *logHead, raw []byte) (bool, error) {
		if examined++; examined > streamScanBudget {
			exhausted = false
			return false, nil
		}
		if h.StreamLabel != k.label {
			pos = h.Seq + 1
			return true, nil
		}
		if !fresh && h.TimeMillis < cutoff {
			if it.exact {
				failure = trimmedData(ref.arn)
				return false, nil
			}
			pos = h.Seq + 1
			return true, nil
		}
		fresh = true
		var r changeRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return false, fmt.Errorf("ddb: corrupt change record: %w", err)
		}
		if r.Event == "MODIFY" && streamItemsEqual(r.Old, r.New) {
			pos = h.Seq + 1 // the item did not change: no stream record
			return true, nil
		}
		rec := s.streamRecordOf(ref.t, &r)
		if n := len(out.Records); n > 0 && size+int(rec.Dynamodb.SizeBytes) > maxGetRecordsBytes {
			exhausted = false
			return false, nil
		}
		out.Records = append(out.Records, rec)
		size += int(rec.Dynamodb.SizeBytes)
		pos = h.Seq + 1
		if len(out.Records) == limit {
			exhausted = false
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, internal(err)
	}
	if failure != nil {
		return nil, failure
	}
	if exhausted {
		if closed {
			return out, nil // the shard is closed and fully read
		}
		pos = max(pos, hi+1)
	}
	next := s.encodeIterator(ref, pos, it.exact || len(out.Records) > 0, now)
	out.NextShardIterator = &next
	return out, nil
}

// ---------------------------------------------------------------------------
// Retention.

// TrimStreams deletes the change records that have aged out (see
// trimStreams). The store's background loop trims on its own; tests and
// tools may call it directly.
func (s *Store) TrimStreams(now time.Time) error { return s.trimStreams(now) }

// trimStreams deletes the change records older than the log retention of
// their table (see logRetention). Only a prefix of each table's log is
// deleted: trimming stops at the first record young enough to keep.
func (s *Store) trimStreams(now time.Time) error {
	if err := s.dropRetired(now); err != nil {
		return err
	}
	s.mu.RLock()
	tables := make([]*table, 0, len(s.tables)+len(s.retired))
	for _, t := range s.tables {
		tables = append(tables, t)
	}
	for _, t := range s.retired {
		tables = append(tables, t)
	}
	s.mu.RUnlock()
	hi := s.seq.stable()
	b := s.db.NewBatch()
	defer b.Close()
	trimmed := map[streamKey]uint64{}
	for _, t := range tables {
		id := t.meta.ID
		cutoff := now.Add(-s.logRetention(t)).UnixMilli()
		var last uint64
		err := s.scanLog(id, 0, hi, func(h *logHead, _ []byte) (bool, error) {
			if h.TimeMillis >= cutoff {
				return false, nil
			}
			last = h.Seq
			if h.StreamLabel != "" {
				trimmed[streamKey{id, h.StreamLabel}] = h.Seq
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		if last != 0 {
			if err := b.DeleteRange(logKey(id, 0), logKey(id, last+1), nil); err != nil {
				return err
			}
		}
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(s.wo); err != nil {
		return err
	}
	st := &s.streams
	st.init()
	st.mu.Lock()
	for k, q := range trimmed {
		st.trimmed[k] = max(st.trimmed[k], q)
	}
	st.mu.Unlock()
	return nil
}

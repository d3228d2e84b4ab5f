// Package consumer reads a DynamoDB stream with at-least-once delivery: it
// polls DescribeStream, GetShardIterator and GetRecords, hands every
// non-empty batch of records to a handler, and checkpoints the sequence
// number of a batch's last record only once the handler has returned nil.
// After a restart it resumes after the checkpoint.
//
// It talks to any DynamoDB Streams endpoint through aws-sdk-go-v2 (quarry's
// in-process one from ddb.NewStreamsClient included). Shards are read one
// at a time in order of their starting sequence numbers and the checkpoint
// is a single sequence number per stream: this fits quarry, whose streams
// have a single shard, and streams whose shards form one chain; it does not
// read sibling shards of a real DynamoDB stream in parallel.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
)

// Handler processes one batch of records, in stream order. A non-nil
// error makes the consumer deliver the same records again after a backoff.
type Handler func(ctx context.Context, records []types.Record) error

// Options tune a Consumer. The zero value is valid.
type Options struct {
	// StartPosition is where a consumer without a checkpoint starts:
	// types.ShardIteratorTypeTrimHorizon (the default: the oldest record
	// still in the stream) or types.ShardIteratorTypeLatest (only records
	// written from now on).
	StartPosition types.ShardIteratorType
	// PollInterval is the pause after a GetRecords that returned nothing.
	// Default 250ms; tests use a few milliseconds.
	PollInterval time.Duration
	// Interval, when set, is called before each idle pause and its result
	// replaces PollInterval: a caller polls fast only while it awaits a
	// record, and idles cheaply otherwise.
	Interval func() time.Duration
	// Wake, when set, ends an idle pause early when it receives (a caller
	// that starts awaiting a record sends on it).
	Wake <-chan struct{}
	// Changes, when set, is called with the stream's ARN before each
	// GetRecords and returns a channel that closes once the stream may
	// hold a record that read would not return; an idle pause ends when
	// it closes. (*ddb.Store).StreamChanges is one: with it a reader of
	// the embedded store in this process sees a record as soon as it is
	// committed, and PollInterval only bounds the wait when the channel
	// is nil.
	Changes func(streamArn string) <-chan struct{}
	// RetryBackoff is the pause after a failed handler call or a failed
	// request; it doubles on each consecutive failure up to MaxBackoff.
	// Defaults 1s and 30s.
	RetryBackoff time.Duration
	MaxBackoff   time.Duration
	// BatchSize is the Limit of GetRecords (1 to 1000). Default 1000.
	BatchSize int32
	// OnError, when set, is told of every error the consumer recovers from:
	// handler failures, failed requests and checkpoint saves, and
	// ErrTrimmed when records were trimmed before they could be read.
	OnError func(error)
	// AfterPoll, when set, is called after every GetRecords with the number
	// of records it returned (after the handler ran); tests use it to
	// synchronise with the consumer.
	AfterPoll func(records int)
}

// ChangesPollInterval is the PollInterval for a consumer whose Changes
// the store itself serves (a reader in the store's own process): a bound
// on a wake-up the store did not give, not the path a record takes.
const ChangesPollInterval = 5 * time.Second

// ErrTrimmed is reported to Options.OnError when the position to resume
// from was trimmed from the stream (records were lost to the consumer); it
// then continues from the oldest record still in the stream.
var ErrTrimmed = errors.New("consumer: checkpointed position was trimmed from the stream; resuming at TRIM_HORIZON")

// Consumer reads one stream. Create it with New and start it with Run.
type Consumer struct {
	client    *dynamodbstreams.Client
	streamArn string
	cp        Checkpointer
	handler   Handler
	opts      Options
}

// New returns a consumer of the stream streamArn that passes its records
// to handler and keeps its position in cp.
func New(client *dynamodbstreams.Client, streamArn string, cp Checkpointer, handler func(ctx context.Context, records []types.Record) error, opts Options) *Consumer {
	if opts.StartPosition == "" {
		opts.StartPosition = types.ShardIteratorTypeTrimHorizon
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 250 * time.Millisecond
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = time.Second
	}
	if opts.MaxBackoff < opts.RetryBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.RetryBackoff)
	}
	if opts.BatchSize <= 0 || opts.BatchSize > 1000 {
		opts.BatchSize = 1000
	}
	return &Consumer{client: client, streamArn: streamArn, cp: cp, handler: handler, opts: opts}
}

// errEnded means every shard of a disabled stream has been read.
var errEnded = errors.New("consumer: stream ended")

// fatalError wraps errors Run returns instead of retrying.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }

// state is the reading position of Run.
type state struct {
	checkpoint string // last sequence number handled and saved ("" none)
	retryAt    string // first record of a batch the handler failed
	shard      string // shard being read
	finished   string // last shard read to its end
	iterator   string
}

// Run reads the stream until ctx is canceled (it then returns nil), the
// stream is disabled and fully read (nil), or a non-retryable error occurs:
// the stream does not exist (ResourceNotFoundException) or a request is
// invalid (ValidationException). Every other error is retried with backoff.
func (c *Consumer) Run(ctx context.Context) error {
	var st state
	backoff := c.opts.RetryBackoff
	fail := func(err error) bool { // report, back off; false when ctx ended
		c.report(err)
		ok := sleep(ctx, backoff)
		backoff = min(2*backoff, c.opts.MaxBackoff)
		return ok
	}
	for {
		cp, err := c.cp.Load(ctx, c.streamArn)
		if err == nil {
			st.checkpoint = cp
			break
		}
		if ctx.Err() != nil || !fail(fmt.Errorf("consumer: load checkpoint: %w", err)) {
			return nil
		}
	}
	for {
		if ctx.Err() != nil {
			return nil
		}
		if st.iterator == "" {
			err := c.acquire(ctx, &st)
			var fe *fatalError
			switch {
			case err == nil:
			case errors.Is(err, errEnded):
				return nil
			case ctx.Err() != nil:
				return nil
			case errors.As(err, &fe):
				return fe.err
			default:
				if !fail(err) {
					return nil
				}
				continue
			}
		}
		var changed <-chan struct{}
		if c.opts.Changes != nil {
			changed = c.opts.Changes(c.streamArn)
		}
		out, err := c.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(st.iterator), Limit: aws.Int32(c.opts.BatchSize)})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			st.iterator = ""
			switch code(err) {
			case "ExpiredIteratorException":
				continue // re-acquire from the checkpoint
			case "ResourceNotFoundException":
				return err
			}
			if !fail(fmt.Errorf("consumer: GetRecords: %w", err)) {
				return nil
			}
			continue
		}
		if n := len(out.Records); n > 0 {
			if err := c.handler(ctx, out.Records); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				// Deliver the same records again.
				st.retryAt = aws.ToString(out.Records[0].Dynamodb.SequenceNumber)
				st.iterator = ""
				c.afterPoll(n)
				if !fail(fmt.Errorf("consumer: handler: %w", err)) {
					return nil
				}
				continue
			}
			last := aws.ToString(out.Records[n-1].Dynamodb.SequenceNumber)
			for {
				err := c.cp.Save(ctx, c.streamArn, last)
				if err == nil {
					break
				}
				if ctx.Err() != nil || !fail(fmt.Errorf("consumer: save checkpoint: %w", err)) {
					return nil // not saved: delivered again after a restart
				}
			}
			st.checkpoint, st.retryAt = last, ""
			backoff = c.opts.RetryBackoff
		}
		c.afterPoll(len(out.Records))
		if out.NextShardIterator == nil {
			st.finished, st.iterator = st.shard, "" // shard closed and read
			continue
		}
		st.iterator = aws.ToString(out.NextShardIterator)
		if len(out.Records) == 0 && !c.idle(ctx, changed) {
			return nil
		}
	}
}

// idle pauses after an empty poll (Interval or PollInterval, cut short by
// Wake or by changed closing); false when ctx ended.
func (c *Consumer) idle(ctx context.Context, changed <-chan struct{}) bool {
	d := c.opts.PollInterval
	if c.opts.Interval != nil {
		d = c.opts.Interval()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-c.opts.Wake: // a nil channel never receives
	case <-changed:
	}
	return true
}

func (c *Consumer) report(err error) {
	if c.opts.OnError != nil {
		c.opts.OnError(err)
	}
}

func (c *Consumer) afterPoll(n int) {
	if c.opts.AfterPoll != nil {
		c.opts.AfterPoll(n)
	}
}

// acquire finds the shard to read and gets an iterator into it: at the
// first record of a failed batch, after the checkpoint, after the last
// finished shard, or at the start position.
func (c *Consumer) acquire(ctx context.Context, st *state) error {
	shards, err := c.shards(ctx)
	if err != nil {
		return err
	}
	if len(shards) == 0 {
		return fmt.Errorf("consumer: stream %s has no shards", c.streamArn)
	}
	var shard types.Shard
	typ, seq := c.opts.StartPosition, ""
	switch done := indexOf(shards, st.finished); {
	case done == len(shards)-1:
		return errEnded
	case done >= 0:
		shard, typ = shards[done+1], types.ShardIteratorTypeTrimHorizon
	case st.retryAt != "":
		shard, typ, seq = containing(shards, st.retryAt), types.ShardIteratorTypeAtSequenceNumber, st.retryAt
	case st.checkpoint != "":
		shard, typ, seq = containing(shards, st.checkpoint), types.ShardIteratorTypeAfterSequenceNumber, st.checkpoint
	case typ == types.ShardIteratorTypeLatest:
		shard = shards[len(shards)-1]
	default: // TRIM_HORIZON, or an unsupported start position
		shard, typ = shards[0], types.ShardIteratorTypeTrimHorizon
	}
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(c.streamArn), ShardId: shard.ShardId, ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := c.client.GetShardIterator(ctx, in)
	if code(err) == "TrimmedDataAccessException" {
		c.report(ErrTrimmed)
		in.ShardId, in.ShardIteratorType, in.SequenceNumber = shards[0].ShardId, types.ShardIteratorTypeTrimHorizon, nil
		shard = shards[0]
		out, err = c.client.GetShardIterator(ctx, in)
	}
	if err != nil {
		switch code(err) {
		case "ResourceNotFoundException", "ValidationException":
			return &fatalError{err}
		}
		return fmt.Errorf("consumer: GetShardIterator: %w", err)
	}
	st.shard, st.iterator, st.finished = aws.ToString(shard.ShardId), aws.ToString(out.ShardIterator), ""
	return nil
}

// shards lists the shards of the stream ordered by starting sequence number.
func (c *Consumer) shards(ctx context.Context) ([]types.Shard, error) {
	var shards []types.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(c.streamArn)}
	for {
		out, err := c.client.DescribeStream(ctx, in)
		if err != nil {
			switch code(err) {
			case "ResourceNotFoundException", "ValidationException":
				return nil, &fatalError{err}
			}
			return nil, fmt.Errorf("consumer: DescribeStream: %w", err)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			break
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
	sort.SliceStable(shards, func(i, j int) bool {
		return seqLess(start(shards[i]), start(shards[j]))
	})
	return shards, nil
}

func start(s types.Shard) string {
	if s.SequenceNumberRange == nil {
		return ""
	}
	return aws.ToString(s.SequenceNumberRange.StartingSequenceNumber)
}

func indexOf(shards []types.Shard, id string) int {
	for i, s := range shards {
		if aws.ToString(s.ShardId) == id {
			return i
		}
	}
	return -1
}

// containing returns the shard whose range holds seq: the last one starting
// at or before it (the first shard when seq precedes them all).
func containing(shards []types.Shard, seq string) types.Shard {
	best := shards[0]
	for _, s := range shards {
		if !seqLess(seq, start(s)) {
			best = s
		}
	}
	return best
}

// seqLess compares two decimal sequence numbers.
func seqLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// code returns the API error code of err, or "".
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

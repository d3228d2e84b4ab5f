package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/quarrydb/quarry/ddb/consumer"
)

// Notifier follows the sessions table's stream (the document's
// sessions-stream-processor → SNS fan-out) and tells this process of the
// sessions that end, whichever process ended them (OnEnd), and of the
// items that are deleted (OnRemove). Create does not wait on it: the
// process that launches a session's browser writes READY itself.
type Notifier struct {
	streams  *dynamodbstreams.Client
	client   *dynamodb.Client
	table    string
	interval time.Duration
	changes  func(streamArn string) <-chan struct{}

	mu       sync.Mutex
	onError  func(error)
	onEnd    func(id string)
	onRemove func(projectID, id string)
}

// OnEnd registers f, called (from the stream consumer) with the id of
// every session whose record shows it TERMINATING or ended, whichever
// process wrote it. Call before Run.
func (n *Notifier) OnEnd(f func(id string)) {
	n.mu.Lock()
	n.onEnd = f
	n.mu.Unlock()
}

// OnRemove registers f, called (from the stream consumer) with the project
// and id of every session whose item was deleted (its TTL passed), so that
// what is kept beside the item goes with it. Call before Run.
func (n *Notifier) OnRemove(f func(projectID, id string)) {
	n.mu.Lock()
	n.onRemove = f
	n.mu.Unlock()
}

// minInterval is the shortest pause between two polls of the stream.
const minInterval = 250 * time.Millisecond

// NewNotifier returns a Notifier of table's stream, polled every interval
// when the last poll found nothing (never more often than every 250ms).
// changes, when not nil, wakes it when the stream may hold a new record
// (consumer.Options.Changes); onError may be nil.
func NewNotifier(client *dynamodb.Client, streams *dynamodbstreams.Client, table string, interval time.Duration, changes func(streamArn string) <-chan struct{}, onError func(error)) *Notifier {
	if onError == nil {
		onError = func(error) {}
	}
	return &Notifier{streams: streams, client: client, table: table, interval: max(interval, minInterval), changes: changes, onError: onError}
}

// Run consumes the stream from its latest position until ctx ends.
func (n *Notifier) Run(ctx context.Context) error {
	out, err := n.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(n.table)})
	if err != nil {
		return fmt.Errorf("sessions: describe %s: %w", n.table, err)
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		return fmt.Errorf("sessions: table %s has no stream", n.table)
	}
	c := consumer.New(n.streams, arn, consumer.NewMemoryCheckpointer(), n.handle, consumer.Options{
		StartPosition: streamtypes.ShardIteratorTypeLatest,
		PollInterval:  n.interval,
		Changes:       n.changes,
		RetryBackoff:  100 * time.Millisecond,
		MaxBackoff:    2 * time.Second,
		OnError:       n.onError,
	})
	return c.Run(ctx)
}

func (n *Notifier) handle(_ context.Context, records []streamtypes.Record) error {
	for _, r := range records {
		if r.EventName == streamtypes.OperationTypeRemove && r.Dynamodb != nil {
			n.removed(r.Dynamodb.OldImage)
			continue
		}
		if r.Dynamodb == nil || r.Dynamodb.NewImage == nil {
			continue
		}
		img := r.Dynamodb.NewImage
		id, _ := img["sessionId"].(*streamtypes.AttributeValueMemberS)
		st, _ := img["internalStatus"].(*streamtypes.AttributeValueMemberS)
		if id == nil || st == nil || !(st.Value == StateTerminating || Terminal(st.Value)) {
			continue
		}
		n.mu.Lock()
		onEnd := n.onEnd
		n.mu.Unlock()
		if onEnd != nil {
			onEnd(id.Value)
		}
	}
	return nil
}

// removed reports a deleted session item (old, its last image) to the
// OnRemove callback; items without a project (the node registry) are not
// sessions.
func (n *Notifier) removed(old map[string]streamtypes.AttributeValue) {
	id, _ := old["sessionId"].(*streamtypes.AttributeValueMemberS)
	project, _ := old["projectId"].(*streamtypes.AttributeValueMemberS)
	if id == nil || project == nil || id.Value == "" || project.Value == "" {
		return
	}
	n.mu.Lock()
	f := n.onRemove
	n.mu.Unlock()
	if f != nil {
		f(project.Value, id.Value)
	}
}

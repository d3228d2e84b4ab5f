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
// sessions-stream-processor → SNS wallcrawler-session-ready) and wakes the
// callers waiting for a session to leave PROVISIONING.
type Notifier struct {
	streams  *dynamodbstreams.Client
	client   *dynamodb.Client
	table    string
	interval time.Duration

	mu       sync.Mutex
	waiters  map[string][]chan string
	wake     chan struct{}
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

// idleInterval is how often the stream is polled while nobody waits.
const idleInterval = 250 * time.Millisecond

// NewNotifier returns a Notifier of table's stream. While a caller waits
// it polls every interval (the embedded store is cheap to poll: a few
// milliseconds; AWS: 250ms); while nobody waits, every 250ms at most
// often. onError may be nil.
func NewNotifier(client *dynamodb.Client, streams *dynamodbstreams.Client, table string, interval time.Duration, onError func(error)) *Notifier {
	if onError == nil {
		onError = func(error) {}
	}
	return &Notifier{streams: streams, client: client, table: table, interval: interval,
		waiters: map[string][]chan string{}, wake: make(chan struct{}, 1), onError: onError}
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
		Interval:      n.pollInterval,
		Wake:          n.wake,
		RetryBackoff:  100 * time.Millisecond,
		MaxBackoff:    2 * time.Second,
		OnError:       n.onError,
	})
	return c.Run(ctx)
}

// pollInterval is the consumer's pause: fast while someone waits.
func (n *Notifier) pollInterval() time.Duration {
	n.mu.Lock()
	waiting := len(n.waiters) > 0
	n.mu.Unlock()
	if waiting {
		return n.interval
	}
	return max(n.interval, idleInterval)
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
		if id == nil || st == nil || st.Value == StateCreating || st.Value == StateProvisioning {
			continue
		}
		n.mu.Lock()
		ws := n.waiters[id.Value]
		delete(n.waiters, id.Value)
		onEnd := n.onEnd
		n.mu.Unlock()
		if onEnd != nil && (st.Value == StateTerminating || Terminal(st.Value)) {
			onEnd(id.Value)
		}
		for _, w := range ws {
			w <- st.Value
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

// Watch registers interest in session id leaving PROVISIONING; the
// returned channel receives the new internal status once. cancel
// unregisters. Register before the write that may trigger the record.
func (n *Notifier) Watch(id string) (ch <-chan string, cancel func()) {
	c := make(chan string, 1)
	n.mu.Lock()
	n.waiters[id] = append(n.waiters[id], c)
	n.mu.Unlock()
	select { // end an idle pause: poll fast from now on
	case n.wake <- struct{}{}:
	default:
	}
	return c, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		ws := n.waiters[id]
		for i, w := range ws {
			if w == c {
				n.waiters[id] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(n.waiters[id]) == 0 {
			delete(n.waiters, id)
		}
	}
}

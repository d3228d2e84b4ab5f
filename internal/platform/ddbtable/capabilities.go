package ddbtable

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/quarrydb/quarry/internal/platform/lifecycle"
)

// Capabilities are the DynamoDB features an endpoint offers, probed at
// start with harmless calls on a table that does not exist: an engine
// that implements an operation answers ResourceNotFoundException (or
// succeeds), one that does not answers UnknownOperationException (see
// IsUnsupported).
type Capabilities struct {
	// Engine names the endpoint in messages: "the embedded store",
	// "AWS DynamoDB (https://…)", "the DynamoDB endpoint http://… (…)".
	Engine string
	// Transactions: TransactWriteItems/TransactGetItems (Checks, EECAR).
	Transactions bool
	// Streams: DynamoDB Streams (Wallcrawler, EECAR).
	Streams bool
	// TTL: UpdateTimeToLive/DescribeTimeToLive.
	TTL bool
	// PITR: point-in-time recovery (recommended for Wallcrawler).
	PITR bool
}

// probeTable is the table the probes name; it need not exist.
const probeTable = "quarry-capability-probe-0"

// ProbeCapabilities finds what the systems' DynamoDB endpoint offers. The
// embedded store offers everything and is not probed.
func ProbeCapabilities(ctx context.Context, endpoint string, client *dynamodb.Client, streams *dynamodbstreams.Client) Capabilities {
	if endpoint == "" {
		return Capabilities{Engine: "the embedded store", Transactions: true, Streams: true, TTL: true, PITR: true}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	supported := func(err error) bool { return !IsUnsupported(err) }
	key := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "probe"}}
	_, terr := client.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(probeTable), Key: key}},
	}})
	_, perr := client.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(probeTable)})
	_, ttlErr := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(probeTable)})
	_, serr := streams.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(1)})
	caps := Capabilities{Transactions: supported(terr), PITR: supported(perr), TTL: supported(ttlErr), Streams: supported(serr)}
	switch {
	case strings.Contains(endpoint, "amazonaws.com"):
		caps.Engine = "AWS DynamoDB (" + endpoint + ")"
	case !caps.Transactions && !caps.PITR:
		// The gaps ScyllaDB's compatibility document lists.
		caps.Engine = "the DynamoDB endpoint " + endpoint + " (ScyllaDB Alternator or alike)"
	default:
		caps.Engine = "the DynamoDB endpoint " + endpoint
	}
	return caps
}

// Missing returns the message refusing a system that needs features the
// endpoint lacks ("" when it has them all).
func (k Capabilities) Missing(system string, needs ...string) string {
	var lack []string
	for _, n := range needs {
		switch {
		case n == "transactions" && !k.Transactions:
			lack = append(lack, "transactions (TransactWriteItems)")
		case n == "streams" && !k.Streams:
			lack = append(lack, "DynamoDB Streams")
		case n == "ttl" && !k.TTL:
			lack = append(lack, "TTL")
		}
	}
	if len(lack) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is not started: %s does not support %s, which %s needs", system, k.Engine, strings.Join(lack, " and "), system)
}

// Health is the Capabilities as /healthz reports them.
func (k Capabilities) Health() map[string]any {
	return map[string]any{"engine": k.Engine, "transactions": k.Transactions, "streams": k.Streams, "ttl": k.TTL, "pointInTimeRecovery": k.PITR}
}

// CapsProbe probes the DynamoDB endpoint's Capabilities once it answers,
// and remembers them.
type CapsProbe struct {
	// Endpoint is the DynamoDB endpoint's URL; empty: the embedded store,
	// which offers everything and is not probed.
	Endpoint string
	Client   *dynamodb.Client
	Streams  *dynamodbstreams.Client

	probing sync.Mutex // one probe at a time
	mu      sync.Mutex
	k       *Capabilities
	// The last failure to reach the endpoint, given again for a while to
	// the systems that ask next, so that a silent endpoint costs one
	// timeout at start, not one per system.
	lastErr error
	lastAt  time.Time
}

// capsRecheck is how long a failure to reach the endpoint is given again
// without a new probe.
const capsRecheck = 500 * time.Millisecond

// Get returns the endpoint's Capabilities, probing them on the first call
// that finds the endpoint reachable; while it is not, the error says so.
func (p *CapsProbe) Get(ctx context.Context) (Capabilities, error) {
	p.probing.Lock()
	defer p.probing.Unlock()
	p.mu.Lock()
	k := p.k
	p.mu.Unlock()
	if k != nil {
		return *k, nil
	}
	if p.Endpoint != "" {
		if p.lastErr != nil && time.Since(p.lastAt) < capsRecheck {
			return Capabilities{}, p.lastErr
		}
		_, err := p.Client.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		if err != nil && lifecycle.Unreachable(err) {
			p.lastErr, p.lastAt = fmt.Errorf("dynamodb endpoint %s: %w", p.Endpoint, err), time.Now()
			return Capabilities{}, p.lastErr
		}
	}
	probed := ProbeCapabilities(ctx, p.Endpoint, p.Client, p.Streams)
	p.mu.Lock()
	p.k = &probed
	p.mu.Unlock()
	return probed, nil
}

// Health is the Capabilities as /healthz reports them, or that they are
// not known yet.
func (p *CapsProbe) Health() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.k == nil {
		return map[string]any{"engine": "the DynamoDB endpoint " + p.Endpoint, "probed": false}
	}
	return p.k.Health()
}

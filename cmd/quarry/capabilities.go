package main

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

	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/ddbtable"
)

// capabilities are the DynamoDB features an endpoint offers, probed at
// start with harmless calls on a table that does not exist: an engine
// that implements an operation answers ResourceNotFoundException (or
// succeeds), one that does not answers UnknownOperationException (see
// ddbtable.IsUnsupported).
type capabilities struct {
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

// probeCapabilities finds what the systems' DynamoDB endpoint offers. The
// embedded store offers everything and is not probed.
func probeCapabilities(ctx context.Context, c *config.Config, client *dynamodb.Client, streams *dynamodbstreams.Client) capabilities {
	if c.DynamoDBEndpoint == "" {
		return capabilities{Engine: "the embedded store", Transactions: true, Streams: true, TTL: true, PITR: true}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	supported := func(err error) bool { return !ddbtable.IsUnsupported(err) }
	key := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "probe"}}
	_, terr := client.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(probeTable), Key: key}},
	}})
	_, perr := client.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(probeTable)})
	_, ttlErr := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(probeTable)})
	_, serr := streams.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(1)})
	caps := capabilities{Transactions: supported(terr), PITR: supported(perr), TTL: supported(ttlErr), Streams: supported(serr)}
	switch {
	case strings.Contains(c.DynamoDBEndpoint, "amazonaws.com"):
		caps.Engine = "AWS DynamoDB (" + c.DynamoDBEndpoint + ")"
	case !caps.Transactions && !caps.PITR:
		// The gaps ScyllaDB's compatibility document lists.
		caps.Engine = "the DynamoDB endpoint " + c.DynamoDBEndpoint + " (ScyllaDB Alternator or alike)"
	default:
		caps.Engine = "the DynamoDB endpoint " + c.DynamoDBEndpoint
	}
	return caps
}

// missing returns the message refusing a system that needs features the
// endpoint lacks ("" when it has them all).
func (k capabilities) missing(system string, needs ...string) string {
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

// health is the capabilities as /healthz reports them.
func (k capabilities) health() map[string]any {
	return map[string]any{"engine": k.Engine, "transactions": k.Transactions, "streams": k.Streams, "ttl": k.TTL, "pointInTimeRecovery": k.PITR}
}

// capsProbe probes the DynamoDB endpoint's capabilities once it answers,
// and remembers them.
type capsProbe struct {
	c       *config.Config
	client  *dynamodb.Client
	streams *dynamodbstreams.Client

	probing sync.Mutex // one probe at a time
	mu      sync.Mutex
	k       *capabilities
	// The last failure to reach the endpoint, given again for a while to
	// the systems that ask next, so that a silent endpoint costs one
	// timeout at start, not one per system.
	lastErr error
	lastAt  time.Time
}

// capsRecheck is how long a failure to reach the endpoint is given again
// without a new probe.
const capsRecheck = 500 * time.Millisecond

// get returns the endpoint's capabilities, probing them on the first call
// that finds the endpoint reachable; while it is not, the error says so.
func (p *capsProbe) get(ctx context.Context) (capabilities, error) {
	p.probing.Lock()
	defer p.probing.Unlock()
	p.mu.Lock()
	k := p.k
	p.mu.Unlock()
	if k != nil {
		return *k, nil
	}
	if p.c.DynamoDBEndpoint != "" {
		if p.lastErr != nil && time.Since(p.lastAt) < capsRecheck {
			return capabilities{}, p.lastErr
		}
		_, err := p.client.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		if err != nil && unreachable(err) {
			p.lastErr, p.lastAt = fmt.Errorf("dynamodb endpoint %s: %w", p.c.DynamoDBEndpoint, err), time.Now()
			return capabilities{}, p.lastErr
		}
	}
	probed := probeCapabilities(ctx, p.c, p.client, p.streams)
	p.mu.Lock()
	p.k = &probed
	p.mu.Unlock()
	return probed, nil
}

// health is the capabilities as /healthz reports them, or that they are
// not known yet.
func (p *capsProbe) health() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.k == nil {
		return map[string]any{"engine": "the DynamoDB endpoint " + p.c.DynamoDBEndpoint, "probed": false}
	}
	return p.k.health()
}

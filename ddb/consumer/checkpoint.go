package consumer

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Checkpointer keeps the position of consumers: the sequence number of the
// last record handled, per stream.
type Checkpointer interface {
	// Load returns the checkpoint of the stream, or "" when it has none.
	Load(ctx context.Context, streamArn string) (seq string, err error)
	// Save records that every record up to seq has been handled. A
	// checkpoint never moves backwards: saving an older sequence number
	// than the stored one leaves it unchanged.
	Save(ctx context.Context, streamArn, seq string) error
}

// MemoryCheckpointer keeps checkpoints in memory, for tests and for
// consumers that always start over. It is safe for concurrent use.
type MemoryCheckpointer struct {
	mu sync.Mutex
	m  map[string]string
}

// NewMemoryCheckpointer returns an empty MemoryCheckpointer.
func NewMemoryCheckpointer() *MemoryCheckpointer {
	return &MemoryCheckpointer{m: map[string]string{}}
}

// Load implements Checkpointer.
func (c *MemoryCheckpointer) Load(_ context.Context, streamArn string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[streamArn], nil
}

// Save implements Checkpointer.
func (c *MemoryCheckpointer) Save(_ context.Context, streamArn, seq string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.m[streamArn]; cur == "" || seqLess(cur, seq) {
		c.m[streamArn] = seq
	}
	return nil
}

// TableCheckpointer keeps checkpoints in a DynamoDB table whose hash key is
// streamArn (S); each item holds the checkpoint in sequenceNumber (S).
// Several processes can share the table: a consumer restarted anywhere
// resumes where the last one stopped, and concurrent saves never move a
// checkpoint backwards.
type TableCheckpointer struct {
	client *dynamodb.Client
	table  string
}

// NewTableCheckpointer returns a Checkpointer storing checkpoints in table
// tableName through client. See CreateTable.
func NewTableCheckpointer(client *dynamodb.Client, tableName string) *TableCheckpointer {
	return &TableCheckpointer{client: client, table: tableName}
}

// CreateTable creates the checkpoint table (on-demand billing) unless it
// exists, and waits until it is active.
func (c *TableCheckpointer) CreateTable(ctx context.Context) error {
	_, err := c.client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(c.table),
		AttributeDefinitions: []dtypes.AttributeDefinition{{AttributeName: aws.String("streamArn"), AttributeType: dtypes.ScalarAttributeTypeS}},
		KeySchema:            []dtypes.KeySchemaElement{{AttributeName: aws.String("streamArn"), KeyType: dtypes.KeyTypeHash}},
		BillingMode:          dtypes.BillingModePayPerRequest,
	})
	var inUse *dtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return err
	}
	return dynamodb.NewTableExistsWaiter(c.client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.table)}, 5*time.Minute)
}

// Load implements Checkpointer with a strongly consistent read.
func (c *TableCheckpointer) Load(ctx context.Context, streamArn string) (string, error) {
	out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(c.table),
		Key:            map[string]dtypes.AttributeValue{"streamArn": &dtypes.AttributeValueMemberS{Value: streamArn}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", err
	}
	if v, ok := out.Item["sequenceNumber"].(*dtypes.AttributeValueMemberS); ok {
		return v.Value, nil
	}
	return "", nil
}

// Save implements Checkpointer with a conditional write that only moves
// the checkpoint forwards.
func (c *TableCheckpointer) Save(ctx context.Context, streamArn, seq string) error {
	// Sequence numbers are decimal strings: a longer one is larger, and
	// among equally long ones the string order is the numeric order.
	seq = strings.TrimLeft(seq, "0")
	if seq == "" {
		seq = "0"
	}
	padded := strings.Repeat("0", max(0, 21-len(seq))) + seq
	_, err := c.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.table),
		Item: map[string]dtypes.AttributeValue{
			"streamArn":      &dtypes.AttributeValueMemberS{Value: streamArn},
			"sequenceNumber": &dtypes.AttributeValueMemberS{Value: padded},
		},
		ConditionExpression: aws.String("attribute_not_exists(sequenceNumber) OR size(sequenceNumber) < :len OR (size(sequenceNumber) = :len AND sequenceNumber <= :seq)"),
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{
			":len": &dtypes.AttributeValueMemberN{Value: strconv.Itoa(len(padded))},
			":seq": &dtypes.AttributeValueMemberS{Value: padded},
		},
	})
	var ccf *dtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // another process is already further
	}
	return err
}

package ddb_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/consumer"
)

// openExampleStore opens a store in a new temporary directory; the
// returned function closes the store and removes the directory.
func openExampleStore(opts *ddb.Options) (*ddb.Store, func()) {
	dir, err := os.MkdirTemp("", "ddb-example-")
	if err != nil {
		log.Fatal(err)
	}
	s, err := ddb.Open(dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	return s, func() {
		s.Close()
		os.RemoveAll(dir)
	}
}

// createExampleTable creates an on-demand table keyed by the string pk and,
// when sk is not empty, the string sort key sk. stream, when not nil, turns
// on its stream.
func createExampleTable(ctx context.Context, c *dynamodb.Client, name, sk string, stream *types.StreamSpecification) *types.TableDescription {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		StreamSpecification:  stream,
	}
	if sk != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	out, err := c.CreateTable(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	return out.TableDescription
}

// A store opened in a directory, used in-process through an aws-sdk-go-v2
// client: create a table, put an item, get it back.
func Example() {
	s, closeStore := openExampleStore(nil)
	defer closeStore()
	ctx := context.Background()
	c := ddb.NewClient(s) // no socket, no credentials: the client is trusted

	// Tables are ACTIVE as soon as CreateTable returns.
	createExampleTable(ctx, c, "users", "", nil)

	type user struct {
		ID    string `dynamodbav:"pk"`
		Name  string `dynamodbav:"name"`
		Score int    `dynamodbav:"score"`
	}
	item, err := attributevalue.MarshalMap(user{ID: "u1", Name: "Ada", Score: 42})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("users"), Item: item}); err != nil {
		log.Fatal(err)
	}

	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("users"),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "u1"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	var got user
	if err := attributevalue.UnmarshalMap(out.Item, &got); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s, %d\n", got.ID, got.Name, got.Score)
	// Output:
	// u1: Ada, 42
}

// Query reads the items of one partition key in sort key order, here
// those whose sort key begins with a prefix, newest first.
func ExampleNewClient_query() {
	s, closeStore := openExampleStore(nil)
	defer closeStore()
	ctx := context.Background()
	c := ddb.NewClient(s)
	createExampleTable(ctx, c, "orders", "sk", nil)

	for _, o := range [][3]string{
		{"alice", "2026-01-05#o1", "book"},
		{"alice", "2026-02-11#o2", "lamp"},
		{"alice", "2026-02-20#o3", "desk"},
		{"bob", "2026-02-01#o4", "pen"},
	} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
			"pk":   &types.AttributeValueMemberS{Value: o[0]},
			"sk":   &types.AttributeValueMemberS{Value: o[1]},
			"what": &types.AttributeValueMemberS{Value: o[2]},
		}}); err != nil {
			log.Fatal(err)
		}
	}

	out, err := c.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String("orders"),
		KeyConditionExpression: aws.String("pk = :who AND begins_with(sk, :month)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":who":   &types.AttributeValueMemberS{Value: "alice"},
			":month": &types.AttributeValueMemberS{Value: "2026-02"},
		},
		ScanIndexForward: aws.Bool(false), // descending sort key order
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range out.Items {
		fmt.Println(it["sk"].(*types.AttributeValueMemberS).Value, it["what"].(*types.AttributeValueMemberS).Value)
	}
	fmt.Println("count:", out.Count)
	// Output:
	// 2026-02-20#o3 desk
	// 2026-02-11#o2 lamp
	// count: 2
}

// TransactWriteItems applies all its actions or none: a transfer whose
// condition fails is canceled, and the reasons name the failing action.
func ExampleNewClient_transaction() {
	s, closeStore := openExampleStore(nil)
	defer closeStore()
	ctx := context.Background()
	c := ddb.NewClient(s)
	createExampleTable(ctx, c, "accounts", "", nil)
	for _, a := range []string{"alice", "bob"} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("accounts"), Item: map[string]types.AttributeValue{
			"pk":      &types.AttributeValueMemberS{Value: a},
			"balance": &types.AttributeValueMemberN{Value: "100"},
		}}); err != nil {
			log.Fatal(err)
		}
	}

	// transfer moves amount from one account to another, provided the
	// first holds at least that much.
	transfer := func(from, to, amount string) error {
		amt := map[string]types.AttributeValue{":amt": &types.AttributeValueMemberN{Value: amount}}
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{
				TableName:                 aws.String("accounts"),
				Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: from}},
				UpdateExpression:          aws.String("SET balance = balance - :amt"),
				ConditionExpression:       aws.String("balance >= :amt"),
				ExpressionAttributeValues: amt,
			}},
			{Update: &types.Update{
				TableName:                 aws.String("accounts"),
				Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: to}},
				UpdateExpression:          aws.String("SET balance = balance + :amt"),
				ExpressionAttributeValues: amt,
			}},
		}})
		return err
	}

	fmt.Println("transfer 30:", transfer("alice", "bob", "30"))
	err := transfer("alice", "bob", "500")
	var canceled *types.TransactionCanceledException
	if errors.As(err, &canceled) {
		var codes []string
		for _, r := range canceled.CancellationReasons {
			codes = append(codes, aws.ToString(r.Code))
		}
		fmt.Println("transfer 500: canceled:", strings.Join(codes, ", "))
	}

	for _, a := range []string{"alice", "bob"} {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String("accounts"),
			Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: a}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(a, out.Item["balance"].(*types.AttributeValueMemberN).Value)
	}
	// Output:
	// transfer 30: <nil>
	// transfer 500: canceled: ConditionalCheckFailed, None
	// alice 70
	// bob 130
}

// A table's stream, read with the consumer package through the store's
// in-process DynamoDB Streams client: every change is delivered in order,
// and the consumer checkpoints what its handler accepted.
func ExampleNewStreamsClient() {
	s, closeStore := openExampleStore(nil)
	defer closeStore()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := ddb.NewClient(s)
	desc := createExampleTable(ctx, c, "events", "", &types.StreamSpecification{
		StreamEnabled:  aws.Bool(true),
		StreamViewType: types.StreamViewTypeNewAndOldImages,
	})

	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "e1"}}
	for _, state := range []string{"new", "done"} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("events"), Item: map[string]types.AttributeValue{
			"pk":    key["pk"],
			"state": &types.AttributeValueMemberS{Value: state},
		}}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("events"), Key: key}); err != nil {
		log.Fatal(err)
	}

	// The handler sees the three changes, then stops the consumer: a real
	// one runs until its context ends.
	seen := 0
	handle := func(ctx context.Context, records []stypes.Record) error {
		for _, r := range records {
			state := "-"
			if v, ok := r.Dynamodb.NewImage["state"].(*stypes.AttributeValueMemberS); ok {
				state = v.Value
			}
			fmt.Println(r.EventName, r.Dynamodb.Keys["pk"].(*stypes.AttributeValueMemberS).Value, state)
			if seen++; seen == 3 {
				cancel()
			}
		}
		return nil
	}
	streams := ddb.NewStreamsClient(s, func(o *dynamodbstreams.Options) { o.RetryMaxAttempts = 1 })
	cp := consumer.NewMemoryCheckpointer()
	// In the store's own process, the store wakes the consumer when the
	// table changes (Changes), so it need not poll an idle stream often.
	cons := consumer.New(streams, aws.ToString(desc.LatestStreamArn), cp, handle, consumer.Options{Changes: s.StreamChanges})
	if err := cons.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// INSERT e1 new
	// MODIFY e1 done
	// REMOVE e1 -
}

// Handler serves the DynamoDB wire protocol over HTTP, for the AWS CLI,
// boto3 or any SDK; with Options.Credentials set, requests must be signed
// with one of its keys.
func ExampleStore_Handler() {
	s, closeStore := openExampleStore(&ddb.Options{Credentials: map[string]string{"AKIDEXAMPLE": "secret"}})
	defer closeStore()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx := context.Background()

	c := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	createExampleTable(ctx, c, "over-http", "", nil)
	out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.TableNames)

	wrong := dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "not the secret", ""),
		RetryMaxAttempts: 1,
	})
	_, err = wrong.ListTables(ctx, &dynamodb.ListTablesInput{})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		fmt.Println("wrong secret:", apiErr.ErrorCode())
	}
	// Output:
	// [over-http]
	// wrong secret: InvalidSignatureException
}

package ddb_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestStreamChanges: a reader waiting on a stream is woken by a write of
// its table, and only then: writes of other tables, streamed or not, leave
// it waiting; after the wake GetRecords returns the write.
func TestStreamChanges(t *testing.T) {
	e := stNew(t)
	arn := e.createTable("watched", "NEW_IMAGE")
	e.createTable("other", "NEW_IMAGE")
	e.createTable("plain", "")
	it := e.mustIterator(arn, stypes.ShardIteratorTypeLatest, "")

	ch := e.store.StreamChanges(arn)
	if ch == nil || closed(ch) {
		t.Fatal("a stream nobody wrote to: channel nil or closed")
	}
	e.put("other", map[string]dtypes.AttributeValue{"pk": stS("a")})
	e.put("plain", map[string]dtypes.AttributeValue{"pk": stS("a")})
	if closed(ch) {
		t.Fatal("woken by writes of other tables")
	}
	e.put("watched", map[string]dtypes.AttributeValue{"pk": stS("x")})
	if !closed(ch) {
		t.Fatal("not woken by a write of its table")
	}
	out, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	if err != nil || len(out.Records) != 1 {
		t.Fatalf("GetRecords after the wake: %d records, %v; want the write", len(out.Records), err)
	}
	if again := e.store.StreamChanges(arn); closed(again) {
		t.Fatal("the next wait is closed before any new write")
	}
	if e.store.StreamChanges("arn:aws:dynamodb:ddblocal:000000000000:table/nope/stream/x") != nil {
		t.Fatal("an unknown stream: want nil")
	}
}

package ddb_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// readCloserOnly hides every method of its io.ReadCloser but Read and
// Close.
type readCloserOnly struct {
	io.ReadCloser
}

// plainBodyClient sends the SDK's requests through next with each request
// body reduced to Read and Close. The SDK closes a request body once Do
// returns and its closed body answers WriteTo with io.EOF; net/http's
// transport drains the body after sending it, prefers WriteTo, takes that
// io.EOF for a failed write and closes the connection under the response
// being read (aws-sdk-go-v2 issues #1825 and #2737). Without WriteTo the
// drain ends at Read's io.EOF. What fails then is the server's doing.
type plainBodyClient struct {
	next *http.Client
}

func (c plainBodyClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = readCloserOnly{req.Body}
	}
	return c.next.Do(req)
}

// TestQueryPagesOverLoopback sends Query pages larger than the client's
// read buffer from many aws-sdk-go-v2 clients at once, each on its own
// keep-alive connection, to the store's handler served over loopback: the
// server answers every one in full.
func TestQueryPagesOverLoopback(t *testing.T) {
	s := newStore(t)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	newSDK := func() *dynamodb.Client {
		tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
		t.Cleanup(tr.CloseIdleConnections)
		return dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(srv.URL),
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDQUARRYTEST", "quarry-test-secret", ""),
			HTTPClient:   plainBodyClient{next: &http.Client{Transport: tr}},
			Retryer:      aws.NopRetryer{},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newSDK()
	table := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})

	const items, page = 300, 100
	payload := strings.Repeat("x", 200)
	for first := 0; first < items; first += 25 {
		var reqs []types.WriteRequest
		for i := first; i < first+25; i++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: attrs{
				"pk": avS("p"), "sk": avN(strconv.Itoa(i)), "payload": avS(payload)}}})
		}
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
		if err != nil || len(out.UnprocessedItems) > 0 {
			t.Fatalf("BatchWriteItem: %v, %d tables unprocessed", err, len(out.UnprocessedItems))
		}
	}

	const clients, perClient = 8, 60
	errs := make(chan error, clients*perClient)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newSDK()
			for i := range perClient {
				from := (w*perClient + i) % (items - page + 1)
				out, err := c.Query(ctx, &dynamodb.QueryInput{
					TableName:                 aws.String(table),
					KeyConditionExpression:    aws.String("pk = :p AND sk >= :s"),
					ExpressionAttributeValues: attrs{":p": avS("p"), ":s": avN(strconv.Itoa(from))},
					Limit:                     aws.Int32(page),
				})
				switch {
				case err != nil:
					errs <- err
				case len(out.Items) != page:
					errs <- fmt.Errorf("Query from %d: %d items, want %d", from, len(out.Items), page)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n < 3 {
			t.Error(err)
		}
		n++
	}
	if n > 0 {
		t.Errorf("%d of %d Query requests failed", n, clients*perClient)
	}
}

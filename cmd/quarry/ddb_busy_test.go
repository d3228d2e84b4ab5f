package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// TestDDBBusyAnswerSDK fills `ddb serve --ddb-max-conns 1` with one idle
// keep-alive connection and calls it with aws-sdk-go-v2: the SDK gets
// DynamoDB's ServiceUnavailableException on each attempt (it retries it)
// and logs no warning (it logged a checksum mismatch on every refused
// attempt while the busy answer had no X-Amz-Crc32).
func TestDDBBusyAnswerSDK(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ddb", "serve", "--listen", addr, "--data-dir", t.TempDir(), "--ddb-max-conns", "1"}, noEnv, &logs, &logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("ddb serve did not stop")
		}
	})
	waitFor(t, "listening log", func() bool { return strings.Contains(logs.String(), "listening on "+addr) })

	// The one slot: a connection that has been answered once (so the
	// server has accepted it) and stays open, idle.
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	held.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(held, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(held), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("held connection: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	var mu sync.Mutex
	var warnings []string
	logger := logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if c == logging.Warn {
			mu.Lock()
			warnings = append(warnings, fmt.Sprintf(format, v...))
			mu.Unlock()
		}
	})
	client := &countingClient{c: &http.Client{}}
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), Logger: logger, HTTPClient: client,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		}),
	})
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	_, err = c.ListTables(cctx, &dynamodb.ListTablesInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ServiceUnavailableException" || ae.ErrorMessage() != "too many connections" {
		t.Fatalf("ListTables over the cap: %v, want ServiceUnavailableException: too many connections", err)
	}
	if n := client.n.Load(); n != 3 {
		t.Errorf("%d attempts, want 3 (the SDK retries the busy answer)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) > 0 {
		t.Fatalf("the SDK logged warnings: %q", warnings)
	}
}

// countingClient is an SDK HTTP client that counts the requests it sends.
type countingClient struct {
	c *http.Client
	n atomic.Int64
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.c.Do(r)
}

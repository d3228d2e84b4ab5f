package main

// The null server: `ddbbench -null-listen 127.0.0.1:PORT` serves, instead
// of benchmarking, a DynamoDB-wire-protocol HTTP server that stores nothing
// and answers every request with response bytes computed once at start.
// Benchmarked as one more target, it measures the floor cost of the HTTP
// round trip plus the SDK clients on this machine: the highest throughput
// any DynamoDB server could show here, however fast its storage.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// nullTargetPrefix is the X-Amz-Target prefix of DynamoDB operations.
const nullTargetPrefix = "DynamoDB_20120810."

// nullResponse is one precomputed answer: status, body, and the header
// values that depend on the body.
type nullResponse struct {
	status int
	body   []byte
	// length and crc are the Content-Length and x-amz-crc32 header values
	// (the CRC32 IEEE of body, in decimal, which the SDK verifies).
	length, crc []string
}

// newNullResponse precomputes the answer with body b.
func newNullResponse(status int, b []byte) *nullResponse {
	return &nullResponse{
		status: status,
		body:   b,
		length: []string{strconv.Itoa(len(b))},
		crc:    []string{strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10)},
	}
}

// nullHandler answers DynamoDB requests by operation (the X-Amz-Target
// header) with precomputed bytes; it reads and discards request bodies.
type nullHandler struct {
	byOp    map[string]*nullResponse
	unknown *nullResponse
	// requests numbers the x-amzn-RequestId values.
	requests atomic.Uint64
}

// nullContentType is the Content-Type header value of every response
// (shared, only read).
var nullContentType = []string{"application/x-amz-json-1.0"}

// ServeHTTP implements http.Handler.
func (h *nullHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	resp := h.unknown
	if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), nullTargetPrefix); ok && r.Method == http.MethodPost {
		if rr, ok := h.byOp[op]; ok {
			resp = rr
		}
	}
	hdr := w.Header()
	hdr["Content-Type"] = nullContentType
	hdr["Content-Length"] = resp.length
	hdr["X-Amz-Crc32"] = resp.crc
	hdr["X-Amzn-Requestid"] = []string{"null-" + strconv.FormatUint(h.requests.Add(1), 10)}
	w.WriteHeader(resp.status)
	w.Write(resp.body)
}

// jsonAV is an attribute value in DynamoDB's JSON wire form ({"S": "..."}
// or {"N": "..."}).
type jsonAV map[string]string

// toJSONItem converts an item of S and N attributes (what newItem makes)
// to its wire form.
func toJSONItem(item map[string]types.AttributeValue) map[string]jsonAV {
	out := make(map[string]jsonAV, len(item))
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = jsonAV{"S": v.Value}
		case *types.AttributeValueMemberN:
			out[k] = jsonAV{"N": v.Value}
		default:
			panic(fmt.Sprintf("null server: attribute %s: unsupported type %T", k, v))
		}
	}
	return out
}

// newNullHandler precomputes the answers to what ddbbench sends with the
// settings of cfg (table name, item size, Query page size):
//
//   - DeleteTable: 400 ResourceNotFoundException (there is never a table
//     to drop, so setup goes straight to CreateTable);
//   - CreateTable and DescribeTable: the table (pk S hash, sk N range,
//     on demand), ACTIVE, so the SDK's waiters finish at once;
//   - BatchWriteItem: no unprocessed items;
//   - GetItem: an item shaped like newItem's (pk S, sk N, n N, ts N,
//     payload S, about cfg.itemBytes bytes);
//   - PutItem: {};
//   - Query: cfg.pageSize such items with Count, ScannedCount and a
//     LastEvaluatedKey, as a full page from a larger partition;
//   - anything else: 400 UnknownOperationException.
func newNullHandler(cfg *config) (*nullHandler, error) {
	h := &nullHandler{byOp: map[string]*nullResponse{}}
	add := func(op string, status int, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("null server: %s: %w", op, err)
		}
		r := newNullResponse(status, b)
		if op == "" {
			h.unknown = r
		} else {
			h.byOp[op] = r
		}
		return nil
	}
	type attrDef struct {
		AttributeName, AttributeType string
	}
	type keyElem struct {
		AttributeName, KeyType string
	}
	type throughput struct {
		NumberOfDecreasesToday                int64
		ReadCapacityUnits, WriteCapacityUnits int64
	}
	type billing struct {
		BillingMode                       string
		LastUpdateToPayPerRequestDateTime float64
	}
	type tableDesc struct {
		AttributeDefinitions  []attrDef
		TableName             string
		KeySchema             []keyElem
		TableStatus           string
		CreationDateTime      float64
		ProvisionedThroughput throughput
		BillingModeSummary    billing
		TableSizeBytes        int64
		ItemCount             int64
		TableArn              string
		TableId               string
	}
	created := float64(time.Now().Unix())
	table := tableDesc{
		AttributeDefinitions: []attrDef{{"pk", "S"}, {"sk", "N"}},
		TableName:            cfg.table,
		KeySchema:            []keyElem{{"pk", "HASH"}, {"sk", "RANGE"}},
		TableStatus:          "ACTIVE",
		CreationDateTime:     created,
		BillingModeSummary:   billing{"PAY_PER_REQUEST", created},
		TableArn:             "arn:aws:dynamodb:us-east-1:000000000000:table/" + cfg.table,
		TableId:              "00000000-0000-0000-0000-000000000000",
	}
	type apiError struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	const errPrefix = "com.amazonaws.dynamodb.v20120810#"
	rnd := rand.New(rand.NewPCG(1, 2))
	page := make([]map[string]jsonAV, cfg.pageSize)
	for i := range page {
		page[i] = toJSONItem(newItem(cfg, queryKey(0), i, rnd))
	}
	last := map[string]jsonAV{"pk": page[len(page)-1]["pk"], "sk": page[len(page)-1]["sk"]}
	for _, a := range []struct {
		op     string
		status int
		v      any
	}{
		{"DeleteTable", http.StatusBadRequest, apiError{errPrefix + "ResourceNotFoundException", "Requested resource not found"}},
		{"CreateTable", http.StatusOK, map[string]any{"TableDescription": table}},
		{"DescribeTable", http.StatusOK, map[string]any{"Table": table}},
		{"BatchWriteItem", http.StatusOK, map[string]any{"UnprocessedItems": map[string]any{}}},
		{"GetItem", http.StatusOK, map[string]any{"Item": toJSONItem(newItem(cfg, getKey(0), 0, rnd))}},
		{"PutItem", http.StatusOK, map[string]any{}},
		{"Query", http.StatusOK, map[string]any{"Items": page, "Count": len(page), "ScannedCount": len(page), "LastEvaluatedKey": last}},
		{"", http.StatusBadRequest, apiError{errPrefix + "UnknownOperationException", "The null server answers only DeleteTable, CreateTable, DescribeTable, BatchWriteItem, GetItem, PutItem and Query"}},
	} {
		if err := add(a.op, a.status, a.v); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// checkLoopbackListen refuses listen addresses that are not on this
// machine's loopback (like checkLoopback for targets): host:port with an
// explicit loopback IP or localhost; port 0 picks a free port.
func checkLoopbackListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: want host:port: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: not a loopback address (the null server listens on 127.0.0.1 only)", addr)
	}
	return nil
}

// listenNull checks that addr is on loopback and listens on it.
func listenNull(addr string) (net.Listener, error) {
	if err := checkLoopbackListen(addr); err != nil {
		return nil, err
	}
	return net.Listen("tcp", addr)
}

// serveNull serves the null server for cfg on l until ctx is done, then
// shuts down (waiting up to 5 s for requests in flight). It logs
// "listening on ADDR" to logw once l accepts connections.
func serveNull(ctx context.Context, cfg *config, l net.Listener, logw io.Writer) error {
	h, err := newNullHandler(cfg)
	if err != nil {
		l.Close()
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	fmt.Fprintf(logw, "ddbbench: null DynamoDB server (table %s, items ~%d bytes, Query page %d) listening on %s\n", cfg.table, cfg.itemBytes, cfg.pageSize, l.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runNull is the -null-listen mode: it serves the null server on
// cfg.nullListen until SIGINT or SIGTERM, then exits cleanly.
func runNull(cfg *config) error {
	l, err := listenNull(cfg.nullListen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	serve := serveNull
	if cfg.nullRaw {
		serve = serveNullRaw
	}
	if err := serve(ctx, cfg, l, os.Stderr); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "ddbbench: null server stopped")
	return nil
}

package ddb_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/quarrydb/quarry/ddb"
)

// TestHostileBodies sends requests whose headers announce a body that never
// comes (raw TCP, the connection held open) and checks the store answers
// from the headers alone, without waiting for the body: unsigned, wrongly
// signed (X-Amz-Content-Sha256 signed, so the signature is checked before
// the body), from an unknown key, and over the size limit. Requests with a
// body check that a signed payload hash must match the body.
func TestHostileBodies(t *testing.T) {
	if isExternal() {
		t.Skip("embedded store only")
	}
	open := func(creds map[string]string) string {
		s, err := ddb.Open(t.TempDir(), &ddb.Options{Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	signed := open(map[string]string{"AKIDQUARRY": "s3cret"})
	open2 := open(nil)

	emptyHash := func(b string) string { sum := sha256.Sum256([]byte(b)); return hex.EncodeToString(sum[:]) }
	// request builds a ListTables request to addr announcing length bytes,
	// signed with secret over payloadHash (no signature when secret is
	// ""), with X-Amz-Content-Sha256 when sendHash.
	request := func(addr string, length int64, id, secret, payloadHash string, sendHash bool) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", nil)
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.ContentLength = length
		if sendHash {
			req.Header.Set("X-Amz-Content-Sha256", payloadHash)
		}
		if secret != "" {
			err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}, req, payloadHash, "dynamodb", "us-east-1", time.Now())
			if err != nil {
				t.Fatal(err)
			}
		}
		return req
	}

	stalled := []struct {
		name string
		addr string
		req  *http.Request
		want string
	}{
		{"unsigned, 16 MiB announced", signed, request(signed, 16<<20, "", "", "", false), "MissingAuthenticationTokenException"},
		{"unknown key", signed, request(signed, 16<<20, "AKIDOTHER", "s3cret", emptyHash("{}"), false), "UnrecognizedClientException"},
		{"wrong secret, hash signed", signed, request(signed, 16<<20, "AKIDQUARRY", "wrong", emptyHash("{}"), true), "InvalidSignatureException"},
		{"over the limit, signed", signed, request(signed, 16<<20+1, "AKIDQUARRY", "s3cret", emptyHash("{}"), true), "Request size exceeded"},
		{"over the limit, no credentials", open2, request(open2, 1<<30, "", "", "", false), "Request size exceeded"},
	}
	for _, tt := range stalled {
		t.Run(tt.name, func(t *testing.T) {
			status, body := headersOnly(t, tt.addr, tt.req)
			if status != 400 || !strings.Contains(body, tt.want) || !strings.Contains(body, "__type") {
				t.Errorf("got %d %s, want 400 with %q", status, body, tt.want)
			}
		})
	}

	// A chunked body (no Content-Length) one byte over the limit: the
	// length is known only by reading, and the read stops at the limit.
	t.Run("chunked, over the limit", func(t *testing.T) {
		body := io.MultiReader(strings.NewReader(`{"ExclusiveStartTableName":"`), strings.NewReader(strings.Repeat("a", 16<<20+1-len(`{"ExclusiveStartTableName":"`)-2)), strings.NewReader(`"}`))
		req := request(open2, -1, "", "", "", false)
		req.Body = io.NopCloser(body)
		req.TransferEncoding = []string{"chunked"}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "Request size exceeded") {
			t.Errorf("got %d %.200s, want 400 with the request-size error", resp.StatusCode, b)
		}
	})

	withBody := []struct {
		name       string
		signedOver string // the body the hash is computed over
		sent       string // the body sent
		sendHash   bool
		want       string // "" for success
	}{
		{"hash signed, body matches", "{}", "{}", true, ""},
		{"hash signed, body differs", "{}", `{"Limit":1}`, true, "InvalidSignatureException"},
		{"hash not sent, body matches", "{}", "{}", false, ""},
		{"hash not sent, body differs", "{}", `{"Limit":1}`, false, "InvalidSignatureException"},
	}
	for _, tt := range withBody {
		t.Run(tt.name, func(t *testing.T) {
			req := request(signed, int64(len(tt.sent)), "AKIDQUARRY", "s3cret", emptyHash(tt.signedOver), tt.sendHash)
			req.Body = io.NopCloser(strings.NewReader(tt.sent))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if tt.want == "" {
				if resp.StatusCode != 200 {
					t.Errorf("got %d %s, want 200", resp.StatusCode, b)
				}
				return
			}
			if resp.StatusCode != 400 || !strings.Contains(string(b), tt.want) {
				t.Errorf("got %d %s, want 400 with %q", resp.StatusCode, b, tt.want)
			}
		})
	}
}

// headersOnly writes req's request line and headers to addr and no body,
// then reads the answer, which must come within 5 s.
func headersOnly(t *testing.T, addr string, req *http.Request) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", req.Host, req.ContentLength)
	names := make([]string, 0, len(req.Header))
	for k := range req.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range req.Header[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no answer without the body: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/awsclient"
)

// TestNewClientPlainBodies checks that the harness's clients send through
// awsclient.PlainBodyClient, as quarry's own do.
func TestNewClientPlainBodies(t *testing.T) {
	if hc := newClient("http://127.0.0.1:1").Options().HTTPClient; hc == nil {
		t.Fatal("the client has no HTTPClient")
	} else if _, ok := hc.(awsclient.PlainBodyClient); !ok {
		t.Errorf("the client's HTTPClient is %T, want an awsclient.PlainBodyClient", hc)
	}
}

// TestTruncatedResponseCounted checks that awsclient.PlainBodyClient does
// not hide a server's fault: a Query response cut off after its header
// (the connection closed halfway through the body) still fails the
// operation, and so counts as an error of the measurement.
func TestTruncatedResponseCounted(t *testing.T) {
	cfg, err := parseFlags([]string{"-targets", "x=http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := newNullHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	full := h.byOp["Query"]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		writeTruncated(bw, full.body, full.crc[0])
		bw.Flush()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = makeOp(cfg, "Query")(ctx, newClient(srv.URL), rand.New(rand.NewPCG(1, 2)))
	if err == nil {
		t.Fatal("Query of a truncated response succeeded")
	}
	if !strings.Contains(err.Error(), "EOF") {
		t.Errorf("Query of a truncated response: %v, want an unexpected EOF", err)
	}
}

// writeTruncated writes a 200 answer announcing all of body but carrying
// only its first half.
func writeTruncated(w io.Writer, body []byte, crc string) {
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\nX-Amz-Crc32: %s\r\nX-Amzn-Requestid: cut\r\n\r\n", len(body), crc)
	w.Write(body[:len(body)/2])
}

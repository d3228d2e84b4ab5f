package adminsock

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/awsclient"
)

// TestClientPlainBodies checks that the admin channel's client sends its
// requests through awsclient.PlainBodyClient.
func TestClientPlainBodies(t *testing.T) {
	dir := t.TempDir()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, `{"TableNames":[]}`)
	})
	stop, err := Serve(dir, h, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Client(ctx, dir, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if hc := c.Options().HTTPClient; hc == nil {
		t.Fatal("the client has no HTTPClient")
	} else if _, ok := hc.(awsclient.PlainBodyClient); !ok {
		t.Errorf("the client's HTTPClient is %T, want an awsclient.PlainBodyClient", hc)
	}
}

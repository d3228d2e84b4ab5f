package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestServeWarnsUnknownEnv: a misspelt QUARRY_* variable is named at
// start with the setting it most likely meant.
func TestServeWarnsUnknownEnv(t *testing.T) {
	t.Setenv("QUARRY_DDB_SYNC_INTERVALL", "1ms")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ddb", "serve", "--listen", addr, "--data-dir", t.TempDir()}, noEnv, &logs, &logs)
	}()
	waitFor(t, "listening log", func() bool { return strings.Contains(logs.String(), "listening on "+addr) })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
	want := "unknown environment variable QUARRY_DDB_SYNC_INTERVALL is ignored; did you mean QUARRY_DDB_SYNC_INTERVAL?"
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("no warning %q in:\n%s", want, logs.String())
	}
}

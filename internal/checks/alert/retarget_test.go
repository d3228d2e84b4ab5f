package alert

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// A retried delivery goes where the user's targets point at the time of
// the retry: a webhook moved to another URL (with another secret) gets the
// retries, a removed webhook stops them, and a failing lookup keeps the
// target the delivery had.
func TestDeliverRetriesFollowTheCurrentTarget(t *testing.T) {
	tests := []struct {
		name string
		// next returns the target for the n-th retry lookup, given the
		// servers: old fails with 500 every time, new accepts.
		next         func(n int, old, new *webhookServer) (Target, error)
		wantOld      int // deliveries the old URL received
		wantNew      int
		wantRemoved  bool // OnResult reports ErrTargetRemoved
		wantAttempts int
	}{
		{
			name: "moved to another URL and secret",
			next: func(_ int, _, nw *webhookServer) (Target, error) {
				return Target{WebhookURL: nw.URL, WebhookSecret: "new-secret"}, nil
			},
			wantOld: 1, wantNew: 1, wantAttempts: 2,
		},
		{
			name: "webhook removed",
			next: func(int, *webhookServer, *webhookServer) (Target, error) {
				return Target{Email: "someone@example.com"}, nil
			},
			wantOld: 1, wantRemoved: true, wantAttempts: 2,
		},
		{
			name: "lookup fails: the previous target is retried",
			next: func(int, *webhookServer, *webhookServer) (Target, error) {
				return Target{}, errors.New("store unreachable")
			},
			wantOld: 3, wantAttempts: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newWebhookServer(t, "old-secret", webhookStep{status: 500}, webhookStep{status: 500}, webhookStep{status: 500})
			nw := newWebhookServer(t, "new-secret", webhookStep{status: 200})
			rec := &recorder{}
			opts := rec.options()
			opts.MaxAttempts = 3
			var mu sync.Mutex
			n := 0
			opts.CurrentTarget = func(_ context.Context, a Alert) (Target, error) {
				mu.Lock()
				defer mu.Unlock()
				n++
				if a.UserID != "123456" {
					t.Errorf("CurrentTarget asked for user %q", a.UserID)
				}
				return tt.next(n, old, nw)
			}
			err := New(opts).Deliver(context.Background(), testAlert("a"), Target{WebhookURL: old.URL, WebhookSecret: "old-secret"})
			oldN, _, oldProblems := old.snapshot()
			newN, _, newProblems := nw.snapshot()
			if oldN != tt.wantOld {
				t.Errorf("old URL got %d deliveries, want %d", oldN, tt.wantOld)
			}
			if newN != tt.wantNew {
				t.Errorf("new URL got %d deliveries, want %d", newN, tt.wantNew)
			}
			if p := append(oldProblems, newProblems...); len(p) > 0 {
				t.Errorf("webhook problems (signatures with the right secret): %v", p)
			}
			r := rec.Results()
			if len(r) != 1 || r[0].Attempts != tt.wantAttempts {
				t.Fatalf("results %+v, want one after %d attempts", r, tt.wantAttempts)
			}
			if errors.Is(r[0].Err, ErrTargetRemoved) != tt.wantRemoved || errors.Is(err, ErrTargetRemoved) != tt.wantRemoved {
				t.Errorf("result error %v (Deliver: %v), want ErrTargetRemoved %v", r[0].Err, err, tt.wantRemoved)
			}
		})
	}
}

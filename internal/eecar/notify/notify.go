// Package notify delivers EECAR notifications to a company's webhook:
// POST of the notification as JSON, retried with backoff on 5xx, 429 and
// network errors. Delivery is best effort; the notification itself is
// always in the table (GET /eecar/notifications). The outcome of each
// delivery is recorded on the company (lastDeliveredAt, or
// lastDeliveryError and lastDeliveryErrorAt), where GET /eecar/me and GET
// /eecar/me/webhook show it.
package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/backoff"
)

// Claim timing of the webhook outbox (see store.PendingWebhook).
const (
	// claimFor is how long a claim lasts without renewal: after a crash,
	// another process delivers within claimFor + sweepEvery.
	claimFor = 15 * time.Second
	// sweepEvery is how often claims are renewed and the outbox swept.
	sweepEvery = 5 * time.Second
)

// Webhooks delivers notifications, at least once: each is delivered from
// the webhook outbox written with it, and a process's claim there passes
// to the others when it dies (Run sweeps).
type Webhooks struct {
	st       *store.Store
	client   *http.Client
	log      *slog.Logger
	attempts int
	backoff  time.Duration
	owner    string
	now      func() time.Time
	wg       sync.WaitGroup

	mu   sync.Mutex
	held map[string]struct{} // outbox keys this process delivers
}

// New returns a deliverer; client should refuse private addresses
// (fetch.Fetcher.Client).
func New(st *store.Store, client *http.Client, logger *slog.Logger) *Webhooks {
	if logger == nil {
		logger = slog.Default()
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Webhooks{st: st, client: client, log: logger, attempts: 4, backoff: time.Second,
		owner: "wh-" + hex.EncodeToString(b[:]), now: time.Now, held: map[string]struct{}{}}
}

// SetRetry sets how many attempts a delivery makes (at least 1) and the
// delay before the second, doubled before each further one; the default is
// 4 attempts from 1 s. Call it before the first Notify.
func (w *Webhooks) SetRetry(attempts int, backoff time.Duration) {
	w.attempts, w.backoff = max(1, attempts), backoff
}

// Notify delivers n, just written, to its recipient's webhook, if any, in
// the background, claiming its outbox item first; a notification another
// process claimed is left to it. One written without an outbox item is
// delivered at most once.
func (w *Webhooks) Notify(ctx context.Context, n store.Notification) {
	k := store.WebhookKey(n)
	now := w.now()
	_, err := w.st.ClaimWebhook(ctx, k, w.owner, now, now.Add(claimFor))
	switch {
	case errors.Is(err, store.ErrNotFound):
		k = ""
	case err != nil:
		if !errors.Is(err, store.ErrWebhookTaken) {
			w.log.Warn("eecar: webhook outbox; the sweep delivers it", "notification", n.ID, "err", err)
		}
		return
	}
	w.send(ctx, k, n)
}

// send delivers n in the background and then removes outbox item k ("":
// none) once delivered or given up.
func (w *Webhooks) send(ctx context.Context, k string, n store.Notification) {
	c, err := w.st.GetCompany(ctx, n.RecipientID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.log.Warn("eecar: webhook recipient not read; the sweep retries", "notification", n.ID, "err", err)
		return // the claim runs out
	}
	if err != nil || c.WebhookURL == "" {
		w.done(ctx, k)
		return
	}
	if k != "" {
		w.mu.Lock()
		w.held[k] = struct{}{}
		w.mu.Unlock()
	}
	body, _ := json.Marshal(n)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		dctx := context.WithoutCancel(ctx)
		err := w.deliver(dctx, c.WebhookURL, n.ID, body)
		if err != nil {
			w.log.Warn("eecar: webhook not delivered", "company", c.ID, "notification", n.ID, "err", err)
			err = fmt.Errorf("notification %s not delivered: %w", n.ID, err)
		}
		if rerr := w.st.RecordDelivery(dctx, c.ID, c.WebhookURL, err); rerr != nil {
			w.log.Warn("eecar: record webhook delivery", "company", c.ID, "err", rerr)
		}
		w.done(dctx, k)
	}()
}

// done removes outbox item k ("": none) this process delivered.
func (w *Webhooks) done(ctx context.Context, k string) {
	if k == "" {
		return
	}
	w.mu.Lock()
	delete(w.held, k)
	w.mu.Unlock()
	if err := w.st.DoneWebhook(context.WithoutCancel(ctx), k, w.owner); err != nil {
		w.log.Warn("eecar: delivered webhook left in the outbox; it may be delivered again", "key", k, "err", err)
	}
}

// Run renews this process's claims and sweeps the outbox every few
// seconds until ctx ends.
func (w *Webhooks) Run(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.Sweep(ctx, w.now())
		}
	}
}

// Sweep renews this process's claims and delivers the outbox items whose
// reservation or claim ran out at now: notifications of a process that
// died before delivering them.
func (w *Webhooks) Sweep(ctx context.Context, now time.Time) {
	w.mu.Lock()
	held := make([]string, 0, len(w.held))
	for k := range w.held {
		held = append(held, k)
	}
	w.mu.Unlock()
	if err := w.st.RenewWebhooks(ctx, w.owner, held, now.Add(claimFor)); err != nil && ctx.Err() == nil {
		w.log.Warn("eecar: renew webhook claims", "err", err)
	}
	due, err := w.st.DueWebhooks(ctx, now, 100)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("eecar: sweep webhooks", "err", err)
		}
		return
	}
	for _, p := range due {
		if _, err := w.st.ClaimWebhook(ctx, p.Key, w.owner, now, now.Add(claimFor)); err != nil {
			continue // another process took it, or it is done
		}
		w.log.Info("eecar: delivering a webhook its process left", "notification", p.Notification.ID, "left_by", p.Owner)
		w.send(ctx, p.Key, p.Notification)
	}
}

func (w *Webhooks) deliver(ctx context.Context, url, id string, body []byte) error {
	retry := backoff.Policy{Base: w.backoff, Max: w.backoff << 6, Jitter: 0.2}.Start()
	var last error
	for i := 0; i < w.attempts; i++ {
		if i > 0 {
			if err := retry.Wait(ctx); err != nil {
				return errors.Join(last, err)
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-EECAR-Notification-Id", id)
		resp, err := w.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode < 300:
			return nil
		case resp.StatusCode >= 500 || resp.StatusCode == 429 || resp.StatusCode == 408:
			last = fmt.Errorf("status %d", resp.StatusCode)
		default:
			return fmt.Errorf("status %d (not retried)", resp.StatusCode)
		}
	}
	return last
}

// Wait waits for deliveries in flight.
func (w *Webhooks) Wait() { w.wg.Wait() }

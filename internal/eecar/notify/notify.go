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

// Webhooks delivers notifications.
type Webhooks struct {
	st       *store.Store
	client   *http.Client
	log      *slog.Logger
	attempts int
	backoff  time.Duration
	wg       sync.WaitGroup
}

// New returns a deliverer; client should refuse private addresses
// (fetch.Fetcher.Client).
func New(st *store.Store, client *http.Client, logger *slog.Logger) *Webhooks {
	if logger == nil {
		logger = slog.Default()
	}
	return &Webhooks{st: st, client: client, log: logger, attempts: 4, backoff: time.Second}
}

// SetRetry sets how many attempts a delivery makes (at least 1) and the
// delay before the second, doubled before each further one; the default is
// 4 attempts from 1 s. Call it before the first Notify.
func (w *Webhooks) SetRetry(attempts int, backoff time.Duration) {
	w.attempts, w.backoff = max(1, attempts), backoff
}

// Notify delivers n to its recipient's webhook, if any, in the background.
func (w *Webhooks) Notify(ctx context.Context, n store.Notification) {
	c, err := w.st.GetCompany(ctx, n.RecipientID)
	if err != nil || c.WebhookURL == "" {
		return
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
	}()
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

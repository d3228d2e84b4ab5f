// Package alert delivers check alerts (state changes of scheduled web
// monitors) to their owners by signed webhook, by email and through
// notification channels (Slack, Discord, Teams, Telegram, ntfy, Gotify,
// PagerDuty, Opsgenie, and webhook and email channels).
//
// A Dispatcher queues alerts with Send and delivers them from a pool of
// workers started by Run. Each channel (webhook, email, Channels) of a Target is
// delivered independently with exponential backoff and retries; the outcome
// of every channel is reported once through Options.OnResult.
package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/platform/backoff"
)

// Channel names passed to Options.OnResult.
const (
	// ChannelWebhook identifies webhook deliveries.
	ChannelWebhook = "webhook"
	// ChannelEmail identifies email deliveries.
	ChannelEmail = "email"
)

// Defaults applied by New to zero-valued Options fields.
const (
	// DefaultMaxAttempts is the default number of delivery attempts per channel.
	DefaultMaxAttempts = 6
	// DefaultBackoff is the default delay before the first retry.
	DefaultBackoff = 2 * time.Second
	// DefaultMaxBackoff is the default upper bound of any retry delay.
	DefaultMaxBackoff = 5 * time.Minute
	// DefaultQueueSize is the default capacity of the Send queue.
	DefaultQueueSize = 10000
	// DefaultWorkers is the default number of delivery workers started by Run.
	DefaultWorkers = 4
	// DefaultWebhookTimeout is the timeout of the default webhook HTTP client.
	DefaultWebhookTimeout = 10 * time.Second
)

// Errors returned by the Dispatcher.
var (
	// ErrQueueFull is returned by Send when the queue has no free slot.
	ErrQueueFull = errors.New("alert: queue full")
	// ErrClosed is returned by Send once Run has stopped.
	ErrClosed = errors.New("alert: dispatcher stopped")
	// ErrNoTarget is returned when a Target has neither a webhook nor an email.
	ErrNoTarget = errors.New("alert: target has no webhook or email")
	// ErrEmailDisabled is reported for email deliveries when Options.SMTP is nil.
	ErrEmailDisabled = errors.New("alert: email delivery disabled (no SMTP configured)")
	// ErrTargetRemoved is reported (through OnResult) for a channel whose
	// retries stopped because the alert's current target, asked of
	// Options.CurrentTarget, no longer has that channel.
	ErrTargetRemoved = errors.New("alert: channel removed from the current target; not retried")
	// ErrInvalidTarget is wrapped by errors about malformed webhook URLs or
	// email addresses; such deliveries are never retried.
	ErrInvalidTarget = errors.New("alert: invalid target")
	// ErrAlreadyRunning is returned by Run when it is called more than once.
	ErrAlreadyRunning = errors.New("alert: dispatcher already running")
)

// Alert is one state change of a check, delivered to its owner.
type Alert struct {
	// ID is unique per alert; receivers use it as idempotency key. It is also
	// sent as header X-Checks-Alert-Id.
	ID string `json:"id"`
	// CheckID identifies the check that changed state.
	CheckID string `json:"checkId"`
	// UserID identifies the owner of the check.
	UserID string `json:"userId"`
	// URL is the monitored URL.
	URL string `json:"url"`
	// CheckType is the check's type, e.g. "AVAILABILITY".
	CheckType string `json:"checkType"`
	// Event is the new condition, e.g. "down", "up", "keyword-missing",
	// "keyword-present", "price-below-threshold", "price-above-threshold".
	Event string `json:"event"`
	// Previous is the previous condition.
	Previous string `json:"previous"`
	// Message is a human readable one-liner.
	Message string `json:"message"`
	// Result is the run's lastResult.
	Result map[string]any `json:"result"`
	// At is when the state change was observed.
	At time.Time `json:"at"`
}

// Target says where a user's alerts go (from the check's attributes or the
// user's settings).
type Target struct {
	// WebhookURL is an http or https URL; "" means no webhook.
	WebhookURL string
	// WebhookSecret is the HMAC-SHA256 key. When set, requests carry header
	// X-Checks-Signature as produced by SignWebhook.
	WebhookSecret string
	// Email is the recipient address; "" means no email.
	Email string
	// Channels are notification channels the alert also goes to.
	Channels []Channel
}

// empty reports whether t names no channel at all.
func (t Target) empty() bool { return t.WebhookURL == "" && t.Email == "" && len(t.Channels) == 0 }

// SMTPConfig configures email delivery through net/smtp.
type SMTPConfig struct {
	// Addr is the server's host:port.
	Addr string
	// From is the sender address, optionally with a display name.
	From string
	// Username and Password enable PLAIN auth when Username is set. net/smtp
	// only sends credentials over TLS or to localhost.
	Username, Password string
	// StartTLS requires upgrading the connection with STARTTLS.
	StartTLS bool
}

// Options configures a Dispatcher. Zero values select the defaults.
type Options struct {
	// SMTP configures email; nil disables email (email deliveries are
	// dropped with a logged warning and OnResult reporting
	// ErrEmailDisabled; the Checks API refuses email targets then).
	SMTP *SMTPConfig
	// HTTPClient sends webhooks; default: timeout 10s, redirects not followed.
	// Production callers pass an SSRF-safe client.
	HTTPClient *http.Client
	// MaxAttempts is the number of attempts per channel; default 6.
	MaxAttempts int
	// Backoff is the first retry delay, doubled each attempt with ±20%
	// jitter; default 2s.
	Backoff time.Duration
	// MaxBackoff caps every retry delay, including Retry-After; default 5m.
	MaxBackoff time.Duration
	// QueueSize is the Send queue capacity; default 10000.
	QueueSize int
	// Workers is the number of concurrent deliveries run by Run; default 4.
	Workers int
	// Logger receives warnings and retry logs; default discards.
	Logger *slog.Logger
	// Sleep waits between attempts; it must return early with an error when
	// ctx ends. Test hook; default uses a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// CurrentTarget, when set, is asked for a's target before each retry,
	// so that a retry goes where the user's targets point now (a delivery
	// can be retried for minutes): a changed webhook URL, secret or email
	// address is used, and a channel the target no longer has stops
	// (OnResult reports ErrTargetRemoved). When it fails, the retry keeps
	// the target it had.
	CurrentTarget func(ctx context.Context, a Alert) (Target, error)
	// OnResult is called once per channel when its delivery finishes
	// (err nil means delivered). It may be called concurrently. For a
	// notification channel, channel is its Label.
	OnResult func(a Alert, channel string, attempts int, err error)
	// OnChannelResult, when set, is also called once per notification
	// channel (Target.Channels) when its delivery finishes.
	OnChannelResult func(a Alert, ch Channel, attempts int, err error)
	// OnDone, when set, is called once per alert sent (Send) when every
	// channel has its outcome, delivered or given up, or when Send drops
	// it (email disabled); not when Run stops first, so that an alert
	// kept elsewhere (the Checks outbox) is delivered again later.
	OnDone func(a Alert)
}

// Dispatcher queues and delivers alerts. Create it with New.
type Dispatcher struct {
	opts    Options
	queue   chan job
	running atomic.Bool

	mu     sync.RWMutex // guards closed against enqueues racing the final drain
	closed bool
}

type job struct {
	alert  Alert
	target Target
}

// New returns a Dispatcher with defaults applied to opts.
func New(opts Options) *Dispatcher {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{
			Timeout: DefaultWebhookTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Sleep == nil {
		opts.Sleep = backoff.Sleep
	}
	if opts.OnResult == nil {
		opts.OnResult = func(Alert, string, int, error) {}
	}
	return &Dispatcher{opts: opts, queue: make(chan job, opts.QueueSize)}
}

// Send enqueues a for delivery to t and returns at once. It returns
// ErrNoTarget when t names no channel, ErrQueueFull when the queue is full and
// ErrClosed after Run has stopped. An email-only target is dropped with a
// logged warning (and OnResult reporting ErrEmailDisabled) when SMTP is not
// configured; Send returns nil then.
func (d *Dispatcher) Send(a Alert, t Target) error {
	if t.empty() {
		return ErrNoTarget
	}
	if t.WebhookURL == "" && len(t.Channels) == 0 && d.opts.SMTP == nil {
		d.emailDisabled(a)
		d.done(a)
		return nil
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	select {
	case d.queue <- job{alert: a, target: t}:
		return nil
	default:
		return ErrQueueFull
	}
}

// Run delivers queued alerts with Options.Workers workers until ctx ends.
// Deliveries in flight are interrupted (OnResult reports the context error);
// alerts still queued are abandoned and their number is logged. Run returns
// nil when ctx ends and ErrAlreadyRunning when called a second time.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	var wg sync.WaitGroup
	for range d.opts.Workers {
		wg.Go(func() { d.work(ctx) })
	}
	<-ctx.Done()
	wg.Wait()

	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	abandoned := 0
	for {
		select {
		case <-d.queue:
			abandoned++
			continue
		default:
		}
		break
	}
	if abandoned > 0 {
		d.opts.Logger.Warn("alert dispatcher stopped; pending deliveries abandoned", "abandoned", abandoned)
	} else {
		d.opts.Logger.Info("alert dispatcher stopped", "abandoned", 0)
	}
	return nil
}

func (d *Dispatcher) work(ctx context.Context) {
	for {
		// Prefer stopping over taking more work once ctx has ended.
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case j := <-d.queue:
			if err := d.Deliver(ctx, j.alert, j.target); err != nil {
				d.opts.Logger.Warn("alert delivery failed", "alert", j.alert.ID, "check", j.alert.CheckID, "err", err)
			}
			if ctx.Err() == nil {
				d.done(j.alert)
			}
		}
	}
}

// done reports a finished alert to OnDone.
func (d *Dispatcher) done(a Alert) {
	if d.opts.OnDone != nil {
		d.opts.OnDone(a)
	}
}

// Deliver synchronously delivers a to every channel of t, retrying transient
// failures. Channels are delivered concurrently and independently; OnResult
// is called once per channel. The returned error joins the channels' errors
// (nil when all were delivered).
func (d *Dispatcher) Deliver(ctx context.Context, a Alert, t Target) error {
	if t.empty() {
		return ErrNoTarget
	}
	var (
		wg                  sync.WaitGroup
		webhookErr, mailErr error
		chErrs              = make([]error, len(t.Channels))
	)
	for i, ch := range t.Channels {
		wg.Go(func() { chErrs[i] = d.deliverNotification(ctx, a, t, ch) })
	}
	if t.WebhookURL != "" {
		wg.Go(func() {
			cur := d.retargeter(a, t)
			webhookErr = d.deliverChannel(ctx, a, ChannelWebhook, func(ctx context.Context) error {
				t := cur(ctx)
				if t.WebhookURL == "" {
					return permanent(ErrTargetRemoved)
				}
				return d.postWebhook(ctx, a, t)
			})
		})
	}
	if t.Email != "" {
		if d.opts.SMTP == nil {
			d.emailDisabled(a)
			mailErr = fmt.Errorf("%s: %w", ChannelEmail, ErrEmailDisabled)
		} else {
			wg.Go(func() {
				cur := d.retargeter(a, t)
				mailErr = d.deliverChannel(ctx, a, ChannelEmail, func(ctx context.Context) error {
					t := cur(ctx)
					if t.Email == "" {
						return permanent(ErrTargetRemoved)
					}
					return d.sendEmail(ctx, a, t.Email)
				})
			})
		}
	}
	wg.Wait()
	return errors.Join(append([]error{webhookErr, mailErr}, chErrs...)...)
}

// deliverNotification delivers a to the notification channel ch of t with
// retries; each retry sends to the channel as it is now (its config
// changed, or ErrTargetRemoved when it is gone).
func (d *Dispatcher) deliverNotification(ctx context.Context, a Alert, t Target, ch Channel) error {
	cur := d.retargeter(a, t)
	attempts, err := d.retry(ctx, a, ch.Label(), func(ctx context.Context) error {
		now := cur(ctx).Channels
		i := slices.IndexFunc(now, func(c Channel) bool { return c.ID == ch.ID })
		if i < 0 {
			return permanent(ErrTargetRemoved)
		}
		ch = now[i]
		return d.sendChannel(ctx, a, ch)
	})
	if err != nil {
		err = fmt.Errorf("%s: %w", ch.Label(), err)
	}
	d.opts.OnResult(a, ch.Label(), attempts, err)
	if d.opts.OnChannelResult != nil {
		d.opts.OnChannelResult(a, ch, attempts, err)
	}
	return err
}

// retargeter returns the target for each attempt of one channel's
// delivery of a: t for the first, then what Options.CurrentTarget answers
// (the previous target when it fails or is not set).
func (d *Dispatcher) retargeter(a Alert, t Target) func(context.Context) Target {
	first := true
	return func(ctx context.Context) Target {
		if first || d.opts.CurrentTarget == nil {
			first = false
			return t
		}
		nt, err := d.opts.CurrentTarget(ctx, a)
		if err != nil {
			d.opts.Logger.Warn("alert target not re-read; retrying the previous one", "alert", a.ID, "check", a.CheckID, "err", err)
			return t
		}
		t = nt
		return t
	}
}

func (d *Dispatcher) emailDisabled(a Alert) {
	d.opts.Logger.Warn("email alert dropped: SMTP not configured", "alert", a.ID, "check", a.CheckID)
	d.opts.OnResult(a, ChannelEmail, 0, ErrEmailDisabled)
}

// deliverChannel runs attempt with retries and reports the outcome.
func (d *Dispatcher) deliverChannel(ctx context.Context, a Alert, channel string, attempt func(context.Context) error) error {
	attempts, err := d.retry(ctx, a, channel, attempt)
	if err != nil {
		err = fmt.Errorf("%s: %w", channel, err)
	}
	d.opts.OnResult(a, channel, attempts, err)
	return err
}

// retry calls attempt until it succeeds, fails permanently, MaxAttempts is
// reached or ctx ends. It returns the number of attempts made.
func (d *Dispatcher) retry(ctx context.Context, a Alert, channel string, attempt func(context.Context) error) (int, error) {
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			return n, nil
		}
		var ae *attemptError
		isAE := errors.As(err, &ae)
		if isAE && ae.permanent {
			return n, fmt.Errorf("permanent failure: %w", err)
		}
		if ctx.Err() != nil {
			return n, fmt.Errorf("%w (last error: %w)", context.Cause(ctx), err)
		}
		if n >= d.opts.MaxAttempts {
			return n, fmt.Errorf("giving up after %d attempts: %w", n, err)
		}
		delay := d.backoff(n)
		if isAE && ae.retryAfter > 0 {
			delay = min(ae.retryAfter, d.opts.MaxBackoff)
		}
		d.opts.Logger.Info("alert delivery failed; retrying",
			"alert", a.ID, "channel", channel, "attempt", n, "delay", delay, "err", err)
		if serr := d.opts.Sleep(ctx, delay); serr != nil {
			return n, fmt.Errorf("%w (last error: %w)", serr, err)
		}
	}
}

// backoff returns the delay after failed attempt n (1-based): Backoff doubled
// n-1 times, capped at MaxBackoff, with ±20% jitter, never above MaxBackoff.
func (d *Dispatcher) backoff(n int) time.Duration {
	return backoff.Policy{Base: d.opts.Backoff, Max: d.opts.MaxBackoff, Jitter: 0.2}.Delay(n)
}

// attemptError classifies the failure of a single attempt.
type attemptError struct {
	err        error
	permanent  bool          // do not retry
	retryAfter time.Duration // server-requested delay; 0 if none
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

func permanent(err error) error { return &attemptError{err: err, permanent: true} }

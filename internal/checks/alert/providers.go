package alert

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// sendChannel makes one delivery attempt of a to ch, in its provider's
// payload, through Options.HTTPClient (the network policy's client) or
// SMTP for email.
func (d *Dispatcher) sendChannel(ctx context.Context, a Alert, ch Channel) error {
	cfg := WithDefaults(ch.Type, ch.Config)
	switch ch.Type {
	case TypeWebhook:
		return d.postWebhook(ctx, a, Target{WebhookURL: cfg["url"], WebhookSecret: cfg["secret"]})
	case TypeEmail:
		if d.opts.SMTP == nil {
			return permanent(ErrEmailDisabled)
		}
		return d.sendEmail(ctx, a, cfg["to"])
	case TypeSlack:
		return d.postJSON(ctx, ch.Type, cfg["url"], nil, slackPayload(a))
	case TypeDiscord:
		return d.postJSON(ctx, ch.Type, cfg["url"], nil, discordPayload(a, cfg["username"]))
	case TypeTeams:
		return d.postJSON(ctx, ch.Type, cfg["url"], nil, teamsPayload(a, cfg["format"]))
	case TypeTelegram:
		u := strings.TrimRight(cfg["apiUrl"], "/") + "/bot" + cfg["botToken"] + "/sendMessage"
		return d.postJSON(ctx, ch.Type, u, nil, map[string]any{
			"chat_id": cfg["chatId"], "text": telegramText(a), "parse_mode": "HTML",
			"link_preview_options": map[string]any{"is_disabled": true},
		})
	case TypeNtfy:
		return d.postNtfy(ctx, a, cfg)
	case TypeGotify:
		u := strings.TrimRight(cfg["server"], "/") + "/message?token=" + url.QueryEscape(cfg["token"])
		return d.postJSON(ctx, ch.Type, u, nil, map[string]any{
			"title": title(a), "message": a.Message, "priority": intConfig(cfg, "priority", 8),
			"extras": gotifyExtras(a),
		})
	case TypePagerDuty:
		return d.postJSON(ctx, ch.Type, strings.TrimRight(cfg["apiUrl"], "/")+"/v2/enqueue", nil, pagerDutyPayload(a, cfg))
	case TypeOpsgenie:
		return d.postOpsgenie(ctx, a, cfg)
	}
	return permanent(fmt.Errorf("%w: unknown channel type %q", ErrInvalidTarget, ch.Type))
}

// TestChannel sends a test message to ch at once, one attempt, no retry,
// and returns the outcome. For PagerDuty and Opsgenie the test opens an
// incident (alert) and resolves (closes) it at once, so that nothing is
// left open.
func (d *Dispatcher) TestChannel(ctx context.Context, ch Channel) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	a := Alert{
		ID: "tst_" + hex.EncodeToString(b[:]), CheckID: "test-" + ch.ID, Event: EventTest, Previous: "ok",
		Message: fmt.Sprintf("Test message from quarry Checks: the %s channel %q works.", ch.Type, ch.Name),
		At:      time.Now().UTC(),
	}
	if err := d.sendChannel(ctx, a, ch); err != nil {
		return fmt.Errorf("%s: %w", ch.Label(), err)
	}
	if ch.Type == TypePagerDuty || ch.Type == TypeOpsgenie {
		a.Event, a.Previous = EventTestResolved, EventTest
		a.Message = "Test of quarry Checks resolved."
		if err := d.sendChannel(ctx, a, ch); err != nil {
			return fmt.Errorf("%s: resolve: %w", ch.Label(), err)
		}
	}
	return nil
}

// title is the alert's headline: "DOWN: https://…", "Test: quarry Checks".
func title(a Alert) string {
	what := a.URL
	if what == "" {
		what = "quarry Checks"
	}
	ev := strings.ToUpper(a.Event)
	switch a.Event {
	case "down", "up":
	case EventTest:
		ev = "Test"
	case EventTestResolved:
		ev = "Test resolved"
	default:
		ev = strings.ReplaceAll(a.Event, "-", " ")
	}
	return oneLine(ev + ": " + what)
}

// facts are the alert's details shown as key/value lines.
func facts(a Alert) [][2]string {
	var fs [][2]string
	add := func(k, v string) {
		if v != "" {
			fs = append(fs, [2]string{k, oneLine(v)})
		}
	}
	add("Event", a.Event)
	add("Previous", a.Previous)
	add("URL", a.URL)
	add("Check", a.CheckID)
	add("Check type", a.CheckType)
	if !a.At.IsZero() {
		add("At", a.At.UTC().Format(time.RFC3339))
	}
	return fs
}

func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackPayload is a Slack incoming-webhook message: text (the
// notification's fallback) and Block Kit blocks.
func slackPayload(a Alert) map[string]any {
	var ctx []string
	for _, f := range facts(a) {
		ctx = append(ctx, "*"+f[0]+":* "+slackEscape(f[1]))
	}
	return map[string]any{
		"text": slackEscape(title(a) + " — " + oneLine(a.Message)),
		"blocks": []any{
			map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": truncate(title(a), 150)}},
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": slackEscape(truncate(oneLine(a.Message), 3000))}},
			map[string]any{"type": "context", "elements": []any{map[string]any{"type": "mrkdwn", "text": truncate(strings.Join(ctx, "  ·  "), 3000)}}},
		},
	}
}

// Embed colours: red for a problem, green for a recovery.
const (
	colorProblem  = 0xE01E5A
	colorRecovery = 0x2EB67D
)

// discordPayload is a Discord webhook message: content and one embed.
// Mentions are disabled (a page's text must not ping anyone).
func discordPayload(a Alert, username string) map[string]any {
	color := colorProblem
	if IsRecovery(a.Event) {
		color = colorRecovery
	}
	var fields []any
	for _, f := range facts(a) {
		fields = append(fields, map[string]any{"name": f[0], "value": truncate(f[1], 1024), "inline": f[0] != "URL"})
	}
	embed := map[string]any{
		"title": truncate(title(a), 256), "description": truncate(oneLine(a.Message), 4096),
		"color": color, "fields": fields,
	}
	if !a.At.IsZero() {
		embed["timestamp"] = a.At.UTC().Format(time.RFC3339)
	}
	if isHTTP(a.URL) {
		embed["url"] = a.URL
	}
	p := map[string]any{
		"content":          truncate(title(a), 2000),
		"embeds":           []any{embed},
		"allowed_mentions": map[string]any{"parse": []any{}},
	}
	if username != "" {
		p["username"] = username
	}
	return p
}

// teamsPayload is a Teams message: an Adaptive Card in a "message"
// (Workflows webhooks) or, with format "messagecard", a legacy
// MessageCard (Office 365 connectors).
func teamsPayload(a Alert, format string) map[string]any {
	if format == "messagecard" {
		color := "E01E5A"
		if IsRecovery(a.Event) {
			color = "2EB67D"
		}
		var fs []any
		for _, f := range facts(a) {
			fs = append(fs, map[string]any{"name": f[0], "value": f[1]})
		}
		card := map[string]any{
			"@type": "MessageCard", "@context": "https://schema.org/extensions",
			"summary": title(a), "themeColor": color, "title": title(a), "text": oneLine(a.Message),
			"sections": []any{map[string]any{"facts": fs}},
		}
		if isHTTP(a.URL) {
			card["potentialAction"] = []any{map[string]any{"@type": "OpenUri", "name": "Open the URL",
				"targets": []any{map[string]any{"os": "default", "uri": a.URL}}}}
		}
		return card
	}
	color := "Attention"
	if IsRecovery(a.Event) {
		color = "Good"
	}
	var fs []any
	for _, f := range facts(a) {
		fs = append(fs, map[string]any{"title": f[0], "value": f[1]})
	}
	content := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard", "version": "1.4",
		"body": []any{
			map[string]any{"type": "TextBlock", "size": "Medium", "weight": "Bolder", "color": color, "text": title(a), "wrap": true},
			map[string]any{"type": "TextBlock", "text": oneLine(a.Message), "wrap": true},
			map[string]any{"type": "FactSet", "facts": fs},
		},
	}
	if isHTTP(a.URL) {
		content["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": "Open the URL", "url": a.URL}}
	}
	return map[string]any{"type": "message", "attachments": []any{map[string]any{
		"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": nil, "content": content,
	}}}
}

// telegramText is the message in Telegram's HTML parse mode.
func telegramText(a Alert) string {
	var b strings.Builder
	b.WriteString("<b>" + html.EscapeString(title(a)) + "</b>\n" + html.EscapeString(oneLine(a.Message)))
	for _, f := range facts(a) {
		if f[0] == "Event" || f[0] == "URL" {
			continue
		}
		b.WriteString("\n" + html.EscapeString(f[0]) + ": <code>" + html.EscapeString(f[1]) + "</code>")
	}
	return truncate(b.String(), 4096)
}

// postNtfy publishes to <server>/<topic>: the message as the body, the
// title, priority and tags (emoji short codes) as headers.
func (d *Dispatcher) postNtfy(ctx context.Context, a Alert, cfg map[string]string) error {
	prio, tags := "5", "rotating_light,quarry-checks"
	if IsRecovery(a.Event) || a.Event == EventTest {
		prio, tags = "3", "white_check_mark,quarry-checks"
	}
	if p := cfg["priority"]; p != "" {
		prio = p
	}
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Title", mime.QEncoding.Encode("utf-8", title(a)))
	h.Set("Priority", prio)
	h.Set("Tags", tags)
	if isHTTP(a.URL) && validHeaderValue(a.URL) {
		h.Set("Click", a.URL)
	}
	if t := cfg["token"]; t != "" {
		h.Set("Authorization", "Bearer "+t)
	}
	u := strings.TrimRight(cfg["server"], "/") + "/" + url.PathEscape(cfg["topic"])
	return d.post(ctx, TypeNtfy, u, h, []byte(oneLine(a.Message)))
}

func gotifyExtras(a Alert) map[string]any {
	if !isHTTP(a.URL) {
		return map[string]any{}
	}
	return map[string]any{"client::notification": map[string]any{"click": map[string]any{"url": a.URL}}}
}

// dedupKey is the incident key of a check at PagerDuty (dedup_key) and
// Opsgenie (alias): the same for the alert that opens the incident and
// the one that resolves it.
func dedupKey(a Alert) string { return "quarry-checks-" + a.CheckID }

// pagerDutyPayload is an Events API v2 event: trigger on a problem,
// resolve on a recovery, keyed by the check.
func pagerDutyPayload(a Alert, cfg map[string]string) map[string]any {
	ev := map[string]any{"routing_key": cfg["routingKey"], "dedup_key": dedupKey(a)}
	if IsRecovery(a.Event) {
		ev["event_action"] = "resolve"
		return ev
	}
	severity := cfg["severity"]
	if a.Event == EventTest {
		severity = "info"
	}
	source := a.URL
	if source == "" {
		source = "quarry-checks"
	}
	payload := map[string]any{
		"summary": truncate(oneLine(a.Message), 1024), "source": truncate(source, 255), "severity": severity,
		"component": a.CheckType, "group": "quarry-checks", "class": a.Event,
		"custom_details": customDetails(a),
	}
	if !a.At.IsZero() {
		payload["timestamp"] = a.At.UTC().Format(time.RFC3339)
	}
	ev["event_action"] = "trigger"
	ev["payload"] = payload
	ev["client"] = "quarry Checks"
	if isHTTP(a.URL) {
		ev["links"] = []any{map[string]any{"href": a.URL, "text": "Monitored URL"}}
	}
	return ev
}

func customDetails(a Alert) map[string]any {
	m := map[string]any{"checkId": a.CheckID, "event": a.Event, "previous": a.Previous, "alertId": a.ID}
	if len(a.Result) > 0 {
		m["result"] = a.Result
	}
	return m
}

// postOpsgenie creates an alert (aliased by the check) on a problem and
// closes it by alias on a recovery.
func (d *Dispatcher) postOpsgenie(ctx context.Context, a Alert, cfg map[string]string) error {
	h := http.Header{}
	h.Set("Authorization", "GenieKey "+cfg["apiKey"])
	base := strings.TrimRight(cfg["apiUrl"], "/") + "/v2/alerts"
	if IsRecovery(a.Event) {
		u := base + "/" + url.PathEscape(dedupKey(a)) + "/close?identifierType=alias"
		return d.postJSON(ctx, TypeOpsgenie, u, h, map[string]any{"source": "quarry Checks", "note": truncate(oneLine(a.Message), 25000)})
	}
	priority := cfg["priority"]
	if a.Event == EventTest {
		priority = "P5"
	}
	details := map[string]string{"checkId": a.CheckID, "event": a.Event, "previous": a.Previous, "alertId": a.ID}
	if a.URL != "" {
		details["url"] = a.URL
	}
	body := map[string]any{
		"message": truncate(title(a), 130), "alias": dedupKey(a), "description": truncate(oneLine(a.Message), 15000),
		"priority": priority, "source": "quarry Checks", "tags": []string{"quarry-checks", a.Event}, "details": details,
	}
	if a.URL != "" {
		body["entity"] = truncate(a.URL, 512)
	}
	return d.postJSON(ctx, TypeOpsgenie, base, h, body)
}

// postJSON posts v as JSON (post).
func (d *Dispatcher) postJSON(ctx context.Context, service, rawURL string, h http.Header, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return permanent(fmt.Errorf("encode %s payload: %w", service, err))
	}
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return d.post(ctx, service, rawURL, h, body)
}

// post makes one POST to a provider: 2xx delivers; 5xx, 408, 429 and
// network errors are transient (Retry-After honoured); other statuses are
// permanent. Errors never quote the URL beyond its scheme and host: its
// path or query may hold a token (Telegram, Gotify, Slack).
func (d *Dispatcher) post(ctx context.Context, service, rawURL string, h http.Header, body []byte) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return permanent(fmt.Errorf("%w: %s URL: need http(s) scheme and host", ErrInvalidTarget, service))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return permanent(fmt.Errorf("build request: %s", stripURLError(err)))
	}
	req.Header = h.Clone()
	req.Header.Set("User-Agent", UserAgent)
	resp, err := d.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("post %s://%s: %w", u.Scheme, u.Host, stripURLError(err)) // network errors are transient
	}
	defer resp.Body.Close()
	return classifyResponse(service, resp)
}

// classifyResponse turns a provider's response into an attempt's error.
func classifyResponse(service string, resp *http.Response) error {
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // allow connection reuse
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	serr := &HTTPStatusError{Service: service, StatusCode: code, Body: oneLine(strings.TrimSpace(string(snippet)))}
	if code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests {
		return &attemptError{err: serr, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return permanent(serr)
}

func isHTTP(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

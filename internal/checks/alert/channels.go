package alert

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Notification channel types.
const (
	TypeWebhook   = "webhook"
	TypeEmail     = "email"
	TypeSlack     = "slack"
	TypeDiscord   = "discord"
	TypeTeams     = "teams"
	TypeTelegram  = "telegram"
	TypeNtfy      = "ntfy"
	TypeGotify    = "gotify"
	TypePagerDuty = "pagerduty"
	TypeOpsgenie  = "opsgenie"
)

// Channel is one of a user's notification channels: where and how an
// alert is sent. Config holds the type's fields (ChannelFields).
type Channel struct {
	ID     string
	Type   string
	Name   string
	Config map[string]string
}

// Label names ch in delivery errors and logs: "<type> <id>".
func (ch Channel) Label() string { return ch.Type + " " + ch.ID }

// Field describes one config field of a channel type.
type Field struct {
	// Name is the key in the channel's config.
	Name string
	// Required fields must be set.
	Required bool
	// Secret values are shown masked (MaskValue).
	Secret bool
	// URL values are http(s) URLs the sender connects to; the caller also
	// checks them against the network policy.
	URL bool
	// Default is used when the field is not set.
	Default string
	// Enum lists the allowed values (empty: any).
	Enum []string
	// Pattern, when set, is what a value must match; PatternDoc says it in
	// words for the error.
	Pattern    *regexp.Regexp
	PatternDoc string
}

var (
	telegramToken = regexp.MustCompile(`^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$`)
	ntfyTopic     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	routingKey    = regexp.MustCompile(`^[A-Za-z0-9]{32}$`)
	plainToken    = regexp.MustCompile(`^[\x21-\x7e]{1,256}$`)
)

// channelFields are the config fields of each type.
var channelFields = map[string][]Field{
	TypeWebhook: {
		{Name: "url", Required: true, URL: true},
		{Name: "secret", Secret: true, Pattern: plainToken, PatternDoc: "1 to 256 printable characters without spaces"},
	},
	TypeEmail: {{Name: "to", Required: true}},
	TypeSlack: {{Name: "url", Required: true, URL: true, Secret: true}},
	TypeDiscord: {
		{Name: "url", Required: true, URL: true, Secret: true},
		{Name: "username"},
	},
	TypeTeams: {
		{Name: "url", Required: true, URL: true, Secret: true},
		{Name: "format", Default: "adaptive", Enum: []string{"adaptive", "messagecard"}},
	},
	TypeTelegram: {
		{Name: "botToken", Required: true, Secret: true, Pattern: telegramToken, PatternDoc: "a bot token as BotFather gives it, <digits>:<key>"},
		{Name: "chatId", Required: true},
		{Name: "apiUrl", URL: true, Default: "https://api.telegram.org"},
	},
	TypeNtfy: {
		{Name: "server", URL: true, Default: "https://ntfy.sh"},
		{Name: "topic", Required: true, Pattern: ntfyTopic, PatternDoc: "1 to 64 letters, digits, _ or -"},
		{Name: "token", Secret: true, Pattern: plainToken, PatternDoc: "1 to 256 printable characters without spaces"},
		{Name: "priority", Enum: []string{"1", "2", "3", "4", "5"}},
	},
	TypeGotify: {
		{Name: "server", Required: true, URL: true},
		{Name: "token", Required: true, Secret: true, Pattern: plainToken, PatternDoc: "1 to 256 printable characters without spaces"},
		{Name: "priority", Default: "8", Enum: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}},
	},
	TypePagerDuty: {
		{Name: "routingKey", Required: true, Secret: true, Pattern: routingKey, PatternDoc: "the 32-character integration key of an Events API v2 integration"},
		{Name: "apiUrl", URL: true, Default: "https://events.pagerduty.com"},
		{Name: "severity", Default: "critical", Enum: []string{"critical", "error", "warning", "info"}},
	},
	TypeOpsgenie: {
		{Name: "apiKey", Required: true, Secret: true, Pattern: plainToken, PatternDoc: "1 to 256 printable characters without spaces"},
		{Name: "apiUrl", URL: true, Default: "https://api.opsgenie.com"},
		{Name: "priority", Default: "P3", Enum: []string{"P1", "P2", "P3", "P4", "P5"}},
	},
}

// ChannelTypes returns the channel types, sorted.
func ChannelTypes() []string {
	ts := make([]string, 0, len(channelFields))
	for t := range channelFields {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// ChannelFields returns the config fields of a channel type (false for an
// unknown type).
func ChannelFields(typ string) ([]Field, bool) {
	f, ok := channelFields[typ]
	return f, ok
}

// ConfigError is an invalid channel config; Field names the culprit as
// the API's body does ("config.url").
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// maxConfigValue bounds every config value.
const maxConfigValue = 2048

// ValidateConfig checks a channel config of type typ: no unknown field,
// every required one set, enumerations and patterns respected, URLs http
// or https with a host. It does not check URLs against the network policy
// (the caller does, it holds the policy). Errors are *ConfigError.
func ValidateConfig(typ string, cfg map[string]string) error {
	fields, ok := channelFields[typ]
	if !ok {
		return &ConfigError{Field: "type", Msg: fmt.Sprintf("unknown channel type %q (want one of %s)", typ, strings.Join(ChannelTypes(), ", "))}
	}
	for k := range cfg {
		if !slices.ContainsFunc(fields, func(f Field) bool { return f.Name == k }) {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.Name
			}
			return &ConfigError{Field: "config." + k, Msg: fmt.Sprintf("unknown field for a %s channel (it takes %s)", typ, strings.Join(names, ", "))}
		}
	}
	for _, f := range fields {
		v := cfg[f.Name]
		bad := func(format string, args ...any) error {
			return &ConfigError{Field: "config." + f.Name, Msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case v == "" && f.Required:
			return bad("required for a %s channel", typ)
		case v == "":
			continue
		case len(v) > maxConfigValue:
			return bad("at most %d bytes", maxConfigValue)
		case strings.ContainsAny(v, "\r\n\x00"):
			return bad("must be one line")
		case len(f.Enum) > 0 && !slices.Contains(f.Enum, v):
			return bad("%q is not one of %s", v, strings.Join(f.Enum, ", "))
		case f.Pattern != nil && !f.Pattern.MatchString(v):
			return bad("want %s", f.PatternDoc)
		case f.URL:
			if err := checkURL(v); err != nil {
				return bad("%s", err)
			}
		}
	}
	return nil
}

func checkURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a URL: %v", stripURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("want an http:// or https:// URL, not the scheme %q", u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("the URL has no host")
	}
	if u.User != nil {
		return fmt.Errorf("the URL must not carry user:password@")
	}
	return nil
}

// stripURLError drops the input from url.Parse's error (it may hold a
// secret).
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// WithDefaults returns cfg with the defaults of its type's unset fields.
func WithDefaults(typ string, cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for _, f := range channelFields[typ] {
		if v := cfg[f.Name]; v != "" {
			out[f.Name] = v
		} else if f.Default != "" {
			out[f.Name] = f.Default
		}
	}
	return out
}

// MaskConfig returns cfg with its secret fields masked (MaskValue), for
// display: a secret is never shown in full.
func MaskConfig(typ string, cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		out[k] = v
	}
	for _, f := range channelFields[typ] {
		if v, ok := out[f.Name]; ok && f.Secret && v != "" {
			out[f.Name] = MaskValue(v, f.URL)
		}
	}
	return out
}

// MaskValue hides a secret: its last four characters are kept after
// "****" when it is at least 16 long (enough to tell two apart), none
// otherwise. A URL keeps its scheme and host: "https://hooks.slack.com/****abcd".
func MaskValue(v string, isURL bool) string {
	prefix := ""
	rest := v
	if isURL {
		if u, err := url.Parse(v); err == nil && u.Host != "" {
			prefix = u.Scheme + "://" + u.Host + "/"
			rest = strings.TrimPrefix(v, prefix)
		}
	}
	if len(rest) >= 16 {
		return prefix + "****" + rest[len(rest)-4:]
	}
	return prefix + "****"
}

// IsRecovery reports whether an alert event ends a problem (PagerDuty
// resolves and Opsgenie closes on it; the others colour it green).
func IsRecovery(event string) bool {
	switch event {
	case "up", "keyword-found", "keyword-gone", "price-above-threshold", "recovered", EventTestResolved:
		return true
	}
	return false
}

// Events of the test message (TestChannel).
const (
	EventTest         = "test"
	EventTestResolved = "test-resolved"
)

// intConfig reads a numeric config value, def when unset or invalid.
func intConfig(cfg map[string]string, k string, def int) int {
	if n, err := strconv.Atoi(cfg[k]); err == nil {
		return n
	}
	return def
}

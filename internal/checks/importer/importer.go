// Package importer turns the monitors of other tools (a Gatus
// configuration, an Uptime Kuma backup) into Checks' checks, and creates
// them for a user through the API's own validation. What a source says
// that Checks cannot express is reported, one line per monitor and
// reason, rather than silently dropped.
package importer

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quarrydb/quarry/internal/checks/probe"
)

// MaxDelay is the longest period a check may have (the API's bound).
const MaxDelay = 30 * 24 * time.Hour

// maxTagLen and maxTags are the API's bounds on tags.
const (
	maxTagLen = 32
	maxTags   = 10
	maxName   = 100
)

// Check is one check to create, and what of its monitor was not carried
// over.
type Check struct {
	// Source names the monitor it comes from: `endpoint "api"` (Gatus),
	// `monitor "api"` (Uptime Kuma).
	Source     string
	Name       string
	Tags       []string
	URL        string
	Type       string
	DelayMs    int64
	Attributes map[string]any
	// Notes are what of the monitor this check does not do, each a
	// reason ("condition [IP] == 1.2.3.4 not carried over: …").
	Notes []string
}

// Skip is a monitor that was not imported, and why.
type Skip struct {
	Source string
	Reason string
}

// Plan is what an import would create and what it cannot.
type Plan struct {
	Checks  []Check
	Skipped []Skip
}

// Body is the JSON body of the API's POST /v1/checks for c.
func (c Check) Body() map[string]any {
	b := map[string]any{"url": c.URL, "checkType": c.Type, "delayMs": c.DelayMs}
	if c.Name != "" {
		b["name"] = c.Name
	}
	if len(c.Tags) > 0 {
		b["tags"] = c.Tags
	}
	if len(c.Attributes) > 0 {
		b["attributes"] = c.Attributes
	}
	return b
}

// Spec is c as the prober validates it.
func (c Check) Spec() probe.Spec {
	return probe.Spec{Type: c.Type, URL: c.URL, Attributes: c.Attributes}
}

// delay converts a monitor's interval to delayMs within [min, MaxDelay],
// noting a rounding: a shorter interval is rounded up to min, a longer
// one down to MaxDelay.
func delay(c *Check, interval, min time.Duration) {
	switch {
	case interval < min:
		c.Notes = append(c.Notes, fmt.Sprintf("interval %v is below the minimum %v: rounded up to %v", interval, min, min))
		interval = min
	case interval > MaxDelay:
		c.Notes = append(c.Notes, fmt.Sprintf("interval %v is above the maximum %v: rounded down", interval, MaxDelay))
		interval = MaxDelay
	}
	c.DelayMs = interval.Milliseconds()
}

// name sets c's name from the monitor's, cut to the API's 100
// characters.
func name(c *Check, n string) {
	n = strings.TrimSpace(n)
	if utf8.RuneCountInString(n) > maxName {
		c.Notes = append(c.Notes, fmt.Sprintf("name cut to %d characters", maxName))
		n = string([]rune(n)[:maxName])
	}
	c.Name = n
}

// addTag adds a tag made of t, as the API accepts tags: no comma or
// control character, at most 32 characters, at most 10 tags.
func addTag(c *Check, t string) {
	t = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == ',' || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, t))
	if t == "" {
		return
	}
	if utf8.RuneCountInString(t) > maxTagLen {
		c.Notes = append(c.Notes, fmt.Sprintf("tag %q cut to %d characters", t, maxTagLen))
		t = strings.TrimSpace(string([]rune(t)[:maxTagLen]))
	}
	for _, have := range c.Tags {
		if strings.EqualFold(have, t) {
			return
		}
	}
	if len(c.Tags) == maxTags {
		c.Notes = append(c.Notes, fmt.Sprintf("tag %q not carried over: at most %d tags", t, maxTags))
		return
	}
	c.Tags = append(c.Tags, t)
}

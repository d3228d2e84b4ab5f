package console

import (
	"html/template"
	"strconv"
	"time"
)

// Ago writes t relative to now ("just now", "5 min ago", "3 h ago",
// "2 days ago", "in 4 min"; older than 30 days its date) in a <time>
// element whose datetime attribute is RFC 3339 and whose title, shown on
// hover, is the absolute time in UTC. The zero time is "–". Pages get it
// as the template function ago, on the console's clock.
func Ago(t, now time.Time) template.HTML {
	if t.IsZero() {
		return "–"
	}
	t = t.UTC()
	abs := t.Format("2006-01-02 15:04:05 UTC")
	return template.HTML(`<time datetime="` + t.Format(time.RFC3339) + `" title="` + abs + `">` +
		template.HTMLEscapeString(relative(t, now)) + `</time>`)
}

// relative words the distance from now to t.
func relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 45*time.Second:
		return "just now"
	case d < 59*time.Minute+30*time.Second:
		s = strconv.Itoa(int(max(1, (d+30*time.Second).Minutes()))) + " min"
	case d < 23*time.Hour+30*time.Minute:
		s = strconv.Itoa(int((d+30*time.Minute)/time.Hour)) + " h"
	case d < 30*24*time.Hour:
		n := int((d + 12*time.Hour) / (24 * time.Hour))
		s = strconv.Itoa(n) + " days"
		if n == 1 {
			s = "1 day"
		}
	default:
		return t.Format("2 Jan 2006")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// agoFunc is the template function ago on the console's clock: t is a
// time.Time or an RFC 3339 string (EECAR's items); a string that does not
// parse is written as it is.
func (c *Console) agoFunc(t any) template.HTML {
	switch v := t.(type) {
	case time.Time:
		return Ago(v, c.opts.Now())
	case *time.Time:
		if v == nil {
			return "–"
		}
		return Ago(*v, c.opts.Now())
	case string:
		if v == "" {
			return "–"
		}
		p, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return template.HTML(template.HTMLEscapeString(v))
		}
		return Ago(p, c.opts.Now())
	}
	return "–"
}

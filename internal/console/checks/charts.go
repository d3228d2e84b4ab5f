package checks

import (
	"fmt"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// Server-rendered SVG charts of a check: its status strip and its
// response-time chart. Each is data for a template that draws it
// (_checks.html's "strip", check.html's chart), so no script is needed.

// stripRuns is how many runs a status strip shows.
const stripRuns = 60

// strip is a row of cells, one per run, oldest left.
type strip struct {
	Cells []stripCell
	Up    int
	Down  int
}

type stripCell struct {
	X     int
	Up    bool
	Title string
	// when and why are the run's time and state, and its error ("" when
	// up); the public status page builds its own Title from them.
	when, why string
}

// statusStrip draws the newest stripRuns of runs (given newest first).
func statusStrip(runs []Run) strip {
	n := min(len(runs), stripRuns)
	s := strip{Cells: make([]stripCell, 0, n)}
	for i := n - 1; i >= 0; i-- {
		r := runs[i]
		state := "DOWN"
		if r.Up {
			state = "UP"
			s.Up++
		} else {
			s.Down++
		}
		when := r.At.UTC().Format("2006-01-02 15:04:05Z") + " " + state
		title := when
		if r.Error != "" {
			title += ": " + r.Error
		}
		s.Cells = append(s.Cells, stripCell{X: (stripRuns - n + (n - 1 - i)) * 5, Up: r.Up, Title: title, when: when, why: r.Error})
	}
	return s
}

// public returns s for the public status page: each run's title says its
// time, its state and the class of its failure (reasonClass), never the
// error itself, which may name an address, a port or a path the check's
// owner did not publish.
func (s strip) public() strip {
	out := s
	out.Cells = make([]stripCell, len(s.Cells))
	for i, c := range s.Cells {
		c.Title = c.when
		if c.why != "" {
			c.Title += ": " + reasonClass(c.why)
		}
		out.Cells[i] = c
	}
	return out
}

// reasonClass names the kind of a run's failure for the public page.
func reasonClass(err string) string {
	e := strings.ToLower(err)
	switch {
	case strings.Contains(e, "address blocked") || strings.Contains(e, "not allowed"):
		return "refused by the network policy"
	case strings.Contains(e, "no such host") || strings.Contains(e, "lookup "):
		return "name not resolved"
	case strings.Contains(e, "timeout") || strings.Contains(e, "deadline exceeded"):
		return "timed out"
	case strings.Contains(e, "connection refused"):
		return "connection refused"
	case strings.Contains(e, "tls") || strings.Contains(e, "x509") || strings.Contains(e, "certificate"):
		return "TLS error"
	case strings.Contains(e, "keyword"):
		return "keyword check failed"
	case strings.Contains(e, "status"):
		return "unexpected HTTP status"
	}
	return "unreachable"
}

// chart is a response-time chart in a 600×160 view box: the plot area is
// x 60–590, y 10–130.
type chart struct {
	Points string // the polyline's points
	Down   []point
	Max    int64 // the y axis' top, ms
	From   string
	To     string
	Runs   int
}

type point struct{ X, Y float64 }

// responseChart draws runs (newest first) after since.
func responseChart(runs []Run, since time.Time) chart {
	var rs []Run
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].At.After(since) {
			rs = append(rs, runs[i])
		}
	}
	if len(rs) == 0 {
		return chart{}
	}
	var hi int64 = 1
	for _, r := range rs {
		hi = max(hi, r.ResponseTimeMs)
	}
	hi = console.NiceCeil(hi)
	t0, t1 := rs[0].At, rs[len(rs)-1].At
	span := t1.Sub(t0)
	var b strings.Builder
	c := chart{Max: hi, Runs: len(rs), From: t0.UTC().Format("Jan 2 15:04"), To: t1.UTC().Format("Jan 2 15:04 MST")}
	for i, r := range rs {
		x := 590.0
		if span > 0 {
			x = 60 + 530*float64(r.At.Sub(t0))/float64(span)
		}
		y := 130 - 120*float64(r.ResponseTimeMs)/float64(hi)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
		if !r.Up && len(c.Down) < 200 {
			c.Down = append(c.Down, point{x, y})
		}
	}
	c.Points = b.String()
	return c
}

package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Wallcrawler's session inspector: for a person signed in with a
// Wallcrawler API key, the sessions of each of the key's projects (by
// status and time, with their usage), a session's lifecycle, CDP log,
// console messages, network requests, downloads and replay, the project's
// contexts and its usage over time.

// WCProject is a project the signed-in key may use.
type WCProject struct {
	ID, Name       string
	Concurrency    int
	Active         int     // sessions holding a slot now
	BrowserMinutes float64 // the project's usage counters
	ProxyBytes     int64
}

// WCSession is a session as the list shows it.
type WCSession struct {
	ID, Status, InternalStatus, Region string
	CreatedAt, StartedAt, EndedAt      time.Time
	ExpiresAt                          time.Time
	KeepAlive                          bool
	ContextID                          string
	ProxyBytes                         int64
	AvgCPU                             float64 // percent of one core
	Memory                             int64   // bytes
	Sampled                            bool    // AvgCPU and Memory were measured
	Error                              string
	Metadata                           string // userMetadata as JSON
}

// Duration is how long the browser ran (so far, for a running session).
func (s WCSession) Duration(now time.Time) time.Duration {
	if s.StartedAt.IsZero() {
		return 0
	}
	end := s.EndedAt
	if end.IsZero() {
		end = now
	}
	return end.Sub(s.StartedAt)
}

// WCEvent is one step of a session's lifecycle.
type WCEvent struct {
	Time                   time.Time
	Source, From, To, Note string
}

// WCLogEntry is one CDP command of a session with its response.
type WCLogEntry struct {
	Time               time.Time
	Method, CDPSession string
	Request, Response  string // raw JSON, cut
	DurationMs         float64
}

// WCConsole is one console message of a session's page.
type WCConsole struct {
	Time                        time.Time
	PageID, Level, Source, Text string
	URL                         string
}

// WCRequest is one network request of a session's page.
type WCRequest struct {
	Time                                time.Time
	PageID, Method, URL, Type, MimeType string
	Status                              int
	Size                                int64
	DurationMs                          float64
	Error                               string
	Done                                bool
}

// WCFrame is one frame of a session's replay.
type WCFrame struct {
	Time   time.Time
	PageID string
}

// WCDetail is everything the session page shows.
type WCDetail struct {
	Session WCSession
	Events  []WCEvent
	Logs    []WCLogEntry
	Console []WCConsole
	Network []WCRequest
	Frames  []WCFrame
	// Dropped counts console messages, requests and frames the
	// recording's bounds left out.
	DroppedConsole, DroppedNetwork, DroppedFrames int
	RecordError                                   string
}

// WCContext is a browser context of a project.
type WCContext struct {
	ID, Name, Status     string
	CreatedAt, UpdatedAt time.Time
	Size                 int64 // bytes of its profile archive; -1 when it has none yet
}

// Wallcrawler is what the inspector needs of Wallcrawler, for the key a
// person signed in with (subject: the session's principal id). Every
// method checks the key again (a revoked key fails) and that projectID is
// one of its projects; a session or context of another project is
// ErrNotFound.
type Wallcrawler interface {
	// Projects returns the key's projects, its primary project first.
	Projects(ctx context.Context, subject string) ([]WCProject, error)
	// Sessions returns a project's sessions, newest first (at most limit).
	Sessions(ctx context.Context, subject, projectID string, limit int) ([]WCSession, error)
	// Session returns a session with its lifecycle, logs and recording.
	Session(ctx context.Context, subject, projectID, id string) (WCDetail, error)
	// Frame returns frame n of a session's replay (a JPEG).
	Frame(ctx context.Context, subject, projectID, id string, n int) ([]byte, error)
	// Downloads writes the zip of a session's downloads.
	Downloads(ctx context.Context, subject, projectID, id string, w io.Writer) error
	// Release ends a running session.
	Release(ctx context.Context, subject, projectID, id string) error
	// Contexts returns a project's contexts.
	Contexts(ctx context.Context, subject, projectID string) ([]WCContext, error)
}

func (c *Console) wallcrawlerRoutes(m *http.ServeMux) {
	if c.opts.Wallcrawler == nil {
		return
	}
	m.HandleFunc("GET /console/wallcrawler/{$}", c.wcHome)
	m.HandleFunc("GET /console/wallcrawler/{project}/{$}", c.wcSessions)
	m.HandleFunc("GET /console/wallcrawler/{project}/contexts", c.wcContexts)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}", c.wcSession)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}/frames/{n}", c.wcFrame)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}/downloads.zip", c.wcDownloads)
	m.HandleFunc("POST /console/wallcrawler/{project}/sessions/{id}/release", c.wcRelease)
}

// wcProject returns the session and the project of the URL, answering
// 404 for a project that is not the key's.
func (c *Console) wcProject(w http.ResponseWriter, r *http.Request) (session, WCProject, []WCProject, bool) {
	ss, ok := c.require(w, r, "wallcrawler")
	if !ok {
		return ss, WCProject{}, nil, false
	}
	ps, err := c.opts.Wallcrawler.Projects(r.Context(), ss.Subject)
	if err != nil {
		c.failure(w, r, err)
		return ss, WCProject{}, nil, false
	}
	want := r.PathValue("project")
	for _, p := range ps {
		if p.ID == want {
			return ss, p, ps, true
		}
	}
	c.notFound(w, r)
	return ss, WCProject{}, nil, false
}

func (c *Console) wcHome(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "wallcrawler")
	if !ok {
		return
	}
	ps, err := c.opts.Wallcrawler.Projects(r.Context(), ss.Subject)
	if err != nil {
		c.failure(w, r, err)
		return
	}
	if len(ps) == 0 {
		c.notFound(w, r)
		return
	}
	http.Redirect(w, r, "/console/wallcrawler/"+ps[0].ID+"/", http.StatusSeeOther)
}

// wcListLimit bounds the sessions read for the list and the chart.
const wcListLimit = 1000

// wcPerPage is the sessions list's page size.
const wcPerPage = 50

type wcSessionsData struct {
	Project  WCProject
	Projects []WCProject
	Rows     []WCSession
	Status   string // filter: RUNNING, COMPLETED, ERROR, TIMED_OUT or ""
	Since    string // filter: 1h, 24h, 7d or ""
	Counts   map[string]int
	Total    int // sessions matching the filters
	Page     int
	Prev     string
	Next     string
	Chart    wcChart
	Now      time.Time
	Msg      string
}

var wcSince = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

func (c *Console) wcSessions(w http.ResponseWriter, r *http.Request) {
	ss, p, ps, ok := c.wcProject(w, r)
	if !ok {
		return
	}
	all, err := c.opts.Wallcrawler.Sessions(r.Context(), ss.Subject, p.ID, wcListLimit)
	if err != nil {
		c.failure(w, r, err)
		return
	}
	q := r.URL.Query()
	now := c.opts.Now()
	d := wcSessionsData{Project: p, Projects: ps, Status: q.Get("status"), Since: q.Get("since"), Counts: map[string]int{}, Now: now,
		Chart: usageChart(all, now, 14), Msg: q.Get("msg")}
	if _, ok := wcSince[d.Since]; !ok {
		d.Since = ""
	}
	for _, s := range all {
		if s.Status == "RUNNING" { // the counter has the ended sessions' time
			d.Project.BrowserMinutes += s.Duration(now).Minutes()
		}
	}
	var rows []WCSession
	for _, s := range all {
		if d.Since != "" && s.CreatedAt.Before(now.Add(-wcSince[d.Since])) {
			continue
		}
		d.Counts[s.Status]++
		if d.Status != "" && s.Status != d.Status {
			continue
		}
		rows = append(rows, s)
	}
	d.Total = len(rows)
	d.Page, _ = strconv.Atoi(q.Get("page"))
	pages := max(1, (len(rows)+wcPerPage-1)/wcPerPage)
	d.Page = min(max(d.Page, 1), pages)
	if d.Page > 1 {
		d.Prev = strconv.Itoa(d.Page - 1)
	}
	if d.Page < pages {
		d.Next = strconv.Itoa(d.Page + 1)
	}
	d.Rows = rows[(d.Page-1)*wcPerPage : min(len(rows), d.Page*wcPerPage)]
	c.render(w, r, http.StatusOK, "wc_sessions", d)
}

type wcSessionData struct {
	Project WCProject
	WCDetail
	Q       string // CDP log search
	Logs    []WCLogEntry
	LogsAll int
	Now     time.Time
}

// wcMaxLogRows bounds the CDP log rows shown.
const wcMaxLogRows = 500

func (c *Console) wcSession(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := c.wcProject(w, r)
	if !ok {
		return
	}
	det, err := c.opts.Wallcrawler.Session(r.Context(), ss.Subject, p.ID, r.PathValue("id"))
	if err != nil {
		c.notFoundOr404(w, r, err)
		return
	}
	d := wcSessionData{Project: p, WCDetail: det, Q: strings.TrimSpace(r.URL.Query().Get("q")), LogsAll: len(det.Logs), Now: c.opts.Now()}
	needle := strings.ToLower(d.Q)
	for i := len(det.Logs) - 1; i >= 0 && len(d.Logs) < wcMaxLogRows; i-- { // newest first
		e := det.Logs[i]
		if needle == "" || strings.Contains(strings.ToLower(e.Method), needle) || strings.Contains(strings.ToLower(e.Request), needle) ||
			strings.Contains(strings.ToLower(e.Response), needle) {
			d.Logs = append(d.Logs, e)
		}
	}
	c.render(w, r, http.StatusOK, "wc_session", d)
}

func (c *Console) wcFrame(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := c.wcProject(w, r)
	if !ok {
		return
	}
	n, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("n"), ".jpg"))
	if err != nil || n < 0 {
		c.notFound(w, r)
		return
	}
	b, err := c.opts.Wallcrawler.Frame(r.Context(), ss.Subject, p.ID, r.PathValue("id"), n)
	if err != nil {
		c.notFoundOr404(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	_, _ = w.Write(b)
}

func (c *Console) wcDownloads(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := c.wcProject(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	var buf strings.Builder
	if err := c.opts.Wallcrawler.Downloads(r.Context(), ss.Subject, p.ID, id, &buf); err != nil {
		c.notFoundOr404(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", id+"-downloads.zip"))
	_, _ = io.WriteString(w, buf.String())
}

func (c *Console) wcRelease(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := c.wcProject(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := c.opts.Wallcrawler.Release(r.Context(), ss.Subject, p.ID, id); err != nil {
		c.notFoundOr404(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/wallcrawler/"+p.ID+"/sessions/"+id, http.StatusSeeOther)
}

type wcContextsData struct {
	Project  WCProject
	Projects []WCProject
	Rows     []WCContext
	Total    int64
}

func (c *Console) wcContexts(w http.ResponseWriter, r *http.Request) {
	ss, p, ps, ok := c.wcProject(w, r)
	if !ok {
		return
	}
	rows, err := c.opts.Wallcrawler.Contexts(r.Context(), ss.Subject, p.ID)
	if err != nil {
		c.failure(w, r, err)
		return
	}
	d := wcContextsData{Project: p, Projects: ps, Rows: rows}
	for _, x := range rows {
		d.Total += max(x.Size, 0)
	}
	c.render(w, r, http.StatusOK, "wc_contexts", d)
}

// wcChart is a server-rendered SVG bar chart of a project's browser
// minutes per day, with the proxied bytes in each bar's title.
type wcChart struct {
	Bars  []wcBar
	Max   float64 // the tallest bar's minutes
	Width int
}

type wcBar struct {
	X, Y, W, H float64
	Day        string
	Minutes    float64
	Bytes      int64
	Sessions   int
}

// usageChart adds up the browser time (by the day it started) and
// proxied bytes of sessions over the last days days.
func usageChart(all []WCSession, now time.Time, days int) wcChart {
	today := now.UTC()
	start := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(days - 1))
	bars := make([]wcBar, days)
	for i := range bars {
		bars[i].Day = start.AddDate(0, 0, i).Format("Jan 2")
	}
	for _, s := range all {
		at := s.StartedAt
		if at.IsZero() {
			at = s.CreatedAt
		}
		i := int(at.UTC().Sub(start) / (24 * time.Hour))
		if at.Before(start) || i >= days {
			continue
		}
		bars[i].Minutes += s.Duration(now).Minutes()
		bars[i].Bytes += s.ProxyBytes
		bars[i].Sessions++
	}
	ch := wcChart{Width: days * 20}
	for _, b := range bars {
		ch.Max = max(ch.Max, b.Minutes)
	}
	for i := range bars {
		b := &bars[i]
		b.X, b.W = float64(i*20+2), 16
		if ch.Max > 0 {
			b.H = 100 * b.Minutes / ch.Max
		}
		if b.Minutes > 0 && b.H < 1 {
			b.H = 1
		}
		b.Y = 100 - b.H
	}
	ch.Bars = bars
	return ch
}

// Template helpers of the inspector.
func init() {
	funcs["bytes"] = humanBytes
	funcs["since"] = func(a, b time.Time) string {
		if a.IsZero() || b.IsZero() {
			return "–"
		}
		return b.Sub(a).Round(time.Millisecond).String()
	}
	funcs["dur"] = func(d time.Duration) string {
		if d <= 0 {
			return "–"
		}
		if d < time.Minute {
			return d.Round(100 * time.Millisecond).String()
		}
		return d.Round(time.Second).String()
	}
	funcs["ts"] = func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000")
	}
	funcs["ms"] = func(f float64) string {
		if f <= 0 {
			return "–"
		}
		return strconv.FormatFloat(f, 'f', 0, 64) + " ms"
	}
}

// humanBytes writes n bytes as 1.5 KiB, 3.2 MiB….
func humanBytes(n int64) string {
	if n < 0 {
		return "–"
	}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if f < 1024 {
			break
		}
		f, unit = f/1024, u
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + unit
}

// Package wallcrawler is the console's Wallcrawler session inspector: for
// a person signed in with a Wallcrawler API key, the sessions of each of
// the key's projects (by status and time, with their usage), a session's
// lifecycle, CDP log, console messages, network requests, downloads and
// replay, the project's contexts and its usage over time. Backend is
// Wallcrawler as the pages see it; Adapt makes one of Wallcrawler's
// stores.
package wallcrawler

import (
	"archive/zip"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// Project is a project the signed-in key may use.
type Project struct {
	ID, Name       string
	Concurrency    int
	Active         int     // sessions holding a slot now
	BrowserMinutes float64 // the project's usage counters
	ProxyBytes     int64
}

// Session is a session as the list shows it.
type Session struct {
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
func (s Session) Duration(now time.Time) time.Duration {
	if s.StartedAt.IsZero() {
		return 0
	}
	end := s.EndedAt
	if end.IsZero() {
		end = now
	}
	return end.Sub(s.StartedAt)
}

// Event is one step of a session's lifecycle.
type Event struct {
	Time                   time.Time
	Source, From, To, Note string
}

// LogEntry is one CDP command of a session with its response.
type LogEntry struct {
	Time               time.Time
	Method, CDPSession string
	Request, Response  string // raw JSON, cut
	DurationMs         float64
}

// ConsoleMessage is one console message of a session's page.
type ConsoleMessage struct {
	Time                        time.Time
	PageID, Level, Source, Text string
	URL                         string
}

// Request is one network request of a session's page.
type Request struct {
	Time                                time.Time
	PageID, Method, URL, Type, MimeType string
	Status                              int
	Size                                int64
	DurationMs                          float64
	Error                               string
	Done                                bool
}

// Frame is one frame of a session's replay.
type Frame struct {
	Time   time.Time
	PageID string
}

// DOMEvent is one rrweb event of a page's DOM recording, in rrweb's
// shape, for its Replayer.
type DOMEvent struct {
	Type      int             `json:"type"`
	Timestamp int64           `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// DOMPage is a page with a DOM recording.
type DOMPage struct {
	ID     string
	Events int
}

// Detail is everything the session page shows.
type Detail struct {
	Session Session
	Events  []Event
	Logs    []LogEntry
	Console []ConsoleMessage
	Network []Request
	Frames  []Frame
	// DOMPages are the pages with a DOM recording, in the order of their
	// first event.
	DOMPages []DOMPage
	// Dropped counts console messages, requests, frames and DOM events
	// the recording's bounds left out.
	DroppedConsole, DroppedNetwork, DroppedFrames, DroppedDOM int
	RecordError                                               string
}

// BrowserContext is a browser context of a project.
type BrowserContext struct {
	ID, Name, Status     string
	CreatedAt, UpdatedAt time.Time
	Size                 int64 // bytes of its profile archive; -1 when it has none yet
}

// Backend is what the inspector needs of Wallcrawler, for the key a
// person signed in with (subject: the session's principal id). Every
// method checks the key again (a revoked key fails) and that projectID is
// one of its projects; a session or context of another project is
// console.ErrNotFound.
type Backend interface {
	// Projects returns the key's projects, its primary project first.
	Projects(ctx context.Context, subject string) ([]Project, error)
	// Sessions returns a project's sessions, newest first (at most limit).
	Sessions(ctx context.Context, subject, projectID string, limit int) ([]Session, error)
	// Session returns a session with its lifecycle, logs and recording.
	Session(ctx context.Context, subject, projectID, id string) (Detail, error)
	// DOM returns the DOM recording of one page of a session (pageID ""
	// for the first page recorded), oldest first.
	DOM(ctx context.Context, subject, projectID, id, pageID string) ([]DOMEvent, error)
	// Frame returns frame n of a session's replay (a JPEG).
	Frame(ctx context.Context, subject, projectID, id string, n int) ([]byte, error)
	// LiveView returns the path (on the console's own origin) of the live
	// view of a running session's first page, with a fresh live-view
	// token, interactive unless viewOnly; a session that is not running is
	// console.ErrNotFound.
	LiveView(ctx context.Context, subject, projectID, id string, viewOnly bool) (string, error)
	// Downloads writes the zip of a session's downloads.
	Downloads(ctx context.Context, subject, projectID, id string, w io.Writer) error
	// Release ends a running session.
	Release(ctx context.Context, subject, projectID, id string) error
	// Contexts returns a project's contexts.
	Contexts(ctx context.Context, subject, projectID string) ([]BrowserContext, error)
}

//go:embed templates/*.html
var templates embed.FS

// Area is the session inspector of Wallcrawler API keys (realm
// "wallcrawler").
type Area struct {
	b Backend
	k *console.Kit
}

// New returns the inspector over b.
func New(b Backend) *Area { return &Area{b: b} }

// Name implements console.Area.
func (*Area) Name() string { return "wallcrawler" }

// Nav links a Wallcrawler key's holder to their sessions.
func (*Area) Nav(_ *http.Request, s console.Session) template.HTML {
	if s.Realm != "wallcrawler" {
		return ""
	}
	return `<a href="/console/wallcrawler/" id="nav-wc">Sessions</a>`
}

// Mount implements console.Area.
func (a *Area) Mount(m *http.ServeMux, k *console.Kit) error {
	a.k = k
	if err := k.Pages(templates, funcs); err != nil {
		return err
	}
	m.HandleFunc("GET /console/wallcrawler/{$}", a.home)
	m.HandleFunc("GET /console/wallcrawler/{project}/{$}", a.sessionsPage)
	m.HandleFunc("GET /console/wallcrawler/{project}/contexts", a.contextsPage)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}", a.sessionPage)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}/{tab}", a.sessionPage)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}/frames/{n}", a.framePage)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}/downloads.zip", a.downloads)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}/live", a.live)
	m.HandleFunc("GET /console/wallcrawler/{project}/sessions/{id}/dom.json", a.dom)
	m.HandleFunc("POST /console/wallcrawler/{project}/sessions/{id}/release", a.release)
	return nil
}

// project returns the session and the project of the URL, answering
// 404 for a project that is not the key's.
func (a *Area) project(w http.ResponseWriter, r *http.Request) (console.Session, Project, []Project, bool) {
	ss, ok := a.k.Require(w, r, "wallcrawler")
	if !ok {
		return ss, Project{}, nil, false
	}
	ps, err := a.b.Projects(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return ss, Project{}, nil, false
	}
	want := r.PathValue("project")
	for _, p := range ps {
		if p.ID == want {
			return ss, p, ps, true
		}
	}
	a.k.NotFound(w, r)
	return ss, Project{}, nil, false
}

func (a *Area) home(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "wallcrawler")
	if !ok {
		return
	}
	ps, err := a.b.Projects(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	if len(ps) == 0 {
		a.k.NotFound(w, r)
		return
	}
	http.Redirect(w, r, "/console/wallcrawler/"+ps[0].ID+"/", http.StatusSeeOther)
}

// listLimit bounds the sessions read for the list and the chart.
const listLimit = 1000

// perPage is the sessions list's page size.
const perPage = 50

type sessionsData struct {
	Project  Project
	Projects []Project
	Rows     []Session
	Status   string // filter: RUNNING, COMPLETED, ERROR, TIMED_OUT or ""
	Since    string // filter: 1h, 24h, 7d or ""
	Counts   map[string]int
	Total    int // sessions matching the filters
	Page     int
	Prev     string
	Next     string
	Chart    chart
	Now      time.Time
	Msg      string
}

var sinceRanges = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

func (a *Area) sessionsPage(w http.ResponseWriter, r *http.Request) {
	ss, p, ps, ok := a.project(w, r)
	if !ok {
		return
	}
	all, err := a.b.Sessions(r.Context(), ss.Subject, p.ID, listLimit)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	q := r.URL.Query()
	now := a.k.Now()
	d := sessionsData{Project: p, Projects: ps, Status: q.Get("status"), Since: q.Get("since"), Counts: map[string]int{}, Now: now,
		Chart: usageChart(all, now, 14), Msg: q.Get("msg")}
	if _, ok := sinceRanges[d.Since]; !ok {
		d.Since = ""
	}
	for _, s := range all {
		if s.Status == "RUNNING" { // the counter has the ended sessions' time
			d.Project.BrowserMinutes += s.Duration(now).Minutes()
		}
	}
	var rows []Session
	for _, s := range all {
		if d.Since != "" && s.CreatedAt.Before(now.Add(-sinceRanges[d.Since])) {
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
	pages := max(1, (len(rows)+perPage-1)/perPage)
	d.Page = min(max(d.Page, 1), pages)
	if d.Page > 1 {
		d.Prev = strconv.Itoa(d.Page - 1)
	}
	if d.Page < pages {
		d.Next = strconv.Itoa(d.Page + 1)
	}
	d.Rows = rows[(d.Page-1)*perPage : min(len(rows), d.Page*perPage)]
	a.k.Render(w, r, http.StatusOK, "sessions", d)
}

// tabs are the session page's tabs, each its own URL (the overview the
// session's, the others below it), so each works without JavaScript.
var tabs = []struct{ Path, Label string }{
	{"", "Overview"}, {"replay", "Replay"}, {"console", "Console"}, {"network", "Network"}, {"cdp", "CDP log"}, {"downloads", "Downloads"},
}

type sessionData struct {
	Project Project
	Detail
	Tab     string // one of tabs' paths
	Tabs    []tabLink
	Q       string // CDP log search
	Logs    []LogEntry
	LogsAll int
	Files   []DownloadFile
	DOMPage string // the page the replay tab plays
	Now     time.Time
}

type tabLink struct {
	Path, Label string
	Count       int // rows behind the tab; -1 where none is shown
	Current     bool
}

// DownloadFile is one file of a session's downloads.
type DownloadFile struct {
	Name     string
	Size     int64
	Modified time.Time
}

// maxLogRows bounds the CDP log rows shown.
const maxLogRows = 500

func (a *Area) sessionPage(w http.ResponseWriter, r *http.Request) {
	tab := r.PathValue("tab")
	known := false
	for _, t := range tabs {
		known = known || t.Path == tab
	}
	if !known || (tab == "" && strings.HasSuffix(r.URL.Path, "/")) {
		a.k.NotFound(w, r)
		return
	}
	ss, p, _, ok := a.project(w, r)
	if !ok {
		return
	}
	det, err := a.b.Session(r.Context(), ss.Subject, p.ID, r.PathValue("id"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	d := sessionData{Project: p, Detail: det, Tab: tab, Q: strings.TrimSpace(r.URL.Query().Get("q")), LogsAll: len(det.Logs), Now: a.k.Now()}
	counts := map[string]int{"": -1, "replay": len(det.Frames), "console": len(det.Console), "network": len(det.Network), "cdp": len(det.Logs), "downloads": -1}
	for _, t := range tabs {
		d.Tabs = append(d.Tabs, tabLink{Path: t.Path, Label: t.Label, Count: counts[t.Path], Current: t.Path == tab})
	}
	switch tab {
	case "cdp":
		needle := strings.ToLower(d.Q)
		for i := len(det.Logs) - 1; i >= 0 && len(d.Logs) < maxLogRows; i-- { // newest first
			e := det.Logs[i]
			if needle == "" || strings.Contains(strings.ToLower(e.Method), needle) || strings.Contains(strings.ToLower(e.Request), needle) ||
				strings.Contains(strings.ToLower(e.Response), needle) {
				d.Logs = append(d.Logs, e)
			}
		}
	case "downloads":
		var buf bytes.Buffer
		if err := a.b.Downloads(r.Context(), ss.Subject, p.ID, det.Session.ID, &buf); err != nil {
			a.k.NotFoundOr(w, r, err)
			return
		}
		if d.Files, err = zipFiles(buf.Bytes()); err != nil {
			a.k.Failure(w, r, err)
			return
		}
	}
	if tab == "replay" && len(det.DOMPages) > 0 {
		d.DOMPage = det.DOMPages[0].ID
		for _, pg := range det.DOMPages {
			if pg.ID == r.URL.Query().Get("page") {
				d.DOMPage = pg.ID
			}
		}
		// rrweb's Replayer rebuilds the recorded page, its <style>
		// elements and style attributes included, in a frame without
		// scripts (sandbox) that inherits this page's CSP: this page alone
		// allows inline styles; scripts stay 'self' only.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
	}
	a.k.Render(w, r, http.StatusOK, "session", d)
}

// dom answers one page's DOM recording as a JSON array of rrweb events.
func (a *Area) dom(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := a.project(w, r)
	if !ok {
		return
	}
	evs, err := a.b.DOM(r.Context(), ss.Subject, p.ID, r.PathValue("id"), r.URL.Query().Get("page"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	if evs == nil {
		evs = []DOMEvent{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(evs)
}

// zipFiles lists the files of a zip archive.
func zipFiles(b []byte) ([]DownloadFile, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("wallcrawler: the downloads archive: %w", err)
	}
	out := make([]DownloadFile, 0, len(zr.File))
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		out = append(out, DownloadFile{Name: f.Name, Size: int64(f.UncompressedSize64), Modified: f.Modified})
	}
	return out, nil
}

func (a *Area) framePage(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := a.project(w, r)
	if !ok {
		return
	}
	n, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("n"), ".jpg"))
	if err != nil || n < 0 {
		a.k.NotFound(w, r)
		return
	}
	b, err := a.b.Frame(r.Context(), ss.Subject, p.ID, r.PathValue("id"), n)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	_, _ = w.Write(b)
}

// live sends the browser on to the live view of a running session, with a
// token minted for this request: the session page frames this URL, so
// the page's HTML holds neither the API key nor a token, and a reload of
// the frame gets a fresh token for as long as the console session and
// the key are valid. ?mode=view asks for a view-only token.
func (a *Area) live(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := a.project(w, r)
	if !ok {
		return
	}
	u, err := a.b.LiveView(r.Context(), ss.Subject, p.ID, r.PathValue("id"), r.URL.Query().Get("mode") == "view")
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u, http.StatusSeeOther)
}

func (a *Area) downloads(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := a.project(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	var buf strings.Builder
	if err := a.b.Downloads(r.Context(), ss.Subject, p.ID, id, &buf); err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", id+"-downloads.zip"))
	_, _ = io.WriteString(w, buf.String())
}

func (a *Area) release(w http.ResponseWriter, r *http.Request) {
	ss, p, _, ok := a.project(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := a.b.Release(r.Context(), ss.Subject, p.ID, id); err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/wallcrawler/"+p.ID+"/sessions/"+id, http.StatusSeeOther)
}

type contextsData struct {
	Project  Project
	Projects []Project
	Rows     []BrowserContext
	Total    int64
}

func (a *Area) contextsPage(w http.ResponseWriter, r *http.Request) {
	ss, p, ps, ok := a.project(w, r)
	if !ok {
		return
	}
	rows, err := a.b.Contexts(r.Context(), ss.Subject, p.ID)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d := contextsData{Project: p, Projects: ps, Rows: rows}
	for _, x := range rows {
		d.Total += max(x.Size, 0)
	}
	a.k.Render(w, r, http.StatusOK, "contexts", d)
}

// chart is a server-rendered SVG bar chart of a project's browser
// minutes per day, with the proxied bytes in each bar's title, in the
// console's 600×160 chart view box (svg.chart): the plot area is x 60–590,
// y 10–130, the y axis labelled at 0 and Max, every other day labelled
// below its bar (the newest always), so that no two labels overlap at the
// console's 11px chart text.
type chart struct {
	Bars []bar
	Max  int64   // the y axis' top, minutes (a 1-2-5 step above the busiest day)
	Busy float64 // the busiest day's minutes
}

type bar struct {
	X, Y, W, H float64
	LabelX     float64 // the middle of the bar, where its label is centred
	Day        string
	Label      string // Day on every other bar, else ""
	Minutes    float64
	Bytes      int64
	Sessions   int
}

// usageChart adds up the browser time (by the day it started) and
// proxied bytes of sessions over the last days days.
func usageChart(all []Session, now time.Time, days int) chart {
	today := now.UTC()
	start := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(days - 1))
	bars := make([]bar, days)
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
	var ch chart
	for _, b := range bars {
		ch.Busy = max(ch.Busy, b.Minutes)
	}
	ch.Max = console.NiceCeil(max(1, int64(math.Ceil(ch.Busy))))
	step := 530 / float64(days)
	for i := range bars {
		b := &bars[i]
		b.X, b.W = 60+float64(i)*step+step*0.1, step*0.8
		b.LabelX = 60 + float64(i)*step + step/2
		b.H = 120 * b.Minutes / float64(ch.Max)
		if b.Minutes > 0 && b.H < 1 {
			b.H = 1
		}
		b.Y = 130 - b.H
		if (days-1-i)%2 == 0 {
			b.Label = b.Day
		}
	}
	ch.Bars = bars
	return ch
}

// funcs are the inspector's template helpers.
var funcs = template.FuncMap{
	"bytes": humanBytes,
	"since": func(a, b time.Time) string {
		if a.IsZero() || b.IsZero() {
			return "–"
		}
		return b.Sub(a).Round(time.Millisecond).String()
	},
	"dur": func(d time.Duration) string {
		if d <= 0 {
			return "–"
		}
		if d < time.Minute {
			return d.Round(100 * time.Millisecond).String()
		}
		return d.Round(time.Second).String()
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000")
	},
	"ms": func(f float64) string {
		if f <= 0 {
			return "–"
		}
		return strconv.FormatFloat(f, 'f', 0, 64) + " ms"
	},
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

package main

// Page-load mode (-pageload N): the cost of quarry's egress proxy on page
// loads. The harness serves a fixture site on loopback (an HTML document
// with 20 subresources, plus an XHR and two images loaded after the load
// event), over http and, with -https, over https (HTTP/2); it launches
// browsers with browser.NewChromium, alike but for their way out: one
// direct, one through an egress.Proxy that runs in a child process of the
// harness (this binary with -egress-child), so that its CPU time is its
// own, and, when the harness may make network namespaces (root), one in a
// namespace of its own whose egress port the same child serves (the
// harness passes it the listener quarry would serve in-process). Loads of
// the series (variant × http/https) are interleaved, their order rotating
// by load, so that a drifting machine load treats them alike.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quarrydb/quarry/bench/internal/bbclient"
	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

const fixtureTitle = "wallcrawlerbench fixture"

// Fixture subresources: sizes in bytes before compression.
var (
	cssSizes = []int{24 << 10, 9 << 10, 4 << 10}
	jsSizes  = []int{90 << 10, 45 << 10, 20 << 10, 8 << 10, 3 << 10}
	imgSizes = []int{100 << 10, 60 << 10, 40 << 10, 25 << 10, 15 << 10, 10 << 10, 8 << 10, 6 << 10, 4 << 10, 3 << 10, 3 << 10, 2 << 10}
)

// minResources is what a complete load fetches besides the document: the
// 20 subresources, the XHR and the two late images.
const minResources = 23

// resource is one static file of the fixture, compressed once.
type resource struct {
	ctype string
	body  []byte
	gz    []byte // nil: served as is (images)
	etag  string
}

// fixture is the page-load site.
type fixture struct {
	res      map[string]*resource
	css, js  []string
	imgs     []string
	late     []string
	json     *resource
	bytes    int // sum of the subresources' sizes on the wire
	served   atomic.Int64
	modified string
}

func newFixture() (*fixture, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	f := &fixture{res: map[string]*resource{}, modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Format(http.TimeFormat)}
	add := func(path, ctype string, body []byte, compress bool) error {
		sum := sha256.Sum256(body)
		r := &resource{ctype: ctype, body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		wire := len(body)
		if compress {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			if _, err := zw.Write(body); err != nil {
				return err
			}
			if err := zw.Close(); err != nil {
				return err
			}
			r.gz = b.Bytes()
			wire = len(r.gz)
		}
		f.res[path] = r
		f.bytes += wire
		return nil
	}
	for i, n := range cssSizes {
		p := fmt.Sprintf("/static/css/c%d.css", i)
		if err := add(p, "text/css; charset=utf-8", genCSS(rng, n), true); err != nil {
			return nil, err
		}
		f.css = append(f.css, p)
	}
	for i, n := range jsSizes {
		p := fmt.Sprintf("/static/js/j%d.js", i)
		if err := add(p, "text/javascript; charset=utf-8", genJS(rng, i, n), true); err != nil {
			return nil, err
		}
		f.js = append(f.js, p)
	}
	for i, n := range imgSizes {
		p := fmt.Sprintf("/static/img/i%d.png", i)
		b, err := genPNG(rng, n)
		if err != nil {
			return nil, err
		}
		if err := add(p, "image/png", b, false); err != nil {
			return nil, err
		}
		f.imgs = append(f.imgs, p)
	}
	f.late = []string{f.imgs[9], f.imgs[10]}
	items := make([]map[string]any, 40)
	for i := range items {
		items[i] = map[string]any{"id": i, "name": fmt.Sprintf("item %d %x", i, rng.Uint64()), "price": rng.IntN(10000)}
	}
	jb, _ := json.Marshal(map[string]any{"items": items, "images": f.late})
	if err := add("/api/items.json", "application/json", jb, true); err != nil {
		return nil, err
	}
	f.json = f.res["/api/items.json"]
	return f, nil
}

func genCSS(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, ".c%d-%x{color:#%06x;margin:%dpx %dpx;padding:%dpx;font:%dpx/1.4 sans-serif}\n", i, rng.Uint32()&0xffff, rng.IntN(1<<24), rng.IntN(20), rng.IntN(20), rng.IntN(10), 10+rng.IntN(10))
	}
	return b.Bytes()
}

func genJS(rng *rand.Rand, file, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "(function(){var m%d={};\n", file)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "m%d.f%d=function(a,b){var s=%q;return a*%d+b+s.length;};\n", file, i, strconv.FormatUint(rng.Uint64(), 36), rng.IntN(1000))
	}
	fmt.Fprintf(&b, "window.__m%d=m%d;})();\n", file, file)
	return b.Bytes()
}

// genPNG returns an opaque PNG of noise of about n bytes.
func genPNG(rng *rand.Rand, n int) ([]byte, error) {
	side := 1
	for (side+1)*(side+1)*3 <= n {
		side++
	}
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	for y := range side {
		for x := range side {
			v := rng.Uint32()
			img.Set(x, y, color.RGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// page renders the document of one load; nonce makes every URL of the load
// unique, so that nothing comes from a cache.
func (f *fixture) page(nonce string) []byte {
	q := "?r=" + nonce
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n", fixtureTitle)
	for _, p := range f.css {
		fmt.Fprintf(&b, "<link rel=\"stylesheet\" href=\"%s%s\">\n", p, q)
	}
	for _, p := range f.js[:3] {
		fmt.Fprintf(&b, "<script src=\"%s%s\"></script>\n", p, q)
	}
	b.WriteString("</head><body><header><h1>Fixture</h1><nav><a href=\"#a\">A</a> <a href=\"#b\">B</a></nav></header><main>\n")
	for i, p := range f.imgs[:10] {
		fmt.Fprintf(&b, "<article><h2>Article %d</h2><img src=\"%s%s\" alt=\"picture %d\"><p>%s</p></article>\n", i, p, q, i, strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 6))
	}
	b.WriteString("</main><footer>")
	for _, p := range f.imgs[10:] {
		fmt.Fprintf(&b, "<img src=\"%s%s\" alt=\"\">", p, q)
	}
	b.WriteString("</footer>\n")
	for _, p := range f.js[3:] {
		fmt.Fprintf(&b, "<script src=\"%s%s\"></script>\n", p, q)
	}
	fmt.Fprintf(&b, "<script>addEventListener('load',function(){fetch('/api/items.json%s').then(function(r){return r.json()}).then(function(d){d.images.forEach(function(s){var i=new Image();i.src=s+'%s&late=1';document.body.appendChild(i)})})});</script>\n", q, q)
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// ServeHTTP serves the fixture with the headers of a typical static site:
// gzip for text when accepted, long-lived caching of the static files
// (their URLs are unique per load anyway), no-cache for the document.
func (f *fixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.served.Add(1)
	h := w.Header()
	h.Set("Server", "fixture")
	h.Set("X-Content-Type-Options", "nosniff")
	gz := strings.Contains(r.Header.Get("Accept-Encoding"), "gzip")
	if r.URL.Path == "/page" {
		body := f.page(r.URL.Query().Get("r"))
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("Vary", "Accept-Encoding")
		if gz {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
			_, _ = zw.Write(body)
			_ = zw.Close()
			body = b.Bytes()
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
		return
	}
	res := f.res[r.URL.Path]
	if res == nil {
		http.NotFound(w, r)
		return
	}
	h.Set("Content-Type", res.ctype)
	h.Set("ETag", res.etag)
	h.Set("Last-Modified", f.modified)
	if res == f.json {
		h.Set("Cache-Control", "private, no-store")
	} else {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	body := res.body
	if res.gz != nil {
		h.Set("Vary", "Accept-Encoding")
		if gz {
			body = res.gz
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// egressChild is the -egress-child mode: it serves an egress.Proxy whose
// policy allows allow (the fixture's host:ports) on a loopback port, prints
// "listening ADDR", and when its standard input closes, stops and prints
// the proxy's Stats as JSON. With profile set it writes a CPU profile of
// its whole life there.
func egressChild(allow, profile string) error {
	pol, err := fetch.ParsePolicy(allow)
	if err != nil {
		return err
	}
	var log *slog.Logger
	if os.Getenv("WALLCRAWLERBENCH_EGRESS_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: pol}, Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	go serveSentListeners(p)
	fmt.Printf("listening %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = p.Close()
	if err := <-served; err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(p.Stats())
}

// serveSentListeners serves p on every listener the parent sends over
// the Unix socket at fd 3 (SCM_RIGHTS): a browser namespace's egress port.
func serveSentListeners(p *egress.Proxy) {
	f := os.NewFile(3, "listeners")
	c, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return
	}
	uc := c.(*net.UnixConn)
	buf, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(4))
	for {
		_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) == 0 {
			continue
		}
		fds, err := syscall.ParseUnixRights(&msgs[0])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			lf := os.NewFile(uintptr(fd), "egress")
			l, err := net.FileListener(lf)
			_ = lf.Close()
			if err == nil {
				go func() { _ = p.Serve(l) }()
			}
		}
	}
}

// egressProc is a running -egress-child.
type egressProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	addr  string
	fds   *net.UnixConn // listeners sent to the child
}

// serve hands l to the child, which serves the proxy on it (the
// ServeEgress of a namespaced provider).
func (e *egressProc) serve(l net.Listener, _ browser.EgressListener) error {
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = e.fds.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(f.Fd())), nil)
	return err
}

func startEgressChild(allow, profile string) (*egressProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-egress-child", allow}
	if profile != "" {
		args = append(args, "-egress-cpuprofile", profile)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "listeners"), os.NewFile(uintptr(pair[1]), "listeners")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	_ = ours.Close()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{theirs}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("egress child: %w", err)
	}
	e := &egressProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), fds: fc.(*net.UnixConn)}
	line, err := e.out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("egress child: no address (%q, %v)", line, err)
	}
	e.addr = addr
	return e, nil
}

// cpu returns the child's CPU time (user + system) so far.
func (e *egressProc) cpu() time.Duration { return report.ProcCPU(e.cmd.Process.Pid, false) }

// stop ends the child and returns its proxy's Stats.
func (e *egressProc) stop() (egress.Stats, error) {
	var st egress.Stats
	_ = e.fds.Close()
	_ = e.stdin.Close()
	derr := json.NewDecoder(e.out).Decode(&st)
	if err := e.cmd.Wait(); err != nil {
		return st, fmt.Errorf("egress child: %w", err)
	}
	if derr != nil {
		return st, fmt.Errorf("egress child stats: %w", derr)
	}
	return st, nil
}

// series is one variant × scheme's measurements.
type series struct {
	via, scheme string
	load, idle  []time.Duration
	last        []time.Duration // last resource's responseEnd (performance API)
	errors      int
	firstErr    string
	cpu         time.Duration // egress child CPU during the measured loads
}

// pageResult is the page-load mode's outcome.
type pageResult struct {
	series      []*series // per scheme: direct, egress[, netns]
	vias        []string  // the variants measured
	user        string
	sandbox     bool
	fixtureSize int
	stats       egress.Stats
	profile     string
}

// tab is one browser's page target, driven over CDP.
type tab struct {
	b    browser.Browser
	conn *bbclient.CDP
	sess string
}

func openTab(ctx context.Context, p *browser.Chromium) (*tab, error) {
	b, err := p.Launch(ctx, browser.LaunchOptions{})
	if err != nil {
		return nil, err
	}
	t := &tab{b: b}
	if t.conn, err = bbclient.DialWith(ctx, b.HTTPClient(), b.WebSocketURL()); err != nil {
		t.close()
		return nil, err
	}
	if t.sess, err = t.conn.AttachPage(ctx); err != nil {
		t.close()
		return nil, err
	}
	for _, m := range []string{"Page.enable", "Page.setLifecycleEventsEnabled"} {
		var params any
		if m == "Page.setLifecycleEventsEnabled" {
			params = map[string]any{"enabled": true}
		}
		if _, err := t.conn.Call(ctx, t.sess, m, params); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

func (t *tab) close() {
	if t.conn != nil {
		t.conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = t.b.Close(ctx)
	_ = t.b.Remove()
}

// pageLoad navigates to url and returns the time from Page.navigate to the
// main frame's load event and to its networkIdle event (Chromium's: no
// request for 500 ms, which the figure includes), checking that the page
// loaded whole and nothing came from a cache.
func (t *tab) pageLoad(ctx context.Context, url string) (load, idle, last time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := t.conn
	c.ClearEvents()
	t0 := time.Now()
	raw, err := c.Call(ctx, t.sess, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return 0, 0, 0, err
	}
	var nav struct {
		LoaderID  string `json:"loaderId"`
		ErrorText string `json:"errorText"`
	}
	if err := json.Unmarshal(raw, &nav); err != nil {
		return 0, 0, 0, err
	}
	if nav.ErrorText != "" {
		//lint:ignore ST1005 the message starts with the name of the DevTools protocol method that failed
		return 0, 0, 0, fmt.Errorf("Page.navigate: %s", nav.ErrorText)
	}
	var tLoad, tIdle time.Time
	for tLoad.IsZero() || tIdle.IsZero() {
		m, err := c.NextEvent(ctx)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("waiting for load and networkIdle: %w", err)
		}
		if m.Method != "Page.lifecycleEvent" || m.SessionID != t.sess {
			continue
		}
		var ev struct {
			LoaderID string `json:"loaderId"`
			Name     string `json:"name"`
		}
		if json.Unmarshal(m.Params, &ev) != nil || ev.LoaderID != nav.LoaderID {
			continue
		}
		switch ev.Name {
		case "load":
			tLoad = m.At
		case "networkIdle":
			tIdle = m.At
		}
	}
	if tIdle.Before(tLoad) {
		return 0, 0, 0, errors.New("networkIdle before load")
	}
	raw, err = c.Call(ctx, t.sess, "Runtime.evaluate", map[string]any{"returnByValue": true, "expression": `JSON.stringify((function(){
		var r = performance.getEntriesByType('resource');
		return {title: document.title, n: r.length,
			cached: r.filter(function(e){return e.transferSize === 0}).length,
			broken: Array.prototype.filter.call(document.images, function(i){return !i.complete || i.naturalWidth === 0}).length,
			late: document.images.length,
			last: Math.max.apply(null, r.map(function(e){return e.responseEnd}))};
	})())`})
	if err != nil {
		return 0, 0, 0, err
	}
	var ev struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	var chk struct {
		Title  string  `json:"title"`
		N      int     `json:"n"`
		Cached int     `json:"cached"`
		Broken int     `json:"broken"`
		Late   int     `json:"late"`
		Last   float64 `json:"last"` // ms since the navigation started
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return 0, 0, 0, err
	}
	if err := json.Unmarshal([]byte(ev.Result.Value), &chk); err != nil {
		return 0, 0, 0, fmt.Errorf("check: %w (%q)", err, ev.Result.Value)
	}
	if chk.Title != fixtureTitle || chk.N < minResources || chk.Cached > 0 || chk.Broken > 0 || chk.Late < len(imgSizes)+2 {
		return 0, 0, 0, fmt.Errorf("incomplete load: %s", ev.Result.Value)
	}
	return tLoad.Sub(t0), tIdle.Sub(t0), time.Duration(chk.Last * float64(time.Millisecond)), nil
}

// runPageLoad runs the page-load mode.
func runPageLoad(c *config) (*pageResult, error) {
	fx, err := newFixture()
	if err != nil {
		return nil, err
	}
	plain := httptest.NewServer(fx)
	defer plain.Close()
	sites := []*httptest.Server{plain}
	schemes := []string{"http"}
	if c.https {
		s := httptest.NewUnstartedServer(fx)
		s.EnableHTTP2 = true
		s.StartTLS()
		defer s.Close()
		sites = append(sites, s)
		schemes = append(schemes, "https")
	}
	var allow []string
	for _, s := range sites {
		allow = append(allow, s.Listener.Addr().String())
	}
	res := &pageResult{fixtureSize: fx.bytes, profile: c.egressProfile}
	eg, err := startEgressChild(strings.Join(allow, ","), c.egressProfile)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _ = eg.stop()
		}
	}()

	workDir, err := os.MkdirTemp("", "wallcrawlerbench-browsers")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(workDir)
	var user *browser.User
	if os.Geteuid() == 0 {
		if u, err := browser.DefaultUser(); err == nil {
			user = &u
		}
	}
	// --ignore-certificate-errors: the https fixture's certificate is
	// httptest's; only these benchmark browsers get the switch.
	extra := []string{"--ignore-certificate-errors"}
	direct, err := browser.NewChromium(browser.ChromiumOptions{WorkDir: workDir, User: user, ExtraArgs: extra})
	if err != nil {
		return nil, err
	}
	viaEgress, err := browser.NewChromium(browser.ChromiumOptions{WorkDir: workDir, User: user, ExtraArgs: extra, ProxyServer: "http://" + eg.addr})
	if err != nil {
		return nil, err
	}
	cf := direct.Confinement()
	res.user, res.sandbox = cf.User, cf.Sandbox
	providers := []*browser.Chromium{direct, viaEgress}
	res.vias = []string{"direct", "egress"}
	viaNetns, err := browser.NewChromium(browser.ChromiumOptions{WorkDir: workDir, User: user, ExtraArgs: extra, ProxyServer: "http://" + eg.addr, ServeEgress: eg.serve})
	if err != nil {
		return nil, err
	}
	if viaNetns.Confinement().Netns {
		providers = append(providers, viaNetns)
		res.vias = append(res.vias, "netns")
	} else {
		logf("pageload: no network namespaces here (%v): the netns series is left out", viaNetns.Confinement().Warnings)
	}

	type combo struct {
		s    *series
		tab  **tab
		site *httptest.Server
	}
	tabs := make([]*tab, len(providers))
	var combos []combo
	for i, scheme := range schemes {
		for v, via := range res.vias {
			s := &series{via: via, scheme: scheme}
			res.series = append(res.series, s)
			combos = append(combos, combo{s: s, tab: &tabs[v], site: sites[i]})
		}
	}
	ctx := context.Background()
	nonce := 0
	load := func(cb combo, measure bool) {
		for _, s := range sites {
			if c.freshConns {
				// Every load opens its connections: closing the
				// server ends of the last load's (and, through the
				// egress, its upstream connections and tunnels).
				s.CloseClientConnections()
			}
		}
		nonce++
		u := fmt.Sprintf("%s/page?r=%d-%d", cb.site.URL, time.Now().UnixNano(), nonce)
		cpu0 := eg.cpu()
		l, idle, last, err := (*cb.tab).pageLoad(ctx, u)
		if !measure {
			if err != nil {
				logf("pageload: warm-up %s %s: %v", cb.s.via, cb.s.scheme, err)
			}
			return
		}
		if cb.s.via != "direct" {
			cb.s.cpu += eg.cpu() - cpu0
		}
		if err != nil {
			cb.s.errors++
			if cb.s.firstErr == "" {
				cb.s.firstErr = err.Error()
			}
			logf("pageload: %s %s: %v", cb.s.via, cb.s.scheme, err)
			return
		}
		cb.s.load = append(cb.s.load, l)
		cb.s.idle = append(cb.s.idle, idle)
		cb.s.last = append(cb.s.last, last)
	}
	for round := range c.rounds {
		logf("pageload: round %d of %d: launching the browsers", round+1, c.rounds)
		for i, p := range providers {
			if tabs[i], err = openTab(ctx, p); err != nil {
				for _, t := range tabs[:i] {
					t.close()
				}
				return nil, fmt.Errorf("%s browser: %w", res.vias[i], err)
			}
		}
		for range c.warmup {
			for _, cb := range combos {
				load(cb, false)
			}
		}
		for i := range c.pageLoads {
			for k := range combos {
				load(combos[(i+k)%len(combos)], true)
			}
		}
		for _, t := range tabs {
			t.close()
		}
		for _, s := range res.series {
			logf("pageload: round %d: %s %s: %d loads, load p50 %s", round+1, s.via, s.scheme, len(s.load), fmtDur(report.Percentile(s.load, 50)))
		}
	}
	stopped = true
	if res.stats, err = eg.stop(); err != nil {
		return nil, err
	}
	return res, nil
}

func mean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

// ratio renders e/d as "1.04× (+4.0 %)".
func ratio(e, d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	r := float64(e) / float64(d)
	return fmt.Sprintf("%.3f× (%+.1f %%)", r, (r-1)*100)
}

// pageMarkdown appends the page-load section.
func pageMarkdown(b *strings.Builder, c *config, r *pageResult) {
	fmt.Fprintf(b, "\n### Page load: direct vs through the egress proxy (-pageload %d)\n\n", c.pageLoads)
	fmt.Fprintf(b, "- Fixture (harness process, 127.0.0.1, Go net/http): `/page` (HTML, gzip, unique per load) with 20 subresources — 3 CSS (4–24 KB), 5 JS (3–90 KB), gzip, and 12 PNG images (2–100 KB) — %d KB on the wire; after the load event an XHR (JSON) adds two more images. Typical static-site headers (ETag, Last-Modified, `Cache-Control: public, max-age=31536000, immutable`); every URL of a load carries a unique query string, and each load checks that all ≥ %d resources were transferred (`transferSize` > 0: none from a cache), every image decoded and the title.\n", r.fixtureSize>>10, minResources)
	fresh := "the fixture closes every client connection before each load (`CloseClientConnections`), so each load opens its TCP (and TLS) connections: direct to the site, or through the egress (upstream connections and CONNECT tunnels; the browser's own keep-alive connections to the proxy stay open, as with quarry serve)"
	if !c.freshConns {
		fresh = "connections are kept between loads (`-fresh-conns=false`)"
	}
	fmt.Fprintf(b, "- Connections: %s.\n", fresh)
	schemes := "http (HTTP/1.1)"
	if c.https {
		schemes += " and https (httptest TLS, HTTP/2 offered; through the egress a CONNECT tunnel)"
	}
	sandbox := "with Chromium's sandbox"
	if !r.sandbox {
		sandbox = "without Chromium's sandbox"
	}
	netns := " (no network namespaces here: no netns series)"
	if len(r.vias) > 2 {
		netns = "; netns: as egress, but the browser runs in a network namespace of its own and its `--proxy-server` is a port inside it, served by the same child (the harness hands it the listener `browser.NewChromium` opens there, which quarry serve serves in-process)"
	}
	fmt.Fprintf(b, "- Browsers: `browser.NewChromium` providers, identical (user %s, %s, `--ignore-certificate-errors` for the bench only) but for their way out: direct (none) vs egress, `http://` an `egress.Proxy` in a child process of the harness (policy: `--allow-networks` the fixture's host:ports; the flags quarry serve adds with it: `--proxy-bypass-list=<-loopback>`, `--disable-quic`, WebRTC proxied only)%s. Fresh browsers each round; schemes: %s.\n", r.user, sandbox, netns, schemes)
	fmt.Fprintf(b, "- Workload: %d rounds × (%d warm-up loads, not counted, then %d measured loads) per series; the series' loads are interleaved one by one with the order rotating by load. Page load = from sending `Page.navigate` to the main frame's `load` lifecycle event (received by the client); network idle = to `networkIdle` (Chromium: no request for 500 ms, included; it is detected at the end of a renderer task or by a 2 s watchdog, so it falls near 1.1 s or 2.1 s and its ratio is coarse); last response = the latest `responseEnd` of the page's resources, XHR and late images included (performance API, from the navigation's start in the browser).\n\n", c.rounds, c.warmup, c.pageLoads)
	b.WriteString("| scheme | via | load p50 | load p95 | load mean | network idle p50 | network idle p95 | last response p50 | last response p95 | loads | errors | egress CPU / load |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range r.series {
		cpu := "–"
		if s.via != "direct" && len(s.load)+s.errors > 0 {
			cpu = fmtDur(s.cpu / time.Duration(len(s.load)+s.errors))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n", s.scheme, s.via,
			fmtDur(report.Percentile(s.load, 50)), fmtDur(report.Percentile(s.load, 95)), fmtDur(mean(s.load)),
			fmtDur(report.Percentile(s.idle, 50)), fmtDur(report.Percentile(s.idle, 95)),
			fmtDur(report.Percentile(s.last, 50)), fmtDur(report.Percentile(s.last, 95)), len(s.load), s.errors, cpu)
	}
	b.WriteString("\n| scheme | ratio | load p50 | load p95 | load mean | network idle p50 | last response p50 |\n|---|---|--:|--:|--:|--:|--:|\n")
	// Targets: the egress adds at most 10 % to direct loads; the
	// namespace's port costs at most 10 % over the egress on the host.
	var verdicts []string
	met := true
	n := len(r.vias)
	for i := 0; i+n <= len(r.series); i += n {
		pairs := [][2]int{{1, 0}}
		if n > 2 {
			pairs = append(pairs, [2]int{2, 1})
		}
		for _, pr := range pairs {
			e, d := r.series[i+pr[0]], r.series[i+pr[1]]
			fmt.Fprintf(b, "| %s | %s/%s | %s | %s | %s | %s | %s |\n", d.scheme, e.via, d.via,
				ratio(report.Percentile(e.load, 50), report.Percentile(d.load, 50)),
				ratio(report.Percentile(e.load, 95), report.Percentile(d.load, 95)),
				ratio(mean(e.load), mean(d.load)),
				ratio(report.Percentile(e.idle, 50), report.Percentile(d.idle, 50)),
				ratio(report.Percentile(e.last, 50), report.Percentile(d.last, 50)))
			p50d, p50e := report.Percentile(d.load, 50), report.Percentile(e.load, 50)
			if !(len(d.load) > 0 && len(e.load) > 0 && float64(p50e) <= 1.10*float64(p50d)) {
				met = false
			}
			verdicts = append(verdicts, fmt.Sprintf("%s %s/%s %+.1f %%", d.scheme, e.via, d.via, (float64(p50e)/float64(p50d)-1)*100))
		}
	}
	verdict := "met"
	if !met {
		verdict = "missed"
	}
	fmt.Fprintf(b, "\nTargets (p50 to the load event: the egress adds at most 10 %% to direct loads; a browser in its own network namespace loads within 10 %% of the egress on the host's network): %s (%s).", verdict, strings.Join(verdicts, ", "))
	fmt.Fprintf(b, " Egress counters: %d CONNECT tunnels, %d forwarded http requests, %d refused, %d failed (Chromium's own background requests to Google hosts, which do not resolve here; the direct browser's fail too), %.1f MB relayed.\n", r.stats.Tunnels, r.stats.Requests, r.stats.Refused, r.stats.Failed, float64(r.stats.Bytes)/1e6)
	for _, s := range r.series {
		if s.errors > 0 {
			fmt.Fprintf(b, "\n- %s %s: %d failed loads, first: %s\n", s.scheme, s.via, s.errors, oneLine(s.firstErr))
		}
	}
}

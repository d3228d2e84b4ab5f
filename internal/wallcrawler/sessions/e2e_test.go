package sessions_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/origin"
	"github.com/quarrydb/quarry/internal/wallcrawler/api"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"

	"github.com/quarrydb/quarry/internal/testenv"
)

// clock is a test clock: real time plus an adjustable offset.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

// stack is the whole of Wallcrawler on the embedded store and real
// Chromium, served by an httptest server at /wallcrawler.
type stack struct {
	srv     *httptest.Server
	db      *ddb.Store
	auth    *auth.Store
	mgr     *sessions.Manager
	repo    *sessions.Repo
	tokens  *sessions.Tokens
	clock   *clock
	project auth.Project
	key     string
	workDir string
	blobs   *blob.Dir
	table   string // the sessions table

	launched *launched // every browser the stack started
}

// launched is a Provider that keeps the browsers it launched, so that a
// test can reach a browser's own DevTools endpoints, which no tenant
// reaches.
type launched struct {
	p browser.Provider

	mu       sync.Mutex
	browsers []browser.Browser
	// gate, when not nil, holds the Close and Kill of the browsers
	// launched from then on until it is closed.
	gate chan struct{}
}

// Launch implements browser.Provider.
func (l *launched) Launch(ctx context.Context, opts browser.LaunchOptions) (browser.Browser, error) {
	b, err := l.p.Launch(ctx, opts)
	if err == nil {
		l.mu.Lock()
		l.browsers = append(l.browsers, b)
		if l.gate != nil {
			b = &gatedBrowser{Browser: b, gate: l.gate}
		}
		l.mu.Unlock()
	}
	return b, err
}

// gatedBrowser is a browser whose Close and Kill wait for gate to close.
type gatedBrowser struct {
	browser.Browser
	gate chan struct{}
}

func (g *gatedBrowser) Close(ctx context.Context) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Browser.Close(ctx)
}

func (g *gatedBrowser) Kill(ctx context.Context) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Browser.Kill(ctx)
}

// byDownloadDir returns the launched browser whose download dir is dir.
func (l *launched) byDownloadDir(t testing.TB, dir string) browser.Browser {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.browsers {
		if b.DownloadDir() == dir {
			return b
		}
	}
	t.Fatalf("no launched browser downloads into %s", dir)
	return nil
}

func newStack(t *testing.T, concurrency int, opts sessions.Options) *stack {
	t.Helper()
	return newStackWith(t, concurrency, opts, stackOptions{})
}

// stackOptions are newStackWith's further options; the zero value is
// newStack's stack.
type stackOptions struct {
	// Contexts configures the contexts store (unpack caps); nil: defaults.
	Contexts *contexts.Options
	// Origin is the API's origin resolver; nil: the request's Host.
	Origin *origin.Resolver
	// ChromiumPath is the browser binary; "": chromium on PATH.
	ChromiumPath string
	// Logger receives the Manager's logs; nil: discarded.
	Logger *slog.Logger
	// Pool, when positive, puts a warm pool of that many browsers in
	// front of Chromium (as --wallcrawler-pool does).
	Pool int
	// Sync makes the store fsync each commit, as quarry serve does by
	// default (the tests' store does not).
	Sync bool
	// Cut, when set, makes every call of the Manager's DynamoDB client
	// fail while it holds true: the node cut off from the store.
	Cut *atomic.Bool
}

// cutOff returns a client option that fails every call while cut holds
// true, before it reaches the store.
func cutOff(cut *atomic.Bool) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("cutOff",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if cut.Load() {
						return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("test: cut off from the store")
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	}
}

// newStackWith is newStack with further options. The upload handler bounds
// archives as quarry serve does (the store's MaxArchiveBytes, at most 512
// MiB) and voids the URLs of deleted contexts.
func newStackWith(t testing.TB, concurrency int, opts sessions.Options, so stackOptions) *stack {
	t.Helper()
	testenv.Chromium(t)
	ctx := context.Background()
	clk := &clock{}
	store, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: !so.Sync, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	client := ddb.NewClient(store)
	if so.Cut != nil {
		client = ddb.NewClient(store, cutOff(so.Cut))
	}
	names, err := tables.EnsureTables(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{clock: clk, workDir: t.TempDir(), db: store}
	st.auth = auth.New(client, names, &auth.Options{Now: clk.now})
	if st.project, err = st.auth.CreateProject(ctx, auth.CreateProjectInput{Name: "e2e", Concurrency: concurrency}); err != nil {
		t.Fatal(err)
	}
	if st.key, _, err = st.auth.CreateKey(ctx, auth.CreateKeyInput{ProjectID: st.project.ID}); err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st.blobs, st.table = blobs, names.Sessions
	chromium, err := browser.NewChromium(browser.ChromiumOptions{Path: so.ChromiumPath, WorkDir: st.workDir + "/browsers", StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st.launched = &launched{p: chromium}
	var provider browser.Provider = st.launched
	var pool *browser.Pool
	if so.Pool > 0 {
		pool = browser.NewPool(ctx, st.launched, so.Pool, nil)
		provider = pool
	}
	st.repo = sessions.NewRepo(client, names, clk.now)
	st.tokens = sessions.NewTokens([]byte("0123456789abcdef0123456789abcdef"), clk.now)
	ctxStore := contexts.New(client, names, blobs, so.Contexts)
	opts.WorkDir, opts.Now, opts.Logger = st.workDir, clk.now, log
	if so.Logger != nil {
		opts.Logger = so.Logger
	}
	if opts.ReapEvery == 0 {
		opts.ReapEvery = time.Hour // tests call Reap themselves
	}
	st.mgr = sessions.NewManager(sessions.Deps{
		Repo: st.repo, Auth: st.auth, Contexts: ctxStore, Blobs: blobs, Browsers: provider, Tokens: st.tokens,
		Notifier: sessions.NewNotifier(client, ddb.NewStreamsClient(store), names.Sessions, 5*time.Millisecond, nil, nil),
	}, opts)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = st.mgr.Run(runCtx) }()
	signer := blob.NewSigner([]byte("0123456789abcdef0123456789abcdef"), "/wallcrawler/uploads/", nil)
	h := api.New(st.auth, &api.Options{Logger: log, Sessions: st.mgr, Contexts: ctxStore, Uploads: signer, CDP: cdp.NewProxy(st.mgr, log), Origin: so.Origin})
	mux := http.NewServeMux()
	mux.Handle("/wallcrawler/", http.StripPrefix("/wallcrawler", h))
	mux.Handle("/wallcrawler/uploads/", signer.HandlerWith(blobs, blob.HandlerOptions{
		MaxBytes: min(512<<20, ctxStore.MaxArchiveBytes()), Allow: ctxStore.AllowUpload,
	}))
	st.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		st.srv.CloseClientConnections()
		st.srv.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st.mgr.Close(cctx)
		if pool != nil {
			_ = pool.Close(cctx)
		}
		stop()
		<-done
		if pids, _ := browser.Leftovers(st.workDir); len(pids) > 0 {
			t.Errorf("chromium processes left after the test: %v", pids)
			_, _ = browser.KillLeftovers(st.workDir)
		}
	})
	return st
}

// call performs a request with the stack's key (unless hdr overrides it)
// and decodes a JSON answer into out (when non-nil).
func (st *stack) call(t testing.TB, method, path string, body any, out any, hdr ...string) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, st.srv.URL+"/wallcrawler"+path, rd)
	req.Header.Set("X-BB-API-Key", st.key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s → %d %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	return resp.StatusCode
}

type sessionJSON struct {
	ID, Status, ProjectID, ConnectURL, SigningKey, ContextID string
	CreatedAt, StartedAt, EndedAt, ExpiresAt                 string
	ProxyBytes                                               int64
	KeepAlive                                                bool
	UserMetadata                                             map[string]any
}

func (st *stack) create(t testing.TB, body map[string]any) sessionJSON {
	t.Helper()
	var s sessionJSON
	if code := st.call(t, "POST", "/v1/sessions", body, &s); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	return s
}

func (st *stack) release(t *testing.T, id string) sessionJSON {
	t.Helper()
	var s sessionJSON
	if code := st.call(t, "POST", "/v1/sessions/"+id, map[string]any{"status": "REQUEST_RELEASE"}, &s); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	return s
}

// connect opens a chromedp context on a connectUrl.
func connect(t *testing.T, connectURL string) context.Context {
	t.Helper()
	actx, cancelA := remote.NewAllocator(context.Background(), connectURL, remote.NoModifyURL)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	// Open the page now, so that it lives as long as ctx (not as long as
	// the first action's derived context).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("connect %s: %v", connectURL, err)
	}
	return ctx
}

// site serves pages for the browser: /title, /set (a persistent cookie),
// /check (echoes the cookie), /report (a download).
func site(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/set":
			http.SetCookie(w, &http.Cookie{Name: "who", Value: "session-one", MaxAge: 3600, Path: "/"})
			fmt.Fprint(w, "<title>set</title>")
		case "/check":
			c, _ := r.Cookie("who")
			v := "none"
			if c != nil {
				v = c.Value
			}
			fmt.Fprintf(w, "<title>cookie=%s</title>", v)
		case "/report":
			w.Header().Set("Content-Disposition", `attachment; filename="report.txt"`)
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "quarterly numbers")
		default:
			fmt.Fprint(w, "<html><head><title>Hello from loopback</title></head><body>hi</body></html>")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func title(t *testing.T, ctx context.Context, u string) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(cctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("navigate %s: %v", u, err)
	}
	got, err := chromedp.Run(cctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSessionLifecycle(t *testing.T) {
	st := newStack(t, 2, sessions.Options{})
	web := site(t)
	s := st.create(t, map[string]any{"userMetadata": map[string]any{"order": "A-17"}})
	if s.Status != "RUNNING" || !strings.HasPrefix(s.ConnectURL, "ws://") || s.SigningKey == "" {
		t.Fatalf("created %+v", s)
	}
	ctx := connect(t, s.ConnectURL)
	if got := title(t, ctx, web.URL+"/title"); got != "Hello from loopback" {
		t.Fatalf("title %q", got)
	}

	var dbg struct {
		WSURL string `json:"wsUrl"`
		Pages []struct{ ID, URL, Title, DebuggerURL string }
	}
	if code := st.call(t, "GET", "/v1/sessions/"+s.ID+"/debug", nil, &dbg); code != 200 {
		t.Fatalf("debug: %d", code)
	}
	found := false
	for _, p := range dbg.Pages {
		found = found || p.Title == "Hello from loopback"
	}
	if !found || dbg.WSURL != s.ConnectURL {
		t.Fatalf("debug %+v", dbg)
	}

	var logs []cdp.Entry
	st.call(t, "GET", "/v1/sessions/"+s.ID+"/logs", nil, &logs)
	methods := map[string]bool{}
	for _, e := range logs {
		methods[e.Method] = e.Response != nil
	}
	if answered, ok := methods["Page.navigate"]; !ok || !answered {
		t.Fatalf("logs lack an answered Page.navigate: %v", methods)
	}

	var list []sessionJSON
	st.call(t, "GET", "/v1/sessions?status=RUNNING", nil, &list)
	if len(list) != 1 || list[0].ID != s.ID {
		t.Fatalf("running list %+v", list)
	}
	st.call(t, "GET", "/v1/sessions?q="+url.QueryEscape("user_metadata['order']:'A-17'"), nil, &list)
	if len(list) != 1 {
		t.Fatalf("q list %+v", list)
	}
	st.call(t, "GET", "/v1/sessions?q="+url.QueryEscape("user_metadata['order']:'B-1'"), nil, &list)
	if len(list) != 0 {
		t.Fatalf("q list matched %+v", list)
	}

	end := st.release(t, s.ID)
	if end.Status != "COMPLETED" || end.EndedAt == "" {
		t.Fatalf("released %+v", end)
	}
	if again := st.release(t, s.ID); again.Status != "COMPLETED" || again.EndedAt != end.EndedAt {
		t.Fatalf("second release %+v", again)
	}
	var got sessionJSON
	st.call(t, "GET", "/v1/sessions/"+s.ID, nil, &got)
	if got.ProxyBytes <= 0 || got.ConnectURL != "" {
		t.Fatalf("after release: proxyBytes %d connectUrl %q", got.ProxyBytes, got.ConnectURL)
	}
	x, err := st.repo.Get(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, e := range x.Events {
		path = append(path, e.To)
	}
	if want := "CREATING PROVISIONING READY TERMINATING STOPPED"; strings.Join(path, " ") != want {
		t.Fatalf("eventHistory %v, want %s", path, want)
	}
	// Logs survive the session.
	st.call(t, "GET", "/v1/sessions/"+s.ID+"/logs", nil, &logs)
	if len(logs) == 0 {
		t.Fatal("no logs after release")
	}
	// The slot is free again: usage counts the session.
	var u api.Usage
	st.call(t, "GET", "/v1/projects/"+st.project.ID+"/usage", nil, &u)
	if u.ProxyBytes != got.ProxyBytes || u.BrowserMinutes <= 0 {
		t.Fatalf("usage %+v", u)
	}
	// Usage outlives the session item, which TTL deletes at expiresAt.
	st.clock.advance(2 * time.Hour)
	if _, err := st.db.SweepExpired(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := st.call(t, "GET", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusNotFound {
		t.Fatalf("session after its TTL: %d", code)
	}
	var after api.Usage
	st.call(t, "GET", "/v1/projects/"+st.project.ID+"/usage", nil, &after)
	if after != u {
		t.Fatalf("usage after TTL %+v, want %+v", after, u)
	}
}

func TestContextPersistence(t *testing.T) {
	st := newStack(t, 1, sessions.Options{})
	web := site(t)
	var c struct {
		ID        string `json:"id"`
		UploadURL string `json:"uploadUrl"`
	}
	if code := st.call(t, "POST", "/v1/contexts", map[string]any{}, &c); code != http.StatusCreated {
		t.Fatalf("create context: %d", code)
	}
	s1 := st.create(t, map[string]any{"browserSettings": map[string]any{"context": map[string]any{"id": c.ID, "persist": true}}})
	if s1.ContextID != c.ID {
		t.Fatalf("session contextId %q", s1.ContextID)
	}
	ctx1 := connect(t, s1.ConnectURL)
	title(t, ctx1, web.URL+"/set")
	st.release(t, s1.ID)

	s2 := st.create(t, map[string]any{"browserSettings": map[string]any{"context": map[string]any{"id": c.ID}}})
	ctx2 := connect(t, s2.ConnectURL)
	if got := title(t, ctx2, web.URL+"/check"); got != "cookie=session-one" {
		t.Fatalf("second session sees %q", got)
	}
	st.release(t, s2.ID)

	// Without the context, a fresh profile.
	s3 := st.create(t, nil)
	if got := title(t, connect(t, s3.ConnectURL), web.URL+"/check"); got != "cookie=none" {
		t.Fatalf("fresh session sees %q", got)
	}
	st.release(t, s3.ID)

	if code := st.call(t, "POST", "/v1/sessions", map[string]any{"browserSettings": map[string]any{"context": map[string]any{"id": "ctx_unknown"}}}, nil); code != 400 {
		t.Fatalf("unknown context: %d", code)
	}
}

func TestTimeoutIdleAndCrash(t *testing.T) {
	st := newStack(t, 3, sessions.Options{IdleGrace: 30 * time.Second})
	ctx := context.Background()
	timed := st.create(t, map[string]any{"timeout": 60, "keepAlive": true})
	idle := st.create(t, nil)
	kept := st.create(t, map[string]any{"keepAlive": true, "timeout": 3600})

	st.clock.advance(45 * time.Second) // idle grace passed, timeout not yet
	st.mgr.Reap(ctx)
	if x, _ := st.repo.Get(ctx, idle.ID); x.Status != sessions.StatusCompleted {
		t.Fatalf("idle session %s, want COMPLETED", x.Status)
	}
	if x, _ := st.repo.Get(ctx, timed.ID); x.Status != sessions.StatusRunning {
		t.Fatalf("keepAlive session %s before its timeout", x.Status)
	}
	st.clock.advance(20 * time.Second) // past the 60 s timeout
	st.mgr.Reap(ctx)
	x, _ := st.repo.Get(ctx, timed.ID)
	if x.Status != sessions.StatusTimedOut || x.InternalStatus != sessions.StateTimedOut || x.EndedAt.IsZero() {
		t.Fatalf("timed-out session %s/%s", x.Status, x.InternalStatus)
	}
	if x, _ := st.repo.Get(ctx, kept.ID); x.Status != sessions.StatusRunning {
		t.Fatalf("keepAlive session %s", x.Status)
	}
	// The expired signingKey no longer opens the proxy.
	if code := wsStatus(t, timed.ConnectURL); code != http.StatusUnauthorized {
		t.Fatalf("expired token: %d", code)
	}

	// A crashed browser makes its session ERROR.
	x, _ = st.repo.Get(ctx, kept.ID)
	pid := browserPID(t, st, kept.ID)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Generous bounds: noticing the exit takes a moment on a loaded machine.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if x, _ = st.repo.Get(ctx, kept.ID); x.Status == sessions.StatusError && st.mgr.Live() == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if x.Status != sessions.StatusError || !strings.Contains(x.Events[len(x.Events)-1].Reason, "browser exited") {
		t.Fatalf("crashed session %s %+v", x.Status, x.Events)
	}
	if st.mgr.Live() != 0 {
		t.Fatalf("%d live sessions left", st.mgr.Live())
	}
	// All three slots are free again.
	p, _ := st.auth.GetProject(ctx, st.project.ID)
	for i := 0; i < 3; i++ {
		st.release(t, st.create(t, nil).ID)
	}
	_ = p
}

// browserPID finds the main Chromium process of a session through its
// DevTools port (the only process listening there is the browser).
func browserPID(t *testing.T, st *stack, id string) int {
	t.Helper()
	var dbg struct{ Pages []struct{ ID string } }
	st.call(t, "GET", "/v1/sessions/"+id+"/debug", nil, &dbg)
	pids, err := browser.Leftovers(st.workDir)
	if err != nil || len(pids) == 0 {
		t.Fatalf("no browser processes: %v", err)
	}
	x, _ := st.repo.Get(context.Background(), id)
	browserID := x.TaskARN[strings.LastIndexByte(x.TaskARN, ':')+1:]
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(cmd), "\x00")
		if strings.Contains(string(cmd), browserID) && !strings.Contains(string(cmd), "--type=") && len(args) > 1 {
			return pid
		}
	}
	t.Fatalf("no main process for browser %s", browserID)
	return 0
}

// wsStatus attempts a WebSocket handshake and returns the HTTP status.
func wsStatus(t *testing.T, u string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http"+strings.TrimPrefix(u, "ws"), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestConcurrencyLimit(t *testing.T) {
	st := newStack(t, 3, sessions.Options{})
	var wg sync.WaitGroup
	codes := make([]int, 20)
	ids := make([]string, 20)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s sessionJSON
			codes[i] = st.call(t, "POST", "/v1/sessions", nil, &s)
			ids[i] = s.ID
		}()
	}
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[201] != 3 || count[429] != 17 {
		t.Fatalf("status counts %v, want 3×201 and 17×429", count)
	}
	for i, c := range codes {
		if c == 201 {
			st.release(t, ids[i])
		}
	}
	// Slots come back after release.
	st.release(t, st.create(t, nil).ID)
}

func TestAuthFailures(t *testing.T) {
	st := newStack(t, 2, sessions.Options{})
	ctx := context.Background()
	s := st.create(t, nil)
	other, err := st.auth.CreateProject(ctx, auth.CreateProjectInput{Name: "other", Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := st.auth.CreateKey(ctx, auth.CreateKeyInput{ProjectID: other.ID})
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, _ := st.auth.CreateKey(ctx, auth.CreateKeyInput{ProjectID: st.project.ID})
	if err := st.auth.RevokeKey(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	inactive, _ := st.auth.CreateProject(ctx, auth.CreateProjectInput{Name: "off", Concurrency: 1})
	inactiveKey, _, _ := st.auth.CreateKey(ctx, auth.CreateKeyInput{ProjectID: inactive.ID})
	if err := st.auth.SetProjectStatus(ctx, inactive.ID, auth.StatusInactive); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, method, path, key string
		want                    int
	}{
		{"no key", "POST", "/v1/sessions", "", 401},
		{"wrong key", "POST", "/v1/sessions", "wc_nope", 401},
		{"revoked key", "GET", "/v1/sessions", revoked, 401},
		{"inactive project", "POST", "/v1/sessions", inactiveKey, 403},
		{"other project's session", "GET", "/v1/sessions/" + s.ID, otherKey, 404},
		{"other project's release", "POST", "/v1/sessions/" + s.ID, otherKey, 404},
		{"other project's logs", "GET", "/v1/sessions/" + s.ID + "/logs", otherKey, 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.method == "POST" {
				body = map[string]any{"status": "REQUEST_RELEASE"}
			}
			if code := st.call(t, c.method, c.path, body, nil, "X-BB-API-Key", c.key); code != c.want {
				t.Fatalf("%d, want %d", code, c.want)
			}
		})
	}
	base, _, _ := strings.Cut(s.ConnectURL, "?")
	expired, _ := st.tokens.Sign(s.ID, st.project.ID, time.Now().Add(-time.Minute))
	s2 := st.create(t, nil)
	for _, c := range []struct {
		name, url string
		want      int
	}{
		{"no signingKey", base, 401},
		{"garbage signingKey", base + "?signingKey=abc.def.ghi", 401},
		{"expired signingKey", base + "?signingKey=" + expired, 401},
		{"other session's signingKey", base + "?signingKey=" + s2.SigningKey, 401},
		{"forged signingKey", base + "?signingKey=" + forge(t, s.SigningKey), 401},
		{"valid", s.ConnectURL, http.StatusSwitchingProtocols},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code := wsStatus(t, c.url); code != c.want {
				t.Fatalf("%d, want %d", code, c.want)
			}
		})
	}
	// Bad input.
	for _, c := range []struct {
		name string
		body string
	}{
		{"proxies", `{"proxies":true}`},
		{"proxy list", `{"proxies":[{"type":"browserbase"}]}`},
		{"timeout too short", `{"timeout":10}`},
		{"timeout too long", `{"timeout":99999}`},
		{"region", `{"region":"mars-1"}`},
		{"malformed", `{"timeout":`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", st.srv.URL+"/wallcrawler/v1/sessions", strings.NewReader(c.body))
			req.Header.Set("X-BB-API-Key", st.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				StatusCode int    `json:"statusCode"`
				Message    string `json:"message"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != 400 || e.StatusCode != 400 || e.Message == "" {
				t.Fatalf("%d %+v", resp.StatusCode, e)
			}
		})
	}
	st.release(t, s.ID)
	st.release(t, s2.ID)
}

// forge re-signs a token's claims with another secret.
func forge(t *testing.T, token string) string {
	other := sessions.NewTokens([]byte("another-secret-another-secret-xx"), nil)
	c, err := sessions.NewTokens([]byte("0123456789abcdef0123456789abcdef"), nil).Verify(token)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := other.Sign(c.SessionID, c.ProjectID, c.ExpiresAt.Time)
	return f
}

func TestDownloads(t *testing.T) {
	st := newStack(t, 1, sessions.Options{})
	web := site(t)
	s := st.create(t, nil)
	ctx := connect(t, s.ConnectURL)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_ = chromedp.Do(cctx, chromedp.Navigate(web.URL+"/report")) // a download aborts the navigation
	var files map[string]string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if files = downloads(t, st, s.ID); files["report.txt"] != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if files["report.txt"] != "quarterly numbers" {
		t.Fatalf("downloads %v", files)
	}
	st.release(t, s.ID)
	if files = downloads(t, st, s.ID); files["report.txt"] != "quarterly numbers" {
		t.Fatalf("downloads after release %v", files)
	}

	// When the session's item goes (its TTL passed; here deleted as the
	// TTL sweeper does), what was kept beside it goes too.
	kept := func() (n int) {
		for _, name := range []string{"logs.json", "downloads.zip"} {
			if rc, err := st.blobs.Get(t.Context(), st.project.ID+"/"+s.ID+"/"+name); err == nil {
				rc.Close()
				n++
			}
		}
		return n
	}
	if n := kept(); n != 2 {
		t.Fatalf("%d of the session's logs and downloads kept after release, want 2", n)
	}
	client := ddb.NewClient(st.db)
	if _, err := client.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(st.table),
		Key: map[string]types.AttributeValue{"sessionId": &types.AttributeValueMemberS{Value: s.ID}}}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for kept() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := kept(); n != 0 {
		t.Errorf("%d of the session's blobs left after its item was deleted", n)
	}
}

func downloads(t *testing.T, st *stack, id string) map[string]string {
	t.Helper()
	req, _ := http.NewRequest("GET", st.srv.URL+"/wallcrawler/v1/sessions/"+id+"/downloads", nil)
	req.Header.Set("X-BB-API-Key", st.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" {
		t.Fatalf("downloads: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		out[f.Name] = string(b)
	}
	return out
}

func TestReconcileAfterCrash(t *testing.T) {
	st := newStack(t, 1, sessions.Options{NodeID: "node-a"})
	ctx := context.Background()
	// A session a dead process on this node left RUNNING, holding the slot.
	if err := st.auth.AcquireSlot(ctx, st.project.ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	orphan := sessions.Session{ID: "sess_orphan", ProjectID: st.project.ID, InternalStatus: sessions.StateReady,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour), TaskARN: "local:node-a:deadbeef"}
	foreign := orphan
	foreign.ID, foreign.TaskARN = "sess_foreign", "local:node-b:cafe"
	for _, x := range []sessions.Session{orphan, foreign} {
		if err := st.repo.Insert(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.mgr.Reconcile(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Reconcile = %d, %v", n, err)
	}
	if x, _ := st.repo.Get(ctx, "sess_orphan"); x.Status != sessions.StatusError {
		t.Fatalf("orphan %s", x.Status)
	}
	if x, _ := st.repo.Get(ctx, "sess_foreign"); x.Status != sessions.StatusRunning {
		t.Fatalf("another node's session %s", x.Status)
	}
	// The orphan's slot is free: a new session fits in concurrency 1.
	st.release(t, st.create(t, nil).ID)
}

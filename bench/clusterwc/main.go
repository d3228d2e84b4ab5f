// Command clusterwc measures what it costs to reach a Wallcrawler session
// through a quarry node that does not run its browser. It starts one
// `quarry ddb serve --credentials` (the shared DynamoDB endpoint) and two
// `quarry serve` nodes on it (shared Wallcrawler secret, each its own data
// directory), serves a tiny page on loopback, and runs -sessions sessions
// one after the other, created alternately through node A and node B (the
// node a create reaches runs the browser: it is the owner). For each
// session it times, through the owner and through the other node (in
// alternating order):
//
//   - connect: WebSocket to connectUrl opened and Browser.getVersion
//     answered (through the other node: that node checks the signingKey,
//     reads the session's owner and dials it with a node token);
//   - round trip: Browser.getVersion on the open connection (-calls
//     per connection);
//   - page: the first page attached, navigated to the loopback page, load
//     event, document.title read;
//
// and the create (POST /v1/sessions until 201, always on the owner) and
// the release (POST REQUEST_RELEASE until 200), sent alternately to the
// owner and to the other node. Results (nearest-rank p50 and p95) are
// printed and appended to a Markdown file with the machine and the
// command.
//
//	go run ./bench/clusterwc -sessions 20 -out bench/RESULTS.md
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/quarrydb/quarry/bench/internal/bbclient"
	"github.com/quarrydb/quarry/bench/internal/report"
)

const (
	pageTitle = "clusterwc page"
	projectID = "project_clusterwc"
	keyID     = "AKIDCLUSTERWC"
	keySecret = "clusterwc-secret-key"
	wcSecret  = "clusterwc-shared-wallcrawler-secret"
)

func main() {
	bin := flag.String("quarry", "", "quarry binary (default: go build ./cmd/quarry into a temp dir; run from the repository root)")
	sessions := flag.Int("sessions", 20, "sessions, run one after the other")
	calls := flag.Int("calls", 20, "Browser.getVersion round trips per connection")
	out := flag.String("out", "", "Markdown file to append the results to (e.g. bench/RESULTS.md)")
	flag.Parse()
	if err := run(*bin, *sessions, *calls, *out); err != nil {
		fmt.Fprintln(os.Stderr, "clusterwc:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// proc is a quarry child process.
type proc struct {
	name, addr string
	cmd        *exec.Cmd
	logPath    string
	exited     chan error
}

func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		logf("%s did not stop within 60s; killing it", p.name)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func start(name, bin, dir string, env []string, ready func() bool, args ...string) (*proc, error) {
	p := &proc{name: name, logPath: filepath.Join(dir, name+".log"), exited: make(chan error, 1)}
	f, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() { p.exited <- p.cmd.Wait(); f.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case err := <-p.exited:
			return nil, fmt.Errorf("%s exited (%v): %s", name, err, p.logTail())
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s not ready after 60s: %s", name, p.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func run(bin string, sessions, calls int, out string) error {
	began := time.Now()
	loadBefore := report.LoadAvg()
	work, err := os.MkdirTemp("", "clusterwc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.Chmod(work, 0o711); err != nil { // the browser user enters the browser dirs below
		return err
	}
	if bin == "" {
		bin = filepath.Join(work, "quarry")
		logf("building quarry")
		if b, err := exec.Command("go", "build", "-o", bin, "./cmd/quarry").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v: %s", err, b)
		}
	}
	creds := filepath.Join(work, "credentials")
	if err := os.WriteFile(creds, []byte(keyID+" "+keySecret+"\n"), 0o600); err != nil {
		return err
	}
	env := append(os.Environ(), "AWS_ACCESS_KEY_ID="+keyID, "AWS_SECRET_ACCESS_KEY="+keySecret,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>%s</p>", pageTitle, r.URL.Path)
	}))
	defer site.Close()

	storeAddr, err := freeAddr()
	if err != nil {
		return err
	}
	healthy := func(addr string) func() bool {
		return func() bool {
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
	}
	store, err := start("store", bin, work, env, func() bool {
		c, err := net.Dial("tcp", storeAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "ddb", "serve", "--listen", storeAddr, "--data-dir", filepath.Join(work, "store"), "--credentials", creds)
	if err != nil {
		return err
	}
	defer store.stop()
	endpoint := "http://" + storeAddr
	var nodes []*proc
	for _, name := range []string{"node-a", "node-b"} {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		n, err := start(name, bin, work, env, healthy(addr), "serve", "--listen", addr, "--ddb-listen", "off",
			"--data-dir", filepath.Join(work, name), "--dynamodb-endpoint", endpoint, "--wallcrawler-secret", wcSecret,
			"--node-id", name, "--allow-networks", site.Listener.Addr().String(),
			"--wallcrawler-browser-dir", filepath.Join(work, name+"-browsers"))
		if err != nil {
			return err
		}
		n.addr = addr
		defer n.stop()
		nodes = append(nodes, n)
	}
	cli := func(args ...string) (string, error) {
		args = append(args, "--dynamodb-endpoint", endpoint, "--data-dir", filepath.Join(work, "cli"))
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("quarry %s: %v: %s", strings.Join(args, " "), err, e.String())
		}
		return strings.TrimSpace(o.String()), nil
	}
	if _, err := cli("wallcrawler", "project", "create", "--name", "clusterwc", "--id", projectID, "--concurrency", "1"); err != nil {
		return err
	}
	key, err := cli("wallcrawler", "key", "create", "--project", projectID)
	if err != nil {
		return err
	}

	hc := &http.Client{Timeout: 90 * time.Second}
	res := map[string][]time.Duration{}
	add := func(what string, d time.Duration) { res[what] = append(res[what], d) }
	for i := range sessions {
		owner, other := nodes[i%2], nodes[1-i%2]
		if err := oneSession(hc, owner, other, key, site.URL, i, calls, add); err != nil {
			return fmt.Errorf("session %d (owner %s): %w", i+1, owner.name, err)
		}
	}
	total := time.Since(began)
	loadAfter := report.LoadAvg()
	md := markdown(res, sessions, calls, began, total, loadBefore, loadAfter)
	fmt.Print(md)
	if out != "" {
		return report.Append(out, md)
	}
	return nil
}

// oneSession runs one session: created on owner, reached through both
// nodes, released through one of them.
func oneSession(hc *http.Client, owner, other *proc, key, pageURL string, i, calls int, add func(string, time.Duration)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var sess struct {
		ID         string `json:"id"`
		ConnectURL string `json:"connectUrl"`
	}
	t0 := time.Now()
	if err := bbclient.Call(ctx, hc, http.MethodPost, "http://"+owner.addr+"/wallcrawler/v1/sessions", key, map[string]any{"keepAlive": true}, http.StatusCreated, &sess); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	add("create/owner", time.Since(t0))
	if !strings.Contains(sess.ConnectURL, owner.addr) {
		return fmt.Errorf("connectUrl %q does not name the owner %s", sess.ConnectURL, owner.addr)
	}
	vias := []*proc{owner, other}
	if i%4 >= 2 { // alternate which goes first, so neither always meets a fresh browser
		vias = []*proc{other, owner}
	}
	for j, via := range vias {
		side := "owner"
		if via == other {
			side = "other"
		}
		u := strings.Replace(sess.ConnectURL, owner.addr, via.addr, 1)
		t1 := time.Now()
		c, err := bbclient.Dial(ctx, u)
		if err != nil {
			return fmt.Errorf("connect via %s: %w", via.name, err)
		}
		if _, err := c.Call(ctx, "", "Browser.getVersion", nil); err != nil {
			c.Close()
			return fmt.Errorf("connect via %s: %w", via.name, err)
		}
		add("connect/"+side, time.Since(t1))
		for range calls {
			t := time.Now()
			if _, err := c.Call(ctx, "", "Browser.getVersion", nil); err != nil {
				c.Close()
				return err
			}
			add("rtt/"+side, time.Since(t))
		}
		t2 := time.Now()
		title, err := c.Load(ctx, fmt.Sprintf("%s/s%d-%d", pageURL, i, j))
		if err != nil || title != pageTitle {
			c.Close()
			return fmt.Errorf("page via %s: title %q, %v", via.name, title, err)
		}
		add("page/"+side, time.Since(t2))
		c.Close()
	}
	rel, side := owner, "owner"
	if i%2 == 1 {
		rel, side = other, "other"
	}
	t3 := time.Now()
	if err := bbclient.Call(ctx, hc, http.MethodPost, "http://"+rel.addr+"/wallcrawler/v1/sessions/"+sess.ID, key, map[string]any{"status": "REQUEST_RELEASE"}, http.StatusOK, nil); err != nil {
		return fmt.Errorf("release via %s: %w", rel.name, err)
	}
	add("release/"+side, time.Since(t3))
	// A release through the other node answers once the session is
	// STOPPED in the store; the owner closes the browser when the
	// stream tells it. Wait for that, so that sessions do not overlap.
	for deadline := time.Now().Add(30 * time.Second); liveSessions(hc, owner.addr) != 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still runs the released browser after 30s", owner.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// liveSessions reads quarry_wallcrawler_live_sessions from a node's
// /metrics (-1 when it cannot).
func liveSessions(hc *http.Client, addr string) int {
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "quarry_wallcrawler_live_sessions "); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err == nil {
				return n
			}
		}
	}
	return -1
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "—"
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
}

func markdown(res map[string][]time.Duration, sessions, calls int, began time.Time, total time.Duration, loadBefore, loadAfter string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — Wallcrawler through a non-owning node vs the owning node, %d sessions (clusterwc)\n\n", began.UTC().Format("2006-01-02 15:04 UTC"), sessions)
	fmt.Fprintf(&b, "- Machine: %s\n", report.Machine())
	fmt.Fprintf(&b, "- Load average (1/5/15 min) before: %s, after: %s (the machine is shared with other jobs: figures are noisy)\n", loadBefore, loadAfter)
	fmt.Fprintf(&b, "- Command: `go run ./bench/clusterwc -sessions %d -calls %d -out bench/RESULTS.md` (run took %s)\n", sessions, calls, total.Round(time.Second))
	fmt.Fprintf(&b, "- Setup: two `quarry serve` nodes on one `quarry ddb serve --credentials` (signed requests, fsync on), all on loopback with Chromium on this machine; sessions one after the other, created alternately on each node, each reached through its owner and through the other node (alternating which first); releases sent alternately to the owner and to the other node\n\n")
	b.WriteString("| phase | through the owning node p50 / p95 | through the other node p50 / p95 | n per side |\n|---|--:|--:|--:|\n")
	row := func(label, key string) {
		o, x := res[key+"/owner"], res[key+"/other"]
		n := max(len(o), len(x))
		cell := func(d []time.Duration) string {
			if len(d) == 0 {
				return "—"
			}
			return fmtDur(report.Percentile(d, 50)) + " / " + fmtDur(report.Percentile(d, 95))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d |\n", label, cell(o), cell(x), n)
	}
	row("create (POST → 201; the node reached runs the browser)", "create")
	row("connect (WebSocket + Browser.getVersion)", "connect")
	row(fmt.Sprintf("CDP round trip (Browser.getVersion, %d per connection)", calls), "rtt")
	row("page (attach, navigate to a loopback page, load event, title)", "page")
	row("release (POST REQUEST_RELEASE → 200)", "release")
	return b.String()
}

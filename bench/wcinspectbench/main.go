// Command wcinspectbench measures the page time of the console's
// Wallcrawler session inspector against a real `quarry serve` (the binary
// given with -quarry, on a fresh data directory): one real session visits
// a busy fixture page for -busy (console messages, requests, an animation
// for the replay) and is released; -seed finished sessions are written
// into the sessions table beside it (as the original design's seeding
// does); then, signed in with the project's key, each inspector page is
// requested -n times over loopback HTTP and timed from request to the end
// of the body (p50/p99). It appends a section to a Markdown file with the
// machine and the command.
//
//	go build -o bin/quarry ./cmd/quarry
//	go run ./bench/wcinspectbench -quarry bin/quarry -n 100 -out bench/RESULTS.md
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

func main() {
	bin := flag.String("quarry", "bin/quarry", "the quarry binary")
	n := flag.Int("n", 100, "requests per page")
	seed := flag.Int("seed", 1000, "finished sessions written into the project besides the real one")
	busy := flag.Duration("busy", 15*time.Second, "how long the real session's page runs")
	out := flag.String("out", "", "Markdown file to append results to (default: stdout only)")
	flag.Parse()
	if err := run(*bin, *n, *seed, *busy, *out); err != nil {
		log.Fatal(err)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// busyPage logs, fetches and animates all the time.
const busyPage = `<!doctype html><html><head><title>busy</title></head><body style="margin:0;font:30px sans-serif">
<p id="n">0</p><script>
var n=0;setInterval(function(){n++;document.getElementById("n").textContent=n;document.body.style.background="hsl("+(n*7%360)+",60%,70%)";
console.log("tick",n);if(n%5===0)fetch("/data?n="+n);},100);
</script></body></html>`

func run(bin string, n, seed int, busy time.Duration, out string) error {
	ctx := context.Background()
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "wcinspectbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/data" {
			fmt.Fprint(w, `{"ok":true}`)
			return
		}
		fmt.Fprint(w, busyPage)
	}))
	defer site.Close()
	api, store := "", ""
	if api, err = freeAddr(); err != nil {
		return err
	}
	if store, err = freeAddr(); err != nil {
		return err
	}
	srv := exec.Command(bin, "serve", "--listen", api, "--ddb-listen", store, "--data-dir", dir, "--allow-networks", site.Listener.Addr().String(), "--log-level", "warn")
	srv.Stdout, srv.Stderr = io.Discard, os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() }()
	base := "http://" + api
	for deadline := time.Now().Add(60 * time.Second); ; {
		if res, err := http.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return errors.New("quarry serve did not answer /healthz within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cli := func(args ...string) (string, error) {
		b, err := exec.Command(bin, append(args, "--data-dir", dir, "--ddb-listen", store)...).Output()
		return strings.TrimSpace(string(b)), err
	}
	if _, err := cli("wallcrawler", "project", "create", "--name", "Bench", "--id", "project_bench", "--concurrency", "2"); err != nil {
		return fmt.Errorf("project create: %w", err)
	}
	key, err := cli("wallcrawler", "key", "create", "--project", "project_bench")
	if err != nil {
		return fmt.Errorf("key create: %w", err)
	}
	loadBefore := report.LoadAvg()

	// The real session.
	call := func(method, path string, body any, v any) error {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+"/wallcrawler"+path, bytes.NewReader(b))
		req.Header.Set("X-BB-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode >= 300 {
			b, _ := io.ReadAll(res.Body)
			return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
		if v != nil {
			return json.NewDecoder(res.Body).Decode(v)
		}
		return nil
	}
	var sess struct{ ID, ConnectURL string }
	if err := call("POST", "/v1/sessions", map[string]any{}, &sess); err != nil {
		return err
	}
	if err := drive(ctx, sess.ConnectURL, site.URL+"/busy"); err != nil {
		return fmt.Errorf("drive the session: %w", err)
	}
	time.Sleep(busy)
	if err := call("POST", "/v1/sessions/"+sess.ID, map[string]any{"status": "REQUEST_RELEASE"}, nil); err != nil {
		return err
	}

	// The seeded sessions, straight into the table.
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + store),
		Credentials: credentials.NewStaticCredentialsProvider("bench", "bench", "")})
	names, err := tables.EnsureTables(ctx, client, "")
	if err != nil {
		return err
	}
	repo := sessions.NewRepo(client, names, nil)
	now := time.Now().UTC()
	statuses := []string{sessions.StateStopped, sessions.StateStopped, sessions.StateStopped, sessions.StateFailed, sessions.StateTimedOut}
	for i := range seed {
		created := now.Add(-time.Duration(i) * 13 * time.Minute)
		st := statuses[i%len(statuses)]
		x := sessions.Session{ID: fmt.Sprintf("sess_seed%06d", i), ProjectID: "project_bench", InternalStatus: st, Status: sessions.SDKStatus(st),
			CreatedAt: created, UpdatedAt: created, StartedAt: created.Add(time.Second), EndedAt: created.Add(time.Duration(30+i%600) * time.Second),
			ExpiresAt: now.Add(24 * time.Hour).Truncate(time.Second), Region: "us-west-2", ProxyBytes: int64(1000 + i*37),
			UserMetadata: map[string]any{"job": fmt.Sprintf("seed-%d", i%10)},
			// What a real session carries besides: its connect details and
			// five lifecycle events.
			ConnectURL: "ws://" + api + "/wallcrawler/cdp/sess_seed?signingKey=" + strings.Repeat("x", 400), SigningKey: strings.Repeat("x", 400),
			TaskARN: "local:bench:" + strings.Repeat("b", 32)}
		for j, to := range []string{sessions.StateCreating, sessions.StateProvisioning, sessions.StateReady, sessions.StateTerminating, st} {
			x.Events = append(x.Events, sessions.Event{Source: "wallcrawler.sessions", DetailType: "Session State Change",
				Time: created.Add(time.Duration(j) * time.Second), To: to, Reason: "seeded by the benchmark"})
		}
		if err := repo.Insert(ctx, x); err != nil {
			return fmt.Errorf("seed session %d: %w", i, err)
		}
	}

	// Sign in.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	body, err := fetch(hc, base+"/console/signin")
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		return errors.New("no nonce on the sign-in form")
	}
	res, err := hc.PostForm(base+"/console/signin", url.Values{"nonce": {m[1]}, "realm": {"wallcrawler"}, "credential": {key}})
	if err != nil {
		return err
	}
	res.Body.Close()

	p := base + "/console/wallcrawler/project_bench"
	sp := p + "/sessions/" + sess.ID
	detail, err := fetch(hc, sp)
	if err != nil {
		return err
	}
	count := func(id string) int {
		i := strings.Index(detail, `id="`+id+`"`)
		if i < 0 {
			return 0
		}
		j := strings.Index(detail[i:], "</table>")
		if j < 0 {
			j = len(detail) - i
		}
		return strings.Count(detail[i:i+j], "<tr") - 1
	}
	frames := regexp.MustCompile(`data-frames="(\d+)"`).FindStringSubmatch(detail)
	if frames == nil {
		frames = []string{"", "0"}
	}
	pages := []struct{ name, url string }{
		{fmt.Sprintf("sessions list (%d sessions)", seed+1), p + "/"},
		{"sessions list, ERROR only", p + "/?status=ERROR"},
		{fmt.Sprintf("session page (%s frames, %d console rows, %d requests, %d CDP commands)", frames[1], count("console-messages"), count("requests"), count("cdp-log")), sp},
		{"session page, CDP log search", sp + "?q=Runtime"},
		{"replay frame (JPEG)", sp + "/frames/0.jpg"},
		{"contexts", p + "/contexts"},
	}
	rows := ""
	for _, pg := range pages {
		if _, err := fetch(hc, pg.url); err != nil { // warm-up
			return fmt.Errorf("%s: %w", pg.name, err)
		}
		var d []time.Duration
		for range n {
			start := time.Now()
			if _, err := fetch(hc, pg.url); err != nil {
				return fmt.Errorf("%s: %w", pg.name, err)
			}
			d = append(d, time.Since(start))
		}
		rows += fmt.Sprintf("| %s | %s | %s |\n", pg.name, ms(report.Percentile(d, 50)), ms(report.Percentile(d, 99)))
	}
	cmd := "go build -o bin/quarry ./cmd/quarry && go run ./bench/wcinspectbench " + strings.Join(os.Args[1:], " ")
	text := fmt.Sprintf(`
## %s — Wallcrawler session inspector page time (wcinspectbench)

- Machine: %s
- Load average (1/5/15 min) before: %s, after: %s
- Command: `+"`%s`"+`
- Setup: `+"`quarry serve`"+` (embedded store, fsync on), one real session on a busy fixture page (a console message every 100 ms, a request every 500 ms, a colour change every 100 ms) for %v, then released; %d finished sessions written into the table (each with five lifecycle events and its connect details, as real ones have). Time is request to end of body over loopback HTTP, signed in with the project's key, %d requests per page after one warm-up.

| page | p50 | p99 |
|---|--:|--:|
%s`, time.Now().UTC().Format("2006-01-02 15:04 UTC"), report.Machine(), loadBefore, report.LoadAvg(), cmd, busy, seed, n, rows)
	fmt.Print(text)
	if out != "" {
		return report.Append(out, text)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func fetch(hc *http.Client, u string) (string, error) {
	res, err := hc.Get(u)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return "", fmt.Errorf("GET %s: %d", u, res.StatusCode)
	}
	return string(b), err
}

// drive connects to the session like a client and opens pageURL in its
// page, then leaves the connection open in the background.
func drive(ctx context.Context, connectURL, pageURL string) error {
	conn, _, err := websocket.Dial(ctx, connectURL, nil)
	if err != nil {
		return err
	}
	conn.SetReadLimit(64 << 20)
	var id atomic.Int64
	callCDP := func(sessionID, method string, params any) (json.RawMessage, error) {
		i := id.Add(1)
		msg := map[string]any{"id": i, "method": method, "params": params}
		if sessionID != "" {
			msg["sessionId"] = sessionID
		}
		b, _ := json.Marshal(msg)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			return nil, err
		}
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				return nil, err
			}
			var r struct {
				ID     int64           `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct{ Message string }
			}
			if json.Unmarshal(b, &r) == nil && r.ID == i {
				if r.Error != nil {
					return nil, errors.New(method + ": " + r.Error.Message)
				}
				return r.Result, nil
			}
		}
	}
	raw, err := callCDP("", "Target.getTargets", map[string]any{})
	if err != nil {
		return err
	}
	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	_ = json.Unmarshal(raw, &targets)
	var page string
	for _, t := range targets.TargetInfos {
		if t.Type == "page" {
			page = t.TargetID
		}
	}
	raw, err = callCDP("", "Target.attachToTarget", map[string]any{"targetId": page, "flatten": true})
	if err != nil {
		return err
	}
	var att struct{ SessionID string }
	_ = json.Unmarshal(raw, &att)
	if _, err := callCDP(att.SessionID, "Page.navigate", map[string]any{"url": pageURL}); err != nil {
		return err
	}
	for range 50 {
		if _, err := callCDP(att.SessionID, "Runtime.evaluate", map[string]any{"expression": "document.title"}); err != nil {
			return err
		}
	}
	go func() {
		for {
			if _, _, err := conn.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return nil
}

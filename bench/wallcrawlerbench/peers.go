package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/bench/internal/report"
)

// peerResult holds the bare launches' times to a usable page (-peers N):
// the page loaded and its title read, as quarry's sessions do.
type peerResult struct {
	chromedpCold, chromedpWarm     []time.Duration
	playwrightCold, playwrightWarm []time.Duration
	playwrightVersion              string
	playwrightErr                  string
	chromium                       string
}

// runPeers launches Chromium directly, c.peers times per series: chromedp's
// ExecAllocator (cold: a new allocator, so a new browser and profile, per
// page; warm: one browser, a new browser context and tab per page) and
// Playwright's chromium.launch (launch.mjs: cold and warm alike). Both use
// the Chromium quarry uses (QUARRY_CHROMIUM, else chromium on PATH).
func runPeers(c *config, pageURL string) (*peerResult, error) {
	exe := os.Getenv("QUARRY_CHROMIUM")
	if exe == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			return nil, fmt.Errorf("chromium not found: %w", err)
		}
		exe = p
	}
	r := &peerResult{chromium: exe}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe))
	if os.Geteuid() == 0 {
		// As root Chromium starts only without its sandbox (Playwright
		// passes --no-sandbox by default too).
		opts = append(opts, chromedp.NoSandbox)
	}
	usable := func(ctx context.Context) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
			return err
		}
		title, err := chromedp.Run(ctx, chromedp.Title())
		if err != nil {
			return err
		}
		if title != pageTitle {
			return fmt.Errorf("title %q, want %q", title, pageTitle)
		}
		return nil
	}
	logf("peers: chromedp cold")
	for range c.peers {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		t0 := time.Now()
		actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		err := usable(bctx)
		d := time.Since(t0)
		bcancel()
		acancel()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("chromedp cold: %w", err)
		}
		r.chromedpCold = append(r.chromedpCold, d)
	}
	logf("peers: chromedp warm")
	{
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil { // start the browser
			bcancel()
			acancel()
			cancel()
			return nil, fmt.Errorf("chromedp warm: start: %w", err)
		}
		for range c.peers {
			t0 := time.Now()
			tctx, tcancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
			err := usable(tctx)
			d := time.Since(t0)
			tcancel()
			if err != nil {
				bcancel()
				acancel()
				cancel()
				return nil, fmt.Errorf("chromedp warm: %w", err)
			}
			r.chromedpWarm = append(r.chromedpWarm, d)
		}
		bcancel()
		acancel()
		cancel()
	}

	logf("peers: Playwright")
	peers := os.Getenv("PEERS_DIR")
	if peers == "" {
		r.playwrightErr = "PEERS_DIR is not set (make bench-browser sets it; scripts/test-deps.sh installs playwright-core there)"
		return r, nil
	}
	script, err := filepath.Abs("bench/wallcrawlerbench/launch.mjs")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", script, pageURL, pageTitle, fmt.Sprint(c.peers), exe)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.playwrightErr = fmt.Sprintf("node launch.mjs: %v: %s", err, oneLine(errb.String()))
		return r, nil
	}
	var pw struct {
		Version string    `json:"version"`
		Cold    []float64 `json:"cold"`
		Warm    []float64 `json:"warm"`
	}
	if err := json.Unmarshal(out.Bytes(), &pw); err != nil {
		return nil, fmt.Errorf("launch.mjs output %q: %w", out.String(), err)
	}
	r.playwrightVersion = pw.Version
	for _, ms := range pw.Cold {
		r.playwrightCold = append(r.playwrightCold, time.Duration(ms*float64(time.Millisecond)))
	}
	for _, ms := range pw.Warm {
		r.playwrightWarm = append(r.playwrightWarm, time.Duration(ms*float64(time.Millisecond)))
	}
	return r, nil
}

// peerMarkdown writes the time-to-usable-page table: quarry's sessions
// (create + connect + first page, per mode) beside the bare launches, and
// the quarry/peer ratios of the p50s.
func peerMarkdown(b *strings.Builder, c *config, results []*modeResult, p *peerResult) {
	fmt.Fprintf(b, "\n### Time to a usable page: quarry vs launching Chromium directly\n\n")
	fmt.Fprintf(b, "Usable page = the loopback page loaded (load event) and its title read, on %s. quarry: create + CDP connect + first page of the sessions above (browser through serve's egress proxy, as an unprivileged user with Chromium's sandbox). chromedp %s: `NewExecAllocator` (its default flags, plus `--no-sandbox` as root) → `NewContext` → `Navigate` + `Title`; cold = a new allocator (browser process and profile) per page, warm = one running browser, `WithNewBrowserContext` per page. Playwright (playwright-core %s, `launch.mjs`): cold = `chromium.launch({executablePath})` → `newPage` → `goto` → `title` per page, warm = one browser, `newContext` → `newPage` → `goto` → `title`. %d pages per peer series, one after the other.\n\n",
		p.chromium, chromedpVersion(), orNA(p.playwrightVersion), c.peers)
	b.WriteString("| series | cold p50 | cold p95 | warm p50 | warm p95 | pages |\n|---|--:|--:|--:|--:|--:|\n")
	var qCold, qWarm []time.Duration
	for _, r := range results {
		if r.pool == 0 {
			qCold = r.lat["usable"]
		} else if qWarm == nil {
			qWarm = r.lat["usable"]
		}
	}
	row := func(name string, cold, warm []time.Duration) {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %d + %d |\n", name, pct(cold, 50), pct(cold, 95), pct(warm, 50), pct(warm, 95), len(cold), len(warm))
	}
	row("quarry session (pool 0 / warm pool)", qCold, qWarm)
	row("chromedp allocator", p.chromedpCold, p.chromedpWarm)
	if p.playwrightErr == "" {
		row("Playwright chromium.launch", p.playwrightCold, p.playwrightWarm)
	}
	ratio := func(name string, cold, warm []time.Duration) {
		fmt.Fprintf(b, "| **quarry/%s** | %s | %s | %s | %s | |\n", name, rat(qCold, cold, 50), rat(qCold, cold, 95), rat(qWarm, warm, 50), rat(qWarm, warm, 95))
	}
	ratio("chromedp", p.chromedpCold, p.chromedpWarm)
	if p.playwrightErr == "" {
		ratio("Playwright", p.playwrightCold, p.playwrightWarm)
	} else {
		fmt.Fprintf(b, "\nPlaywright not measured: %s\n", p.playwrightErr)
	}
	fmt.Fprintf(b, "\nRatios below 1 favour quarry. quarry's overhead over the bare chromedp launch, p50: cold %s, warm %s.\n", diff(qCold, p.chromedpCold), diff(qWarm, p.chromedpWarm))
}

func chromedpVersion() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/chromedp/chromedp").Output()
	if err != nil {
		return "(version unknown)"
	}
	return strings.TrimSpace(string(out))
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

func pct(d []time.Duration, p float64) string {
	if len(d) == 0 {
		return "n/a"
	}
	return fmtDur(report.Percentile(append([]time.Duration(nil), d...), p))
}

func rat(q, peer []time.Duration, p float64) string {
	if len(q) == 0 || len(peer) == 0 {
		return "n/a"
	}
	a := report.Percentile(append([]time.Duration(nil), q...), p)
	b := report.Percentile(append([]time.Duration(nil), peer...), p)
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func diff(q, peer []time.Duration) string {
	if len(q) == 0 || len(peer) == 0 {
		return "n/a"
	}
	a := report.Percentile(append([]time.Duration(nil), q...), 50)
	b := report.Percentile(append([]time.Duration(nil), peer...), 50)
	sign := "+"
	if a < b {
		sign = "−"
		a, b = b, a
	}
	return sign + fmtDur(a-b)
}

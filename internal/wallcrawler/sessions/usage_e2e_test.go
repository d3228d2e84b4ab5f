package sessions_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// usageJSON is the part of a Browserbase session object about resources.
type usageJSON struct {
	ID          string
	Status      string
	AvgCPUUsage *float64 `json:"avgCpuUsage"`
	MemoryUsage *int64   `json:"memoryUsage"`
}

// TestSessionUsageAndRetries runs a session on a Chromium that crashes
// at its first start: the item's retryCount is 1; while a page computes
// the sampler stores avgCpuUsage and memoryUsage, which GET and list
// return; release stores the last figures.
func TestSessionUsageAndRetries(t *testing.T) {
	real, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (make test installs it)")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "crashed-once")
	script := filepath.Join(dir, "flaky-chromium")
	body := "#!/bin/sh\nif [ ! -e " + marker + " ]; then touch " + marker + "; kill -SEGV $$; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	st := newStackWith(t, 2, sessions.Options{SampleEvery: time.Hour}, stackOptions{ChromiumPath: script})

	first := st.create(t, map[string]any{"keepAlive": true})
	second := st.create(t, map[string]any{"keepAlive": true})
	for _, c := range []struct {
		id   string
		want int
	}{{first.ID, 1}, {second.ID, 0}} {
		x, err := st.repo.Get(t.Context(), c.id)
		if err != nil {
			t.Fatal(err)
		}
		if x.RetryCount != c.want {
			t.Errorf("session %s: retryCount %d, want %d", c.id, x.RetryCount, c.want)
		}
	}

	var before usageJSON
	st.call(t, "GET", "/v1/sessions/"+first.ID, nil, &before)
	if before.AvgCPUUsage != nil || before.MemoryUsage != nil {
		t.Errorf("usage before any sample: %+v", before)
	}

	actx, cancelA := remote.NewAllocator(t.Context(), first.ConnectURL, remote.NoModifyURL)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	const burn = `(() => { const end = Date.now() + 1500; let x = 0; while (Date.now() < end) x++; return x > 0; })()`
	if _, err := chromedp.Run(ctx, chromedp.Navigate("data:text/html,<p>busy</p>")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](burn)); err != nil {
		t.Fatal(err)
	}
	st.mgr.SampleUsage(t.Context())

	var got usageJSON
	if code := st.call(t, "GET", "/v1/sessions/"+first.ID, nil, &got); code != http.StatusOK {
		t.Fatalf("get: %d", code)
	}
	if got.AvgCPUUsage == nil || *got.AvgCPUUsage < 10 || got.MemoryUsage == nil || *got.MemoryUsage < 20<<20 {
		t.Fatalf("running session after a busy page: %+v; want avgCpuUsage ≥ 10 (%%) and memoryUsage ≥ 20 MiB", show(got))
	}
	var list []usageJSON
	st.call(t, "GET", "/v1/sessions", nil, &list)
	found := false
	for _, x := range list {
		if x.ID == first.ID {
			found = x.AvgCPUUsage != nil && x.MemoryUsage != nil && *x.MemoryUsage == *got.MemoryUsage
		}
	}
	if !found {
		t.Errorf("list does not carry the session's figures: %+v", list)
	}

	cancelC()
	var ended usageJSON
	if code := st.call(t, "POST", "/v1/sessions/"+first.ID, map[string]any{"status": "REQUEST_RELEASE"}, &ended); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	if ended.Status != "COMPLETED" || ended.AvgCPUUsage == nil || ended.MemoryUsage == nil || *ended.MemoryUsage < *got.MemoryUsage {
		t.Errorf("released session: %+v; want its final figures (memoryUsage the peak, ≥ %d)", show(ended), *got.MemoryUsage)
	}
	t.Logf("running: %+v; ended: %+v", show(got), show(ended))
}

// show renders usageJSON's pointers.
func show(u usageJSON) map[string]any {
	m := map[string]any{"id": u.ID, "status": u.Status}
	if u.AvgCPUUsage != nil {
		m["avgCpuUsage"] = *u.AvgCPUUsage
	}
	if u.MemoryUsage != nil {
		m["memoryUsage"] = *u.MemoryUsage
	}
	return m
}

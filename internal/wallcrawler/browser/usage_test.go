package browser

import (
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestParseStat(t *testing.T) {
	tail := " 0 -1 4194560 100 0 0 0 250 75 3 2 20 0 1 0 1234 123456789 2048 18446744073709551615"
	tests := []struct {
		name, line string
		want       procStat
		ok         bool
	}{
		{"plain", "42 (chromium) S 1 42 42" + tail, procStat{pgrp: 42, utime: 250, stime: 75, cutime: 3, cstime: 2, rssPages: 2048}, true},
		{"name with spaces and parentheses", "43 (a) b (c) S 1 7 7" + tail, procStat{pgrp: 7, utime: 250, stime: 75, cutime: 3, cstime: 2, rssPages: 2048}, true},
		{"truncated", "44 (x) S 1 44 44 0", procStat{}, false},
		{"no name", "garbage", procStat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat([]byte(tt.line))
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseStat = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestSampleGroups measures a real Chromium: its process group has
// several processes, resident memory in the tens of MiB, and CPU time that
// grows while a page computes.
func TestSampleGroups(t *testing.T) {
	c, _ := newTestProvider(t)
	b := launch(t, c, LaunchOptions{})
	before, err := SampleGroups(b.PID(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := before[b.PID()]
	if !ok {
		t.Fatalf("no processes found in group %d", b.PID())
	}
	if _, ok := before[1<<30]; ok {
		t.Error("a group without processes is in the result")
	}
	if u.Procs < 2 || u.RSS < 20<<20 {
		t.Errorf("browser group: %d processes, %d bytes resident; want several and at least 20 MiB", u.Procs, u.RSS)
	}
	if u.PSS <= 0 || u.PSS > u.RSS {
		t.Errorf("PSS %d, want between 0 and RSS %d", u.PSS, u.RSS)
	}
	if u.Memory() != u.PSS {
		t.Errorf("Memory() = %d, want the PSS %d", u.Memory(), u.PSS)
	}
	ctx := browserCtx(t, b)
	const burn = `(() => { const end = Date.now() + 700; let x = 0; while (Date.now() < end) x++; return x > 0; })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](burn)); err != nil {
		t.Fatal(err)
	}
	after, err := SampleGroups(b.PID())
	if err != nil {
		t.Fatal(err)
	}
	if d := after[b.PID()].CPU - u.CPU; d < 300*time.Millisecond {
		t.Errorf("CPU grew by %v while a page computed for 700ms", d)
	}
	self, err := SampleGroups(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("browser: %+v → %+v; test process group: %+v", u, after[b.PID()], self)
}

package browser

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseUIDRange(t *testing.T) {
	tests := []struct {
		in      string
		want    UIDRange
		wantErr string
	}{
		{in: "200000-200999", want: UIDRange{First: 200000, Count: 1000}},
		{in: " 5000 - 5000 ", want: UIDRange{First: 5000, Count: 1}},
		{in: "200000", wantErr: "want first-last"},
		{in: "a-b", wantErr: "want two numbers"},
		{in: "0-10", wantErr: "system accounts"},
		{in: "999-2000", wantErr: "system accounts"},
		{in: "3000-2000", wantErr: "last is below first"},
		{in: "1000-5000000", wantErr: "too large"},
		{in: "1000-4294967295", wantErr: "too large"},
	}
	for _, tt := range tests {
		got, err := ParseUIDRange(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseUIDRange(%q) = %v, %v; want error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseUIDRange(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestPerBrowserUIDs plays a tenant whose browser got past Chromium's
// sandbox (here: a page reading file:// URLs, which the CDP filter refuses
// in quarry serve) and tries to read another session's profile: with a user
// id per browser it cannot, its own it can. The range's ids are reused only
// once no process runs as them, and an exhausted range is a clear error.
func TestPerBrowserUIDs(t *testing.T) {
	browserUser(t) // root and chromium, or skip/fail as the other tests
	root := reachableTempDir(t)
	workDir := filepath.Join(root, "browsers")
	r := UIDRange{First: 3_900_000, Count: 2}
	c, err := NewChromium(ChromiumOptions{WorkDir: workDir, UIDs: &r, StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if cf := c.Confinement(); !cf.Switched || cf.PerBrowserUIDs != "3900000-3900001" {
		t.Fatalf("Confinement = %+v, want switched with per-browser ids", cf)
	}
	a := launch(t, c, LaunchOptions{})
	b := launch(t, c, LaunchOptions{})
	uidOf := func(br Browser) string {
		uid, _, err := procStatusIDs(br.PID())
		if err != nil || len(uid) == 0 {
			t.Fatalf("uid of pid %d: %v", br.PID(), err)
		}
		return uid[0]
	}
	ua, ub := uidOf(a), uidOf(b)
	if ua == ub || (ua != "3900000" && ua != "3900001") || (ub != "3900000" && ub != "3900001") {
		t.Fatalf("browsers run as %s and %s, want the range's two ids, one each", ua, ub)
	}
	// Every process of each browser runs as its id.
	for _, br := range []Browser{a, b} {
		pids, err := Leftovers(filepath.Join(workDir, br.ID()))
		if err != nil || len(pids) == 0 {
			t.Fatalf("processes of %s: %v %v", br.ID(), pids, err)
		}
		want := uidOf(br)
		for _, pid := range pids {
			if uid, _, err := procStatusIDs(pid); err == nil && uid[0] != want {
				t.Errorf("pid %d of browser %s runs as %v, want %s", pid, br.ID(), uid, want)
			}
		}
	}

	// A full range: the third browser is refused with a clear error.
	if third, err := c.Launch(t.Context(), LaunchOptions{}); err == nil {
		third.Close(t.Context())
		t.Fatal("a third browser launched on a range of two ids")
	} else if !errors.Is(err, errNoUID) || !strings.Contains(err.Error(), "--wallcrawler-uids") {
		t.Errorf("third launch: %v, want errNoUID naming --wallcrawler-uids", err)
	}

	// The attacker, in b, reads a's profile; the control, a reads its own.
	const canary = "CANARY-of-a-profile-93e1"
	path := filepath.Join(a.UserDataDir(), "canary.txt")
	if err := os.WriteFile(path, []byte(canary), 0o644); err != nil {
		t.Fatal(err)
	}
	var aUID int
	fmt.Sscan(ua, &aUID)
	if err := os.Chown(path, aUID, aUID); err != nil {
		t.Fatal(err)
	}
	if text := readThroughPage(t, a, pageWS(t, a), "file://"+path); !strings.Contains(text, canary) {
		t.Fatalf("a cannot read its own profile (the test would prove nothing): %q", text)
	}
	if text := readThroughPage(t, b, pageWS(t, b), "file://"+path); strings.Contains(text, canary) {
		t.Errorf("browser b read browser a's profile: %q", text)
	}

	// a's id returns to the range once a is closed, with nothing left
	// running as it, and its files removed; then the next browser gets
	// it. Not before: a browser given the id while a's profile is on disk
	// could read it.
	closeBrowser(t, a)
	procs, err := listProcs()
	if err != nil {
		t.Fatal(err)
	}
	var uid uint32
	fmt.Sscan(ua, &uid)
	if left := procsOfUID(procs, uid); len(left) > 0 {
		t.Errorf("processes still run as a's id %s after close: %+v", ua, left)
	}
	if early, err := c.Launch(t.Context(), LaunchOptions{}); err == nil {
		t.Errorf("a browser launched as %s while a's files (its id) were still on disk", uidOf(early))
		closeBrowser(t, early)
		_ = early.Remove()
	} else if !errors.Is(err, errNoUID) {
		t.Errorf("launch before a's files are removed: %v, want errNoUID", err)
	}
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	next := launch(t, c, LaunchOptions{})
	if got := uidOf(next); got != ua {
		t.Errorf("next browser runs as %s, want a's freed id %s", got, ua)
	}
	closeBrowser(t, next)
	closeBrowser(t, b)
	assertNoLeftovers(t, workDir)
}

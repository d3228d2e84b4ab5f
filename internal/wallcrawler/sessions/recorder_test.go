package sessions

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// TestRecorderBounds feeds a recorder more frames, console messages and
// requests than its bounds allow: the replay is thinned to span the whole
// session, the newest frame always kept, and entries past their caps
// counted, not kept.
func TestRecorderBounds(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &recorder{lim: RecordLimits{MaxFrames: 8, MaxFrameBytes: 1 << 20, MaxConsole: 3, MaxNetwork: 2}.withDefaults(),
		now: func() time.Time { return clock }, requests: map[string]int{}, pages: map[string]string{}}
	const total = 100
	for i := range total {
		r.pending = &frame{at: clock.Add(time.Duration(i) * time.Second), pageID: "P"}
		r.pendB64 = base64.StdEncoding.EncodeToString([]byte{0xff, 0xd8, byte(i)})
		r.keepPendingLocked()
	}
	rec, replay := r.snapshot()
	if n := len(rec.Frames); n > 8 || n < 4 {
		t.Fatalf("%d frames kept, want 4 to 8", n)
	}
	if rec.Dropped.Frames+len(rec.Frames) != total {
		t.Fatalf("kept %d + dropped %d != %d", len(rec.Frames), rec.Dropped.Frames, total)
	}
	first, last := rec.Frames[0], rec.Frames[len(rec.Frames)-1]
	if !first.Time.Equal(clock) || !last.Time.Equal(clock.Add((total-1)*time.Second)) {
		t.Fatalf("replay spans %v to %v, want the whole session", first.Time, last.Time)
	}
	if b := replay[last.Offset : last.Offset+last.Length]; len(b) != 3 || b[2] != total-1 {
		t.Fatalf("the last frame's bytes % x", b)
	}
	// The byte bound thins as well.
	r2 := &recorder{lim: RecordLimits{MaxFrames: 1000, MaxFrameBytes: 4096}.withDefaults(), now: r.now}
	for i := range 50 {
		r2.pending = &frame{at: clock.Add(time.Duration(i) * time.Second)}
		r2.pendB64 = base64.StdEncoding.EncodeToString(make([]byte, 500))
		r2.keepPendingLocked()
	}
	if r2.bytes > 4096 || len(r2.frames) == 0 {
		t.Fatalf("%d bytes in %d frames, bound 4096", r2.bytes, len(r2.frames))
	}

	for i := range 5 {
		r.console(ConsoleEntry{Text: strings.Repeat("x", 5000), Level: "log", Time: clock.Add(time.Duration(i))})
	}
	for _, id := range []string{"1", "2", "3"} {
		r.handle(t.Context(), []byte(`{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"`+id+`","timestamp":1,"request":{"url":"http://x/`+id+`","method":"GET"}}}`))
		r.handle(t.Context(), []byte(`{"method":"Network.loadingFinished","sessionId":"S","params":{"requestId":"`+id+`","timestamp":1.25,"encodedDataLength":10}}`))
	}
	rec, _ = r.snapshot()
	if len(rec.Console) != 3 || rec.Dropped.Console != 2 || len(rec.Console[0].Text) > maxConsoleText+len("…") {
		t.Fatalf("console: %d kept, %d dropped, text %d bytes", len(rec.Console), rec.Dropped.Console, len(rec.Console[0].Text))
	}
	if len(rec.Network) != 2 || rec.Dropped.Network != 1 || !rec.Network[1].Done || rec.Network[1].DurationMs != 250 || rec.Network[1].Size != 10 {
		t.Fatalf("network: %+v, dropped %d", rec.Network, rec.Dropped.Network)
	}
}

package sessions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
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

// TestRecorderDOMEvents feeds a recorder the rrweb events a page's
// recording script sends, some of them hostile: only meta, full and
// incremental snapshots whose data is an object are kept, with the page's
// id; a timestamp far from the clock takes the clock's; events past the
// per-event, count and byte bounds are counted as dropped, not kept.
func TestRecorderDOMEvents(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &recorder{lim: RecordLimits{MaxDOMEvents: 4, MaxDOMBytes: 1000, MaxDOMEvent: 300}.withDefaults(),
		now: func() time.Time { return clock }, requests: map[string]int{}, pages: map[string]string{"S": "PAGE"}}
	call := func(name, payload string) {
		b, _ := json.Marshal(map[string]any{"method": "Runtime.bindingCalled", "sessionId": "S",
			"params": map[string]any{"name": name, "payload": payload, "executionContextId": 1}})
		r.handle(t.Context(), b)
	}
	ms := clock.UnixMilli()
	call(domBinding, fmt.Sprintf(`{"type":4,"timestamp":%d,"data":{"href":"http://x/","width":800,"height":600}}`, ms))
	call(domBinding, fmt.Sprintf(`{"type":2,"timestamp":%d,"data":{"node":{"type":0}}}`, ms+5))
	call("otherBinding", fmt.Sprintf(`{"type":3,"timestamp":%d,"data":{}}`, ms))                               // not the recorder's binding
	call(domBinding, fmt.Sprintf(`{"type":6,"timestamp":%d,"data":{}}`, ms))                                   // a plugin event: not DOM
	call(domBinding, fmt.Sprintf(`{"type":3,"timestamp":%d,"data":"text"}`, ms))                               // data not an object
	call(domBinding, `not json`)                                                                               // not JSON
	call(domBinding, `{"type":3,"timestamp":1e300,"data":{"source":0}}`)                                       // a timestamp from nowhere
	call(domBinding, fmt.Sprintf(`{"type":3,"timestamp":%d,"data":{"x":"%s"}}`, ms, strings.Repeat("a", 400))) // over MaxDOMEvent
	call(domBinding, fmt.Sprintf(`{"type":3,"timestamp":%d,"data":{"source":1}}`, ms+9))
	call(domBinding, fmt.Sprintf(`{"type":3,"timestamp":%d,"data":{"source":2}}`, ms+10)) // past MaxDOMEvents
	rec, _ := r.snapshot()
	if len(rec.DOM) != 4 || rec.Dropped.DOM != 2 {
		t.Fatalf("kept %d DOM events, dropped %d: %+v", len(rec.DOM), rec.Dropped.DOM, rec.DOM)
	}
	want := []struct {
		typ int
		at  int64
	}{{4, ms}, {2, ms + 5}, {3, ms}, {3, ms + 9}}
	for i, w := range want {
		e := rec.DOM[i]
		if e.Type != w.typ || e.Timestamp != w.at || e.PageID != "PAGE" || len(e.Data) == 0 || e.Data[0] != '{' {
			t.Errorf("event %d: %+v, want type %d at %d", i, e, w.typ, w.at)
		}
	}
	// The byte bound: a fresh recorder with room for about two events.
	r2 := &recorder{lim: RecordLimits{MaxDOMBytes: 250, MaxDOMEvent: 200}.withDefaults(), now: r.now, pages: map[string]string{}}
	r = r2
	for range 5 {
		call(domBinding, fmt.Sprintf(`{"type":3,"timestamp":%d,"data":{"x":"%s"}}`, ms, strings.Repeat("b", 80)))
	}
	rec, _ = r2.snapshot()
	if len(rec.DOM) != 2 || rec.Dropped.DOM != 3 || r2.domBytes > 250 {
		t.Fatalf("byte bound: kept %d (%d bytes), dropped %d", len(rec.DOM), r2.domBytes, rec.Dropped.DOM)
	}
}

// TestRecorderScreencastStart drives the recorder's CDP session of one
// page through the answers and navigations a browser sends, and counts
// the Page.startScreencast commands it sends. A page is screencast before
// its DOM script is added (the script's first run holds the page's
// renderer); a start the browser refuses because the page is between two
// documents ("Not attached to an active page", as when the tenant's
// first navigation swaps the new page's renderer) is sent again once a
// top-frame document committed, at once when one committed since it was
// sent; a frame's own navigations and a started screencast start
// nothing; the restarts are bounded.
func TestRecorderScreencastStart(t *testing.T) {
	const refused = `{"code":-32000,"message":"Not attached to an active page"}`
	tests := []struct {
		name  string
		steps []string // fail or ok: the answer to the last start; commit, subframe: a navigation
		want  []int    // starts sent after each step (the first on attach)
	}{
		{"refused before the commit", []string{"fail", "subframe", "commit", "ok", "commit"}, []int{1, 1, 2, 2, 2}},
		{"refused after a commit", []string{"commit", "fail", "ok", "commit"}, []int{1, 2, 2, 2}},
		{"started", []string{"ok", "commit", "commit"}, []int{1, 1, 1}},
		{"always refused", []string{"fail", "commit", "fail", "commit", "fail", "commit", "fail", "commit", "fail", "commit",
			"fail", "commit", "fail", "commit", "fail", "commit", "fail", "commit"}, []int{1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 8, 8, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{lim: RecordLimits{}.withDefaults(), now: time.Now, requests: map[string]int{}, pages: map[string]string{}}
			var sent []string // methods, in order
			var lastStart int64
			r.write = func(_ context.Context, msg []byte) error {
				var m struct {
					ID        int64  `json:"id"`
					Method    string `json:"method"`
					SessionID string `json:"sessionId"`
				}
				if err := json.Unmarshal(msg, &m); err != nil || m.SessionID != "S" {
					t.Fatalf("command %s: %v", msg, err)
				}
				sent = append(sent, m.Method)
				if m.Method == "Page.startScreencast" {
					lastStart = m.ID
				}
				return nil
			}
			starts := func() int {
				n := 0
				for _, m := range sent {
					if m == "Page.startScreencast" {
						n++
					}
				}
				return n
			}
			r.handle(t.Context(), []byte(`{"method":"Target.attachedToTarget","params":{"sessionId":"S","targetInfo":{"targetId":"T","type":"page"}}}`))
			if got := strings.Join(sent, " "); !strings.Contains(got, "Page.enable Page.startScreencast Runtime.addBinding Page.addScriptToEvaluateOnNewDocument") {
				t.Fatalf("commands on attach: %s", got)
			}
			for i, step := range tt.steps {
				var msg string
				switch step {
				case "ok":
					msg = fmt.Sprintf(`{"id":%d,"result":{},"sessionId":"S"}`, lastStart)
				case "fail":
					msg = fmt.Sprintf(`{"id":%d,"error":%s,"sessionId":"S"}`, lastStart, refused)
				case "commit":
					msg = `{"method":"Page.frameNavigated","sessionId":"S","params":{"frame":{"id":"T","loaderId":"L","url":"http://x/"},"type":"Navigation"}}`
				case "subframe":
					msg = `{"method":"Page.frameNavigated","sessionId":"S","params":{"frame":{"id":"F","parentId":"T","loaderId":"L2","url":"about:blank"},"type":"Navigation"}}`
				}
				r.handle(t.Context(), []byte(msg))
				if got := starts(); got != tt.want[i] {
					t.Fatalf("after step %d (%s): %d starts, want %d; sent %v", i, step, got, tt.want[i], sent)
				}
			}
		})
	}
}

// TestRecorderLastPicture ends recordings whose screencast kept no frame:
// the recorder asks the page attached last for its picture and keeps it
// as the replay's one frame; a recording with a frame asks for nothing,
// and a refused capture or no page leaves the replay empty.
func TestRecorderLastPicture(t *testing.T) {
	picture := []byte{0xff, 0xd8, 0xff, 0xe0, 'l', 'a', 's', 't'}
	tests := []struct {
		name    string
		frame   bool   // a screencast frame was kept before the end
		attach  bool   // a page is attached
		answer  string // the browser's answer to Page.captureScreenshot, %d its id
		asked   bool   // Page.captureScreenshot sent
		want    []byte // the replay's last frame ("" none)
		pageID  string
		nFrames int
	}{
		{"no frame", false, true, `{"id":%d,"result":{"data":"` + base64.StdEncoding.EncodeToString(picture) + `"},"sessionId":"S"}`, true, picture, "T", 1},
		{"a frame kept", true, true, "", false, []byte{0xff, 0xd8, 1}, "T", 1},
		{"capture refused", false, true, `{"id":%d,"error":{"code":-32000,"message":"Not attached to an active page"},"sessionId":"S"}`, true, nil, "", 0},
		{"no page", false, false, "", false, nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, ready := make(chan struct{}), make(chan struct{})
			close(ready)
			r := &recorder{lim: RecordLimits{}.withDefaults(), now: time.Now, requests: map[string]int{}, pages: map[string]string{},
				ready: ready, done: done, cancel: func() { close(done) }}
			asked := false
			r.write = func(_ context.Context, msg []byte) error {
				var m struct {
					ID     int64  `json:"id"`
					Method string `json:"method"`
				}
				_ = json.Unmarshal(msg, &m)
				if m.Method == "Page.captureScreenshot" {
					asked = true
					// The browser answers on the recorder's loop.
					go r.handle(context.Background(), fmt.Appendf(nil, tt.answer, m.ID))
				}
				return nil
			}
			if tt.attach {
				r.handle(t.Context(), []byte(`{"method":"Target.attachedToTarget","params":{"sessionId":"S","targetInfo":{"targetId":"T","type":"page"}}}`))
			}
			if tt.frame {
				r.handle(t.Context(), []byte(`{"method":"Page.screencastFrame","sessionId":"S","params":{"sessionId":1,"data":"`+base64.StdEncoding.EncodeToString([]byte{0xff, 0xd8, 1})+`"}}`))
			}
			rec, replay := r.stop()
			if asked != tt.asked {
				t.Errorf("Page.captureScreenshot sent: %v, want %v", asked, tt.asked)
			}
			if len(rec.Frames) != tt.nFrames {
				t.Fatalf("%d frames, want %d", len(rec.Frames), tt.nFrames)
			}
			if tt.nFrames > 0 {
				f := rec.Frames[len(rec.Frames)-1]
				if got := replay[f.Offset : f.Offset+f.Length]; string(got) != string(tt.want) || f.PageID != tt.pageID {
					t.Errorf("last frame % x of page %q, want % x of %q", got, f.PageID, tt.want, tt.pageID)
				}
			}
		})
	}
}

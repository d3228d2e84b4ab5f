package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
)

// recordingEvent is one element of GET /v1/sessions/{id}/recording, in the
// shape of Browserbase's rrweb events: {data, sessionId, timestamp, type}.
type recordingEvent struct {
	Data      any    `json:"data"`
	SessionID string `json:"sessionId"`
	Timestamp int64  `json:"timestamp"` // milliseconds since the epoch
	Type      int    `json:"type"`
}

// rrweb event types used: a custom event (5) per replay frame, and the
// console plugin's event (6) per console message.
const (
	rrwebCustom = 5
	rrwebPlugin = 6
)

// sessionRecording answers what quarry keeps of a session in rrweb's
// event envelope: the DOM recording of its pages as rrweb emitted it (meta
// events, full and incremental snapshots: types 4, 2 and 3, which rrweb's
// Replayer plays), low-rate screenshots as custom events {"tag":"quarry/frame","payload":
// {"pageId","mimeType":"image/jpeg","data":<base64>}}, and the pages'
// console messages, answered as rrweb's console plugin events
// ({"plugin":"rrweb/console@1","payload":{"level","trace":[],"payload":[<text as a JSON string>]}}).
// Oldest first.
func (h *Handler) sessionRecording(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	id := r.PathValue("id")
	rec, replay, err := h.opts.Sessions.Replay(r.Context(), pr, id)
	if err != nil {
		h.sessionError(w, r, err)
		return
	}
	out := make([]recordingEvent, 0, len(rec.DOM)+len(rec.Frames)+len(rec.Console))
	for _, e := range rec.DOM {
		out = append(out, recordingEvent{Type: e.Type, SessionID: id, Timestamp: e.Timestamp, Data: e.Data})
	}
	for _, f := range rec.Frames {
		out = append(out, recordingEvent{Type: rrwebCustom, SessionID: id, Timestamp: f.Time.UnixMilli(), Data: map[string]any{
			"tag": "quarry/frame", "payload": map[string]any{"pageId": f.PageID, "mimeType": "image/jpeg",
				"data": base64.StdEncoding.EncodeToString(replay[f.Offset : f.Offset+f.Length])}}})
	}
	for _, c := range rec.Console {
		text, _ := json.Marshal(c.Text)
		level := c.Level
		if level == "warning" {
			level = "warn"
		}
		out = append(out, recordingEvent{Type: rrwebPlugin, SessionID: id, Timestamp: c.Time.UnixMilli(), Data: map[string]any{
			"plugin": "rrweb/console@1", "payload": map[string]any{"level": level, "trace": []string{}, "payload": []string{string(text)}}}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp < out[j].Timestamp })
	writeJSON(w, http.StatusOK, out)
}

// replaysNotSupported answers Browserbase's session replay (HLS video) and
// recording download (MP4) endpoints: quarry keeps no video. 404, as for
// a route that does not exist (a 5xx would make the SDK retry), with a
// message that says so, after the usual check that the session is the
// caller's.
func (h *Handler) replaysNotSupported(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	if _, err := h.opts.Sessions.Get(r.Context(), pr, r.PathValue("id")); err != nil {
		h.sessionError(w, r, err)
		return
	}
	writeError(w, http.StatusNotFound, "Session replays and recording downloads (video) are not supported by this server: "+
		"GET /v1/sessions/{id}/recording returns the session's DOM recording (rrweb events), frames (JPEG) and console messages")
}

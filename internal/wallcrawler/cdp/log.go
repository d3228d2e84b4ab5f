package cdp

import (
	"encoding/json"
	"sync"
	"time"
)

// maxRawBody bounds the rawBody kept per logged message.
const maxRawBody = 16 << 10

// Entry is one CDP command that passed the proxy with its response, in
// the shape of Browserbase's GET /v1/sessions/{id}/logs.
type Entry struct {
	Method    string    `json:"method"`
	PageID    int       `json:"pageId"`
	SessionID string    `json:"sessionId"`
	FrameID   string    `json:"frameId,omitempty"`
	LoaderID  string    `json:"loaderId,omitempty"`
	Request   *Message  `json:"request,omitempty"`
	Response  *Response `json:"response,omitempty"`
	Timestamp int64     `json:"timestamp"`
}

// Message is the request half of an Entry.
type Message struct {
	Params    json.RawMessage `json:"params"`
	RawBody   string          `json:"rawBody"`
	Timestamp int64           `json:"timestamp"`
}

// Response is the response half of an Entry.
type Response struct {
	Result    json.RawMessage `json:"result"`
	RawBody   string          `json:"rawBody"`
	Timestamp int64           `json:"timestamp"`
}

// Log keeps the last Max entries of one session. It is safe for
// concurrent use.
type Log struct {
	mu      sync.Mutex
	max     int
	base    int64 // sequence number of entries[0]
	entries []Entry
}

// NewLog returns a Log keeping at most max entries (default 2000).
func NewLog(max int) *Log {
	if max <= 0 {
		max = 2000
	}
	return &Log{max: max}
}

// Entries returns a copy of the kept entries, oldest first.
func (l *Log) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry(nil), l.entries...)
}

func truncate(b []byte) string {
	if len(b) > maxRawBody {
		return string(b[:maxRawBody])
	}
	return string(b)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// small returns raw when it is small enough to keep, else null.
func small(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || len(raw) > maxRawBody {
		return json.RawMessage("{}")
	}
	return raw
}

// request records a command and returns its sequence number.
func (l *Log) request(at time.Time, method, sessionID string, params json.RawMessage, raw []byte) int64 {
	e := Entry{
		Method: method, SessionID: sessionID, Timestamp: ms(at),
		Request: &Message{Params: small(params), RawBody: truncate(raw), Timestamp: ms(at)},
	}
	var p struct {
		FrameID  string `json:"frameId"`
		LoaderID string `json:"loaderId"`
	}
	if json.Unmarshal(params, &p) == nil {
		e.FrameID, e.LoaderID = p.FrameID, p.LoaderID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	if len(l.entries) > l.max {
		drop := len(l.entries) - l.max
		l.entries = append(l.entries[:0:0], l.entries[drop:]...)
		l.base += int64(drop)
	}
	return l.base + int64(len(l.entries)) - 1
}

// respond attaches a response to the entry seq, if still kept.
func (l *Log) respond(seq int64, at time.Time, result json.RawMessage, raw []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := seq - l.base
	if i < 0 || i >= int64(len(l.entries)) {
		return
	}
	l.entries[i].Response = &Response{Result: small(result), RawBody: truncate(raw), Timestamp: ms(at)}
}

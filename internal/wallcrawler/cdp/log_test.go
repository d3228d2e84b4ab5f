package cdp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestLogPairsCommandsAndResponses(t *testing.T) {
	l := NewLog(3)
	p := &pendingMap{m: map[int64]int64{}}
	for i := 1; i <= 5; i++ {
		p.request(l, []byte(fmt.Sprintf(`{"id":%d,"method":"Page.navigate","sessionId":"S","params":{"url":"http://x/%d","frameId":"F"}}`, i, i)))
	}
	// An event and an unknown id are not logged; responses to evicted
	// commands are dropped.
	p.response(l, []byte(`{"method":"Page.loadEventFired","params":{}}`))
	p.response(l, []byte(`{"id":99,"result":{}}`))
	p.response(l, []byte(`{"id":1,"result":{"frameId":"F"}}`))
	p.response(l, []byte(`{"id":5,"result":{"frameId":"F","loaderId":"L"},"sessionId":"S"}`))
	p.response(l, []byte(`{"id":4,"error":{"code":-32000,"message":"boom"}}`))

	es := l.Entries()
	if len(es) != 3 {
		t.Fatalf("%d entries kept, want the last 3", len(es))
	}
	var urls []string
	for _, e := range es {
		var params struct{ URL string }
		_ = json.Unmarshal(e.Request.Params, &params)
		urls = append(urls, params.URL)
		if e.Method != "Page.navigate" || e.SessionID != "S" || e.FrameID != "F" {
			t.Fatalf("entry %+v", e)
		}
	}
	if strings.Join(urls, " ") != "http://x/3 http://x/4 http://x/5" {
		t.Fatalf("kept %v", urls)
	}
	if es[0].Response != nil {
		t.Fatal("command 3 got a response it never had")
	}
	if es[1].Response == nil || !strings.Contains(string(es[1].Response.Result), "boom") {
		t.Fatalf("error response not attached: %+v", es[1].Response)
	}
	if es[2].Response == nil || !strings.Contains(es[2].Response.RawBody, `"loaderId":"L"`) {
		t.Fatalf("response not attached: %+v", es[2].Response)
	}
}

func TestLogTruncatesLargeBodies(t *testing.T) {
	l := NewLog(0)
	p := &pendingMap{m: map[int64]int64{}}
	big := strings.Repeat("a", 3*maxRawBody)
	p.request(l, []byte(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"`+big+`"}}`))
	e := l.Entries()[0]
	if len(e.Request.RawBody) != maxRawBody || string(e.Request.Params) != "{}" {
		t.Fatalf("raw body %d bytes, params %d bytes: want the body cut and the params dropped", len(e.Request.RawBody), len(e.Request.Params))
	}
}

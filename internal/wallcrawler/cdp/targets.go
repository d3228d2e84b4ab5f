package cdp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// Chromium's own user interface is made of WebUI pages that are DevTools
// targets like any tab: in headless Chromium, the omnibox popup
// (chrome://omnibox-popup.top-chrome/, type "browser_ui") exists in every
// window. A client attached to one runs script with the privileges of
// chrome:// pages (Mojo interfaces to the browser process, chrome.send).
// A targets set keeps them out of the tenant's reach on one connection:
// it reads what the browser says about targets (events and answers) to
// learn which targets and sessions are browser UI, hides them from the
// client, detaches the browser-level auto-attach from them, and lets the
// Filter refuse every command addressed to them.

// reservedID is the largest command id the proxy keeps for its own
// commands on a client's connection; a client command with such an id is
// refused, so the answers can never be confused. Chromium reads ids as
// 32-bit integers, so the proxy's are -2^30-1 down to -2^31.
const reservedID = -1 << 30

// uiReason is why a command addressed to browser UI is refused.
const uiReason = "the target is part of the browser's own UI (chrome:// WebUI), not a page"

// targetInfo is the part of a Target.TargetInfo the proxy reads.
type targetInfo struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	URL      string `json:"url"`
}

// browserUI reports whether a target is part of the browser's UI rather
// than web content: the types browser_ui and other, and any target whose
// URL is chrome:, chrome-untrusted: or devtools: (read as checkURL reads
// schemes).
func (t targetInfo) browserUI() bool {
	switch strings.ToLower(t.Type) {
	case "browser_ui", "other":
		return true
	}
	s := strings.TrimFunc(t.URL, func(r rune) bool { return r <= ' ' })
	scheme, _, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	scheme = strings.ToLower(strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, scheme))
	return scheme == "chrome" || scheme == "chrome-untrusted" || scheme == "devtools"
}

// targets is what one connection knows about browser-UI targets. It is
// safe for concurrent use (the two directions of a connection).
type targets struct {
	mu sync.Mutex
	// ui holds the target ids known to be browser UI.
	ui map[string]bool
	// sessions maps every attached session seen to its target id.
	sessions map[string]string
	// next is the id of the proxy's next own command.
	next int64
}

func newTargets() *targets {
	return &targets{ui: map[string]bool{}, sessions: map[string]string{}, next: reservedID}
}

// check refuses a client command addressed to browser UI: on a session
// attached to it, or naming it (targetId) or such a session (sessionId) in
// its params; and a command with one of the proxy's own ids.
func (ts *targets) check(c command) error {
	if id, _ := strconv.ParseInt(string(c.id), 10, 64); id <= reservedID {
		return fmt.Errorf("ids up to %d are reserved by the proxy", int64(reservedID))
	}
	var session, target, paramSession string
	if c.sessionID != nil {
		_ = json.Unmarshal(c.sessionID, &session)
	}
	if raw, ok := c.params["targetId"]; ok {
		_ = json.Unmarshal(raw, &target)
	}
	if raw, ok := c.params["sessionId"]; ok {
		_ = json.Unmarshal(raw, &paramSession)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.ui[target] || ts.uiSession(session) || ts.uiSession(paramSession) {
		return errors.New(uiReason)
	}
	return nil
}

// uiSession reports whether session is attached to browser UI. ts.mu is
// held.
func (ts *targets) uiSession(session string) bool {
	t, ok := ts.sessions[session]
	return ok && ts.ui[t]
}

// ownID returns the id of a new proxy command. ts.mu is held.
func (ts *targets) ownID() int64 {
	ts.next--
	return ts.next
}

// browserMessage is a message from the browser, as far as observe reads
// it.
type browserMessage struct {
	ID        *int64          `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
}

// observe reads a browser→client message. It returns the message to relay
// (nil to drop it: events about browser UI, answers to the proxy's own
// commands), changed when an answer lists or names browser UI, and the
// commands the proxy sends the browser itself: a browser-UI target that
// was just attached (by Target.setAutoAttach or an attach the Filter could
// not recognise in advance) is let go at once.
func (ts *targets) observe(msg []byte) (out []byte, send [][]byte) {
	if !interesting(msg) {
		return msg, nil
	}
	var m browserMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg, nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if m.ID != nil {
		return ts.answer(msg, m), nil
	}
	if ts.uiSession(m.SessionID) {
		return nil, nil // an event of a browser-UI session
	}
	var p struct {
		TargetID           string     `json:"targetId"`
		SessionID          string     `json:"sessionId"`
		TargetInfo         targetInfo `json:"targetInfo"`
		WaitingForDebugger bool       `json:"waitingForDebugger"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "Target.targetCreated", "Target.targetInfoChanged":
		if p.TargetInfo.browserUI() {
			ts.ui[p.TargetInfo.TargetID] = true
			return nil, nil
		}
	case "Target.targetDestroyed", "Target.targetCrashed":
		if ts.ui[p.TargetID] {
			return nil, nil
		}
	case "Target.attachedToTarget":
		ts.sessions[p.SessionID] = p.TargetInfo.TargetID
		if !p.TargetInfo.browserUI() {
			return msg, nil
		}
		ts.ui[p.TargetInfo.TargetID] = true
		if p.WaitingForDebugger {
			send = append(send, ts.command(p.SessionID, "Runtime.runIfWaitingForDebugger", nil))
		}
		send = append(send, ts.command(m.SessionID, "Target.detachFromTarget", map[string]string{"sessionId": p.SessionID}))
		return nil, send
	case "Target.detachedFromTarget":
		if ts.uiSession(p.SessionID) {
			// Kept: commands naming the session stay refused.
			return nil, nil
		}
		delete(ts.sessions, p.SessionID)
	}
	return msg, nil
}

// interesting is a cheap test for the messages observe must parse:
// answers naming targets or sessions and the proxy's own answers, and
// Target events; page events, network and screencast traffic are not.
func interesting(msg []byte) bool {
	return bytes.HasPrefix(msg, []byte(`{"id":-`)) ||
		bytes.HasPrefix(msg, []byte(`{"method":"Target.`)) ||
		bytes.Contains(msg, []byte(`"targetInfo`)) ||
		bytes.Contains(msg, []byte(`"result":{"sessionId":`))
}

// answer filters an answer to a command. ts.mu is held.
func (ts *targets) answer(msg []byte, m browserMessage) []byte {
	if *m.ID <= reservedID {
		return nil
	}
	var r struct {
		SessionID   string            `json:"sessionId"`
		TargetInfo  *targetInfo       `json:"targetInfo"`
		TargetInfos []json.RawMessage `json:"targetInfos"`
	}
	if json.Unmarshal(m.Result, &r) != nil {
		return msg
	}
	switch {
	case r.SessionID != "" && ts.uiSession(r.SessionID):
		// An attach the Filter did not see coming: the session has been
		// detached (observe), the client hears a refusal.
		return refusalAnswer(m, "Target.attachToTarget")
	case r.TargetInfo != nil && r.TargetInfo.browserUI():
		ts.ui[r.TargetInfo.TargetID] = true
		return refusalAnswer(m, "Target.getTargetInfo")
	case r.TargetInfos != nil:
		kept := make([]json.RawMessage, 0, len(r.TargetInfos))
		for _, raw := range r.TargetInfos {
			var ti targetInfo
			if json.Unmarshal(raw, &ti) == nil && ti.browserUI() {
				ts.ui[ti.TargetID] = true
				continue
			}
			kept = append(kept, raw)
		}
		if len(kept) == len(r.TargetInfos) {
			return msg
		}
		var res map[string]json.RawMessage
		if json.Unmarshal(m.Result, &res) != nil {
			return msg
		}
		res["targetInfos"], _ = json.Marshal(kept)
		var top map[string]json.RawMessage
		if json.Unmarshal(msg, &top) != nil {
			return msg
		}
		top["result"], _ = json.Marshal(res)
		out, err := json.Marshal(top)
		if err != nil {
			return msg
		}
		return out
	}
	return msg
}

// refusalAnswer replaces the answer m with the refusal of method.
func refusalAnswer(m browserMessage, method string) []byte {
	c := command{id: json.RawMessage(strconv.FormatInt(*m.ID, 10))}
	if m.SessionID != "" {
		c.sessionID, _ = json.Marshal(m.SessionID)
	}
	return c.refusal(fmt.Sprintf("wallcrawler: %s refused: %s", method, uiReason))
}

// command encodes a command of the proxy's own. ts.mu is held.
func (ts *targets) command(session, method string, params any) []byte {
	m := map[string]any{"id": ts.ownID(), "method": method}
	if session != "" {
		m["sessionId"] = session
	}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return b
}

// errBrowserUI is returned by checkPage for a browser-UI target.
var errBrowserUI = errors.New("cdp: browser UI target")

// checkPage asks a page-level socket, before the client's first message,
// which target it is, and refuses browser UI (and a target that does not
// say).
func checkPage(ctx context.Context, up *websocket.Conn) error {
	id := int64(reservedID)
	if err := up.Write(ctx, websocket.MessageText, []byte(`{"id":`+strconv.FormatInt(id, 10)+`,"method":"Target.getTargetInfo"}`)); err != nil {
		return err
	}
	for {
		_, data, err := up.Read(ctx)
		if err != nil {
			return err
		}
		var m struct {
			ID     *int64 `json:"id"`
			Result *struct {
				TargetInfo *targetInfo `json:"targetInfo"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &m) != nil || m.ID == nil || *m.ID != id {
			continue
		}
		if m.Result == nil || m.Result.TargetInfo == nil || m.Result.TargetInfo.browserUI() {
			return errBrowserUI
		}
		return nil
	}
}

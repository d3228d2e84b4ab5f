package cdp

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// A tenant may send any command to any target of its session's browser,
// so every client→browser message passes a Filter before it is relayed.
// The Filter keeps the tenant inside the confinement the rest of
// Wallcrawler sets up (all traffic through the egress proxy, no access to
// the host's files): it refuses commands that would load local files,
// hand host files to a page, leave the proxy or give a page a raw CDP
// channel, and it rewrites download directories into the session's own.
//
// The rules are the tables methodRules and domainRules below; every
// method not named there is relayed unchanged.

// refusalCode is the JSON-RPC error code of a refused command, the one
// Chromium uses for its own "not allowed" answers.
const refusalCode = -32000

// maxNesting bounds Target.sendMessageToTarget messages nested in each
// other.
const maxNesting = 4

// rule is what the Filter checks for one method. The zero rule relays the
// command unchanged.
type rule struct {
	// refuse, when set, refuses the command outright with this reason.
	refuse string
	// urls are params holding a URL the browser will load or navigate to:
	// each must be empty or have an allowed scheme (see checkURL).
	urls []string
	// files are params (dotted paths) holding lists of host file paths:
	// each must resolve inside the session's download directory.
	files []string
	// absent are params that must be absent, null or [] (an empty string
	// can mean something: proxyServer "" is a direct connection).
	absent []string
	// downloadPath: a downloadPath param outside the session's download
	// directory is rewritten to that directory.
	downloadPath bool
	// nested: params.message is a whole command (JSON in a string),
	// filtered by the same rules.
	nested bool
	// tracing: the trace must come back over CDP (see checkTracing).
	tracing bool
}

// methodRules holds the rules by method, keyed in lower case (methods are
// matched case-insensitively, although Chromium itself is case-sensitive,
// so that no spelling slips through).
var methodRules = map[string]rule{
	// Loading and navigating: the URL must have a web scheme.
	"page.navigate":                      {urls: []string{"url"}},
	"target.createtarget":                {urls: []string{"url"}},
	"fetch.continuerequest":              {urls: []string{"url"}},
	"network.continueinterceptedrequest": {urls: []string{"url"}},
	"network.loadnetworkresource":        {urls: []string{"url"}},
	"dom.setfileinputfiles":              {files: []string{"files"}},
	"input.dispatchdragevent":            {files: []string{"data.files"}},
	"page.handlefilechooser":             {files: []string{"files"}},
	"browser.setdownloadbehavior":        {downloadPath: true},
	"page.setdownloadbehavior":           {downloadPath: true},
	"target.createbrowsercontext":        {absent: []string{"proxyServer", "proxyBypassList", "originsWithUniversalNetworkAccess"}},
	"target.sendmessagetotarget":         {nested: true},
	"target.exposedevtoolsprotocol":      {refuse: "it gives page scripts a CDP channel that bypasses this proxy"},
	"target.setremotelocations":          {refuse: "target discovery connects to hosts outside the egress proxy"},
	"target.opendevtools":                {refuse: "the DevTools front-end is a privileged page"},
	"browser.executebrowsercommand":      {refuse: "browser UI commands are not available"},
	"browser.getbrowsercommandline":      {refuse: "the browser's command line is not disclosed"},
	"systeminfo.getprocessinfo":          {refuse: "the host's process ids are not disclosed"},
	"tracing.start":                      {tracing: true},
}

// domainRules refuses every method of a domain, keyed in lower case.
var domainRules = map[string]string{
	"extensions": "extensions cannot be loaded, removed or inspected",
	"pwa":        "web apps cannot be installed or launched",
	"cast":       "casting reaches devices outside the egress proxy",
	"tethering":  "the browser cannot listen on host ports",
}

// Filter applies the rules to the commands of one client connection. It
// is safe for concurrent use.
type Filter struct {
	// downloadDir is the session's download directory, cleaned and with
	// symlinks resolved; "" when the session has none.
	downloadDir string
	// uploadDir is the session's upload directory, cleaned and with
	// symlinks resolved; "" when the session has none.
	uploadDir string
	// targets is what the connection knows of browser-UI targets
	// (targets.go); commands addressed to them are refused.
	targets *targets
}

// BrowserbaseUploadDir is where Browserbase's browsers keep the files of
// the Session Uploads API: clients name an uploaded file
// /tmp/.uploads/<name> in DOM.setFileInputFiles. The Filter maps that
// directory to the session's own upload directory.
const BrowserbaseUploadDir = "/tmp/.uploads"

// NewFilter returns a Filter for a session whose downloads go to
// downloadDir and whose uploaded files are in uploadDir ("" for none:
// download commands are refused without a download directory, and file
// commands without either).
func NewFilter(downloadDir, uploadDir string) *Filter {
	return &Filter{downloadDir: realDir(downloadDir), uploadDir: realDir(uploadDir), targets: newTargets()}
}

// realDir returns dir cleaned and with symlinks resolved ("" for "").
func realDir(dir string) string {
	if dir == "" {
		return ""
	}
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// Observe reads a browser→client message for what it says about
// browser-UI targets (targets.go). It returns the message to relay to the
// client (nil to drop it) and commands to send the browser on the proxy's
// behalf.
func (f *Filter) Observe(msg []byte) (relay []byte, send [][]byte) {
	return f.targets.observe(msg)
}

// Verdict is the Filter's decision on one client message.
type Verdict struct {
	// Forward is what to relay to the browser: the message itself, a
	// rewritten copy, or nil when nothing may be relayed.
	Forward []byte
	// Reply, when not nil, is the CDP error answer to send back to the
	// client (a refused command that had an id).
	Reply []byte
	// Method is the command's method, when it could be read.
	Method string
	// Reason says why the message was refused, dropped or rewritten; it is
	// "" when the message is relayed unchanged.
	Reason string
}

// Refused reports whether the message is not relayed at all.
func (v Verdict) Refused() bool { return v.Forward == nil }

// Apply decides what becomes of one client→browser message. A message
// that is not a JSON object with an integer id and a method, or that has
// a key twice in any object (Chromium and this filter might read
// different values), is dropped without an answer (there is no id to
// answer).
func (f *Filter) Apply(msg []byte) Verdict {
	return f.apply(msg, 0)
}

func (f *Filter) apply(msg []byte, depth int) Verdict {
	c, err := parseCommand(msg)
	if err != nil {
		return Verdict{Method: c.method, Reason: fmt.Sprintf("message dropped: %v", err)}
	}
	out, why, err := f.check(c, depth)
	if err != nil {
		reason := fmt.Sprintf("wallcrawler: %s refused: %v", c.method, err)
		return Verdict{Reply: c.refusal(reason), Method: c.method, Reason: reason}
	}
	if out == nil {
		return Verdict{Forward: msg, Method: c.method}
	}
	return Verdict{Forward: out, Method: c.method, Reason: fmt.Sprintf("wallcrawler: %s rewritten: %s", c.method, why)}
}

// command is a parsed client message.
type command struct {
	top       map[string]json.RawMessage
	id        json.RawMessage // an integer
	method    string
	sessionID json.RawMessage // a JSON string, or nil
	params    map[string]json.RawMessage
}

// parseCommand parses and validates a CDP command.
func parseCommand(msg []byte) (command, error) {
	var c command
	if err := checkJSON(msg); err != nil {
		return c, err
	}
	if err := json.Unmarshal(msg, &c.top); err != nil || c.top == nil {
		return c, errors.New("not a JSON object")
	}
	if m, ok := c.top["method"]; ok {
		if err := json.Unmarshal(m, &c.method); err != nil {
			return c, errors.New("method is not a string")
		}
	}
	if c.method == "" {
		return c, errors.New("no method")
	}
	c.id = c.top["id"]
	if _, err := strconv.ParseInt(string(c.id), 10, 64); err != nil {
		return c, errors.New("no integer id")
	}
	if s, ok := c.top["sessionId"]; ok && !isNull(s) {
		var str string
		if err := json.Unmarshal(s, &str); err != nil {
			return c, errors.New("sessionId is not a string")
		}
		c.sessionID = s
	}
	if p, ok := c.top["params"]; ok && !isNull(p) {
		if err := json.Unmarshal(p, &c.params); err != nil {
			return c, errors.New("params is not an object")
		}
	}
	return c, nil
}

// refusal is the CDP error answer to c.
func (c command) refusal(message string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	b.Write(c.id)
	if c.sessionID != nil {
		b.WriteString(`,"sessionId":`)
		b.Write(c.sessionID)
	}
	b.WriteString(`,"error":{"code":`)
	b.WriteString(strconv.Itoa(refusalCode))
	b.WriteString(`,"message":`)
	m, _ := json.Marshal(message)
	b.Write(m)
	b.WriteString(`}}`)
	return b.Bytes()
}

// encode re-serializes c with its (possibly changed) params.
func (c command) encode() ([]byte, error) {
	p, err := json.Marshal(c.params)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	c.top["params"] = p
	b, err := json.Marshal(c.top)
	if err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	return b, nil
}

// check applies c's rule: it returns an error when c is refused, or the
// rewritten message (and why) when c is changed, or nil to relay c as is.
func (f *Filter) check(c command, depth int) ([]byte, string, error) {
	if err := f.targets.check(c); err != nil {
		return nil, "", err
	}
	lower := strings.ToLower(c.method)
	domain, _, _ := strings.Cut(lower, ".")
	if why, ok := domainRules[domain]; ok {
		return nil, "", errors.New(why)
	}
	r := methodRules[lower]
	if r.refuse != "" {
		return nil, "", errors.New(r.refuse)
	}
	for _, name := range r.urls {
		raw, ok := lookup(c.params, name)
		if !ok {
			continue
		}
		var u string
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, "", fmt.Errorf("%s is not a string", name)
		}
		if err := checkURL(u); err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
	}
	var mapped []string // file params whose Browserbase upload paths were mapped
	for _, name := range r.files {
		raw, ok := lookup(c.params, name)
		if !ok {
			continue
		}
		var files []string
		if err := json.Unmarshal(raw, &files); err != nil {
			return nil, "", fmt.Errorf("%s is not a list of strings", name)
		}
		changed := false
		for i, file := range files {
			if host, ok := f.mapUpload(file); ok {
				files[i], changed = host, true
			}
			if err := f.sessionFile(files[i]); err != nil {
				return nil, "", fmt.Errorf("%s: %w", name, err)
			}
		}
		if changed {
			v, _ := json.Marshal(files)
			if err := setParam(c.params, name, v); err != nil {
				return nil, "", fmt.Errorf("%s: %w", name, err)
			}
			mapped = append(mapped, name)
		}
	}
	for _, name := range r.absent {
		raw, ok := lookup(c.params, name)
		if ok && !emptyList(raw) {
			return nil, "", fmt.Errorf("%s is not allowed: the browser's network route is fixed", name)
		}
	}
	if r.tracing {
		if err := checkTracing(c.params); err != nil {
			return nil, "", err
		}
	}
	if r.downloadPath {
		return f.rewriteDownloadPath(c)
	}
	if r.nested {
		return f.rewriteNested(c, depth)
	}
	if len(mapped) > 0 {
		out, err := c.encode()
		if err != nil {
			return nil, "", err
		}
		return out, strings.Join(mapped, ", ") + ": " + BrowserbaseUploadDir + "/ → the session's upload directory", nil
	}
	return nil, "", nil
}

// rewriteDownloadPath points a download command at the session's download
// directory: a downloadPath outside it (Playwright and Puppeteer send
// their own local directory) is replaced by it, and behavior "default"
// (Chromium's default saves into the browser user's ~/Downloads, shared
// by every session) becomes "allow" into it.
func (f *Filter) rewriteDownloadPath(c command) ([]byte, string, error) {
	var behavior, p string
	if raw, ok := c.params["behavior"]; ok && json.Unmarshal(raw, &behavior) != nil {
		return nil, "", errors.New("behavior is not a string")
	}
	if raw, ok := c.params["downloadPath"]; ok && !isNull(raw) && json.Unmarshal(raw, &p) != nil {
		return nil, "", errors.New("downloadPath is not a string")
	}
	var why string
	switch {
	case behavior == "default":
		why = `behavior "default" → "allow" into the session's download directory`
		c.params["behavior"] = json.RawMessage(`"allow"`)
	case p == "":
		return nil, "", nil // Chromium refuses allow without a path
	default:
		why = "downloadPath " + strconv.Quote(p) + " → the session's download directory"
	}
	if f.downloadDir == "" {
		return nil, "", errors.New("the session has no download directory")
	}
	if behavior != "default" && f.inDownloads(p) == nil {
		return nil, "", nil
	}
	c.params["downloadPath"], _ = json.Marshal(f.downloadDir)
	out, err := c.encode()
	if err != nil {
		return nil, "", err
	}
	return out, why, nil
}

// rewriteNested filters the command that Target.sendMessageToTarget
// carries in params.message.
func (f *Filter) rewriteNested(c command, depth int) ([]byte, string, error) {
	raw, ok := c.params["message"]
	if !ok {
		return nil, "", nil // Chromium refuses it
	}
	var inner string
	if err := json.Unmarshal(raw, &inner); err != nil {
		return nil, "", errors.New("message is not a string")
	}
	if depth+1 >= maxNesting {
		return nil, "", errors.New("messages nested too deep")
	}
	v := f.apply([]byte(inner), depth+1)
	switch {
	case v.Forward == nil && v.Reply == nil:
		return nil, "", fmt.Errorf("message: %s", strings.TrimPrefix(v.Reason, "message dropped: "))
	case v.Forward == nil:
		return nil, "", fmt.Errorf("message: %s", v.Reason)
	case v.Reason == "":
		return nil, "", nil
	}
	c.params["message"], _ = json.Marshal(string(v.Forward))
	out, err := c.encode()
	if err != nil {
		return nil, "", err
	}
	return out, "message: " + v.Reason, nil
}

// checkTracing accepts a Tracing.start whose trace comes back over CDP
// (Tracing.dataCollected events or an IO stream): tracingBackend must be
// absent, "auto" or "chrome" ("system" hands the trace to the host's
// perfetto service, a socket outside the browser, which writes files where
// the config says), and a perfettoConfig must not ask for a file
// (TraceConfig write_into_file or output_path). The categories, options
// and traceConfig params cannot name a file.
func checkTracing(params map[string]json.RawMessage) error {
	if raw, ok := lookup(params, "tracingBackend"); ok {
		var backend string
		if json.Unmarshal(raw, &backend) != nil {
			return errors.New("tracingBackend is not a string")
		}
		if backend != "auto" && backend != "chrome" {
			return fmt.Errorf("tracingBackend %q is not allowed: the trace stays in the browser", backend)
		}
	}
	raw, ok := lookup(params, "perfettoConfig")
	if !ok {
		return nil
	}
	var enc string
	if json.Unmarshal(raw, &enc) != nil {
		return errors.New("perfettoConfig is not a string")
	}
	pb, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return errors.New("perfettoConfig is not base64")
	}
	if err := checkPerfettoConfig(pb); err != nil {
		return fmt.Errorf("perfettoConfig: %w", err)
	}
	return nil
}

// Fields of perfetto.protos.TraceConfig that make the tracing service
// write the trace into a file.
const (
	perfettoWriteIntoFile = 8  // bool write_into_file
	perfettoOutputPath    = 29 // string output_path
)

// checkPerfettoConfig reads the top-level fields of a serialized
// perfetto TraceConfig and refuses write_into_file (any occurrence not
// false) and output_path, or a message it cannot read.
func checkPerfettoConfig(pb []byte) error {
	for len(pb) > 0 {
		key, n := binary.Uvarint(pb)
		if n <= 0 {
			return errors.New("not a TraceConfig")
		}
		pb = pb[n:]
		field, wire := key>>3, key&7
		var v uint64
		switch wire {
		case 0: // varint
			v, n = binary.Uvarint(pb)
			if n <= 0 {
				return errors.New("not a TraceConfig")
			}
			pb = pb[n:]
		case 1: // 64-bit
			if len(pb) < 8 {
				return errors.New("not a TraceConfig")
			}
			v, pb = binary.LittleEndian.Uint64(pb), pb[8:]
		case 2: // length-delimited
			l, n := binary.Uvarint(pb)
			if n <= 0 || l > uint64(len(pb)-n) {
				return errors.New("not a TraceConfig")
			}
			v, pb = 1, pb[n+int(l):]
		case 5: // 32-bit
			if len(pb) < 4 {
				return errors.New("not a TraceConfig")
			}
			v, pb = uint64(binary.LittleEndian.Uint32(pb)), pb[4:]
		default: // groups are not used by TraceConfig
			return errors.New("not a TraceConfig")
		}
		switch {
		case field == perfettoWriteIntoFile && v != 0:
			return errors.New("write_into_file is not allowed: the trace is returned over CDP, not written on the host")
		case field == perfettoOutputPath:
			return errors.New("output_path is not allowed: the trace is returned over CDP, not written on the host")
		}
	}
	return nil
}

// inDownloads checks that the host path p, once cleaned and with symlinks
// resolved, names the download directory or something inside it. The
// path must exist.
func (f *Filter) inDownloads(p string) error {
	if f.downloadDir == "" {
		return errors.New("the session has no download directory")
	}
	if !within(f.downloadDir, p) {
		return fmt.Errorf("%q is not a file in the session's download directory", p)
	}
	return nil
}

// sessionFile checks that the host path p, once cleaned and with symlinks
// resolved, names something inside the session's download or upload
// directory, the only files a command may hand to a page. The path must
// exist.
func (f *Filter) sessionFile(p string) error {
	if f.downloadDir == "" && f.uploadDir == "" {
		return errors.New("the session has no download or upload directory")
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return fmt.Errorf("%q is not a file in the session's download or upload directory", p)
	}
	if (f.downloadDir != "" && inside(f.downloadDir, real)) || (f.uploadDir != "" && inside(f.uploadDir, real)) {
		return nil
	}
	return fmt.Errorf("%q is outside the session's download and upload directories", p)
}

// within reports whether the absolute path p exists and, cleaned and with
// every symbolic link resolved, is dir (already resolved) or inside it.
func within(dir, p string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	return err == nil && inside(dir, real)
}

// inside reports whether the resolved path real is dir or inside it.
func inside(dir, real string) bool {
	rel, err := filepath.Rel(dir, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// mapUpload returns the host path of a Browserbase upload path
// (BrowserbaseUploadDir/<name>) in the session's upload directory, and
// whether p was one. The result is checked like any other path: a name
// with ".." that cleans to outside the directory is refused there.
func (f *Filter) mapUpload(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, BrowserbaseUploadDir+"/")
	if !ok || f.uploadDir == "" {
		return "", false
	}
	return filepath.Join(f.uploadDir, rest), true
}

// checkURL accepts the URLs a command may load or navigate to: "" (the
// command's default), http, https, ws, wss, data, about:blank,
// about:srcdoc and blob URLs of web or opaque origins. Everything else
// (file, filesystem, view-source, javascript, chrome, chrome-untrusted,
// devtools, chrome-extension, other about pages, which Chromium maps to
// chrome:, and anything without a scheme) is refused.
//
// The scheme is read the way Chromium's URL parser reads it: leading and
// trailing control characters and spaces are ignored, tabs and newlines
// anywhere are removed, and case does not matter.
func checkURL(u string) error {
	if u == "" {
		return nil
	}
	s := strings.TrimFunc(u, func(r rune) bool { return r <= ' ' })
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || !validScheme(scheme) {
		return fmt.Errorf("%q has no URL scheme", u)
	}
	switch scheme = strings.ToLower(scheme); scheme {
	case "http", "https", "ws", "wss", "data":
		return nil
	case "about":
		page, _, _ := strings.Cut(strings.ToLower(rest), "?")
		page, _, _ = strings.Cut(page, "#")
		if page == "blank" || page == "srcdoc" {
			return nil
		}
	case "blob":
		inner := strings.ToLower(rest)
		if strings.HasPrefix(inner, "http://") || strings.HasPrefix(inner, "https://") || strings.HasPrefix(inner, "null/") {
			return nil
		}
	}
	return fmt.Errorf("%s: URLs are not allowed (%q)", scheme, truncateURL(u))
}

// validScheme reports whether s is a URL scheme: a letter, then letters,
// digits, "+", "-" or ".".
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// truncateURL shortens u for an error message (data URLs can be huge).
func truncateURL(u string) string {
	if len(u) > 100 {
		return u[:100] + "…"
	}
	return u
}

// lookup finds a dotted param path ("data.files") in params.
func lookup(params map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	cur := params
	for {
		name, rest, more := strings.Cut(path, ".")
		raw, ok := cur[name]
		if !ok || isNull(raw) {
			return nil, false
		}
		if !more {
			return raw, true
		}
		cur = nil
		if json.Unmarshal(raw, &cur) != nil {
			// Not an object: Chromium refuses the params anyway, but do not
			// let a check pass because of it.
			return raw, true
		}
		path = rest
	}
}

// setParam replaces the value at a dotted param path that lookup found
// (each step but the last an object).
func setParam(params map[string]json.RawMessage, path string, v json.RawMessage) error {
	name, rest, more := strings.Cut(path, ".")
	if !more {
		params[name] = v
		return nil
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(params[name], &inner); err != nil || inner == nil {
		return fmt.Errorf("%s is not an object", name)
	}
	if err := setParam(inner, rest, v); err != nil {
		return err
	}
	b, err := json.Marshal(inner)
	if err != nil {
		return err
	}
	params[name] = b
	return nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// emptyList reports whether raw is an empty list.
func emptyList(raw json.RawMessage) bool {
	var l []json.RawMessage
	return json.Unmarshal(raw, &l) == nil && len(l) == 0
}

// checkJSON reports an error unless msg is exactly one JSON object in
// which no object (at any depth) has the same key twice.
func checkJSON(msg []byte) error {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	if err := checkObject(dec); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON: data after the object")
	}
	return nil
}

// checkObject reads the rest of an object whose "{" dec has read.
func checkObject(dec *json.Decoder) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		if err := checkValue(dec); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // "}"
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return nil
}

// checkValue reads one value.
func checkValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		return checkObject(dec)
	case json.Delim('['):
		for dec.More() {
			if err := checkValue(dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // "]"
			return fmt.Errorf("invalid JSON: %w", err)
		}
	}
	return nil
}

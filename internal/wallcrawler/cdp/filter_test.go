package cdp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// filterDirs makes a download directory holding report.txt, a symlink
// escaping it, and a secret file beside it; it returns a Filter and the
// replacer of the placeholders {dir}, {secret} used in the test messages.
func filterDirs(t testing.TB) (*Filter, *strings.Replacer) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "downloads")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, "secret.txt")
	for _, p := range []string{filepath.Join(dir, "report.txt"), secret} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(root, "dl-link")); err != nil {
		t.Fatal(err)
	}
	// The session's upload directory, and another session's beside it.
	up, other := filepath.Join(root, "uploads"), filepath.Join(root, "other", "uploads")
	for _, d := range []string{up, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cv.pdf"), []byte("x"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(up, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "cv.pdf"), filepath.Join(up, "other.pdf")); err != nil {
		t.Fatal(err)
	}
	return NewFilter(dir, up), strings.NewReplacer("{dir}", dir, "{root}", root, "{secret}", secret, "{up}", up, "{other}", other)
}

// Outcomes of a filter test case.
const (
	forward = "forward" // relayed unchanged
	drop    = "drop"    // neither relayed nor answered
	refuse  = "refuse"  // answered with an error, not relayed
	rewrite = "rewrite" // relayed changed
)

func TestFilter(t *testing.T) {
	f, r := filterDirs(t)
	for _, c := range []struct {
		name, in, want string
		// out is the rewritten message (compared as JSON), or for refuse a
		// substring of the error message.
		out string
	}{
		// Ordinary automation traffic.
		{"navigate http", `{"id":1,"method":"Page.navigate","params":{"url":"http://example.com/"},"sessionId":"S1"}`, forward, ""},
		{"navigate https", `{"id":1,"method":"Page.navigate","params":{"url":"https://example.com/a?b#c"}}`, forward, ""},
		{"navigate about:blank", `{"id":1,"method":"Page.navigate","params":{"url":"about:blank"}}`, forward, ""},
		{"navigate about:blank#x", `{"id":1,"method":"Page.navigate","params":{"url":"ABOUT:blank#x"}}`, forward, ""},
		{"navigate data", `{"id":1,"method":"Page.navigate","params":{"url":"data:text/html,<h1>hi</h1>"}}`, forward, ""},
		{"navigate blob of web origin", `{"id":1,"method":"Page.navigate","params":{"url":"blob:https://a.test/1234"}}`, forward, ""},
		{"navigate empty", `{"id":1,"method":"Page.navigate","params":{"url":""}}`, forward, ""},
		{"createTarget about:blank", `{"id":2,"method":"Target.createTarget","params":{"url":"about:blank","browserContextId":"C"}}`, forward, ""},
		{"createTarget no url", `{"id":2,"method":"Target.createTarget","params":{}}`, forward, ""},
		{"evaluate", `{"id":3,"method":"Runtime.evaluate","params":{"expression":"location.href='file:///etc/passwd'"},"sessionId":"S"}`, forward, ""},
		{"no params", `{"id":3,"method":"Browser.getVersion"}`, forward, ""},
		{"null params", `{"id":3,"method":"Browser.getVersion","params":null}`, forward, ""},
		{"history entry", `{"id":3,"method":"Page.navigateToHistoryEntry","params":{"entryId":3}}`, forward, ""},
		{"setDocumentContent", `{"id":3,"method":"Page.setDocumentContent","params":{"frameId":"F","html":"<a href='file:///etc/passwd'>x</a>"}}`, forward, ""},
		{"fulfillRequest", `{"id":3,"method":"Fetch.fulfillRequest","params":{"requestId":"R","responseCode":200}}`, forward, ""},
		{"continueRequest same url", `{"id":3,"method":"Fetch.continueRequest","params":{"requestId":"R"}}`, forward, ""},
		{"continueRequest https", `{"id":3,"method":"Fetch.continueRequest","params":{"requestId":"R","url":"https://b.test/"}}`, forward, ""},
		{"autoAttach", `{"id":4,"method":"Target.setAutoAttach","params":{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}}`, forward, ""},
		{"tracing", `{"id":4,"method":"Tracing.start","params":{"transferMode":"ReturnAsStream"}}`, forward, ""},
		{"tracing events", `{"id":4,"method":"Tracing.start","params":{"traceConfig":{"includedCategories":["devtools.timeline"]},"transferMode":"ReportEvents","tracingBackend":"chrome"}}`, forward, ""},
		{"tracing perfetto", `{"id":4,"method":"Tracing.start","params":{"perfettoConfig":"CgMIgAgSDwoNCgt0cmFja19ldmVudA==","transferMode":"ReturnAsStream","tracingBackend":"auto"}}`, forward, ""},
		{"tracing perfetto no file", `{"id":4,"method":"Tracing.start","params":{"perfettoConfig":"CgMIgAgSDwoNCgt0cmFja19ldmVudEAA"}}`, forward, ""},
		{"systemInfo", `{"id":4,"method":"SystemInfo.getInfo"}`, forward, ""},
		{"compilation cache", `{"id":4,"method":"Page.addCompilationCache","params":{"url":"file:///x.js","data":""}}`, forward, ""},
		{"context without proxy", `{"id":5,"method":"Target.createBrowserContext","params":{"disposeOnDetach":true}}`, forward, ""},
		{"context with empty origins", `{"id":5,"method":"Target.createBrowserContext","params":{"originsWithUniversalNetworkAccess":[]}}`, forward, ""},
		{"context null proxy", `{"id":5,"method":"Target.createBrowserContext","params":{"proxyServer":null}}`, forward, ""},
		{"file input in downloads", `{"id":6,"method":"DOM.setFileInputFiles","params":{"files":["{dir}/report.txt"],"backendNodeId":7}}`, forward, ""},
		{"file input via symlinked dir", `{"id":6,"method":"DOM.setFileInputFiles","params":{"files":["{root}/dl-link/report.txt"],"backendNodeId":7}}`, forward, ""},
		{"file input cleared", `{"id":6,"method":"DOM.setFileInputFiles","params":{"files":[],"backendNodeId":7}}`, forward, ""},
		{"drag without files", `{"id":6,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"dragOperationsMask":1}}}`, forward, ""},
		{"drag file in downloads", `{"id":6,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["{dir}/report.txt"],"dragOperationsMask":1}}}`, forward, ""},
		{"download deny", `{"id":7,"method":"Browser.setDownloadBehavior","params":{"behavior":"deny"}}`, forward, ""},
		{"download in dir", `{"id":7,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}"}}`, forward, ""},
		{"download in subdir", `{"id":7,"method":"Page.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}/"}}`, forward, ""},
		{"nested ordinary", `{"id":8,"method":"Target.sendMessageToTarget","params":{"sessionId":"S","message":"{\"id\":1,\"method\":\"Page.navigate\",\"params\":{\"url\":\"https://a.test/\"}}"}}`, forward, ""},

		// Local files by URL.
		{"navigate file", `{"id":10,"method":"Page.navigate","params":{"url":"file:///etc/passwd"},"sessionId":"S1"}`, refuse, `"sessionId":"S1"`},
		{"navigate FILE", `{"id":10,"method":"Page.navigate","params":{"url":"FILE:///etc/passwd"}}`, refuse, "file: URLs are not allowed"},
		{"navigate space file", `{"id":10,"method":"Page.navigate","params":{"url":" \u0000\u001ffile:///etc/passwd"}}`, refuse, "file: URLs"},
		{"navigate fi\\tle", `{"id":10,"method":"Page.navigate","params":{"url":"fi\tl\ne:///etc/passwd"}}`, refuse, "file: URLs"},
		{"navigate escaped", `{"id":10,"method":"Page.navigate","params":{"url":"\u0066ile:///etc/passwd"}}`, refuse, "file: URLs"},
		{"navigate no scheme", `{"id":10,"method":"Page.navigate","params":{"url":"/etc/passwd"}}`, refuse, "no URL scheme"},
		{"navigate bad scheme", `{"id":10,"method":"Page.navigate","params":{"url":"f\u00efle:///etc/passwd"}}`, refuse, "no URL scheme"},
		{"navigate spaces", `{"id":10,"method":"Page.navigate","params":{"url":"   "}}`, refuse, "no URL scheme"},
		{"navigate view-source", `{"id":10,"method":"Page.navigate","params":{"url":"view-source:file:///etc/passwd"}}`, refuse, "view-source: URLs"},
		{"navigate view-source http", `{"id":10,"method":"Page.navigate","params":{"url":"view-source:https://a.test/"}}`, refuse, "view-source"},
		{"navigate filesystem", `{"id":10,"method":"Page.navigate","params":{"url":"filesystem:file:///temporary/x"}}`, refuse, "filesystem"},
		{"navigate chrome", `{"id":10,"method":"Page.navigate","params":{"url":"chrome://version"}}`, refuse, "chrome:"},
		{"navigate about:version", `{"id":10,"method":"Page.navigate","params":{"url":"about:version"}}`, refuse, "about:"},
		{"navigate chrome-untrusted", `{"id":10,"method":"Page.navigate","params":{"url":"chrome-untrusted://terminal/"}}`, refuse, "chrome-untrusted"},
		{"navigate devtools", `{"id":10,"method":"Page.navigate","params":{"url":"devtools://devtools/bundled/inspector.html"}}`, refuse, "devtools"},
		{"navigate extension", `{"id":10,"method":"Page.navigate","params":{"url":"chrome-extension://abc/x.html"}}`, refuse, "chrome-extension"},
		{"navigate javascript", `{"id":10,"method":"Page.navigate","params":{"url":"javascript:alert(1)"}}`, refuse, "javascript"},
		{"navigate blob of file", `{"id":10,"method":"Page.navigate","params":{"url":"blob:file:///1234"}}`, refuse, "blob"},
		{"navigate url not string", `{"id":10,"method":"Page.navigate","params":{"url":["file:///etc/passwd"]}}`, refuse, "not a string"},
		{"createTarget file", `{"id":11,"method":"Target.createTarget","params":{"url":"file:///etc/passwd"}}`, refuse, "file:"},
		{"createTarget view-source", `{"id":11,"method":"Target.createTarget","params":{"url":"view-source:file:///etc/passwd"}}`, refuse, "view-source"},
		{"continueRequest file", `{"id":12,"method":"Fetch.continueRequest","params":{"requestId":"R","url":"file:///etc/passwd"}}`, refuse, "file:"},
		{"continueInterceptedRequest file", `{"id":12,"method":"Network.continueInterceptedRequest","params":{"interceptionId":"R","url":"file:///etc/passwd"}}`, refuse, "file:"},
		{"loadNetworkResource file", `{"id":12,"method":"Network.loadNetworkResource","params":{"frameId":"F","url":"file:///etc/passwd","options":{"disableCache":true,"includeCredentials":false}}}`, refuse, "file:"},
		{"method case", `{"id":13,"method":"page.NAVIGATE","params":{"url":"file:///etc/passwd"}}`, refuse, "file:"},

		// Host files into pages.
		{"file input outside", `{"id":20,"method":"DOM.setFileInputFiles","params":{"files":["/etc/passwd"],"nodeId":3}}`, refuse, "outside the session's download and upload directories"},
		{"file input dotdot", `{"id":20,"method":"DOM.setFileInputFiles","params":{"files":["{dir}/../secret.txt"],"nodeId":3}}`, refuse, "outside"},
		{"file input symlink out", `{"id":20,"method":"DOM.setFileInputFiles","params":{"files":["{dir}/report.txt","{dir}/link.txt"],"nodeId":3}}`, refuse, "outside"},
		{"file input missing", `{"id":20,"method":"DOM.setFileInputFiles","params":{"files":["{dir}/nope.txt"],"nodeId":3}}`, refuse, "not a file in"},
		{"file input relative", `{"id":20,"method":"DOM.setFileInputFiles","params":{"files":["downloads/report.txt"],"nodeId":3}}`, refuse, "not an absolute path"},
		{"file input dir prefix", `{"id":20,"method":"DOM.setFileInputFiles","params":{"files":["{dir}-x"],"nodeId":3}}`, refuse, ""},
		{"file input not list", `{"id":20,"method":"DOM.setFileInputFiles","params":{"files":"/etc/passwd","nodeId":3}}`, refuse, "not a list"},
		{"drag file outside", `{"id":21,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["{secret}"],"dragOperationsMask":1}}}`, refuse, "data.files"},
		{"drag data not object", `{"id":21,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":["{secret}"]}}`, refuse, ""},
		{"file chooser outside", `{"id":22,"method":"Page.handleFileChooser","params":{"action":"accept","files":["/etc/shadow"]}}`, refuse, "outside"},

		// Uploaded files: the session's own, by host path or as Browserbase
		// names them; nothing outside its upload directory.
		{"file input uploaded", `{"id":23,"method":"DOM.setFileInputFiles","params":{"files":["{up}/cv.pdf"],"nodeId":3}}`, forward, ""},
		{"file input browserbase path", `{"id":23,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/.uploads/cv.pdf"],"nodeId":3},"sessionId":"S"}`, rewrite,
			`{"id":23,"method":"DOM.setFileInputFiles","params":{"files":["{up}/cv.pdf"],"nodeId":3},"sessionId":"S"}`},
		{"drag browserbase path", `{"id":23,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["/tmp/.uploads/cv.pdf","{dir}/report.txt"],"dragOperationsMask":1}}}`, rewrite,
			`{"id":23,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["{up}/cv.pdf","{dir}/report.txt"],"dragOperationsMask":1}}}`},
		{"file chooser browserbase path", `{"id":23,"method":"Page.handleFileChooser","params":{"action":"accept","files":["/tmp/.uploads/cv.pdf"]}}`, rewrite,
			`{"id":23,"method":"Page.handleFileChooser","params":{"action":"accept","files":["{up}/cv.pdf"]}}`},
		{"file input other session", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["{other}/cv.pdf"],"nodeId":3}}`, refuse, "outside the session's download and upload directories"},
		{"file input upload dotdot", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["{up}/../other/uploads/cv.pdf"],"nodeId":3}}`, refuse, "outside"},
		{"file input browserbase dotdot", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/.uploads/../other/uploads/cv.pdf"],"nodeId":3}}`, refuse, "outside"},
		{"file input browserbase escape", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/.uploads/../../../../../../etc/passwd"],"nodeId":3}}`, refuse, "outside"},
		{"file input upload symlink out", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["{up}/link.txt"],"nodeId":3}}`, refuse, "outside"},
		{"file input upload symlink other", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/.uploads/other.pdf"],"nodeId":3}}`, refuse, "outside"},
		{"file input browserbase missing", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/.uploads/nope.pdf"],"nodeId":3}}`, refuse, "not a file in"},
		{"file input browserbase dir itself", `{"id":24,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/.uploads"],"nodeId":3}}`, refuse, ""},

		// Downloads.
		{"download elsewhere", `{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allowAndName","browserContextId":"C","downloadPath":"/tmp/playwright-artifacts-x","eventsEnabled":true}}`, rewrite,
			`{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allowAndName","browserContextId":"C","downloadPath":"{dir}","eventsEnabled":true}}`},
		{"download dotdot", `{"id":30,"method":"Page.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}/.."},"sessionId":"S"}`, rewrite,
			`{"id":30,"method":"Page.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}"},"sessionId":"S"}`},
		{"download relative", `{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"downloads"}}`, rewrite,
			`{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}"}}`},
		{"download through symlink", `{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}/link.txt"}}`, rewrite,
			`{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}"}}`},
		{"download default", `{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"default","browserContextId":"C"}}`, rewrite,
			`{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","browserContextId":"C","downloadPath":"{dir}"}}`},
		{"download default with path", `{"id":30,"method":"Page.setDownloadBehavior","params":{"behavior":"default","downloadPath":"{dir}"}}`, rewrite,
			`{"id":30,"method":"Page.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}"}}`},
		{"download behavior not string", `{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":["default"]}}`, refuse, "behavior is not a string"},
		{"download path not string", `{"id":30,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":1}}`, refuse, "not a string"},

		// Network route.
		{"context proxy", `{"id":40,"method":"Target.createBrowserContext","params":{"proxyServer":"direct://"}}`, refuse, "proxyServer is not allowed"},
		{"context empty proxy", `{"id":40,"method":"Target.createBrowserContext","params":{"proxyServer":""}}`, refuse, "proxyServer"},
		{"context bypass", `{"id":40,"method":"Target.createBrowserContext","params":{"proxyBypassList":"*"}}`, refuse, "proxyBypassList"},
		{"context universal access", `{"id":40,"method":"Target.createBrowserContext","params":{"originsWithUniversalNetworkAccess":["https://a.test"]}}`, refuse, "originsWithUniversalNetworkAccess"},
		{"remote locations", `{"id":40,"method":"Target.setRemoteLocations","params":{"locations":[{"host":"10.0.0.1","port":9222}]}}`, refuse, "egress proxy"},
		{"cast", `{"id":40,"method":"Cast.enable","params":{}}`, refuse, "casting"},
		{"tethering", `{"id":40,"method":"Tethering.bind","params":{"port":8080}}`, refuse, "host ports"},

		// Privileges.
		{"expose protocol", `{"id":50,"method":"Target.exposeDevToolsProtocol","params":{"targetId":"T"}}`, refuse, "bypasses this proxy"},
		{"open devtools", `{"id":50,"method":"Target.openDevTools","params":{"targetId":"T"}}`, refuse, "privileged"},
		{"extensions load", `{"id":50,"method":"Extensions.loadUnpacked","params":{"path":"/home"}}`, refuse, "extensions"},
		{"extensions any", `{"id":50,"method":"Extensions.getExtensions"}`, refuse, "extensions"},
		{"extensions case", `{"id":50,"method":"EXTENSIONS.loadUnpacked","params":{"path":"/home"}}`, refuse, "extensions"},
		{"pwa", `{"id":50,"method":"PWA.launchFilesInApp","params":{"manifestId":"m","files":["/etc/passwd"]}}`, refuse, "web apps"},
		{"browser command", `{"id":50,"method":"Browser.executeBrowserCommand","params":{"commandId":"openTabSearch"}}`, refuse, "browser UI"},
		{"command line", `{"id":50,"method":"Browser.getBrowserCommandLine"}`, refuse, "command line"},
		{"process info", `{"id":50,"method":"SystemInfo.getProcessInfo"}`, refuse, "process ids"},
		{"process info case", `{"id":50,"method":"systeminfo.GETPROCESSINFO","sessionId":"S"}`, refuse, "process ids"},

		// Traces written on the host.
		{"tracing system", `{"id":51,"method":"Tracing.start","params":{"transferMode":"ReturnAsStream","tracingBackend":"system"}}`, refuse, `tracingBackend \"system\" is not allowed`},
		{"tracing unknown backend", `{"id":51,"method":"Tracing.start","params":{"tracingBackend":"System"}}`, refuse, "tracingBackend"},
		{"tracing backend not string", `{"id":51,"method":"Tracing.start","params":{"tracingBackend":["system"]}}`, refuse, "not a string"},
		{"tracing write_into_file", `{"id":51,"method":"Tracing.start","params":{"perfettoConfig":"CgMIgAgSDwoNCgt0cmFja19ldmVudEAB","transferMode":"ReturnAsStream"}}`, refuse, "write_into_file"},
		{"tracing output_path", `{"id":51,"method":"Tracing.start","params":{"perfettoConfig":"CgMIgAgSDwoNCgt0cmFja19ldmVudOoBDi90bXAveC5wZnRyYWNl"}}`, refuse, "output_path"},
		{"tracing bad perfetto", `{"id":51,"method":"Tracing.start","params":{"perfettoConfig":"Cv8="}}`, refuse, "not a TraceConfig"},
		{"tracing perfetto not base64", `{"id":51,"method":"Tracing.start","params":{"perfettoConfig":"!!"}}`, refuse, "not base64"},
		{"tracing perfetto not string", `{"id":51,"method":"Tracing.start","params":{"perfettoConfig":{"writeIntoFile":true}}}`, refuse, "not a string"},
		{"nested tracing", `{"id":51,"method":"Target.sendMessageToTarget","params":{"sessionId":"S","message":"{\"id\":1,\"method\":\"Tracing.start\",\"params\":{\"tracingBackend\":\"system\"}}"}}`, refuse, "tracingBackend"},

		// Nested commands.
		{"nested file", `{"id":60,"method":"Target.sendMessageToTarget","params":{"sessionId":"S","message":"{\"id\":1,\"method\":\"Page.navigate\",\"params\":{\"url\":\"file:///etc/passwd\"}}"}}`, refuse, "message: wallcrawler: Page.navigate refused"},
		{"nested twice", `{"id":60,"method":"Target.sendMessageToTarget","params":{"message":` + quote(`{"id":1,"method":"Target.sendMessageToTarget","params":{"message":`+quote(`{"id":2,"method":"Extensions.loadUnpacked","params":{"path":"/"}}`)+`}}`) + `}}`, refuse, "extensions"},
		{"nested garbage", `{"id":60,"method":"Target.sendMessageToTarget","params":{"message":"{nope"}}`, refuse, "invalid JSON"},
		{"nested no id", `{"id":60,"method":"Target.sendMessageToTarget","params":{"message":"{\"method\":\"Page.navigate\"}"}}`, refuse, "no integer id"},
		{"nested not string", `{"id":60,"method":"Target.sendMessageToTarget","params":{"message":{"id":1,"method":"Page.navigate"}}}`, refuse, "not a string"},
		{"nested too deep", nest(maxNesting, `{"id":1,"method":"Browser.getVersion"}`), refuse, "nested too deep"},
		{"nested download", `{"id":61,"method":"Target.sendMessageToTarget","params":{"sessionId":"S","message":"{\"id\":1,\"method\":\"Page.setDownloadBehavior\",\"params\":{\"behavior\":\"allow\",\"downloadPath\":\"/tmp/evil\"}}"}}`, rewrite,
			`{"id":61,"method":"Target.sendMessageToTarget","params":{"sessionId":"S","message":` + quote(`{"id":1,"method":"Page.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"{dir}"}}`) + `}}`},

		// Messages that cannot be inspected.
		{"garbage", `{"id":1,"method":"Page.navigate","params":{"url":"file:///`, drop, ""},
		{"not object", `[{"id":1,"method":"Page.navigate"}]`, drop, ""},
		{"trailing data", `{"id":1,"method":"Browser.getVersion"} {"id":2,"method":"Page.navigate","params":{"url":"file:///etc/passwd"}}`, drop, ""},
		{"no id", `{"method":"Page.navigate","params":{"url":"https://a.test/"}}`, drop, ""},
		{"string id", `{"id":"1","method":"Browser.getVersion"}`, drop, ""},
		{"float id", `{"id":1.5,"method":"Browser.getVersion"}`, drop, ""},
		{"no method", `{"id":1,"params":{}}`, drop, ""},
		{"method not string", `{"id":1,"method":7}`, drop, ""},
		{"params not object", `{"id":1,"method":"Page.navigate","params":"file:///etc/passwd"}`, drop, ""},
		{"session not string", `{"id":1,"method":"Page.navigate","sessionId":5}`, drop, ""},
		{"duplicate url", `{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd","url":"https://a.test/"}}`, drop, ""},
		{"duplicate method", `{"id":1,"method":"Browser.getVersion","method":"Extensions.loadUnpacked","params":{"path":"/"}}`, drop, ""},
		{"duplicate deep", `{"id":1,"method":"Input.dispatchDragEvent","params":{"data":{"files":[],"files":["/etc/passwd"]}}}`, drop, ""},
		{"case variant url", `{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd","URL":"https://a.test/"}}`, refuse, "file:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := r.Replace(c.in)
			v := f.Apply([]byte(in))
			switch c.want {
			case forward:
				if string(v.Forward) != in || v.Reply != nil || v.Reason != "" {
					t.Fatalf("not forwarded as is: %+v", v)
				}
			case drop:
				if v.Forward != nil || v.Reply != nil || v.Reason == "" {
					t.Fatalf("not dropped: forward %s reply %s reason %q", v.Forward, v.Reply, v.Reason)
				}
			case refuse:
				if v.Forward != nil || v.Reply == nil {
					t.Fatalf("not refused: forward %s reason %q", v.Forward, v.Reason)
				}
				checkReply(t, in, v.Reply, r.Replace(c.out))
			case rewrite:
				if v.Reply != nil || v.Forward == nil || v.Reason == "" {
					t.Fatalf("not rewritten: %+v", v)
				}
				if !sameJSON(t, v.Forward, []byte(r.Replace(c.out))) {
					t.Fatalf("rewritten to\n%s\nwant\n%s", v.Forward, r.Replace(c.out))
				}
			}
		})
	}
}

// checkReply checks an error answer to the command in: same id and
// sessionId, code -32000, "wallcrawler: <method> refused: ..." containing
// want.
func checkReply(t *testing.T, in string, reply []byte, want string) {
	t.Helper()
	var cmd, ans struct {
		ID        *int64  `json:"id"`
		Method    string  `json:"method"`
		SessionID *string `json:"sessionId"`
		Error     *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(in), &cmd); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(reply, &ans); err != nil {
		t.Fatalf("reply %s: %v", reply, err)
	}
	if ans.ID == nil || *ans.ID != *cmd.ID || !reflect.DeepEqual(ans.SessionID, cmd.SessionID) || ans.Error == nil || ans.Error.Code != -32000 {
		t.Fatalf("reply %s to %s", reply, in)
	}
	if !strings.HasPrefix(ans.Error.Message, "wallcrawler: "+cmd.Method+" refused: ") || !strings.Contains(string(reply), want) {
		t.Fatalf("reply %s, want a refusal of %s containing %q", reply, cmd.Method, want)
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// nest wraps msg in n Target.sendMessageToTarget commands.
func nest(n int, msg string) string {
	for i := 0; i < n; i++ {
		msg = `{"id":1,"method":"Target.sendMessageToTarget","params":{"message":` + quote(msg) + `}}`
	}
	return msg
}

func TestFilterWithoutDownloadDir(t *testing.T) {
	f := NewFilter("", "")
	for _, in := range []string{
		`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/tmp"],"nodeId":1}}`,
		`{"id":1,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/tmp"}}`,
	} {
		if v := f.Apply([]byte(in)); v.Forward != nil || !strings.Contains(string(v.Reply), "no download") {
			t.Errorf("%s: %+v", in, v)
		}
	}
	if v := f.Apply([]byte(`{"id":1,"method":"Browser.setDownloadBehavior","params":{"behavior":"default"}}`)); v.Forward != nil {
		t.Errorf("default: %+v", v)
	}
	if v := f.Apply([]byte(`{"id":1,"method":"Browser.setDownloadBehavior","params":{"behavior":"deny"}}`)); v.Reason != "" {
		t.Errorf("deny: %+v", v)
	}
}

func TestCheckURL(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://a.test/", true},
		{"HTTP://a.test/", true},
		{"  https://a.test/  ", true},
		{"wss://a.test/socket", true},
		{"about:srcdoc", true},
		{"about:blank?x", true},
		{"blob:null/0a1b", true},
		{"about:blank/../version", false},
		{"about:", false},
		{"about://blank", false},
		{"\x01file:///etc/passwd", false},
		{"file\t:///etc/passwd", false},
		{"file:/etc/passwd", false},
		{"file:etc/passwd", false},
		{"File://localhost/etc/passwd", false},
		{"view-source:view-source:file:///", false},
		{"ftp://a.test/", false},
		{"chrome-search://local-ntp", false},
		{":///etc/passwd", false},
		{"1file:///etc/passwd", false},
		{"C:\\Windows", false},
	} {
		if err := checkURL(c.url); (err == nil) != c.ok {
			t.Errorf("checkURL(%q) = %v, want ok %v", c.url, err, c.ok)
		}
	}
}

// FuzzFilter checks that the filter never panics, that it only relays
// messages it parsed (a JSON object with an integer id and a method, no
// key twice), that a relayed message passes the filter again unchanged
// (rewrites are final), and that refusals are well-formed answers.
func FuzzFilter(f *testing.F) {
	filter, r := filterDirs(f)
	for _, s := range []string{
		`{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd"},"sessionId":"S"}`,
		`{"id":1,"method":"Page.navigate","params":{"url":"https://a.test/"}}`,
		`{"id":2,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/tmp/x"}}`,
		`{"id":3,"method":"DOM.setFileInputFiles","params":{"files":["{dir}/report.txt"]}}`,
		`{"id":4,"method":"Target.sendMessageToTarget","params":{"message":"{\"id\":1,\"method\":\"Page.setDownloadBehavior\",\"params\":{\"behavior\":\"allow\",\"downloadPath\":\"/tmp\"}}"}}`,
		`{"id":5,"method":"Target.createBrowserContext","params":{"proxyServer":"direct://"}}`,
		`{"id":6,"method":"Input.dispatchDragEvent","params":{"data":{"files":["/etc/passwd"]}}}`,
		`{"id":7,"method":"Extensions.loadUnpacked"}`,
		`{"id":1,"method":"a","params":{"url":"x","url":"y"}}`,
		`garbage`,
	} {
		f.Add([]byte(r.Replace(s)))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		v := filter.Apply(msg)
		if v.Forward == nil {
			if v.Reason == "" {
				t.Fatalf("refused without a reason: %s", msg)
			}
			if v.Reply != nil {
				var ans struct {
					ID    *int64          `json:"id"`
					Error json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(v.Reply, &ans); err != nil || ans.ID == nil || ans.Error == nil {
					t.Fatalf("bad reply %s to %s", v.Reply, msg)
				}
			}
			return
		}
		if v.Reply != nil {
			t.Fatalf("both relayed and answered: %s", msg)
		}
		if _, err := parseCommand(v.Forward); err != nil {
			t.Fatalf("relayed %s, which does not parse: %v", v.Forward, err)
		}
		if v.Reason == "" && string(v.Forward) != string(msg) {
			t.Fatalf("changed %s to %s without a reason", msg, v.Forward)
		}
		if again := filter.Apply(v.Forward); again.Reason != "" || string(again.Forward) != string(v.Forward) {
			t.Fatalf("relayed %s, which the filter changes again: %+v", v.Forward, again)
		}
	})
}

// TestFilterBrowserUI checks that what the browser says about browser-UI
// targets hides them and refuses the commands addressed to them.
func TestFilterBrowserUI(t *testing.T) {
	f := NewFilter("", "")
	ui := `{"targetId":"UI1","type":"browser_ui","title":"Omnibox Popup","url":"chrome://omnibox-popup.top-chrome/","attached":false}`
	page := `{"targetId":"P1","type":"page","title":"","url":"about:blank","attached":false}`
	for _, c := range []struct{ name, in, out string }{
		{"created", `{"method":"Target.targetCreated","params":{"targetInfo":` + ui + `}}`, ""},
		{"created page", `{"method":"Target.targetCreated","params":{"targetInfo":` + page + `}}`, "same"},
		{"getTargets", `{"id":3,"result":{"targetInfos":[` + ui + `,` + page + `,{"targetId":"D","type":"page","url":"devtools://devtools/x"}]}}`, `{"id":3,"result":{"targetInfos":[` + page + `]}}`},
		{"getTargetInfo", `{"id":4,"result":{"targetInfo":{"targetId":"UI2","type":"other","url":"chrome-untrusted://x/"}}}`, "refused"},
		{"auto-attached", `{"method":"Target.attachedToTarget","params":{"sessionId":"S1","targetInfo":` + ui + `,"waitingForDebugger":true}}`, ""},
		{"attach answer", `{"id":5,"result":{"sessionId":"S1"}}`, "refused"},
		{"session event", `{"method":"Target.detachedFromTarget","params":{"sessionId":"S1","targetId":"UI1"}}`, ""},
		{"own answer", `{"id":-1073741825,"result":{}}`, ""},
		{"page attached", `{"method":"Target.attachedToTarget","params":{"sessionId":"S2","targetInfo":` + page + `,"waitingForDebugger":false}}`, "same"},
		{"page becomes chrome", `{"method":"Target.targetInfoChanged","params":{"targetInfo":{"targetId":"P9","type":"page","url":" CHROME://version"}}}`, ""},
	} {
		out, _ := f.Observe([]byte(c.in))
		switch c.out {
		case "":
			if out != nil {
				t.Errorf("%s: relayed %s", c.name, out)
			}
		case "same":
			if string(out) != c.in {
				t.Errorf("%s: relayed %s", c.name, out)
			}
		case "refused":
			if !strings.Contains(string(out), `"error":{"code":-32000,"message":"wallcrawler: Target.`) || !strings.Contains(string(out), "browser's own UI") {
				t.Errorf("%s: relayed %s", c.name, out)
			}
		default:
			if !sameJSON(t, out, []byte(c.out)) {
				t.Errorf("%s: relayed %s, want %s", c.name, out, c.out)
			}
		}
	}
	// The auto-attach of a browser-UI target is undone by the proxy.
	f2 := NewFilter("", "")
	_, send := f2.Observe([]byte(`{"method":"Target.attachedToTarget","sessionId":"PARENT","params":{"sessionId":"S1","targetInfo":` + ui + `,"waitingForDebugger":true}}`))
	if len(send) != 2 || !strings.Contains(string(send[0]), `"Runtime.runIfWaitingForDebugger"`) || !strings.Contains(string(send[0]), `"sessionId":"S1"`) ||
		!strings.Contains(string(send[1]), `"Target.detachFromTarget"`) || !strings.Contains(string(send[1]), `"sessionId":"PARENT"`) || !strings.Contains(string(send[1]), `"id":-10737418`) {
		t.Fatalf("proxy commands %q", send)
	}

	for _, c := range []struct{ name, in, want string }{
		{"attach", `{"id":10,"method":"Target.attachToTarget","params":{"targetId":"UI1","flatten":true}}`, refuse},
		{"attach other", `{"id":10,"method":"Target.attachToTarget","params":{"targetId":"UI2"}}`, refuse},
		{"activate", `{"id":10,"method":"Target.activateTarget","params":{"targetId":"UI1"}}`, refuse},
		{"on the session", `{"id":10,"method":"Runtime.evaluate","params":{"expression":"chrome.send"},"sessionId":"S1"}`, refuse},
		{"legacy channel", `{"id":10,"method":"Target.sendMessageToTarget","params":{"sessionId":"S1","message":"{\"id\":1,\"method\":\"Runtime.evaluate\",\"params\":{}}"}}`, refuse},
		{"legacy by target", `{"id":10,"method":"Target.sendMessageToTarget","params":{"targetId":"UI1","message":"{\"id\":1,\"method\":\"Runtime.evaluate\",\"params\":{}}"}}`, refuse},
		{"changed page", `{"id":10,"method":"Target.attachToTarget","params":{"targetId":"P9"}}`, refuse},
		{"reserved id", `{"id":-1073741824,"method":"Browser.getVersion"}`, refuse},
		{"page", `{"id":11,"method":"Target.attachToTarget","params":{"targetId":"P1","flatten":true}}`, forward},
		{"page session", `{"id":11,"method":"Runtime.evaluate","params":{"expression":"1"},"sessionId":"S2"}`, forward},
		{"negative id", `{"id":-1,"method":"Browser.getVersion"}`, forward},
	} {
		v := f.Apply([]byte(c.in))
		switch c.want {
		case forward:
			if string(v.Forward) != c.in {
				t.Errorf("%s: not forwarded: %+v", c.name, v)
			}
		case refuse:
			if v.Forward != nil || v.Reply == nil {
				t.Errorf("%s: not refused: %s", c.name, v.Forward)
				continue
			}
			want := "browser's own UI"
			if c.name == "reserved id" {
				want = "reserved by the proxy"
			}
			checkReply(t, c.in, v.Reply, want)
		}
	}
}

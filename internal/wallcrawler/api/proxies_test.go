package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseProxies(t *testing.T) {
	for _, c := range []struct {
		name, in string
		// want is the upstreams as "server user:pass pattern direct" lines,
		// or, for an error, "error: <substring of the message>".
		want string
	}{
		{"absent", ``, ""},
		{"false", `false`, ""},
		{"null", `null`, ""},
		{"empty", `[]`, ""},
		{"true", `true`, "error: no built-in proxies"},
		{"browserbase", `[{"type":"browserbase"}]`, `error: type "browserbase"`},
		{"unknown type", `[{"type":"socks"}]`, `error: type must be "external" or "none"`},
		{"not a list", `{"type":"external"}`, "error: must be false or a list"},
		{"entry not object", `["http://p:1"]`, "error: proxies[0] must be an object"},
		{"no server", `[{"type":"external"}]`, "error: proxies[0].server is required"},
		{"https proxy", `[{"type":"external","server":"https://p:443"}]`, "error: only http://"},
		{"path", `[{"type":"external","server":"http://p:8080/x"}]`, "error: must be http://host:port"},
		{"bad pattern", `[{"type":"external","server":"p:1","domainPattern":"("}]`, "error: not a regular expression"},
		{"credentials not echoed", `[{"type":"external","server":"https://u:hunter2@p:1"}]`, "error: only http://"},
		{"external", `[{"type":"external","server":"http://p.example:3128","username":"u","password":"pw","domainPattern":".*\\.example\\.com"}]`,
			"p.example:3128 u:pw (?i)^(?:.*\\.example\\.com)$ false"},
		{"default port and url credentials", `[{"type":"external","server":"http://a:b@10.0.0.1"}]`, "10.0.0.1:80 a:b  false"},
		{"bare host:port, none entry", `[{"type":"none","domainPattern":"x\\.test"},{"type":"external","server":"p:1"}]`,
			" : (?i)^(?:x\\.test)$ true\np:1 :  false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ups, msg := parseProxies(json.RawMessage(c.in))
			if want, ok := strings.CutPrefix(c.want, "error: "); ok {
				if msg == "" || !strings.Contains(msg, want) {
					t.Fatalf("message %q, want one containing %q", msg, want)
				}
				if strings.Contains(msg, "hunter2") {
					t.Fatalf("message repeats the password: %q", msg)
				}
				return
			}
			if msg != "" {
				t.Fatalf("refused: %s", msg)
			}
			var lines []string
			for _, u := range ups {
				pat := ""
				if u.Pattern != nil {
					pat = u.Pattern.String()
				}
				lines = append(lines, strings.Join([]string{u.Server, u.Username + ":" + u.Password, pat, map[bool]string{true: "true", false: "false"}[u.Direct]}, " "))
			}
			if got := strings.Join(lines, "\n"); got != c.want {
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

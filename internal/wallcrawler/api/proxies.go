package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/quarrydb/quarry/internal/platform/egress"
)

// maxProxies bounds the entries of a session's proxies.
const maxProxies = 32

// proxiesHelp says what this server supports, for the 400 answers.
const proxiesHelp = `this server has no built-in proxies: pass your own as proxies: [{"type":"external","server":"http://host:port","username":"…","password":"…","domainPattern":"…"}] (type "none" sends the hosts of its domainPattern direct), or omit proxies`

// proxyJSON is one entry of POST /v1/sessions' proxies.
type proxyJSON struct {
	Type          string  `json:"type"`
	Server        string  `json:"server"`
	Username      string  `json:"username"`
	Password      string  `json:"password"`
	DomainPattern *string `json:"domainPattern"`
}

// parseProxies reads the proxies of a session create: absent, null,
// false, "none" or [] mean none; a list of external and none entries
// becomes the session's upstreams, in order. It returns the message of a
// 400 otherwise. The message never repeats a password.
func parseProxies(raw json.RawMessage) ([]egress.Upstream, string) {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", "false", `"none"`, "[]":
		return nil, ""
	case "true":
		return nil, "proxies: true asks for Browserbase's proxy pool; " + proxiesHelp
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, "proxies must be false or a list; " + proxiesHelp
	}
	if len(list) > maxProxies {
		return nil, fmt.Sprintf("proxies: at most %d entries", maxProxies)
	}
	ups := make([]egress.Upstream, 0, len(list))
	for i, item := range list {
		var p proxyJSON
		dec := json.NewDecoder(bytes.NewReader(item))
		if dec.Decode(&p) != nil {
			return nil, fmt.Sprintf("proxies[%d] must be an object; %s", i, proxiesHelp)
		}
		var u egress.Upstream
		if p.DomainPattern != nil && *p.DomainPattern != "" {
			re, err := regexp.Compile(`(?i)^(?:` + *p.DomainPattern + `)$`)
			if err != nil {
				return nil, fmt.Sprintf("proxies[%d].domainPattern is not a regular expression: %v", i, err)
			}
			u.Pattern = re
		}
		switch p.Type {
		case "none":
			u.Direct = true
		case "external":
			server, user, pass, msg := proxyServer(p.Server)
			if msg != "" {
				return nil, fmt.Sprintf("proxies[%d].server %s", i, msg)
			}
			u.Server, u.Username, u.Password = server, user, pass
			if p.Username != "" {
				u.Username, u.Password = p.Username, p.Password
			}
		case "browserbase":
			return nil, fmt.Sprintf(`proxies[%d]: type "browserbase" asks for Browserbase's proxy pool; %s`, i, proxiesHelp)
		default:
			return nil, fmt.Sprintf(`proxies[%d].type must be "external" or "none"; %s`, i, proxiesHelp)
		}
		ups = append(ups, u)
	}
	return ups, ""
}

// proxyServer reads an external proxy's server: http://host:port (the
// port defaults to 80; user:password@ in it are its credentials) or
// host:port. It returns the message of a 400, without the URL's
// credentials, when it is not one.
func proxyServer(s string) (hostPort, user, pass, msg string) {
	if s == "" {
		return "", "", "", "is required"
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", "", "", "is not a URL"
	}
	if u.Scheme != "http" {
		return "", "", "", fmt.Sprintf("has scheme %q: only http:// proxies (CONNECT for https) are supported", u.Scheme)
	}
	if u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", "", "", "must be http://host:port"
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	return net.JoinHostPort(u.Hostname(), port), user, pass, ""
}

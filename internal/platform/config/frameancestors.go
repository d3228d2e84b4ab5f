package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// checkFrameAncestors validates a CSP frame-ancestors source list: "" (the
// default), "*", "'none'" alone, or sources among 'self', scheme sources
// ("https:") and host sources ("https://app.example.com",
// "https://*.example.com:8443"), separated by spaces. Nothing else may
// appear, so the value cannot end the directive or add another one.
func checkFrameAncestors(v string) error {
	if v == "" {
		return nil
	}
	srcs := strings.Fields(v)
	if len(srcs) == 0 {
		return errors.New("empty source list")
	}
	for _, s := range srcs {
		switch {
		case s == "*" || s == "'self'":
		case s == "'none'":
			if len(srcs) > 1 {
				return errors.New("'none' must stand alone")
			}
		case strings.HasSuffix(s, ":") && !strings.Contains(s[:len(s)-1], ":") && validScheme(s[:len(s)-1]):
		default:
			if strings.ContainsAny(s, ";,'\"\\") {
				return fmt.Errorf("source %q: want *, 'self', 'none', a scheme like https: or an origin like https://app.example.com", s)
			}
			u, err := url.Parse(s)
			if err != nil || !validScheme(u.Scheme) || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				return fmt.Errorf("source %q: want *, 'self', 'none', a scheme like https: or an origin like https://app.example.com", s)
			}
		}
	}
	return nil
}

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

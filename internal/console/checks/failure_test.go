package checks

import (
	"strings"
	"testing"
)

func TestFailureLine(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct{ in, want string }{
		{"", ""},
		{"status 503", "status 503"},
		{`webhook: permanent failure: webhook responded 410 Gone: "<html><body><h1>Gone</h1></body></html>"`, "webhook: permanent failure: webhook responded 410 Gone"},
		{`webhook: webhook responded 502 Bad Gateway: "<!DOCTYPE html>\n<html>…"`, "webhook: webhook responded 502 Bad Gateway"},
		{`webhook: webhook responded 418 I'm a teapot: "short and stout"`, "webhook: webhook responded 418 I'm a teapot"},
		{"webhook: webhook responded 599", "webhook: webhook responded 599"},
		{"email: smtp: 550 mailbox unavailable\r\nmore lines", "email: smtp: 550 mailbox unavailable"},
		{`keyword "responded" not found`, `keyword "responded" not found`},
		{long, strings.Repeat("x", 199) + "…"},
	}
	for _, tc := range tests {
		if got := failureLine(tc.in); got != tc.want {
			t.Errorf("failureLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

package checks

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxFailureRunes bounds a failure text as the pages show it.
const maxFailureRunes = 200

// respondedStatus matches "… responded 410 Gone" up to where a quoted
// response body would follow.
var respondedStatus = regexp.MustCompile(`^.*?\bresponded \d{3}(?: [A-Za-z][A-Za-z '-]*)?`)

// failureLine cuts a failure text (an alert delivery error, a run's error,
// a check's failureReason) to its status line, as the dashboard shows it:
// its first line, without the response body a webhook receiver sent after
// its status ("webhook responded 502 Bad Gateway: \"<html>…\"" becomes
// "webhook responded 502 Bad Gateway"), and at most maxFailureRunes runes.
// The API keeps the whole text.
func failureLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if m := respondedStatus.FindString(s); m != "" {
		s = m
	}
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > maxFailureRunes {
		s = string([]rune(s)[:maxFailureRunes-1]) + "…"
	}
	return s
}

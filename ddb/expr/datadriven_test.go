package expr

// A small data-driven test runner in the style of cockroachdb's datadriven
// package. A test file holds blocks:
//
//	command key=value key={"json":"value"}
//	input line
//	...
//	----
//	expected output
//
// The expected output ends at a blank line. Output that itself holds blank
// lines is written between two "----" lines and ends at a second pair:
//
//	----
//	----
//	output
//
//	more output
//	----
//	----
//
// Lines starting with '#' or '//' between blocks are comments. Run the
// tests with -rewrite to regenerate the expected outputs.

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of data-driven tests")

// testArg is one key=value argument of a command.
type testArg struct {
	key, val string
}

// testCase is one block of a test file.
type testCase struct {
	pos      string // file:line of the command
	cmd      string
	args     []testArg
	input    string
	expected string
}

func (tc *testCase) arg(key string) (string, bool) {
	for _, a := range tc.args {
		if a.key == key {
			return a.val, true
		}
	}
	return "", false
}

// chunk is a test case with the text around it, kept for rewriting.
type chunk struct {
	pre  []string // comment and blank lines before the command
	head []string // command and input lines
	tc   *testCase
}

func parseTestFile(t *testing.T, path, text string) (chunks []chunk, trailer []string) {
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	i := 0
	var pre []string
	for i < len(lines) {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//") {
			pre = append(pre, l)
			i++
			continue
		}
		c := chunk{pre: pre}
		pre = nil
		tc := &testCase{pos: fmt.Sprintf("%s:%d", path, i+1)}
		tc.cmd, tc.args = parseDirective(t, tc.pos, l)
		c.head = append(c.head, l)
		i++
		var input []string
		for i < len(lines) && lines[i] != "----" {
			input = append(input, lines[i])
			c.head = append(c.head, lines[i])
			i++
		}
		if i >= len(lines) {
			t.Fatalf("%s: missing ----", tc.pos)
		}
		i++ // ----
		tc.input = strings.Join(input, "\n")
		var out []string
		if i < len(lines) && lines[i] == "----" {
			i++
			for i < len(lines) && !(lines[i] == "----" && i+1 < len(lines) && lines[i+1] == "----") {
				out = append(out, lines[i])
				i++
			}
			i += 2
			if i < len(lines) && lines[i] == "" {
				i++
			}
		} else {
			for i < len(lines) && lines[i] != "" {
				out = append(out, lines[i])
				i++
			}
			if i < len(lines) {
				i++ // the blank line ending the block
			}
		}
		tc.expected = strings.Join(out, "\n")
		c.tc = tc
		chunks = append(chunks, c)
	}
	return chunks, pre
}

func parseDirective(t *testing.T, pos, line string) (string, []testArg) {
	fields := strings.SplitN(strings.TrimSpace(line), " ", 2)
	cmd := fields[0]
	var args []testArg
	if len(fields) < 2 {
		return cmd, nil
	}
	s := fields[1]
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return cmd, args
		}
		eq := strings.IndexByte(s, '=')
		sp := strings.IndexByte(s, ' ')
		if eq < 0 || sp >= 0 && sp < eq {
			// A bare key.
			end := sp
			if end < 0 {
				end = len(s)
			}
			args = append(args, testArg{key: s[:end]})
			s = s[end:]
			continue
		}
		key := s[:eq]
		s = s[eq+1:]
		n := argValueLen(s)
		if n < 0 {
			t.Fatalf("%s: unbalanced argument %q", pos, key)
		}
		args = append(args, testArg{key: key, val: s[:n]})
		s = s[n:]
	}
}

// argValueLen returns the length of the argument value at the start of s:
// a balanced JSON object or array, or text up to a space.
func argValueLen(s string) int {
	if s == "" || s[0] != '{' && s[0] != '[' {
		if i := strings.IndexByte(s, ' '); i >= 0 {
			return i
		}
		return len(s)
	}
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// runTestFile runs every block of the file through f and compares (or,
// with -rewrite, replaces) the expected output.
func runTestFile(t *testing.T, path string, f func(t *testing.T, tc *testCase) string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	chunks, trailer := parseTestFile(t, path, string(data))
	var out strings.Builder
	for _, c := range chunks {
		actual := strings.TrimRight(f(t, c.tc), "\n")
		if *rewrite {
			for _, l := range c.pre {
				out.WriteString(l + "\n")
			}
			for _, l := range c.head {
				out.WriteString(l + "\n")
			}
			out.WriteString("----\n")
			if strings.Contains(actual, "\n\n") {
				out.WriteString("----\n" + actual + "\n----\n----\n\n")
			} else if actual != "" {
				out.WriteString(actual + "\n\n")
			} else {
				out.WriteString("\n")
			}
			continue
		}
		if actual != c.tc.expected {
			t.Errorf("%s: %s\n%s\nexpected:\n%s\nactual:\n%s", c.tc.pos, c.tc.cmd, c.tc.input, c.tc.expected, actual)
		}
	}
	if *rewrite {
		for _, l := range trailer {
			out.WriteString(l + "\n")
		}
		text := strings.TrimRight(out.String(), "\n") + "\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

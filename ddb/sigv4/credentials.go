package sigv4

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// LoadCredentials reads access keys from a file, returning a map from access
// key id to secret access key for New. Two formats are accepted, and may be
// mixed as long as plain lines come before the first [section]:
//
//   - one key per line, "ACCESS_KEY_ID SECRET" or "ACCESS_KEY_ID=SECRET";
//   - the AWS shared credentials file: [profile] sections with
//     aws_access_key_id and aws_secret_access_key (other keys, such as
//     region or aws_session_token, are ignored, and so are sections with
//     neither key).
//
// Blank lines and lines starting with '#' (or ';') are skipped. Errors name
// the file and line. A file with no credentials, an access key id given twice,
// or a profile with only one of its two keys is an error.
func LoadCredentials(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sigv4: reading credentials: %w", err)
	}
	creds, err := parseCredentials(data)
	if err != nil {
		return nil, fmt.Errorf("sigv4: %s:%w", path, err)
	}
	return creds, nil
}

// lineError is a parse error, at a line when line > 0; it prints as
// "N: message" (or " message") so that LoadCredentials can prefix
// "sigv4: file:".
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string {
	if e.line == 0 {
		return " " + e.msg
	}
	return fmt.Sprintf("%d: %s", e.line, e.msg)
}

func errAt(line int, format string, args ...any) error {
	return &lineError{line: line, msg: fmt.Sprintf(format, args...)}
}

const (
	iniKeyID  = "aws_access_key_id"
	iniSecret = "aws_secret_access_key"
)

// profile is an INI section being read.
type profile struct {
	name          string
	line          int // line of the [header]
	keyID, secret string
	keyLine       int // line of aws_access_key_id
}

func parseCredentials(data []byte) (map[string]string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	creds := map[string]string{}
	definedAt := map[string]int{}
	add := func(line int, id, secret string) error {
		if strings.Contains(id, "/") {
			return errAt(line, "access key id %q contains '/'", id)
		}
		if first, dup := definedAt[id]; dup {
			return errAt(line, "access key id %q defined again (first on line %d)", id, first)
		}
		creds[id], definedAt[id] = secret, line
		return nil
	}

	var cur *profile
	seen := map[string]int{} // section name -> line
	flush := func() error {
		if cur == nil {
			return nil
		}
		p := cur
		cur = nil
		switch {
		case p.keyID == "" && p.secret == "":
			return nil // a profile without static keys (role_arn, sso_...)
		case p.keyID == "":
			return errAt(p.line, "profile [%s] has %s but no %s", p.name, iniSecret, iniKeyID)
		case p.secret == "":
			return errAt(p.line, "profile [%s] has %s but no %s", p.name, iniKeyID, iniSecret)
		}
		return add(p.keyLine, p.keyID, p.secret)
	}

	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			if err := flush(); err != nil {
				return nil, err
			}
			if !strings.HasSuffix(line, "]") {
				return nil, errAt(n, "section header %q has no closing ']'", line)
			}
			name := strings.TrimSpace(line[1 : len(line)-1])
			if name == "" {
				return nil, errAt(n, "empty section name")
			}
			if first, dup := seen[name]; dup {
				return nil, errAt(n, "profile [%s] defined again (first on line %d)", name, first)
			}
			seen[name] = n
			cur = &profile{name: name, line: n}
			continue
		}
		if cur != nil {
			if err := profileLine(cur, n, line); err != nil {
				return nil, err
			}
			continue
		}
		id, secret, err := plainLine(n, line)
		if err != nil {
			return nil, err
		}
		if err := add(n, id, secret); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errAt(n+1, "%v", err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(creds) == 0 {
		return nil, &lineError{msg: "no credentials found"}
	}
	return creds, nil
}

// plainLine parses "ACCESS_KEY_ID SECRET" or "ACCESS_KEY_ID=SECRET".
func plainLine(n int, line string) (id, secret string, err error) {
	const want = `want "ACCESS_KEY_ID SECRET" or "ACCESS_KEY_ID=SECRET"`
	fields := strings.Fields(line)
	if len(fields) == 2 && !strings.Contains(fields[0], "=") {
		id, secret = fields[0], fields[1]
	} else if k, v, ok := strings.Cut(line, "="); ok {
		id, secret = strings.TrimSpace(k), strings.TrimSpace(v)
		if id == "" {
			return "", "", errAt(n, "missing access key id before '='; %s", want)
		}
		if secret == "" {
			return "", "", errAt(n, "missing secret after '=' for access key id %q", id)
		}
		if strings.ContainsAny(id, " \t") || strings.ContainsAny(secret, " \t") {
			return "", "", errAt(n, "unexpected white space; %s", want)
		}
	} else if len(fields) == 1 {
		return "", "", errAt(n, "access key id %q has no secret; %s", fields[0], want)
	} else {
		return "", "", errAt(n, "%d fields; %s", len(fields), want)
	}
	if l := strings.ToLower(id); l == iniKeyID || l == iniSecret {
		return "", "", errAt(n, "%s outside a [profile] section", l)
	}
	return id, secret, nil
}

// profileLine parses "key = value" inside an INI section.
func profileLine(p *profile, n int, line string) error {
	k, v, ok := strings.Cut(line, "=")
	if !ok {
		return errAt(n, `want "key = value" in profile [%s]`, p.name)
	}
	key, value := strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
	switch key {
	case iniKeyID:
		if p.keyID != "" {
			return errAt(n, "%s given twice in profile [%s]", key, p.name)
		}
		if value == "" {
			return errAt(n, "empty %s in profile [%s]", key, p.name)
		}
		p.keyID, p.keyLine = value, n
	case iniSecret:
		if p.secret != "" {
			return errAt(n, "%s given twice in profile [%s]", key, p.name)
		}
		if value == "" {
			return errAt(n, "empty %s in profile [%s]", key, p.name)
		}
		p.secret = value
	}
	return nil
}

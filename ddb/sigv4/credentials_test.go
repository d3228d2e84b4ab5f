package sigv4

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadCredentials(t *testing.T) {
	cases := []struct {
		name, content string
		want          map[string]string
	}{
		{
			name: "plain",
			content: "# quarry access keys\n" +
				"\n" +
				"AKIDEXAMPLE wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n" +
				"   AKID2\t secret2  \n" +
				"AKID3=secret=with=equals\n" +
				"AKID4 = spaced\r\n" +
				"; another comment\n",
			want: map[string]string{
				"AKIDEXAMPLE": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
				"AKID2":       "secret2",
				"AKID3":       "secret=with=equals",
				"AKID4":       "spaced",
			},
		},
		{
			name: "shared credentials file",
			content: "\xef\xbb\xbf[default]\n" +
				"aws_access_key_id = AKIDDEFAULT\n" +
				"aws_secret_access_key = defaultsecret\n" +
				"region = us-east-1\n" +
				"\n" +
				"[profile dev]\n" +
				"# comment\n" +
				"AWS_SECRET_ACCESS_KEY=devsecret\n" +
				"aws_access_key_id=AKIDDEV\n" +
				"aws_session_token = ignored\n" +
				"[role]\n" +
				"role_arn = arn:aws:iam::123456789012:role/x\n" +
				"source_profile = default\n",
			want: map[string]string{"AKIDDEFAULT": "defaultsecret", "AKIDDEV": "devsecret"},
		},
		{
			name:    "plain lines before profiles",
			content: "AKIDPLAIN plainsecret\n[p]\naws_access_key_id=AKIDP\naws_secret_access_key=psecret\n",
			want:    map[string]string{"AKIDPLAIN": "plainsecret", "AKIDP": "psecret"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoadCredentials(writeFile(t, c.content))
			if err != nil {
				t.Fatalf("LoadCredentials: %v", err)
			}
			if !maps.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestLoadCredentialsErrors(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"empty", "", "credentials: no credentials found"},
		{"only comments", "# nothing\n\n", "credentials: no credentials found"},
		{"key without secret", "AKID1 s1\nAKID2\n", `credentials:2: access key id "AKID2" has no secret`},
		{"three fields", "AKID1 s1 extra\n", "credentials:1: 3 fields"},
		{"missing key", "=secret\n", "credentials:1: missing access key id before '='"},
		{"missing secret", "AKID=\n", `credentials:1: missing secret after '=' for access key id "AKID"`},
		{"space in secret", "AKID=a b\n", "credentials:1: unexpected white space"},
		{"duplicate", "AKID s1\n\nAKID=s2\n", `credentials:3: access key id "AKID" defined again (first on line 1)`},
		{"slash in key", "AK/ID secret\n", `credentials:1: access key id "AK/ID" contains '/'`},
		{"ini key outside section", "aws_access_key_id = AKID\n", "credentials:1: aws_access_key_id outside a [profile] section"},
		{"unclosed section", "[default\n", `credentials:1: section header "[default" has no closing ']'`},
		{"empty section", "[ ]\n", "credentials:1: empty section name"},
		{"duplicate section", "[a]\naws_access_key_id=A\naws_secret_access_key=s\n[a]\n", "credentials:4: profile [a] defined again (first on line 1)"},
		{"profile without secret", "[p]\n\naws_access_key_id = AKID\n", "credentials:1: profile [p] has aws_access_key_id but no aws_secret_access_key"},
		{"profile without key", "[a]\naws_access_key_id=A\naws_secret_access_key=s\n[b]\naws_secret_access_key=s\n", "credentials:4: profile [b] has aws_secret_access_key but no aws_access_key_id"},
		{"line without equals in profile", "[p]\naws_access_key_id AKID\n", `credentials:2: want "key = value" in profile [p]`},
		{"key twice in profile", "[p]\naws_access_key_id=A\naws_access_key_id=B\n", "credentials:3: aws_access_key_id given twice in profile [p]"},
		{"empty value in profile", "[p]\naws_secret_access_key =\n", "credentials:2: empty aws_secret_access_key in profile [p]"},
		{"duplicate across formats", "AKID s\n[p]\naws_access_key_id=AKID\naws_secret_access_key=t\n", `credentials:3: access key id "AKID" defined again (first on line 1)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.content)
			got, err := LoadCredentials(path)
			if err == nil {
				t.Fatalf("LoadCredentials = %v, want error %q", got, c.want)
			}
			if !strings.HasPrefix(err.Error(), "sigv4: "+filepath.Dir(path)) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %q, want it to contain %q", err, c.want)
			}
		})
	}
	_, err := LoadCredentials(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: error = %v, want fs.ErrNotExist", err)
	}
}

func TestNewCopiesCredentials(t *testing.T) {
	creds := map[string]string{testKeyID: testSecret}
	v := New(creds, WithClock(func() time.Time { return signedAt }))
	delete(creds, testKeyID)
	r := newRequest(testBody)
	sdkSign(t, r, []byte(testBody), testKeyID, testSecret, "dynamodb", testRegion, signedAt)
	if err := v.Verify(r, []byte(testBody)); err != nil {
		t.Fatalf("Verify after the caller's map changed: %v", err)
	}
}

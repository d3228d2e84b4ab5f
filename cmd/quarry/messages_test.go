package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMistakeMessages runs the command line's common mistakes and checks
// that each message says what to do: it names the flag or environment
// variable and the form it takes, in the words of the command line, and
// the flag package's usage dump does not bury it. None of these starts a
// server.
func TestMistakeMessages(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    []string // every one appears in stderr
		notWant []string // none appears
	}{
		{name: "misspelt flag", args: []string{"serve", "--allow-network", "127.0.0.1:3000"},
			want: []string{"flag provided but not defined: -allow-network; did you mean --allow-networks?"}},
		{name: "misspelt flag of ddb serve", args: []string{"ddb", "serve", "--listn", "127.0.0.1:8001"},
			want: []string{"did you mean --listen?"}},
		{name: "unknown flag, nothing near", args: []string{"serve", "--frobnicate"},
			want: []string{`flag provided but not defined: -frobnicate; run "quarry serve -h" for the flags`}},
		{name: "bool flag with a separate value hides nothing", args: []string{"serve", "--ddb-sync", "false", "--listen", "8080"},
			want: []string{`--ddb-sync false: a true/false flag takes its value after "=": write --ddb-sync=false`,
				`--listen "8080": want host:port (e.g. 127.0.0.1:8080)`},
			notWant: []string{`unexpected argument "false"`}},
		{name: "duration without a unit", args: []string{"serve", "--shutdown-timeout", "10"},
			want:    []string{`--shutdown-timeout "10": want a duration such as 10s, 500ms or 2m (env QUARRY_SHUTDOWN_TIMEOUT)`},
			notWant: []string{"parse error"}},
		{name: "number that is not", args: []string{"serve", "--wallcrawler-pool", "many"},
			want: []string{`--wallcrawler-pool "many": want a whole number (env QUARRY_WALLCRAWLER_POOL)`}},
		{name: "flag without its value", args: []string{"serve", "--data-dir"},
			want: []string{"--data-dir needs a value (--data-dir VALUE or --data-dir=VALUE)"}},
		{name: "every mistake at once", args: []string{"serve", "--allow-network", "all", "--shutdown-timeout", "10", "--log-format", "yaml"},
			want: []string{"did you mean --allow-networks?", `--shutdown-timeout "10"`, `--log-format "yaml": want text or json`}},
		{name: "bad environment variable", args: []string{"serve"}, env: map[string]string{"QUARRY_DDB_SYNC": "maybe"},
			want: []string{`QUARRY_DDB_SYNC="maybe": want true or false (the environment variable of --ddb-sync)`}},
		{name: "data directory under a file", args: []string{"serve", "--data-dir", filepath.Join(file, "data")},
			want: []string{"--data-dir", file + " is a file, not a directory", "choose a directory"}},
		{name: "stray argument", args: []string{"serve", "extra"},
			want: []string{`unexpected argument "extra": quarry serve takes only flags`}},
		{name: "wallcrawler key without project", args: []string{"wallcrawler", "key", "create", "--data-dir", dir},
			want: []string{"--project is required"}, notWant: []string{"projectId"}},
		{name: "wallcrawler project without name", args: []string{"wallcrawler", "project", "create", "--data-dir", dir},
			want: []string{"--name is required"}},
		{name: "wallcrawler concurrency not a number", args: []string{"wallcrawler", "project", "create", "--name", "a", "--concurrency", "many", "--data-dir", dir},
			want: []string{`--concurrency "many": want a whole number`}},
		{name: "wallcrawler revoke without a key", args: []string{"wallcrawler", "key", "revoke", "--data-dir", dir},
			want: []string{"--key RAW_KEY is required, or --project P with --id KEY_ID"}},
		{name: "checks user without email", args: []string{"checks", "user", "create", "--data-dir", dir},
			want: []string{"--email is required"}},
		{name: "eecar company without name", args: []string{"eecar", "company", "create", "--data-dir", dir},
			want: []string{"--name is required"}, notWant: []string{"invalid request"}},
		{name: "eecar key without company", args: []string{"eecar", "key", "create", "--data-dir", dir},
			want: []string{"--company is required"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := func(k string) string { return tt.env[k] }
			code := run(context.Background(), tt.args, env, &stdout, &stderr)
			msg := stderr.String()
			if code == 0 {
				t.Fatalf("exit code 0 for %v; stderr:\n%s", tt.args, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr lacks %q:\n%s", w, msg)
				}
			}
			for _, w := range append(tt.notWant, "Usage of", "  -allow-networks string") {
				if strings.Contains(msg, w) {
					t.Errorf("stderr has %q:\n%s", w, msg)
				}
			}
		})
	}

	// -h still prints every flag.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "-allow-networks") {
		t.Fatalf("serve -h: exit %d, output:\n%s", code, stderr.String())
	}
}

// TestPortInUseNamesFlag starts quarry serve and ddb serve on an address
// something else already holds: each must fail at once, naming the flag
// that sets the address and how to choose another, not only the system
// call's "bind: address already in use".
func TestPortInUseNamesFlag(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	busy := held.Addr().String()
	for _, tt := range []struct {
		name string
		args []string
		flag string
	}{
		{"serve's store endpoint", []string{"serve", "--systems", "datashelf", "--listen", freeAddr(t), "--ddb-listen", busy, "--data-dir", t.TempDir()}, "--ddb-listen"},
		{"serve's HTTP API", []string{"serve", "--systems", "datashelf", "--listen", busy, "--ddb-listen", freeAddr(t), "--data-dir", t.TempDir()}, "--listen"},
		{"ddb serve", []string{"ddb", "serve", "--listen", busy, "--data-dir", t.TempDir()}, "--listen"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if code := run(ctx, tt.args, noEnv, &stdout, &stderr); code == 0 {
				t.Fatalf("exit 0 on a port in use; stderr:\n%s", stderr.String())
			}
			want := fmt.Sprintf("%s %s: address already in use (another quarry running? choose another with %s ADDR)", tt.flag, busy, tt.flag)
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		})
	}
}

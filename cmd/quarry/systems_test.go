package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeSystems runs quarry serve with --systems (or QUARRY_SYSTEMS)
// naming some systems: only those start; the others show as disabled in
// /healthz with a reason naming the flag, and their API prefix answers
// 503 with a JSON error naming it; the banner lists the node's systems.
// Unknown names are refused at start with the valid ones listed.
func TestServeSystems(t *testing.T) {
	prefixes := map[string]string{
		"datashelf":   "/datashelf/v1/products",
		"wallcrawler": "/wallcrawler/v1/sessions",
		"checks":      "/checks/checks",
		"eecar":       "/eecar/parts",
	}
	for _, tc := range []struct {
		name string
		flag string // --systems; empty: not given
		env  string // QUARRY_SYSTEMS
		on   []string
	}{
		{name: "wallcrawler and checks", flag: "wallcrawler,checks", on: []string{"wallcrawler", "checks"}},
		{name: "environment", env: " EECAR , datashelf", on: []string{"datashelf", "eecar"}},
		{name: "flag over environment", flag: "checks", env: "eecar", on: []string{"checks"}},
		{name: "default", on: []string{"datashelf", "wallcrawler", "checks", "eecar"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := freeAddr(t)
			args := []string{"serve", "--listen", api, "--ddb-listen", "off", "--data-dir", t.TempDir()}
			if tc.flag != "" {
				args = append(args, "--systems", tc.flag)
			}
			getenv := func(k string) string {
				if k == "QUARRY_SYSTEMS" {
					return tc.env
				}
				return ""
			}
			ctx, cancel := context.WithCancel(context.Background())
			var logs syncBuffer
			done := make(chan int, 1)
			go func() { done <- run(ctx, args, getenv, &logs, &logs) }()
			t.Cleanup(func() {
				cancel()
				if code := <-done; code != 0 {
					t.Errorf("exit %d:\n%s", code, logs.String())
				}
			})
			// Wallcrawler's start (the browser check) takes seconds on a
			// loaded machine.
			waitForLong(t, time.Minute, "the API listener", func() bool { return strings.Contains(logs.String(), "listening on "+api) })

			banner := logs.String()
			if !regexp.MustCompile(`(?m)^    on this node +` + regexp.QuoteMeta(strings.Join(tc.on, ", ")) + `(  |$)`).MatchString(banner) {
				t.Errorf("banner does not list %v as this node's systems:\n%s", tc.on, banner)
			}

			resp, err := http.Get("http://" + api + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var health struct {
				Systems map[string]struct {
					Status, Reason string
				} `json:"systems"`
			}
			err = json.NewDecoder(resp.Body).Decode(&health)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for name, path := range prefixes {
				want := strings.Contains(strings.Join(tc.on, ","), name)
				st := health.Systems[name]
				resp, err := http.Get("http://" + api + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want {
					if st.Status != "running" {
						t.Errorf("%s: /healthz status %q, want running", name, st.Status)
					}
					if resp.StatusCode == http.StatusServiceUnavailable {
						t.Errorf("%s is on but %s answered 503: %s", name, path, body)
					}
					continue
				}
				if st.Status != "disabled" || !strings.Contains(st.Reason, "--systems") || !strings.Contains(st.Reason, "QUARRY_SYSTEMS") {
					t.Errorf("%s: /healthz %+v, want disabled with a reason naming --systems and QUARRY_SYSTEMS", name, st)
				}
				var e struct{ Error string }
				if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, "--systems") {
					t.Errorf("%s: %s answered %d %s, want 503 with a JSON error naming --systems", name, path, resp.StatusCode, body)
				}
				if !regexp.MustCompile(`(?mi)^    ` + name + ` +not started on this node \(--systems\)$`).MatchString(banner) {
					t.Errorf("banner does not say %s is not started here:\n%s", name, banner)
				}
			}
		})
	}
}

// TestServeSystemsRefused checks that unknown or empty --systems values
// stop quarry serve at start with the valid names listed.
func TestServeSystemsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, flag, env, want string
	}{
		{name: "unknown", flag: "checks,crawler", want: `unknown system "crawler"`},
		{name: "all among others", flag: "all,checks", want: `unknown system "all"`},
		{name: "none", flag: ",", want: "names no system"},
		{name: "environment", env: "browsers", want: `QUARRY_SYSTEMS`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--listen", freeAddr(t), "--ddb-listen", "off", "--data-dir", t.TempDir()}
			if tc.flag != "" {
				args = append(args, "--systems", tc.flag)
			}
			getenv := func(k string) string {
				if k == "QUARRY_SYSTEMS" {
					return tc.env
				}
				return ""
			}
			var out syncBuffer
			code := run(context.Background(), args, getenv, &out, &out)
			msg := out.String()
			if code == 0 {
				t.Fatalf("quarry serve started with --systems %q, QUARRY_SYSTEMS %q", tc.flag, tc.env)
			}
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "datashelf, wallcrawler, checks, eecar") {
				t.Errorf("message %q: want %q and the valid names", msg, tc.want)
			}
		})
	}
}

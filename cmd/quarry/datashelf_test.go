package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/fixture"
)

// TestDataShelfCrawlRefusedStartURL runs `quarry datashelf crawl` on a
// local site: without --allow-networks (the policy refuses loopback) and on
// a start URL answering 404 it must exit non-zero at once, naming the cause
// (and the flag); run again with --allow-networks 127.0.0.1:PORT on the
// same data directory it crawls the site at once, without waiting for the
// refused job's retry.
func TestDataShelfCrawlRefusedStartURL(t *testing.T) {
	t.Parallel()
	site := fixture.New(fixture.Options{Products: 10, Seed: 11, CrawlDelay: -1})
	srv := httptest.NewServer(site.Handler())
	defer srv.Close()
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		mention  []string // in stderr (failure) or stdout (success)
	}{
		{"refused by the network policy", []string{srv.URL + fixture.Locale}, 1,
			[]string{"the start URL failed", "address blocked", "--allow-networks=" + hostPort}},
		{"start URL answers 404", []string{srv.URL + "/nowhere", "--allow-networks", hostPort}, 1,
			[]string{"the start URL failed", "HTTP 404"}},
		{"allowed", []string{srv.URL + fixture.Locale, "--allow-networks", hostPort}, 0,
			[]string{"products 10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs syncBuffer
			start := time.Now()
			args := append(append([]string{"datashelf", "crawl"}, tt.args...), "--data-dir", dir)
			code := run(context.Background(), args, noEnv, &out, &errs)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the crawl took %s (a retry's backoff was waited out)", d)
			}
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.wantCode, out.String(), errs.String())
			}
			text := errs.String()
			if code == 0 {
				text = out.String()
			}
			for _, m := range tt.mention {
				if !strings.Contains(text, m) {
					t.Errorf("output %q does not mention %q", text, m)
				}
			}
		})
	}
}

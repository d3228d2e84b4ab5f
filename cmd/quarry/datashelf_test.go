package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
	// When the site was asked: a crawl that waited out the refused job's
	// backoff (30 s) asks it late, however long the crawl then takes.
	var mu sync.Mutex
	var asked []time.Time
	handler := site.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, time.Now())
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	firstAskedAfter := func(start time.Time) (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, at := range asked {
			if at.After(start) {
				return at.Sub(start), true
			}
		}
		return 0, false
	}
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
			if tt.wantCode == 0 {
				// The whole crawl may take long on a loaded machine; its
				// first request to the site may not.
				if d, ok := firstAskedAfter(start); !ok || d > 20*time.Second {
					t.Errorf("the crawl asked the site first %s after its start (asked: %v): the refused job's backoff was waited out", d, ok)
				}
			} else if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the refused crawl took %s (a retry's backoff was waited out)", d)
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

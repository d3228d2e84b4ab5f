package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
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

// TestDataShelfDemo runs `quarry datashelf demo` end to end: it serves
// the fixture bookshop, crawls it into the data directory's store, says
// on its status page what was crawled and where to look, keeps the shop
// up until its context ends, and leaves the products for the other
// commands (here export) and quarry serve. A second run with --exit
// crawls every product again and returns; one on a taken --shop-listen
// names the flag.
func TestDataShelfDemo(t *testing.T) {
	t.Parallel()
	dir, shop, api := t.TempDir(), freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"datashelf", "demo", "--products", "12", "--shop-listen", shop, "--listen", api, "--data-dir", dir}, noEnv, io.Discard, &errs)
	}()

	// The status page answers 503 while the crawl runs, then its result.
	var status demoStatus
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + shop + demoStatusPath)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if err := json.Unmarshal(body, &status); err != nil {
					t.Fatalf("status page %q: %v", body, err)
				}
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("status page during the crawl: %d %s", resp.StatusCode, body)
			}
		}
		select {
		case code := <-done:
			t.Fatalf("demo exited %d before its crawl was reported\n%s", code, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no crawl reported within a minute\n%s", errs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := demoStatus{Shop: "http://" + shop + fixture.Locale, Products: 12, Pages: status.Pages,
		API: "http://" + api + "/datashelf/", Catalogue: "http://" + api + "/console/datashelf/"}
	if status != want || status.Pages == 0 {
		t.Errorf("status %+v, want %+v", status, want)
	}
	for _, m := range []string{"demo shop   http://" + shop + "/en-gb", "--allow-networks " + shop, "http://" + api + "/datashelf/api/products", "Ctrl-C stops it"} {
		if !strings.Contains(errs.String(), m) {
			t.Errorf("demo's report lacks %q:\n%s", m, errs.String())
		}
	}
	// The shop stays up for Checks and Wallcrawler.
	resp, err := http.Get(status.Shop)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Used books") {
		t.Errorf("the shop after the crawl: %d %.200s", resp.StatusCode, page)
	}
	var out, exportErrs syncBuffer
	if code := run(context.Background(), []string{"datashelf", "export", "--table", "product", "--format", "jsonl", "--data-dir", dir}, noEnv, &out, &exportErrs); code != 0 {
		t.Fatalf("export exit %d: %s", code, exportErrs.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 12 {
		t.Errorf("export after the demo: %d products, want 12", n)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("demo exit %d after its context ended\n%s", code, errs.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("demo still running a minute after its context ended")
	}

	t.Run("--exit", func(t *testing.T) {
		var errs syncBuffer
		if code := run(context.Background(), []string{"datashelf", "demo", "--products", "12", "--shop-listen", shop, "--data-dir", dir, "--exit"}, noEnv, io.Discard, &errs); code != 0 {
			t.Fatalf("exit %d\n%s", code, errs.String())
		}
		if !strings.Contains(errs.String(), "products 12") || strings.Contains(errs.String(), "Ctrl-C") {
			t.Errorf("a second demo with --exit should crawl the 12 products again and return:\n%s", errs.String())
		}
	})
	t.Run("shop address in use", func(t *testing.T) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		var errs syncBuffer
		if code := run(context.Background(), []string{"datashelf", "demo", "--shop-listen", held.Addr().String(), "--data-dir", dir, "--exit"}, noEnv, io.Discard, &errs); code == 0 {
			t.Fatal("exit 0 on a shop address in use")
		}
		if want := "--shop-listen " + held.Addr().String() + ": address already in use"; !strings.Contains(errs.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs.String())
		}
	})
}

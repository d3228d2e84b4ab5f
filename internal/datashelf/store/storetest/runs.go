package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

func startRun(t *testing.T, b *bundle, url string) store.Run {
	t.Helper()
	return must(b.s.StartRun(b.ctx, store.NewRun{StartURL: url, Node: "node-a", MaxPages: 10}))
}

// testRunLifecycle follows one run from its start to its end: progress
// replaces the counters and the log, the end is final, and every refusal
// says why.
func testRunLifecycle(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	r := startRun(t, b, "https://shop.example/en-gb")
	if r.State != store.RunRunning || r.StartURL != "https://shop.example/en-gb" || r.Node != "node-a" || r.MaxPages != 10 ||
		r.Pages != 0 || r.EndedAt != nil || r.LastError != nil || !r.StartedAt.Equal(Start) || len(r.Log) != 0 {
		t.Fatalf("started run = %+v", r)
	}
	b.clock.Advance(time.Second)
	p := store.RunProgress{RunCounters: store.RunCounters{Pages: 5, Products: 3, Failures: 1}, Log: []string{"fetched a", "fetched b"}}
	u := must(s.UpdateRun(ctx, strings.ToUpper(r.ID), p))
	if u.Pages != 5 || u.Products != 3 || u.Failures != 1 || !slices.Equal(u.Log, p.Log) || !u.UpdatedAt.Equal(Start.Add(time.Second)) || u.State != store.RunRunning {
		t.Fatalf("updated run = %+v", u)
	}
	g := must(s.GetRun(ctx, r.ID))
	if g.Pages != 5 || !slices.Equal(g.Log, p.Log) {
		t.Fatalf("GetRun after update = %+v", g)
	}
	b.clock.Advance(time.Second)
	p.Pages, p.Log = 7, append(p.Log, "fetched c")
	e := must(s.EndRun(ctx, r.ID, store.RunFailed, p, "the start URL failed"))
	if e.State != store.RunFailed || e.Pages != 7 || e.EndedAt == nil || !e.EndedAt.Equal(Start.Add(2*time.Second)) ||
		e.LastError == nil || *e.LastError != "the start URL failed" || len(e.Log) != 3 {
		t.Fatalf("ended run = %+v", e)
	}
	// A run ends once: neither progress nor another end changes it.
	_, err := s.UpdateRun(ctx, r.ID, p)
	wantErr(t, err, store.ErrRunEnded)
	_, err = s.EndRun(ctx, r.ID, store.RunAborted, p, "")
	wantErr(t, err, store.ErrRunEnded)
	if g := must(s.GetRun(ctx, r.ID)); g.State != store.RunFailed {
		t.Fatalf("run after a second end = %+v", g)
	}
	// Ending without an error leaves last_error NULL.
	r2 := startRun(t, b, "https://shop.example/2")
	if e := must(s.EndRun(ctx, r2.ID, store.RunSucceeded, store.RunProgress{}, "")); e.LastError != nil || e.State != store.RunSucceeded {
		t.Fatalf("succeeded run = %+v", e)
	}

	missing := "00000000-0000-4000-8000-000000000000"
	_, err = s.GetRun(ctx, missing)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UpdateRun(ctx, missing, p)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.EndRun(ctx, missing, store.RunAborted, p, "")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.RunProducts(ctx, missing, func(store.Product) error { return nil }), store.ErrNotFound)
	for _, bad := range []struct {
		name string
		err  error
	}{
		{"GetRun of a non-UUID", func() error { _, err := s.GetRun(ctx, "x'; --"); return err }()},
		{"EndRun to running", func() error { _, err := s.EndRun(ctx, r2.ID, store.RunRunning, p, ""); return err }()},
		{"negative counter", func() error {
			_, err := s.UpdateRun(ctx, r.ID, store.RunProgress{RunCounters: store.RunCounters{Pages: -1}})
			return err
		}()},
		{"empty start URL", func() error { _, err := s.StartRun(ctx, store.NewRun{Node: "n"}); return err }()},
		{"no node", func() error { _, err := s.StartRun(ctx, store.NewRun{StartURL: "https://x/"}); return err }()},
		{"negative max pages", func() error {
			_, err := s.StartRun(ctx, store.NewRun{StartURL: "https://x/", Node: "n", MaxPages: -1})
			return err
		}()},
		{"negative page", func() error { _, _, err := s.ListRuns(ctx, store.RunFilter{Offset: -1}); return err }()},
	} {
		if !errors.Is(bad.err, store.ErrInvalid) {
			t.Errorf("%s: error = %v, want ErrInvalid", bad.name, bad.err)
		}
	}
}

// testRunLogBounded checks that a run keeps its last RunLogLines lines,
// each cut to RunLogLineBytes, however much the crawler sends.
func testRunLogBounded(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	r := startRun(t, b, "https://shop.example/")
	var log []string
	for i := range store.RunLogLines + 50 {
		log = append(log, fmt.Sprintf("line %d", i))
	}
	log[len(log)-1] = strings.Repeat("é", store.RunLogLineBytes) // 2 bytes a rune
	u := must(s.UpdateRun(ctx, r.ID, store.RunProgress{Log: log}))
	g := must(s.GetRun(ctx, r.ID))
	for _, got := range [][]string{u.Log, g.Log} {
		if len(got) != store.RunLogLines || got[0] != "line 50" || got[len(got)-2] != fmt.Sprintf("line %d", store.RunLogLines+48) {
			t.Fatalf("log of %d lines kept %d: first %q", len(log), len(got), got[0])
		}
		last := got[len(got)-1]
		if len(last) > store.RunLogLineBytes || !strings.HasSuffix(last, "…") || !strings.HasPrefix(last, "éé") || !utf8Valid(last) {
			t.Fatalf("long line kept as %d bytes: %q…", len(last), last[:20])
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// testListRuns checks the runs list: newest first, paged, without logs,
// with the total.
func testListRuns(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	var ids []string
	for i := range 5 {
		r := startRun(t, b, fmt.Sprintf("https://shop.example/%d", i))
		must(s.UpdateRun(ctx, r.ID, store.RunProgress{Log: []string{"x"}}))
		ids = append(ids, r.ID)
		b.clock.Advance(time.Minute)
	}
	slices.Reverse(ids)
	var got []string
	for off := 0; off < 6; off += 2 {
		page, total := must2(s.ListRuns(ctx, store.RunFilter{Limit: 2, Offset: off}))
		if total != 5 {
			t.Fatalf("total = %d, want 5", total)
		}
		for _, r := range page {
			if r.Log != nil {
				t.Fatalf("ListRuns returned the log of %s", r.ID)
			}
			got = append(got, r.ID)
		}
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("runs = %v, want newest first %v", got, ids)
	}
	if page, _ := must2(s.ListRuns(ctx, store.RunFilter{})); len(page) != 5 {
		t.Fatalf("default page holds %d runs", len(page))
	}
}

// testEndStaleRuns checks that a running run whose process stopped
// updating it is failed, and a live one is left running.
func testEndStaleRuns(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	dead := startRun(t, b, "https://shop.example/dead")
	done := startRun(t, b, "https://shop.example/done")
	must(s.EndRun(ctx, done.ID, store.RunSucceeded, store.RunProgress{}, ""))
	b.clock.Advance(2 * time.Minute)
	live := startRun(t, b, "https://shop.example/live")
	n := must(s.EndStaleRuns(ctx, time.Minute, "its process stopped"))
	if n != 1 {
		t.Fatalf("EndStaleRuns ended %d runs, want 1", n)
	}
	if r := must(s.GetRun(ctx, dead.ID)); r.State != store.RunFailed || r.LastError == nil || *r.LastError != "its process stopped" || r.EndedAt == nil {
		t.Fatalf("stale run = %+v", r)
	}
	if r := must(s.GetRun(ctx, live.ID)); r.State != store.RunRunning {
		t.Fatalf("live run = %+v", r)
	}
	if r := must(s.GetRun(ctx, done.ID)); r.State != store.RunSucceeded {
		t.Fatalf("ended run = %+v", r)
	}
}

// testRunProducts checks the attribution of products to runs: a run's
// products are those scraped between its start and its end (now while it
// runs), and a product scraped again belongs to the later run.
func testRunProducts(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	c := newCategory(t, b, "runs")
	put := func(name string) {
		must(s.UpsertProduct(ctx, store.ProductInput{CategoryID: &c.ID, Title: name, SourceURL: "https://x/p/" + name}))
	}
	titles := func(id string) []string {
		out := []string{}
		if err := s.RunProducts(ctx, id, func(p store.Product) error { out = append(out, p.Title); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	put("before")
	b.clock.Advance(time.Second)
	first := startRun(t, b, "https://shop.example/")
	put("a")
	b.clock.Advance(time.Second)
	put("b")
	b.clock.Advance(time.Second)
	put("again")
	must(s.EndRun(ctx, first.ID, store.RunSucceeded, store.RunProgress{}, ""))
	b.clock.Advance(time.Second)
	put("between")
	b.clock.Advance(time.Second)
	second := startRun(t, b, "https://shop.example/")
	b.clock.Advance(time.Second)
	put("again")
	b.clock.Advance(time.Second)
	put("c")
	if got, want := titles(first.ID), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("first run's products = %v, want %v", got, want)
	}
	if got, want := titles(second.ID), []string{"again", "c"}; !slices.Equal(got, want) {
		t.Fatalf("running run's products = %v, want %v", got, want)
	}
	// More than a page of products: every one once, in order.
	b.clock.Advance(time.Second)
	third := startRun(t, b, "https://shop.example/")
	for i := range store.RunProductsPage*2 + 7 {
		if i%30 == 0 {
			b.clock.Advance(time.Millisecond) // ties on last_scraped_at, broken by id
		}
		put(fmt.Sprintf("bulk-%03d", i))
	}
	var prev store.Product
	seen := map[string]bool{}
	err := s.RunProducts(ctx, third.ID, func(p store.Product) error {
		if seen[p.ID] || p.LastScrapedAt.Before(prev.LastScrapedAt) || (p.LastScrapedAt.Equal(prev.LastScrapedAt) && p.ID < prev.ID) {
			return fmt.Errorf("product %s (%s) repeated or out of order after %s", p.Title, p.ID, prev.ID)
		}
		seen[p.ID], prev = true, p
		return nil
	})
	if err != nil || len(seen) != store.RunProductsPage*2+7 {
		t.Fatalf("a run of %d products: %d read (%v)", store.RunProductsPage*2+7, len(seen), err)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.RunProducts(ctx, second.ID, func(store.Product) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("RunProducts after fn's error: err %v after %d products", err, n)
	}
}

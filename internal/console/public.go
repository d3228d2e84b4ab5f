package console

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Public pages (a Checks user's status page) are rendered for anyone: no
// session is read, the header has no links, and the rendered body may be
// cached and served to others.

// RenderPublic renders the area's page name around data as a public page.
func (k *Kit) RenderPublic(name string, data any) ([]byte, error) {
	t, ok := k.pages[name]
	if !ok {
		return nil, fmt.Errorf("console: %s has no page %s", k.area, name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", page{Data: data, Public: true}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PublicNotFound is the 404 of a public page.
func (k *Kit) PublicNotFound(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := k.c.pages["error"].ExecuteTemplate(&buf, "layout", page{Public: true, Data: errorPage{Title: "Not found", Message: "There is no such page, or it was turned off."}}); err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(buf.Bytes())
}

// PublicFailure answers a public page's unexpected error: logged without
// the path (it may hold the page's secret), answered without details.
func (k *Kit) PublicFailure(w http.ResponseWriter, what string, err error) {
	k.c.log.Error("console "+what, "err", err)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "The "+what+" is unavailable; try again later.", http.StatusBadGateway)
}

// PublicCache holds rendered public pages by key for TTL. Its zero value
// is not usable: make one with NewPublicCache.
type PublicCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]publicEntry
}

type publicEntry struct {
	body []byte
	at   time.Time
}

// maxPublicPages bounds the pages a PublicCache holds: beyond, it starts
// again empty.
const maxPublicPages = 1000

// NewPublicCache returns a cache of pages rendered less than ttl ago.
func NewPublicCache(ttl time.Duration) *PublicCache { return &PublicCache{ttl: ttl} }

// Get returns the page of key rendered less than the TTL before now.
func (pc *PublicCache) Get(key string, now time.Time) ([]byte, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e, ok := pc.m[key]
	if !ok || now.Sub(e.at) >= pc.ttl {
		return nil, false
	}
	return e.body, true
}

// Put keeps body as the page of key, rendered at now.
func (pc *PublicCache) Put(key string, body []byte, now time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.m == nil || len(pc.m) >= maxPublicPages {
		pc.m = map[string]publicEntry{}
	}
	pc.m[key] = publicEntry{body: body, at: now}
}

// Drop forgets the page of key.
func (pc *PublicCache) Drop(key string) {
	pc.mu.Lock()
	delete(pc.m, key)
	pc.mu.Unlock()
}

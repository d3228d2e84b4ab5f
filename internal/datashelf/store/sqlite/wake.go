package sqlite

import (
	"context"
	"sync"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// wakers are the subscribers of Store.Wake: the store runs in one process,
// so its own writes are the only ones that can make a job claimable, and
// an in-process broadcast after their commit is all a wake-up needs. (A
// second process writing the same file is not heard: its jobs wait for
// the poll.)
type wakers struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// Wake implements store.Store: the channel receives a value at once and
// after every commit of this Store that leaves a job queued (Enqueue,
// RescueExpired, RetryFailed, Fail's retry).
func (s *Store) Wake(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	w := &s.wakes
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[chan struct{}]struct{}{}
	}
	w.subs[ch] = struct{}{}
	w.mu.Unlock()
	go func() {
		<-ctx.Done()
		w.mu.Lock()
		delete(w.subs, ch)
		close(ch)
		w.mu.Unlock()
	}()
	return ch
}

// wake sends a value to every subscriber that has none pending.
func (w *wakers) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		store.Signal(ch)
	}
}

package explorer

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"sync"
	"time"
)

// flashTTL is how long a refused form waits for the GET that shows it.
const flashTTL = 10 * time.Minute

// maxFlashes and maxFlashBytes bound the refused forms kept at once (a
// form may be up to the console's 1 MiB); the oldest goes first.
const (
	maxFlashes    = 512
	maxFlashBytes = 16 << 20
)

// flash is a refused form kept for the GET after its redirect: the
// message and what was typed, so the page shows both and Back never
// lands on a POST's answer.
type flash struct {
	subject string // the session that posted it; nobody else reads it
	Error   string
	Form    url.Values
	expires time.Time
	size    int
}

// flashes holds refused forms by a random id (not guessable, bound to
// the session's subject).
type flashes struct {
	mu    sync.Mutex
	byID  map[string]flash
	order []string // ids, oldest first
	bytes int      // the sum of the kept forms' sizes
}

// put keeps f for subject and returns its id.
func (fs *flashes) put(now time.Time, subject, msg string, form url.Values) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.byID == nil {
		fs.byID = map[string]flash{}
	}
	size := len(msg)
	for k, vs := range form {
		for _, v := range vs {
			size += len(k) + len(v)
		}
	}
	for len(fs.order) > 0 && (len(fs.order) >= maxFlashes || fs.bytes+size > maxFlashBytes || now.After(fs.byID[fs.order[0]].expires)) {
		fs.bytes -= fs.byID[fs.order[0]].size
		delete(fs.byID, fs.order[0])
		fs.order = fs.order[1:]
	}
	fs.byID[id] = flash{subject: subject, Error: msg, Form: form, expires: now.Add(flashTTL), size: size}
	fs.order = append(fs.order, id)
	fs.bytes += size
	return id
}

// get returns the form id names when subject posted it and it has not
// expired. It stays until it expires, so a reload shows it again.
func (fs *flashes) get(now time.Time, subject, id string) (flash, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.byID[id]
	if !ok || f.subject != subject || now.After(f.expires) {
		return flash{}, false
	}
	return f, true
}

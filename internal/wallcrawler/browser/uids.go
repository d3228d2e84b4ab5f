package browser

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// UIDRange is a range of user ids, each browser running as one of its own
// (with the group id equal to the user id and no supplementary groups):
// browsers of different sessions then cannot read or signal each other even
// past Chromium's sandbox, where a shared browser user would let one read
// another's profile, downloads and cookies. The ids need no entry in the
// user database; nothing else on the machine may use them.
type UIDRange struct {
	// First is the lowest id; Count how many ids follow from it.
	First, Count uint32
}

// String returns the range as "first-last".
func (r UIDRange) String() string {
	return fmt.Sprintf("%d-%d", r.First, r.First+r.Count-1)
}

// ParseUIDRange parses "first-last" (inclusive). Ids below 1000 (system
// accounts) and ranges of more than 1,000,000 ids are refused.
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return UIDRange{}, fmt.Errorf("browser: uid range %q: want first-last, e.g. 200000-200999", s)
	}
	first, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	last, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	switch {
	case err1 != nil || err2 != nil:
		return UIDRange{}, fmt.Errorf("browser: uid range %q: want two numbers, first-last", s)
	case first < 1000:
		return UIDRange{}, fmt.Errorf("browser: uid range %q: ids below 1000 belong to system accounts", s)
	case last < first:
		return UIDRange{}, fmt.Errorf("browser: uid range %q: last is below first", s)
	case last-first >= 1_000_000 || last >= 1<<32-1:
		return UIDRange{}, fmt.Errorf("browser: uid range %q: too large (at most 1,000,000 ids, below 4294967295)", s)
	}
	return UIDRange{First: uint32(first), Count: uint32(last-first) + 1}, nil
}

// errNoUID is returned when every id of the range is taken.
var errNoUID = errors.New("every user id of the browsers' range is in use")

// uidPool hands out the ids of a UIDRange, one per running browser.
type uidPool struct {
	r     UIDRange
	mu    sync.Mutex
	inUse map[uint32]bool
	next  uint32 // offset to try first: ids are reused as late as possible
}

func newUIDPool(r UIDRange) *uidPool {
	return &uidPool{r: r, inUse: map[uint32]bool{}}
}

// take returns a free id as a User (gid = uid).
func (p *uidPool) take() (User, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := uint32(0); i < p.r.Count; i++ {
		off := (p.next + i) % p.r.Count
		uid := p.r.First + off
		if p.inUse[uid] {
			continue
		}
		p.inUse[uid] = true
		p.next = (off + 1) % p.r.Count
		return User{Name: "uid " + strconv.FormatUint(uint64(uid), 10), UID: uid, GID: uid}, nil
	}
	return User{}, fmt.Errorf("browser: %w (%s): raise --wallcrawler-uids or lower concurrency", errNoUID, p.r)
}

// give returns uid to the pool. The caller MUST have made sure no process
// runs as uid any more.
func (p *uidPool) give(uid uint32) {
	p.mu.Lock()
	delete(p.inUse, uid)
	p.mu.Unlock()
}

// procsOfUID returns the live processes whose real or effective user id is
// uid (from /proc/<pid>/status).
func procsOfUID(procs []procInfo, uid uint32) []procInfo {
	want := strconv.FormatUint(uint64(uid), 10)
	var out []procInfo
	for _, p := range procs {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 2 && (f[0] == want || f[1] == want) {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

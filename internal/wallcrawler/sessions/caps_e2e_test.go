package sessions_test

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts/contextstest"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// uploadContext creates a context through the API and PUTs the archive
// write produces (streamed) to its uploadUrl.
func (st *stack) uploadContext(t *testing.T, write func(io.Writer) error) string {
	t.Helper()
	var c struct {
		ID        string `json:"id"`
		UploadURL string `json:"uploadUrl"`
	}
	if code := st.call(t, "POST", "/v1/contexts", map[string]any{}, &c); code != http.StatusCreated {
		t.Fatalf("create context: %d", code)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	req, _ := http.NewRequest(http.MethodPut, c.UploadURL, pr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	return c.ID
}

// diskWatch samples the bytes and entries under dir every few
// milliseconds until stopped, and reports the peaks.
type diskWatch struct {
	stop        chan struct{}
	done        chan struct{}
	mu          sync.Mutex
	peakBytes   int64
	peakEntries int
	dir         string
}

func watchDisk(dir string) *diskWatch {
	w := &diskWatch{stop: make(chan struct{}), done: make(chan struct{}), dir: dir}
	go func() {
		defer close(w.done)
		for {
			b, n := usage(w.dir)
			w.mu.Lock()
			w.peakBytes, w.peakEntries = max(w.peakBytes, b), max(w.peakEntries, n)
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *diskWatch) end() (int64, int) {
	close(w.stop)
	<-w.done
	return w.peakBytes, w.peakEntries
}

// usage sums the sizes of the regular files under dir/profiles and counts
// its entries.
func usage(dir string) (int64, int) {
	var b int64
	n := 0
	root := filepath.Join(dir, "profiles")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil // vanishing entries are expected
		}
		n++
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			b += fi.Size()
		}
		return nil
	})
	return b, n
}

// Hostile context archives make session create answer 422 through the real
// API: no session, no browser, no profile left on disk, the slot free, and
// disk use during the refusal bounded by the cap.
func TestContextArchiveRefused(t *testing.T) {
	small := &contexts.Options{MaxUnpackBytes: 10 << 20, MaxUnpackEntries: 1000}
	tests := []struct {
		name     string
		opts     *contexts.Options
		write    func(io.Writer) error
		message  string // in the 422's message
		maxBytes int64  // peak bytes allowed under profiles/ (the caps refuse before writing)
	}{
		{"2 GiB gzip bomb", nil, contextstest.Bomb{Name: "Default/Cookies", Size: 2 << 30}.Write, "more than 1073741824 unpacked bytes", 0},
		{"200000 entries", nil, func(w io.Writer) error { return contextstest.Entries(w, 200_000, true) }, "more than 100000 entries", 0},
		{"header shorter than its data", nil, func(w io.Writer) error { return contextstest.ShortHeader(w, "Default/Cookies", 10, 8<<20) }, "not a valid tar.gz", 10},
		{"50 MiB of zeros, 10 MiB cap", small, contextstest.Bomb{Name: "zeros", Size: 50 << 20}.Write, "more than 10485760 unpacked bytes", 0},
		{"2000 files, 1000-entry cap", small, func(w io.Writer) error { return contextstest.Entries(w, 2000, false) }, "more than 1000 entries", 0},
	}
	stacks := map[*contexts.Options]*stack{
		nil:   newStackWith(t, 1, sessions.Options{}, stackOptions{}),
		small: newStackWith(t, 1, sessions.Options{}, stackOptions{Contexts: small}),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stacks[tt.opts]
			id := st.uploadContext(t, tt.write)
			w := watchDisk(st.workDir)
			start := time.Now()
			req, _ := http.NewRequest("POST", st.srv.URL+"/wallcrawler/v1/sessions",
				strings.NewReader(`{"browserSettings":{"context":{"id":"`+id+`"}}}`))
			req.Header.Set("X-BB-API-Key", st.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				StatusCode int    `json:"statusCode"`
				Error      string `json:"error"`
				Message    string `json:"message"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			took := time.Since(start)
			peakBytes, peakEntries := w.end()
			if resp.StatusCode != http.StatusUnprocessableEntity || e.StatusCode != 422 || e.Error != "Unprocessable Entity" || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("create: %d %+v, want 422 naming %q", resp.StatusCode, e, tt.message)
			}
			if peakBytes > tt.maxBytes {
				t.Fatalf("peak %d bytes under profiles/ while refusing", peakBytes)
			}
			if b, n := usage(st.workDir); b != 0 || n != 0 {
				t.Fatalf("left %d bytes in %d entries under profiles/", b, n)
			}
			if pids, _ := browser.Leftovers(st.workDir); len(pids) > 0 {
				t.Fatalf("browsers launched: %v", pids)
			}
			var list []sessionJSON
			st.call(t, "GET", "/v1/sessions", nil, &list)
			for _, x := range list {
				if x.ContextID == id {
					t.Fatalf("a session was recorded: %+v", x)
				}
			}
			t.Logf("refused in %v (peak %d bytes, %d entries under profiles/): %s", took.Round(time.Millisecond), peakBytes, peakEntries, e.Message)
		})
	}
	// The slots were freed: each stack still starts a session (concurrency 1).
	for _, st := range stacks {
		st.release(t, st.create(t, nil).ID)
	}
}

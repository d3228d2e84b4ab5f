package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/api"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// countingBody counts the bytes a handler reads from a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestSignedBodyLimit sends signed requests whose bodies are larger than
// api.MaxBodyBytes over a real connection, announced by Content-Length or
// chunked, and never finishes sending them: the server must answer 413
// (in DataShelf's error shape) having read at most the limit and a byte.
// Without the limit the handler would wait for the rest of the body and
// the read deadline would fail the test.
func TestSignedBodyLimit(t *testing.T) {
	b := setup(t, 0)
	var read atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = countingBody{r.Body, &read}
		b.h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	const sent = api.MaxBodyBytes + 256<<10 // more than the limit, less than announced
	tests := []struct {
		name      string
		announced int64 // Content-Length; 0 means chunked
	}{
		{"content-length far over the limit", 64 << 20},
		{"content-length one byte over the limit", api.MaxBodyBytes + 1},
		{"chunked, sent slowly", 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read.Store(0)
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			req := httptest.NewRequest("POST", "/datashelf/api/scraper/enqueue", nil)
			api.Sign("crawler", b.secret, req, []byte("{}"), b.clock.Now(), fmt.Sprintf("nonce-limit-%d", i))
			var head strings.Builder
			fmt.Fprintf(&head, "POST /datashelf/api/scraper/enqueue HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n", srv.Listener.Addr())
			for _, h := range []string{"Authorization", api.HeaderTimestamp, api.HeaderNonce, api.HeaderSignature} {
				fmt.Fprintf(&head, "%s: %s\r\n", h, req.Header.Get(h))
			}
			if tt.announced > 0 {
				fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", tt.announced)
			} else {
				head.WriteString("Transfer-Encoding: chunked\r\n\r\n")
			}
			// The writer sends the head, then the body in 64 KiB pieces with
			// pauses, stopping well before the announced end; write errors
			// (the server closing) end it.
			go func() {
				if _, err := io.WriteString(conn, head.String()); err != nil {
					return
				}
				piece := bytes.Repeat([]byte("x"), 64<<10)
				for n := 0; n < sent; n += len(piece) {
					var err error
					if tt.announced > 0 {
						_, err = conn.Write(piece)
					} else {
						_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", len(piece), piece)
					}
					if err != nil {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer before the body was complete (the server waits for the whole body): %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413: %s", resp.StatusCode, body)
			}
			if !bytes.Contains(body, []byte(`"code":"too_large"`)) {
				t.Errorf("body %s is not DataShelf's error shape", body)
			}
			if n := read.Load(); n > api.MaxBodyBytes+1 {
				t.Errorf("the server read %d bytes of the body, more than the limit (%d) and a byte", n, api.MaxBodyBytes)
			}
		})
	}
}

// TestImageKeys sends image keys no blob can have — NUL bytes, file names
// over the file system's 255-byte limit, keys over S3's 1024 bytes, a path
// through a file — and expects 400 or 404 in DataShelf's error shape,
// never a 500, from the DataShelf handler itself.
func TestImageKeys(t *testing.T) {
	b := setup(t, 0)
	data := []byte("\x89PNG\r\n\x1a\nfake image")
	key := blob.ContentKey("images", data, ".png")
	if err := b.blobs.Put(context.Background(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 300)
	tests := []struct {
		name string
		path string // escaped, after /datashelf
	}{
		{"NUL byte", "/images/images/ab/x%00y.png"},
		{"NUL byte alone", "/images/%00"},
		{"file name over 255 bytes", "/images/images/ab/" + long + ".png"},
		{"file name of 256 bytes", "/images/images/ab/" + strings.Repeat("b", 256)},
		{"directory name over 255 bytes", "/images/" + long + "/x.png"},
		{"key over 1024 bytes", "/images/" + strings.Repeat("abcdefgh/", 120) + "x.png"},
		{"key a megabyte long", "/images/" + strings.Repeat("c", 1<<20)},
		{"path through a file", "/images/" + key + "/x"},
		{"invalid UTF-8", "/images/images/ab/%ff%fe.png"},
		{"missing", "/images/images/ab/missing.png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, method := range []string{"GET", "HEAD"} {
				req := httptest.NewRequest(method, "/datashelf/images/x", nil)
				req.URL.RawPath = ""
				u, err := req.URL.Parse("/datashelf" + tt.path)
				if err != nil {
					t.Fatal(err)
				}
				req.URL = u
				w := b.do(t, req)
				if w.Code != 400 && w.Code != 404 {
					t.Fatalf("%s: status %d, want 400 or 404: %s", method, w.Code, w.Body)
				}
				if method == "GET" {
					e := decode[errBody](t, w)
					if e.Error.Code == "" || e.Error.Message == "" {
						t.Errorf("body %s is not DataShelf's error shape", w.Body)
					}
				}
			}
		})
	}
	// The stored image is still served.
	if w := b.get(t, "/images/"+key); w.Code != 200 {
		t.Fatalf("stored image: status %d", w.Code)
	}
}

// TestCursorUnderWrites pages through the catalogue with nextCursor in
// every sort while a "crawl" writes between pages: products inserted
// before the cursor's position (which would shift an offset and repeat a
// product), updates of fields outside the sort, and inserts after the
// position. Every product that existed when paging began is seen exactly
// once, and so is every product inserted after the position.
func TestCursorUnderWrites(t *testing.T) {
	ctx := context.Background()
	first := map[string]func(n int) (string, *float64){
		"price_asc":       func(n int) (string, *float64) { return "Cheap", ptrF(0.01) },
		"price_desc":      func(n int) (string, *float64) { return "Dear", ptrF(999) },
		"title_asc":       func(n int) (string, *float64) { return fmt.Sprintf("0000 %02d", 99-n), ptrF(5) },
		"title_desc":      func(n int) (string, *float64) { return fmt.Sprintf("zzzz %02d", n), ptrF(5) },
		"created_at_desc": func(n int) (string, *float64) { return "Newest", ptrF(5) }, // the store's clock ticks
	}
	for sortName, before := range first {
		t.Run(sortName, func(t *testing.T) {
			b := setup(t, 0)
			seen := map[string]int{}
			target := "/api/products?limit=5&sort=" + sortName
			next, prevPos := target, 0
			var inserted []string
			for round := 1; ; round++ {
				if round > 30 {
					t.Fatal("paging does not terminate")
				}
				w := b.get(t, next)
				if w.Code != 200 {
					t.Fatalf("round %d: status %d: %s", round, w.Code, w.Body)
				}
				page := decode[api.ProductPage](t, w)
				if page.Pagination.Offset != prevPos {
					t.Errorf("round %d: pagination.offset %d, want %d", round, page.Pagination.Offset, prevPos)
				}
				prevPos += len(page.Items)
				for _, p := range page.Items {
					seen[p.ID]++
				}
				if page.Pagination.NextCursor == nil {
					break
				}
				next = target + "&cursor=" + *page.Pagination.NextCursor
				// The crawl writes: two products that sort before the
				// position, and an update of a product not yet seen.
				for i := 0; i < 2; i++ {
					title, price := before(round*2 + i)
					p, err := b.st.UpsertProduct(ctx, store.ProductInput{CategoryID: &b.cats[0].ID, Title: title, Price: price,
						SourceURL: fmt.Sprintf("https://wob.example/new/%d-%d", round, i)})
					if err != nil {
						t.Fatal(err)
					}
					inserted = append(inserted, p.ID)
				}
				for _, p := range b.products {
					if seen[p.ID] == 0 {
						in := store.ProductInput{CategoryID: p.CategoryID, Title: p.Title, SourceURL: p.SourceURL, SourceID: p.SourceID,
							Price: p.Price, Currency: p.Currency, ImageURLs: p.ImageURLs, Summary: ptrS("updated"), Specs: p.Specs, Available: !p.Available}
						if _, err := b.st.UpsertProduct(ctx, in); err != nil {
							t.Fatal(err)
						}
						break
					}
				}
			}
			checkOnce(t, b, seen)
			for _, id := range inserted {
				if seen[id] != 0 {
					t.Errorf("a product inserted before the position was seen %d times", seen[id])
				}
			}
		})
	}
}

func ptrF(f float64) *float64 { return &f }
func ptrS(s string) *string   { return &s }

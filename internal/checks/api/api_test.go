package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// site is a loopback target that counts its hits.
type site struct {
	*httptest.Server
	hits atomic.Int64
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		fmt.Fprint(w, "<html><title>shop</title><body>In stock</body></html>")
	}))
	t.Cleanup(s.Close)
	return s
}

// env is the API over a real store, prober and (not running) scheduler.
type env struct {
	st     *store.Store
	sched  *scheduler.Scheduler
	srv    *httptest.Server // AllowPrivate prober: loopback targets allowed
	strict *httptest.Server // default prober: private targets refused
	site   *site
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	client := ddb.NewClient(db)
	names, err := tables.EnsureTables(context.Background(), client, tables.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &env{site: newSite(t)}
	e.st = store.New(client, names, &store.Options{Limits: map[string]int{store.TierFree: 5, store.TierPro: 100}})
	lenient := probe.New(probe.Options{Fetch: fetch.Options{AllowPrivate: true}})
	t.Cleanup(lenient.Close)
	strict := probe.New(probe.Options{})
	t.Cleanup(strict.Close)
	e.sched = scheduler.New(e.st, lenient, nil, scheduler.Options{Owner: "test", RunTimeout: 5 * time.Second, Logger: logger})
	e.srv = httptest.NewServer(api.New(e.st, lenient, e.sched, api.Options{EmailEnabled: true, Logger: logger}))
	t.Cleanup(e.srv.Close)
	e.strict = httptest.NewServer(api.New(e.st, strict, nil, api.Options{Logger: logger}))
	t.Cleanup(e.strict.Close)
	return e
}

// user creates a user and returns it with its token.
func (e *env) user(t *testing.T, email, tier string) (store.User, string) {
	t.Helper()
	u, token, err := e.st.CreateUser(context.Background(), email, tier)
	if err != nil {
		t.Fatal(err)
	}
	return u, token
}

// reply is a decoded response.
type reply struct {
	code  int
	ctype string
	raw   []byte
}

func (r reply) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.raw, &m); err != nil {
		t.Fatalf("response %d is not a JSON object: %v: %s", r.code, err, r.raw)
	}
	return m
}

func (r reply) list(t *testing.T) []map[string]any {
	t.Helper()
	var l []map[string]any
	if err := json.Unmarshal(r.raw, &l); err != nil {
		t.Fatalf("response %d is not a JSON array: %v: %s", r.code, err, r.raw)
	}
	return l
}

// errMsg is the "error" of a JSON error response.
func (r reply) errMsg(t *testing.T) string {
	t.Helper()
	if !strings.HasPrefix(r.ctype, "application/json") {
		t.Fatalf("error response Content-Type %q, want JSON", r.ctype)
	}
	msg, _ := r.obj(t)["error"].(string)
	if msg == "" {
		t.Fatalf("error response without an error message: %s", r.raw)
	}
	return msg
}

// call sends a request; body is marshalled unless it is a string (sent as is).
func call(t *testing.T, base, method, path, token string, body any) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{code: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), raw: raw}
}

// createCheck creates an AVAILABILITY check through the API.
func (e *env) createCheck(t *testing.T, token string, delayMs int64, attrs map[string]any) map[string]any {
	t.Helper()
	body := map[string]any{"url": e.site.URL + "/", "checkType": "AVAILABILITY", "delayMs": delayMs}
	if attrs != nil {
		body["attributes"] = attrs
	}
	r := call(t, e.srv.URL, "POST", "/v1/checks", token, body)
	if r.code != http.StatusCreated {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	return r.obj(t)
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	a, tokenA := e.user(t, "a@example.com", store.TierPro)
	_, tokenB := e.user(t, "b@example.com", store.TierPro)
	revoked, err := e.st.NewToken(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.RevokeToken(context.Background(), revoked); err != nil {
		t.Fatal(err)
	}

	t.Run("rejected credentials", func(t *testing.T) {
		for _, tt := range []struct {
			name, header string
		}{
			{"no Authorization", ""},
			{"wrong token", "Bearer chk_not-a-real-token"},
			{"revoked token", "Bearer " + revoked},
			{"not a bearer token", "Basic " + tokenA},
			{"empty bearer", "Bearer "},
		} {
			t.Run(tt.name, func(t *testing.T) {
				for _, path := range []string{"/v1/me", "/v1/checks"} {
					req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
					if tt.header != "" {
						req.Header.Set("Authorization", tt.header)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					r := reply{code: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), raw: raw}
					if r.code != http.StatusUnauthorized {
						t.Fatalf("GET %s = %d %s, want 401", path, r.code, raw)
					}
					r.errMsg(t)
				}
			})
		}
	})

	t.Run("valid token", func(t *testing.T) {
		r := call(t, e.srv.URL, "GET", "/v1/me", tokenA, nil)
		if r.code != 200 || r.obj(t)["email"] != "a@example.com" || r.obj(t)["id"] != a.ID {
			t.Fatalf("GET /v1/me = %d %s", r.code, r.raw)
		}
	})

	t.Run("another user's check is not found", func(t *testing.T) {
		c := e.createCheck(t, tokenA, 60000, nil)
		id := c["id"].(string)
		for _, tt := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/v1/checks/" + id, nil},
			{"PATCH", "/v1/checks/" + id, map[string]any{"delayMs": 120000}},
			{"POST", "/v1/checks/" + id + "/pause", nil},
			{"POST", "/v1/checks/" + id + "/resume", nil},
			{"POST", "/v1/checks/" + id + "/run", nil},
			{"GET", "/v1/checks/" + id + "/results", nil},
			{"DELETE", "/v1/checks/" + id, nil},
		} {
			t.Run(tt.method+" "+strings.Replace(tt.path, id, "{id}", 1), func(t *testing.T) {
				r := call(t, e.srv.URL, tt.method, tt.path, tokenB, tt.body)
				if r.code != http.StatusNotFound {
					t.Fatalf("= %d %s, want 404", r.code, r.raw)
				}
				r.errMsg(t)
			})
		}
		// A's check is untouched.
		r := call(t, e.srv.URL, "GET", "/v1/checks/"+id, tokenA, nil)
		got := r.obj(t)
		if r.code != 200 || got["status"] != store.CheckActive || got["delayMs"] != float64(60000) {
			t.Fatalf("owner's GET after B's attempts = %d %s", r.code, r.raw)
		}
		if l := call(t, e.srv.URL, "GET", "/v1/checks", tokenB, nil).list(t); len(l) != 0 {
			t.Fatalf("B lists %d checks, want 0", len(l))
		}
	})

	t.Run("unknown route", func(t *testing.T) {
		r := call(t, e.srv.URL, "GET", "/v1/nowhere", tokenA, nil)
		if r.code != http.StatusNotFound {
			t.Fatalf("= %d %s", r.code, r.raw)
		}
		r.errMsg(t)
	})
}

func TestCreate(t *testing.T) {
	e := newEnv(t)
	u, token := e.user(t, "a@example.com", store.TierPro)

	t.Run("valid AVAILABILITY check", func(t *testing.T) {
		for _, delay := range []int64{15000, 300000} {
			t.Run(fmt.Sprint(delay), func(t *testing.T) {
				before := time.Now()
				r := call(t, e.srv.URL, "POST", "/v1/checks", token, map[string]any{
					"url": e.site.URL + "/shop", "checkType": "AVAILABILITY", "delayMs": delay,
					"attributes": map[string]any{"keyword": "In stock"},
				})
				after := time.Now()
				if r.code != http.StatusCreated {
					t.Fatalf("= %d %s", r.code, r.raw)
				}
				c := r.obj(t)
				id, _ := c["id"].(string)
				if id == "" || c["userid"] != u.ID || c["url"] != e.site.URL+"/shop" || c["checkType"] != "AVAILABILITY" ||
					c["delayMs"] != float64(delay) || c["status"] != "ACTIVE" {
					t.Fatalf("created check %s", r.raw)
				}
				if a, _ := c["attributes"].(map[string]any); a["keyword"] != "In stock" {
					t.Fatalf("attributes %v", c["attributes"])
				}
				for _, f := range []string{"createdAt", "updatedAt"} {
					s, _ := c[f].(string)
					if ts, err := time.Parse(time.RFC3339, s); err != nil || ts.Before(before.Add(-time.Second)) || ts.After(after.Add(time.Second)) {
						t.Fatalf("%s = %q (%v)", f, s, err)
					}
				}
				next, err := time.Parse(time.RFC3339Nano, fmt.Sprint(c["nextRunAt"]))
				span := min(time.Duration(delay)*time.Millisecond, time.Minute)
				if err != nil || next.Before(before.Truncate(time.Millisecond)) || !next.Before(after.Add(span)) {
					t.Fatalf("nextRunAt %v (%v), want within [%v, %v)", c["nextRunAt"], err, before, after.Add(span))
				}
				// The stored document reads back the same.
				g := call(t, e.srv.URL, "GET", "/v1/checks/"+id, token, nil)
				got := g.obj(t)
				for _, f := range []string{"id", "userid", "url", "checkType", "delayMs", "status", "createdAt", "updatedAt"} {
					if got[f] != c[f] {
						t.Errorf("GET %s = %v, create returned %v", f, got[f], c[f])
					}
				}
			})
		}
	})

	t.Run("no attributes", func(t *testing.T) {
		r := call(t, e.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": e.site.URL, "checkType": "AVAILABILITY", "delayMs": 60000})
		if r.code != http.StatusCreated {
			t.Fatalf("= %d %s", r.code, r.raw)
		}
		c := r.obj(t)
		got := call(t, e.srv.URL, "GET", "/v1/checks/"+c["id"].(string), token, nil).obj(t)
		if _, ok := got["attributes"].(map[string]any); !ok {
			t.Fatalf("GET attributes = %#v, want an object", got["attributes"])
		}
		if _, ok := c["attributes"].(map[string]any); !ok {
			t.Fatalf("create returns attributes %#v while GET returns an object", c["attributes"])
		}
	})

	t.Run("lower-case checkType", func(t *testing.T) {
		r := call(t, e.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": e.site.URL, "checkType": "availability", "delayMs": 60000})
		if r.code != http.StatusCreated || r.obj(t)["checkType"] != "AVAILABILITY" {
			t.Fatalf("= %d %s", r.code, r.raw)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		url := e.site.URL + "/"
		for _, tt := range []struct {
			name string
			body any
			want string // in the error message
		}{
			{"missing url", map[string]any{"checkType": "AVAILABILITY", "delayMs": 60000}, "url"},
			{"missing checkType", map[string]any{"url": url, "delayMs": 60000}, "checkType"},
			{"missing delayMs", map[string]any{"url": url, "checkType": "AVAILABILITY"}, "delayMs"},
			{"empty body", "", "required"},
			{"unknown checkType", map[string]any{"url": url, "checkType": "PING", "delayMs": 60000}, "PING"},
			{"delayMs below the minimum", map[string]any{"url": url, "checkType": "AVAILABILITY", "delayMs": 9999}, "delayMs"},
			{"negative delayMs", map[string]any{"url": url, "checkType": "AVAILABILITY", "delayMs": -60000}, "delayMs"},
			{"delayMs above 30 days", map[string]any{"url": url, "checkType": "AVAILABILITY", "delayMs": 30*24*3600*1000 + 1}, "delayMs"},
			// 18446744083720 ms is 584 years; ×1e6 ns wraps int64 to ≈10 s.
			{"delayMs overflowing a Duration", map[string]any{"url": url, "checkType": "AVAILABILITY", "delayMs": int64(18446744083720)}, "delayMs"},
			{"ftp URL", map[string]any{"url": "ftp://example.com/file", "checkType": "AVAILABILITY", "delayMs": 60000}, "ftp"},
			{"relative URL", map[string]any{"url": "/just/a/path", "checkType": "AVAILABILITY", "delayMs": 60000}, "url"},
			{"malformed JSON", `{"url": "` + url + `", "checkType": `, "JSON"},
			{"unknown JSON field", map[string]any{"url": url, "checkType": "AVAILABILITY", "delayMs": 60000, "interval": 5}, "interval"},
			{"EBAY without threshold", map[string]any{"url": url, "checkType": "EBAY", "delayMs": 60000}, "threshold"},
			{"EBAY with a zero threshold", map[string]any{"url": url, "checkType": "EBAY", "delayMs": 60000, "attributes": map[string]any{"threshold": 0}}, "threshold"},
			{"keyword not a string", map[string]any{"url": url, "checkType": "AVAILABILITY", "delayMs": 60000, "attributes": map[string]any{"keyword": 7}}, "keyword"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := call(t, e.srv.URL, "POST", "/v1/checks", token, tt.body)
				if r.code != http.StatusBadRequest {
					t.Fatalf("= %d %s, want 400", r.code, r.raw)
				}
				if msg := r.errMsg(t); !strings.Contains(msg, tt.want) {
					t.Fatalf("error %q does not mention %q", msg, tt.want)
				}
			})
		}
		if n := len(call(t, e.srv.URL, "GET", "/v1/checks", token, nil).list(t)); n != 4 {
			t.Fatalf("%d checks after the refused creates, want the 4 valid ones", n)
		}
	})

	t.Run("private targets refused", func(t *testing.T) {
		for _, target := range []string{
			e.site.URL + "/", // http://127.0.0.1:port/
			"http://169.254.169.254/latest/meta-data",
			"http://10.0.0.1/",
			"http://[::1]/",
			"http://localhost/",
			"http://192.168.1.1/",
		} {
			t.Run(target, func(t *testing.T) {
				r := call(t, e.strict.URL, "POST", "/v1/checks", token, map[string]any{"url": target, "checkType": "AVAILABILITY", "delayMs": 60000})
				if r.code != http.StatusBadRequest {
					t.Fatalf("= %d %s, want 400", r.code, r.raw)
				}
				if msg := r.errMsg(t); !strings.Contains(msg, "blocked") || !strings.Contains(msg, "--allow-networks") {
					t.Fatalf("error %q does not say the address is blocked and name --allow-networks", msg)
				}
			})
		}
		// Nor can an existing check be pointed at one.
		c := e.createCheck(t, token, 60000, nil)
		r := call(t, e.strict.URL, "PATCH", "/v1/checks/"+c["id"].(string), token, map[string]any{"url": "http://169.254.169.254/latest/meta-data"})
		if r.code != http.StatusBadRequest {
			t.Fatalf("PATCH to the metadata address = %d %s, want 400", r.code, r.raw)
		}
		if got := call(t, e.srv.URL, "GET", "/v1/checks/"+c["id"].(string), token, nil).obj(t); got["url"] != c["url"] {
			t.Fatalf("url changed to %v", got["url"])
		}
	})
}

func TestCheckLimit(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "free@example.com", store.TierFree)
	body := map[string]any{"url": e.site.URL, "checkType": "AVAILABILITY", "delayMs": 60000}

	var wg sync.WaitGroup
	codes := make(chan int, 20)
	var msgs sync.Map
	for range 20 {
		wg.Go(func() {
			r := call(t, e.srv.URL, "POST", "/v1/checks", token, body)
			codes <- r.code
			if r.code != http.StatusCreated {
				msgs.Store(string(r.raw), true)
			}
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[201] != 5 || count[403] != 15 {
		var m []string
		msgs.Range(func(k, _ any) bool { m = append(m, k.(string)); return true })
		t.Fatalf("20 concurrent creates: %v, want 5×201 and 15×403; errors %v", count, m)
	}
	r := call(t, e.srv.URL, "POST", "/v1/checks", token, body)
	if r.code != http.StatusForbidden || !strings.Contains(r.errMsg(t), "limit") {
		t.Fatalf("sixth create = %d %s", r.code, r.raw)
	}
	checks := call(t, e.srv.URL, "GET", "/v1/checks", token, nil).list(t)
	me := call(t, e.srv.URL, "GET", "/v1/me", token, nil).obj(t)
	if len(checks) != 5 || me["checkCount"] != float64(5) || me["checkLimit"] != float64(5) {
		t.Fatalf("%d checks listed, me %v", len(checks), me)
	}

	id := checks[0]["id"].(string)
	if r := call(t, e.srv.URL, "DELETE", "/v1/checks/"+id, token, nil); r.code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", r.code, r.raw)
	}
	if r := call(t, e.srv.URL, "GET", "/v1/checks/"+id, token, nil); r.code != http.StatusNotFound {
		t.Fatalf("GET after DELETE = %d", r.code)
	}
	if r := call(t, e.srv.URL, "DELETE", "/v1/checks/"+id, token, nil); r.code != http.StatusNotFound {
		t.Fatalf("second DELETE = %d %s", r.code, r.raw)
	}
	if r := call(t, e.srv.URL, "POST", "/v1/checks", token, body); r.code != http.StatusCreated {
		t.Fatalf("create after DELETE = %d %s", r.code, r.raw)
	}
	if r := call(t, e.srv.URL, "POST", "/v1/checks", token, body); r.code != http.StatusForbidden {
		t.Fatalf("create over the limit again = %d %s", r.code, r.raw)
	}
	if me := call(t, e.srv.URL, "GET", "/v1/me", token, nil).obj(t); me["checkCount"] != float64(5) {
		t.Fatalf("checkCount %v, want 5", me["checkCount"])
	}
}

func TestSuspendedUser(t *testing.T) {
	e := newEnv(t)
	u, token := e.user(t, "a@example.com", store.TierPro)
	c := e.createCheck(t, token, 60000, nil)
	id := c["id"].(string)
	if _, err := e.st.SetUserStatus(context.Background(), u.ID, store.UserSuspended); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"create refused", "POST", "/v1/checks", map[string]any{"url": e.site.URL, "checkType": "AVAILABILITY", "delayMs": 60000}, 403},
		{"get check", "GET", "/v1/checks/" + id, nil, 200},
		{"list", "GET", "/v1/checks", nil, 200},
		{"me", "GET", "/v1/me", nil, 200},
		{"pause", "POST", "/v1/checks/" + id + "/pause", nil, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, e.srv.URL, tt.method, tt.path, token, tt.body)
			if r.code != tt.want {
				t.Fatalf("= %d %s, want %d", r.code, r.raw, tt.want)
			}
			if tt.want == 403 && !strings.Contains(r.errMsg(t), "suspended") {
				t.Fatalf("error %s does not say the account is suspended", r.raw)
			}
		})
	}
	if me := call(t, e.srv.URL, "GET", "/v1/me", token, nil).obj(t); me["status"] != store.UserSuspended || me["checkCount"] != float64(1) {
		t.Fatalf("me %v", me)
	}
	if _, err := e.st.SetUserStatus(context.Background(), u.ID, store.UserActive); err != nil {
		t.Fatal(err)
	}
	e.createCheck(t, token, 60000, nil)
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, token := e.user(t, "a@example.com", store.TierPro)
	_, tokenB := e.user(t, "b@example.com", store.TierPro)
	c := e.createCheck(t, token, 60000, map[string]any{"keyword": "In stock"})
	id := c["id"].(string)
	path := "/v1/checks/" + id
	check := func(t *testing.T) map[string]any {
		t.Helper()
		r := call(t, e.srv.URL, "GET", path, token, nil)
		if r.code != 200 {
			t.Fatalf("GET = %d %s", r.code, r.raw)
		}
		return r.obj(t)
	}

	t.Run("pause stops runs", func(t *testing.T) {
		r := call(t, e.srv.URL, "POST", path+"/pause", token, nil)
		if r.code != 200 || r.obj(t)["status"] != store.CheckPaused || check(t)["status"] != store.CheckPaused {
			t.Fatalf("pause = %d %s", r.code, r.raw)
		}
		if n := e.sched.RunDue(ctx, time.Now().Add(time.Hour)); n != 0 || e.site.hits.Load() != 0 {
			t.Fatalf("an hour later: %d runs, %d hits; want none", n, e.site.hits.Load())
		}
		if r := call(t, e.srv.URL, "POST", path+"/run", token, nil); r.code != http.StatusConflict {
			t.Fatalf("run while paused = %d %s, want 409", r.code, r.raw)
		}
	})

	t.Run("resume makes it due now", func(t *testing.T) {
		before := time.Now()
		r := call(t, e.srv.URL, "POST", path+"/resume", token, nil)
		if r.code != 200 {
			t.Fatalf("resume = %d %s", r.code, r.raw)
		}
		got := r.obj(t)
		next, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got["nextRunAt"]))
		if got["status"] != store.CheckActive || err != nil || next.Before(before.Add(-time.Second)) || next.After(time.Now()) {
			t.Fatalf("resumed check %s", r.raw)
		}
		if n := e.sched.RunDue(ctx, time.Now()); n != 1 || e.site.hits.Load() != 1 {
			t.Fatalf("RunDue after resume: %d runs, %d hits; want 1", n, e.site.hits.Load())
		}
	})

	t.Run("run now", func(t *testing.T) {
		// Make the next run miss the keyword, to tell the runs apart.
		r := call(t, e.srv.URL, "PATCH", path, token, map[string]any{"attributes": map[string]any{"keyword": "Sold out"}})
		if r.code != 200 {
			t.Fatalf("PATCH = %d %s", r.code, r.raw)
		}
		if n := e.sched.RunDue(ctx, time.Now()); n != 0 {
			t.Fatalf("%d runs before run-now, want 0 (next is a period away)", n)
		}
		r = call(t, e.srv.URL, "POST", path+"/run", token, nil)
		if r.code != http.StatusAccepted {
			t.Fatalf("run = %d %s", r.code, r.raw)
		}
		now := time.Now()
		if n := e.sched.RunDue(ctx, now); n != 1 {
			t.Fatalf("RunDue after run-now: %d runs, want 1", n)
		}
		if n := e.sched.RunDue(ctx, now); n != 0 || e.site.hits.Load() != 2 {
			t.Fatalf("second RunDue: %d runs, %d hits; want it to have run once", n, e.site.hits.Load())
		}
	})

	t.Run("results newest first", func(t *testing.T) {
		r := call(t, e.srv.URL, "GET", path+"/results", token, nil)
		runs := r.list(t)
		if r.code != 200 || len(runs) != 2 {
			t.Fatalf("results = %d %s, want 2 runs", r.code, r.raw)
		}
		// The newest run missed the keyword: DOWN, with the reason.
		for i, want := range []bool{false, true} {
			res, _ := runs[i]["result"].(map[string]any)
			status := map[bool]string{true: "UP", false: "DOWN"}[want]
			if res["status"] != status || res["keywordFound"] != want || res["httpStatus"] != float64(200) {
				t.Errorf("run %d: %v, want %s, keywordFound %v, httpStatus 200", i, res, status, want)
			}
			if !want && res["error"] != `keyword "Sold out" not found` {
				t.Errorf("run %d: error %v", i, res["error"])
			}
			if rt, ok := res["responseTime"].(float64); !ok || rt < 0 {
				t.Errorf("run %d: responseTime %v", i, res["responseTime"])
			}
		}
		if a, b := fmt.Sprint(runs[0]["at"]), fmt.Sprint(runs[1]["at"]); a <= b {
			t.Errorf("results not newest first: %s then %s", a, b)
		}
		got := check(t)
		last, _ := got["lastResult"].(map[string]any)
		newest, _ := runs[0]["result"].(map[string]any)
		for _, f := range []string{"status", "responseTime", "keywordFound", "httpStatus"} {
			if last[f] != newest[f] {
				t.Errorf("lastResult.%s = %v, newest result %v", f, last[f], newest[f])
			}
		}
		if got["lastExecutedAt"] != runs[0]["at"] {
			t.Errorf("lastExecutedAt %v, newest run at %v", got["lastExecutedAt"], runs[0]["at"])
		}
		if l := call(t, e.srv.URL, "GET", path+"/results?limit=1", token, nil).list(t); len(l) != 1 || l[0]["at"] != runs[0]["at"] {
			t.Errorf("limit=1: %v", l)
		}
		if r := call(t, e.srv.URL, "GET", path+"/results?limit=0", token, nil); r.code != 400 {
			t.Errorf("limit=0 = %d", r.code)
		}
	})

	t.Run("update", func(t *testing.T) {
		newURL := e.site.URL + "/other"
		for _, tt := range []struct {
			name  string
			body  any
			want  int
			field string
			value any
		}{
			{"delayMs", map[string]any{"delayMs": 120000}, 200, "delayMs", float64(120000)},
			{"url", map[string]any{"url": newURL}, 200, "url", newURL},
			{"attributes", map[string]any{"attributes": map[string]any{"keyword": "shop", "opposite": true}}, 200, "attributes", map[string]any{"keyword": "shop", "opposite": true}},
			{"same checkType", map[string]any{"checkType": "availability"}, 200, "checkType", "AVAILABILITY"},
			{"checkType change", map[string]any{"checkType": "EBAY"}, 400, "checkType", "AVAILABILITY"},
			{"delayMs below the minimum", map[string]any{"delayMs": 1000}, 400, "delayMs", float64(120000)},
			{"ftp URL", map[string]any{"url": "ftp://example.com/"}, 400, "url", newURL},
			{"unknown field", map[string]any{"period": 1}, 400, "delayMs", float64(120000)},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := call(t, e.srv.URL, "PATCH", path, token, tt.body)
				if r.code != tt.want {
					t.Fatalf("= %d %s, want %d", r.code, r.raw, tt.want)
				}
				if tt.want == 200 && fmt.Sprint(r.obj(t)[tt.field]) != fmt.Sprint(tt.value) {
					t.Fatalf("response %s = %v, want %v", tt.field, r.obj(t)[tt.field], tt.value)
				}
				if tt.want != 200 {
					r.errMsg(t)
				}
				if got := check(t)[tt.field]; fmt.Sprint(got) != fmt.Sprint(tt.value) {
					t.Fatalf("stored %s = %v, want %v", tt.field, got, tt.value)
				}
			})
		}
		// The new target and attributes are used by the next run.
		before := e.site.hits.Load()
		call(t, e.srv.URL, "POST", path+"/run", token, nil)
		if n := e.sched.RunDue(ctx, time.Now()); n != 1 || e.site.hits.Load() != before+1 {
			t.Fatalf("run after PATCH: %d runs", n)
		}
		last, _ := check(t)["lastResult"].(map[string]any)
		// opposite: true and the keyword on the page: DOWN.
		if last["keywordFound"] != true || last["status"] != "DOWN" || last["condition"] != "keyword-present" {
			t.Fatalf("lastResult after PATCH %v", last)
		}
	})

	t.Run("list has exactly the user's checks", func(t *testing.T) {
		other := e.createCheck(t, token, 60000, nil)
		e.createCheck(t, tokenB, 60000, nil)
		l := call(t, e.srv.URL, "GET", "/v1/checks", token, nil).list(t)
		ids := map[string]bool{}
		for _, c := range l {
			ids[c["id"].(string)] = true
		}
		if len(l) != 2 || !ids[id] || !ids[other["id"].(string)] {
			t.Fatalf("list %v, want %s and %s", ids, id, other["id"])
		}
		if me := call(t, e.srv.URL, "GET", "/v1/me", token, nil).obj(t); me["checkCount"] != float64(2) {
			t.Fatalf("me.checkCount %v, want 2", me["checkCount"])
		}
	})

	t.Run("alert webhook", func(t *testing.T) {
		hook := e.site.URL + "/hook"
		for _, tt := range []struct {
			name string
			base string
			body any
			want int
		}{
			{"loopback refused", e.strict.URL, map[string]any{"webhookUrl": hook}, 400},
			{"metadata refused", e.strict.URL, map[string]any{"webhookUrl": "http://169.254.169.254/"}, 400},
			{"not http", e.srv.URL, map[string]any{"webhookUrl": "ftp://example.com/"}, 400},
			{"bad email", e.srv.URL, map[string]any{"email": "not an address"}, 400},
			{"loopback allowed", e.srv.URL, map[string]any{"webhookUrl": hook, "webhookSecret": "s3cret", "email": "Ops@Example.com"}, 200},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := call(t, tt.base, "PUT", "/v1/me/alerts", token, tt.body)
				if r.code != tt.want {
					t.Fatalf("= %d %s, want %d", r.code, r.raw, tt.want)
				}
				if tt.want != 200 {
					r.errMsg(t)
				}
			})
		}
		me := call(t, e.srv.URL, "GET", "/v1/me", token, nil)
		got := me.obj(t)
		if got["webhookUrl"] != hook || got["alertEmail"] != "ops@example.com" {
			t.Fatalf("me %s", me.raw)
		}
		if bytes.Contains(me.raw, []byte("s3cret")) {
			t.Fatalf("the webhook secret is shown: %s", me.raw)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if r := call(t, e.srv.URL, "DELETE", path, token, nil); r.code != 204 {
			t.Fatalf("DELETE = %d %s", r.code, r.raw)
		}
		before := e.site.hits.Load()
		if n := e.sched.RunDue(ctx, time.Now().Add(24*time.Hour)); n != 2 || e.site.hits.Load() != before+2 {
			// Only the two checks of the list subtest run.
			t.Fatalf("a day later: %d runs, %d hits", n, e.site.hits.Load()-before)
		}
		if r := call(t, e.srv.URL, "GET", path+"/results", token, nil); r.code != 404 {
			t.Fatalf("results of a deleted check = %d", r.code)
		}
	})
}

// nextRunAt reads a check's nextRunAt from an API response.
func nextRunAt(t *testing.T, c map[string]any) time.Time {
	t.Helper()
	next, err := time.Parse(time.RFC3339Nano, fmt.Sprint(c["nextRunAt"]))
	if err != nil {
		t.Fatalf("nextRunAt %v: %v", c["nextRunAt"], err)
	}
	return next
}

// TestScheduleChanges: a PATCH of delayMs or url reschedules the check at
// once, the nextRunAt the API shows is when it really runs next, and the
// change reaches another process's scheduler at its next refresh (through
// the schedule change log), not only this process's.
func TestScheduleChanges(t *testing.T) {
	for _, tt := range []struct {
		name   string
		remote bool // run by another process's scheduler (after its Refresh)
	}{
		{"this process", false},
		{"another process", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			_, token := e.user(t, "a@example.com", store.TierPro)
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			lenient := probe.New(probe.Options{Fetch: fetch.Options{AllowPrivate: true}})
			t.Cleanup(lenient.Close)
			other := scheduler.New(e.st, lenient, nil, scheduler.Options{Owner: "other", RunTimeout: 5 * time.Second, Logger: logger})
			runner := e.sched
			if tt.remote {
				runner = other
			}
			// refreshed brings the runner up to date the way it would be
			// in a running process: its own API tells it at once, another
			// process's scheduler learns at its refresh.
			refreshed := func(t *testing.T) *scheduler.Scheduler {
				t.Helper()
				if tt.remote {
					if err := other.Refresh(ctx); err != nil {
						t.Fatal(err)
					}
				}
				return runner
			}

			t0 := time.Now()
			c := e.createCheck(t, token, time.Hour.Milliseconds(), nil)
			path := "/v1/checks/" + c["id"].(string)
			first := nextRunAt(t, c)
			if n := refreshed(t).RunDue(ctx, t0.Add(61*time.Second)); n != 1 {
				t.Fatalf("first run: %d runs", n)
			}
			got := call(t, e.srv.URL, "GET", path, token, nil).obj(t)
			if next := nextRunAt(t, got); !next.Equal(first.Add(time.Hour)) {
				t.Fatalf("after the first run nextRunAt %v, want %v", next, first.Add(time.Hour))
			}

			// Each step's PATCH shows the next run; the check runs exactly
			// then: not a millisecond before, and at that time.
			prev := first.Add(time.Hour) // nextRunAt before the step
			prevDelay := time.Hour
			for _, step := range []struct {
				name  string
				body  map[string]any
				delay time.Duration // the period after the step
				want  func(patchedAt time.Time) time.Time
			}{
				// The period in progress started at prev - prevDelay.
				{"1 h to 10 s", map[string]any{"delayMs": 10000}, 10 * time.Second,
					func(time.Time) time.Time { return prev.Add(-prevDelay + 10*time.Second) }},
				{"10 s to 1 h", map[string]any{"delayMs": 3600000}, time.Hour,
					func(time.Time) time.Time { return prev.Add(-prevDelay + time.Hour) }},
				{"new url: at once", map[string]any{"url": e.site.URL + "/moved"}, time.Hour,
					func(at time.Time) time.Time { return at }},
			} {
				patchedAt := time.Now()
				r := call(t, e.srv.URL, "PATCH", path, token, step.body)
				if r.code != 200 {
					t.Fatalf("%s: PATCH = %d %s", step.name, r.code, r.raw)
				}
				shown := nextRunAt(t, r.obj(t))
				if want := step.want(patchedAt); shown.Sub(want).Abs() > time.Second {
					t.Fatalf("%s: PATCH shows nextRunAt %v, want %v", step.name, shown, want)
				}
				if g := nextRunAt(t, call(t, e.srv.URL, "GET", path, token, nil).obj(t)); !g.Equal(shown) {
					t.Fatalf("%s: GET shows nextRunAt %v, PATCH %v", step.name, g, shown)
				}
				before := e.site.hits.Load()
				if n := refreshed(t).RunDue(ctx, shown.Add(-time.Millisecond)); n != 0 {
					t.Fatalf("%s: %d runs before the nextRunAt shown", step.name, n)
				}
				if n := refreshed(t).RunDue(ctx, shown); n != 1 || e.site.hits.Load()-before != 1 {
					t.Fatalf("%s: %d runs at the nextRunAt shown, want 1", step.name, n)
				}
				after := nextRunAt(t, call(t, e.srv.URL, "GET", path, token, nil).obj(t))
				if !after.Equal(shown.Add(step.delay)) {
					t.Fatalf("%s: after the run nextRunAt %v, want %v", step.name, after, shown.Add(step.delay))
				}
				prev, prevDelay = after, step.delay
			}
		})
	}
}

// noDNS is a resolver that knows no name.
type noDNS struct{}

func (noDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestUnresolvableHostAccepted: a check on a host that does not resolve
// now is created (the URL is valid and not a refused address) and runs
// DOWN with the DNS reason; a refused literal address is still a 400, and
// so is a webhook that cannot be resolved (an alert target must work
// when it is set).
func TestUnresolvableHostAccepted(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "dns@example.com", store.TierPro)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	prb := probe.New(probe.Options{Fetch: fetch.Options{Resolver: noDNS{}}})
	t.Cleanup(prb.Close)
	sched := scheduler.New(e.st, prb, nil, scheduler.Options{Owner: "dns", RunTimeout: 5 * time.Second, Logger: logger})
	srv := httptest.NewServer(api.New(e.st, prb, sched, api.Options{Logger: logger}))
	t.Cleanup(srv.Close)

	r := call(t, srv.URL, "POST", "/v1/checks", token, map[string]any{"url": "https://not-yet.example/health", "checkType": "AVAILABILITY", "delayMs": 60000})
	if r.code != http.StatusCreated {
		t.Fatalf("create = %d %s, want 201", r.code, r.raw)
	}
	id := r.obj(t)["id"].(string)
	if r := call(t, srv.URL, "PATCH", "/v1/checks/"+id, token, map[string]any{"url": "https://still-not.example/"}); r.code != 200 {
		t.Fatalf("PATCH url = %d %s, want 200", r.code, r.raw)
	}
	if n := sched.RunDue(context.Background(), time.Now()); n != 1 {
		t.Fatalf("ran %d, want 1", n)
	}
	last, _ := call(t, srv.URL, "GET", "/v1/checks/"+id, token, nil).obj(t)["lastResult"].(map[string]any)
	if e, _ := last["error"].(string); last["status"] != "DOWN" || !strings.HasPrefix(e, "host not found: ") || !strings.Contains(e, "still-not.example") {
		t.Fatalf("lastResult %v, want DOWN, host not found", last)
	}
	if got := call(t, srv.URL, "GET", "/v1/checks/"+id, token, nil).obj(t)["status"]; got != store.CheckActive {
		t.Fatalf("check status %v, want ACTIVE (the host may resolve later)", got)
	}
	r = call(t, e.strict.URL, "POST", "/v1/checks", token, map[string]any{"url": "http://10.1.2.3/", "checkType": "AVAILABILITY", "delayMs": 60000})
	if r.code != http.StatusBadRequest || !strings.Contains(r.errMsg(t), "--allow-networks") {
		t.Fatalf("refused literal address: %d %s, want 400 naming --allow-networks", r.code, r.raw)
	}
	r = call(t, srv.URL, "PUT", "/v1/me/alerts", token, map[string]any{"webhookUrl": "https://hooks.example/x"})
	if r.code != http.StatusBadRequest || r.errMsg(t) != `webhookUrl "https://hooks.example/x" cannot receive alerts: lookup hooks.example: no such host` {
		t.Fatalf("unresolvable webhook: %d %s, want 400", r.code, r.raw)
	}
}

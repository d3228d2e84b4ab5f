package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// hostileServer is a running `quarry serve` whose DynamoDB endpoint
// requires signatures by one key (adminKeyID/adminSecret, in credsFile).
// Its administration commands go through the admin channel.
type hostileServer struct {
	api, store, dir, credsFile string
}

const (
	adminKeyID  = "AKIDADMIN"
	adminSecret = "s3cret-admin"
)

func startHostileServer(t *testing.T, extra ...string) *hostileServer {
	t.Helper()
	s := &hostileServer{api: freeAddr(t), store: freeAddr(t), dir: t.TempDir()}
	s.credsFile = filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(s.credsFile, []byte(adminKeyID+" "+adminSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	args := append([]string{"serve", "--listen", s.api, "--ddb-listen", s.store, "--data-dir", s.dir, "--credentials", s.credsFile}, extra...)
	go func() { done <- run(ctx, args, noEnv, &logs, &logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exit %d: %s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	waitFor(t, "listeners", func() bool {
		return strings.Contains(logs.String(), "listening on "+s.api) && strings.Contains(logs.String(), "listening on "+s.store)
	})
	return s
}

// cli runs an administration command against the server's store with env.
func (s *hostileServer) cli(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errs syncBuffer
	args = append(args, "--data-dir", s.dir, "--ddb-listen", s.store)
	code = run(context.Background(), args, func(k string) string { return env[k] }, &out, &errs)
	return code, strings.TrimSpace(out.String()), errs.String()
}

// mustCLI runs an administration command and returns its standard
// output. It reaches the server through the data directory's admin
// channel, so it needs no key although the endpoint demands signatures.
func (s *hostileServer) mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := s.cli(nil, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	return out
}

// TestAdminChannel runs the administration commands against servers whose
// data directory they name: against a server whose DynamoDB endpoint
// demands signatures they work without any key (the admin channel in the
// data directory needs none), and with two servers running — one on the
// default-style endpoint the command is pointed at, one with its endpoint
// off — a command given the second's data directory writes into the
// second, never into whatever answers on the endpoint (the trap a user fell
// into). A data directory held by a process without an admin channel is
// an error that names the directory.
func TestAdminChannel(t *testing.T) {
	t.Parallel()
	signed := startHostileServer(t)
	token := signed.mustCLI(t, "checks", "user", "create", "--email", "signed@example.com")
	if !strings.HasPrefix(token, "chk_") {
		t.Fatalf("checks user create printed %q", token)
	}
	if out := signed.mustCLI(t, "wallcrawler", "project", "create", "--name", "Acme", "--id", "project_acme"); !strings.Contains(out, "project_acme") {
		t.Errorf("wallcrawler project create: %q", out)
	}
	if out := signed.mustCLI(t, "eecar", "company", "create", "--name", "Acme"); out == "" {
		t.Error("eecar company create printed no key")
	}
	// The user is in the signed server's store: its API accepts the token.
	if code := getStatus(t, "http://"+signed.api+"/checks/v1/checks", token); code != http.StatusOK {
		t.Errorf("the signed server answers %d to the new user's token", code)
	}

	// The trap: server A on an endpoint, server B with its endpoint off.
	a := startHostileServer(t)
	bDir := t.TempDir()
	bAPI := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", bAPI, "--ddb-listen", "off", "--data-dir", bDir}, noEnv, &logs, &logs)
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor(t, "server B", func() bool { return strings.Contains(logs.String(), "listening on "+bAPI) })
	var out, errs syncBuffer
	// Pointed at A's endpoint by --ddb-listen, but given B's directory.
	if code := run(context.Background(), []string{"checks", "user", "create", "--email", "b@example.com", "--data-dir", bDir, "--ddb-listen", a.store}, noEnv, &out, &errs); code != 0 {
		t.Fatalf("checks user create in B: exit %d: %s", code, errs.String())
	}
	bToken := strings.TrimSpace(out.String())
	if code := getStatus(t, "http://"+bAPI+"/checks/v1/checks", bToken); code != http.StatusOK {
		t.Errorf("server B answers %d to the user created with its data directory", code)
	}
	if code := getStatus(t, "http://"+a.api+"/checks/v1/checks", bToken); code != http.StatusUnauthorized {
		t.Errorf("server A answers %d to the user created with B's data directory, want 401: the command wrote into A", code)
	}

	// A directory held without an answering channel: a clear error.
	stale := t.TempDir()
	if err := os.MkdirAll(filepath.Join(stale, "ddb"), 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := ddb.Open(filepath.Join(stale, "ddb"), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var out2, errs2 syncBuffer
	code := run(context.Background(), []string{"checks", "user", "create", "--email", "c@example.com", "--data-dir", stale, "--ddb-listen", a.store}, noEnv, &out2, &errs2)
	if code == 0 || !strings.Contains(errs2.String(), "is in use by another quarry process") || !strings.Contains(errs2.String(), stale) {
		t.Errorf("command on a held directory without a channel: exit %d, stderr %q", code, errs2.String())
	}
}

// getStatus GETs url with a bearer token and returns the status.
func getStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestNastyIDs sends each system's ID routes ids DynamoDB's key limits
// refuse (over 2048 or 1024 bytes), a megabyte long, with NUL, and with
// invalid UTF-8: every answer is a 4xx, never a 5xx, and when the system
// saw the request it is in the system's error shape.
func TestNastyIDs(t *testing.T) {
	t.Parallel()
	s := startHostileServer(t)
	token := s.mustCLI(t, "checks", "user", "create", "--email", "nasty@example.com")
	s.mustCLI(t, "wallcrawler", "project", "create", "--name", "Nasty", "--id", "project_nasty")
	wcKey := s.mustCLI(t, "wallcrawler", "key", "create", "--project", "project_nasty")
	eeKey := s.mustCLI(t, "eecar", "company", "create", "--name", "Nasty")

	type route struct {
		system, method, path string // path with %s for the id
		body                 string
	}
	routes := []route{
		{"checks", "GET", "/checks/v1/checks/%s", ""},
		{"checks", "PATCH", "/checks/v1/checks/%s", `{"name":"x"}`},
		{"checks", "DELETE", "/checks/v1/checks/%s", ""},
		{"checks", "POST", "/checks/v1/checks/%s/pause", ""},
		{"checks", "POST", "/checks/v1/checks/%s/resume", ""},
		{"checks", "POST", "/checks/v1/checks/%s/run", ""},
		{"checks", "GET", "/checks/v1/checks/%s/results", ""},
		{"wallcrawler", "GET", "/wallcrawler/v1/sessions/%s", ""},
		{"wallcrawler", "POST", "/wallcrawler/v1/sessions/%s", `{"status":"REQUEST_RELEASE"}`},
		{"wallcrawler", "GET", "/wallcrawler/v1/sessions/%s/debug", ""},
		{"wallcrawler", "GET", "/wallcrawler/v1/sessions/%s/logs", ""},
		{"wallcrawler", "GET", "/wallcrawler/v1/sessions/%s/downloads", ""},
		{"wallcrawler", "GET", "/wallcrawler/v1/contexts/%s", ""},
		{"wallcrawler", "PUT", "/wallcrawler/v1/contexts/%s", ""},
		{"wallcrawler", "DELETE", "/wallcrawler/v1/contexts/%s", ""},
		{"wallcrawler", "GET", "/wallcrawler/v1/extensions/%s", ""},
		{"wallcrawler", "DELETE", "/wallcrawler/v1/extensions/%s", ""},
		{"wallcrawler", "GET", "/wallcrawler/v1/projects/%s", ""},
		{"wallcrawler", "GET", "/wallcrawler/v1/projects/%s/usage", ""},
		{"wallcrawler", "PUT", "/wallcrawler/uploads/%s", "x"},
		{"eecar", "GET", "/eecar/parts/%s", ""},
		{"eecar", "PUT", "/eecar/parts/%s", `{"name":"x"}`},
		{"eecar", "DELETE", "/eecar/parts/%s", ""},
		{"eecar", "GET", "/eecar/needs/%s", ""},
		{"eecar", "PUT", "/eecar/needs/%s", `{"description":"x"}`},
		{"eecar", "DELETE", "/eecar/needs/%s", ""},
		{"eecar", "GET", "/eecar/needs/%s/matches", ""},
		{"eecar", "GET", "/eecar/watches/%s", ""},
		{"eecar", "DELETE", "/eecar/watches/%s", ""},
		{"eecar", "GET", "/eecar/watches/%s/triggers", ""},
		{"eecar", "GET", "/eecar/proposals/%s", ""},
		{"eecar", "POST", "/eecar/proposals/%s/respond", `{"accept":true}`},
		{"eecar", "POST", "/eecar/notifications/%s/read", ""},
		{"datashelf", "GET", "/datashelf/api/categories/%s", ""},
		{"datashelf", "GET", "/datashelf/api/products/%s", ""},
		{"datashelf", "GET", "/datashelf/images/%s", ""},
	}
	ids := []struct{ name, id string }{
		{"1025 bytes", strings.Repeat("a", 1025)},
		{"2049 bytes", strings.Repeat("b", 2049)},
		{"3000 bytes", strings.Repeat("c", 3000)},
		{"3000 bytes of multibyte UTF-8", strings.Repeat("%C3%A9", 1500)},
		{"NUL", "a%00b"},
		{"only NUL", "%00"},
		{"invalid UTF-8", "%FF%FE%FD"},
		{"lone surrogate", "%ED%A0%80"},
		{"1 MB", strings.Repeat("d", 1<<20)},
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for _, rt := range routes {
		for _, id := range ids {
			t.Run(rt.method+" "+strings.ReplaceAll(rt.path, "/", "_")+" "+id.name, func(t *testing.T) {
				var body io.Reader
				if rt.body != "" {
					body = strings.NewReader(rt.body)
				}
				req, err := http.NewRequest(rt.method, "http://"+s.api+fmt.Sprintf(rt.path, id.id), body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				switch rt.system {
				case "checks":
					req.Header.Set("Authorization", "Bearer "+token)
				case "wallcrawler":
					req.Header.Set("X-BB-API-Key", wcKey)
				case "eecar":
					req.Header.Set("Authorization", "Bearer "+eeKey)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				if resp.StatusCode >= 500 {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
				if resp.StatusCode < 400 {
					t.Fatalf("%d %s, want a 4xx", resp.StatusCode, b)
				}
				if resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge || resp.StatusCode == http.StatusRequestURITooLong {
					return // refused by the HTTP server before any system
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatalf("%d %q: not JSON", resp.StatusCode, b)
				}
				switch {
				case rt.system == "wallcrawler" && !strings.HasPrefix(rt.path, "/wallcrawler/uploads/"):
					if m["statusCode"] != float64(resp.StatusCode) || m["message"] == nil || m["error"] == nil {
						t.Errorf("%d %s: not Browserbase's error shape", resp.StatusCode, b)
					}
				default:
					if m["error"] == nil {
						t.Errorf("%d %s: no \"error\"", resp.StatusCode, b)
					}
				}
			})
		}
	}
}

// TestSlowClientsKeepOthersServed holds 100 slow connections open on each
// listener (headers announcing a 16 MiB body, then nothing; and headers
// never finished) while a well-behaved SDK client runs GetItem: it gets no
// error and a p99 under a generous bound. Timings belong to
// bench/slowloris; this only guards against the endpoint stalling.
func TestSlowClientsKeepOthersServed(t *testing.T) {
	s := startHostileServer(t)
	ctx := context.Background()
	client := dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String("http://" + s.store),
		Credentials:      credentials.NewStaticCredentialsProvider(adminKeyID, adminSecret, ""),
		RetryMaxAttempts: 1,
	})
	if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("hostile"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("hostile"), Item: key}); err != nil {
		t.Fatal(err)
	}

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 100 {
		for _, addr := range []string{s.store, s.api} {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			head := "POST / HTTP/1.1\r\nHost: " + addr + "\r\nX-Amz-Target: DynamoDB_20120810.PutItem\r\nContent-Length: " + strconv.Itoa(16<<20) + "\r\n\r\n"
			if i%2 == 1 {
				head = "POST / HTTP/1.1\r\nHost: " + addr + "\r\n" // headers never finished
			}
			if _, err := io.WriteString(c, head); err != nil {
				t.Fatal(err)
			}
		}
	}

	var lat []time.Duration
	var errs []error
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		t0 := time.Now()
		_, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("hostile"), Key: key})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lat = append(lat, time.Since(t0))
	}
	// The API listener serves too.
	var wg sync.WaitGroup
	apiErr := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get("http://" + s.api + "/healthz")
			if err != nil {
				apiErr <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				apiErr <- errors.New(resp.Status)
			}
		}()
	}
	wg.Wait()
	close(apiErr)
	for err := range apiErr {
		t.Errorf("API /healthz while slow clients are held: %v", err)
	}
	if len(errs) > 0 {
		t.Fatalf("%d GetItem errors while slow clients are held, first: %v", len(errs), errs[0])
	}
	if len(lat) < 10 {
		t.Fatalf("only %d GetItem in 2s", len(lat))
	}
	p99 := percentile(lat, 99)
	if p99 > time.Second {
		t.Errorf("GetItem p99 %v while slow clients are held, want under 1s", p99)
	}
	t.Logf("GetItem while 200 slow connections are held: %d requests, p50 %v, p99 %v", len(lat), percentile(lat, 50), p99)
}

// percentile is the nearest-rank p-th percentile of d (sorted in place).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(p/100*float64(len(d))+0.5) - 1
	return d[max(0, min(i, len(d)-1))]
}

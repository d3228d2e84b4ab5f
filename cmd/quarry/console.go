package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/console/operators"
	datashelfstore "github.com/quarrydb/quarry/internal/datashelf/store"
	eecarstore "github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	wcauth "github.com/quarrydb/quarry/internal/wallcrawler/auth"
	wctables "github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// consoleKeyName is the file, in the data directory, holding the key that
// signs the console's session cookies.
const consoleKeyName = "console.key"

// consoleKey reads the console's session key from the data directory,
// creating it (32 random bytes, mode 0600) on first use.
func consoleKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, consoleKeyName)
	key, err := os.ReadFile(path)
	if err == nil && len(key) >= 32 {
		return key, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("console key: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("console key: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("console key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("console key: %w", err)
	}
	return key, nil
}

// consoleUnavailable answers in place of a console that could not start:
// 503 with the reason at the console's paths, a JSON 404 elsewhere.
func consoleUnavailable(err error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, msg := http.StatusServiceUnavailable, "console unavailable: "+err.Error()
		if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/console/") {
			status, msg = http.StatusNotFound, "not found: "+r.URL.Path
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	})
}

func newConsole(ctx context.Context, c *config.Config, client *dynamodb.Client, systems map[string]any, ck *checks, ds datashelfstore.Store, log *slog.Logger) (*console.Console, error) {
	key, err := consoleKey(c.DataDir)
	if err != nil {
		return nil, err
	}
	ops := operators.New(client, operators.DefaultTable)
	if err := ops.EnsureTable(ctx); err != nil {
		return nil, err
	}
	running := func(name string) bool {
		st, _ := systems[name].(map[string]any)
		return st["status"] == "running"
	}
	opts := console.Options{Key: key, Explorer: client, Logger: log,
		Realms: []console.Realm{{Kind: "operator", Label: "Operator token", Operator: true, Auth: operatorAuth{ops}}}}
	if running("checks") && ck != nil {
		st, err := checksStore(ctx, c, client)
		if err != nil {
			return nil, err
		}
		opts.Realms = append(opts.Realms, console.Realm{Kind: "checks", Label: "Checks API token", Auth: checksAuth{st}})
		opts.Checks = checksConsole{st: st, api: ck.api}
	}
	if ds != nil {
		opts.DataShelf = shelfConsole{st: ds}
	}
	if running("eecar") {
		table, err := eecarstore.EnsureTable(ctx, client, c.EECARTablePrefix)
		if err != nil {
			return nil, err
		}
		st := eecarstore.New(client, table, nil)
		opts.Realms = append(opts.Realms, console.Realm{Kind: "eecar", Label: "EECAR company API key", Auth: console.AuthFunc(func(ctx context.Context, cred string) (console.Principal, error) {
			co, err := st.Authenticate(ctx, cred)
			if err != nil {
				return console.Principal{}, err
			}
			return console.Principal{ID: co.ID, Name: co.Name}, nil
		})})
	}
	if running("wallcrawler") {
		names, err := wctables.EnsureTables(ctx, client, c.WallcrawlerTablePrefix)
		if err != nil {
			return nil, err
		}
		st := wcauth.New(client, names, nil)
		opts.Realms = append(opts.Realms, console.Realm{Kind: "wallcrawler", Label: "Wallcrawler API key", Auth: console.AuthFunc(func(ctx context.Context, cred string) (console.Principal, error) {
			p, err := st.Authorize(ctx, cred, "")
			if err != nil {
				return console.Principal{}, err
			}
			return console.Principal{ID: p.KeyID, Name: p.Project.Name + " (" + p.ProjectID + ")"}, nil
		})})
	}
	return console.New(opts)
}

// operatorAuth signs operators in with their tokens; a revoked token ends
// its sessions at their next request.
type operatorAuth struct{ st *operators.Store }

func (a operatorAuth) Authenticate(ctx context.Context, cred string) (console.Principal, error) {
	t, err := a.st.Authenticate(ctx, cred)
	if err != nil {
		return console.Principal{}, err
	}
	return console.Principal{ID: t.ID, Name: t.Name}, nil
}

func (a operatorAuth) Valid(ctx context.Context, id string) error {
	_, err := a.st.Get(ctx, id)
	return err
}

// checksAuth signs Checks users in with their API tokens.
type checksAuth struct{ st *checksstore.Store }

func (a checksAuth) Authenticate(ctx context.Context, cred string) (console.Principal, error) {
	u, err := a.st.Authenticate(ctx, cred)
	if err != nil {
		return console.Principal{}, err
	}
	return console.Principal{ID: u.ID, Name: u.Email}, nil
}

func (a checksAuth) Valid(ctx context.Context, id string) error {
	_, err := a.st.GetUser(ctx, id)
	return err
}

// checksConsole is Checks as the console's dashboard sees it: reads from
// its store, writes through its API on the session's user's behalf (so the
// API's validation and scheduling apply, and its messages are shown).
type checksConsole struct {
	st  *checksstore.Store
	api *checksapi.Handler
}

func consoleCheck(c checksstore.Check) console.Check {
	last, _ := c.LastResult["status"].(string)
	return console.Check{ID: c.ID, URL: c.URL, Type: c.Type, DelayMs: c.DelayMs, Status: c.Status,
		LastExecutedAt: c.LastExecutedAt, LastStatus: last, FailureReason: c.FailureReason}
}

func (k checksConsole) Checks(ctx context.Context, userID string) ([]console.Check, error) {
	cs, err := k.st.ListChecks(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]console.Check, len(cs))
	for i, c := range cs {
		out[i] = consoleCheck(c)
	}
	return out, nil
}

func (k checksConsole) Check(ctx context.Context, userID, id string) (console.Check, error) {
	c, err := k.st.GetCheck(ctx, userID, id)
	if errors.Is(err, checksstore.ErrNotFound) {
		return console.Check{}, console.ErrNotFound
	}
	if err != nil {
		return console.Check{}, err
	}
	return consoleCheck(c), nil
}

func (k checksConsole) Runs(ctx context.Context, userID, id string, limit int) ([]console.Run, error) {
	runs, err := k.st.Results(ctx, userID, id, limit)
	if errors.Is(err, checksstore.ErrNotFound) {
		return nil, console.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := make([]console.Run, 0, len(runs))
	for _, r := range runs {
		at, err := time.Parse(ddbitem.TimeLayout, r.At)
		if err != nil {
			continue
		}
		status, _ := r.Result["status"].(string)
		ms, _ := r.Result["responseTime"].(float64)
		out = append(out, console.Run{At: at, Up: status == "UP", ResponseTimeMs: int64(ms)})
	}
	return out, nil
}

// call makes one Checks API request as userID and returns the API's error
// message on failure.
func (k checksConsole) call(ctx context.Context, userID, method, path string, body any, out any) error {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	k.api.ServeAs(rec, req, userID)
	if rec.Code == http.StatusNotFound {
		return console.ErrNotFound
	}
	if rec.Code >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("checks API: %d", rec.Code)
	}
	if out != nil {
		return json.Unmarshal(rec.Body.Bytes(), out)
	}
	return nil
}

func (k checksConsole) Create(ctx context.Context, userID string, in console.CheckInput) (console.Check, error) {
	body := map[string]any{"url": in.URL, "checkType": in.Type, "delayMs": in.DelayMs}
	if in.Keyword != "" {
		body["attributes"] = map[string]any{"keyword": in.Keyword}
	}
	var c checksstore.Check
	if err := k.call(ctx, userID, http.MethodPost, "/v1/checks", body, &c); err != nil {
		return console.Check{}, err
	}
	return consoleCheck(c), nil
}

func (k checksConsole) Act(ctx context.Context, userID, id, action string) error {
	path := "/v1/checks/" + url.PathEscape(id)
	switch action {
	case "delete":
		return k.call(ctx, userID, http.MethodDelete, path, nil, nil)
	case "pause", "resume", "run":
		return k.call(ctx, userID, http.MethodPost, path+"/"+action, nil, nil)
	}
	return fmt.Errorf("unknown action %q", action)
}

const adminUsage = `usage:
  quarry admin token create --name NAME   (prints a console operator token once)
  quarry admin token list
  quarry admin token revoke --id ID       (the first 8 or more digits of the id list prints)
`

// cmdAdmin runs `quarry admin`: the console's operator tokens, through the
// data directory's admin channel when quarry serve holds it.
func cmdAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "token" {
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("quarry admin token "+args[1], flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "who or what the token is for")
	id := fs.String("id", "", "the token's id, or its first 8 or more digits")
	c, err := config.Load(fs, args[2:], getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	switch args[1] {
	case "create", "list", "revoke":
	default:
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	if args[1] == "create" && *name == "" {
		return errors.New("admin token create: --name is required (e.g. --name alice)")
	}
	if args[1] == "revoke" && *id == "" {
		return errors.New("admin token revoke: --id is required (see quarry admin token list)")
	}
	client, _, closeFn, err := dynamoClient(ctx, c, newLogger(c, stderr), true)
	if err != nil {
		return err
	}
	defer closeFn()
	st := operators.New(client, operators.DefaultTable)
	if err := st.EnsureTable(ctx); err != nil {
		return err
	}
	switch args[1] {
	case "create":
		secret, t, err := st.Create(ctx, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "operator token %s for %s; only its hash is stored, so this is the only time it is shown:\n", t.Short(), t.Name)
		fmt.Fprintln(stdout, secret)
	case "list":
		ts, err := st.List(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			fmt.Fprintf(stdout, "%s  %s  %s\n", t.Short(), t.Created.Format(time.RFC3339), t.Name)
		}
	case "revoke":
		n, err := st.Revoke(ctx, *id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("admin token revoke: no token %s", *id)
		}
		fmt.Fprintf(stdout, "revoked %d token(s)\n", n)
	}
	return nil
}

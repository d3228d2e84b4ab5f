package ddb_test

// TestClients: one set of cases (testdata/clients/cases.json) run by four
// DynamoDB clients against the store's HTTP endpoint with Signature V4
// verification on — aws-sdk-go-v2, boto3, the AWS SDK for JavaScript v3 and
// the AWS CLI. The cases are data; each client is an adapter that turns a
// request in DynamoDB's wire JSON into its own call and its answer back
// into wire JSON, and this file checks every answer the same way. The
// format of a case is described in the file's "about".

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/testenv"
)

// clientCase is one case of testdata/clients/cases.json.
type clientCase struct {
	Name  string       `json:"name"`
	Steps []clientStep `json:"steps"`
}

// clientStep is one request of a case and what must come back.
type clientStep struct {
	Op          string            `json:"op"`
	Input       map[string]any    `json:"input"`
	Expect      map[string]any    `json:"expect"`
	Absent      []string          `json:"absent"`
	Present     []string          `json:"present"`
	Error       string            `json:"error"`
	ErrorExpect map[string]any    `json:"errorExpect"`
	Save        map[string]string `json:"save"`
	Retry       int               `json:"retry"`
	Segments    int               `json:"segments"`
	Pages       bool              `json:"pages"`
	Sort        []string          `json:"sort"`
	Credentials string            `json:"credentials"`
	Auth        bool              `json:"auth"`
	Feature     string            `json:"feature"`
}

// clientCreds is an access key id and its secret.
type clientCreds struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// clientResult is a client's answer to one request, in wire JSON: the
// output, or the error, or UnknownParameter when the client's model lacks
// a parameter of the input (it sent nothing), or Fail when the client
// could not make the call.
type clientResult struct {
	Output           map[string]any `json:"output"`
	Error            *clientError   `json:"error"`
	UnknownParameter string         `json:"unknownParameter"`
	Fail             string         `json:"fail"`
}

// clientError is an error answer: its __type, message and modeled fields
// (Item, CancellationReasons, ...).
type clientError struct {
	Type    string         `json:"type"`
	Message string         `json:"message"`
	Fields  map[string]any `json:"fields"`
}

// ddbTestClient is one client under test.
type ddbTestClient interface {
	// call sends op with input (wire JSON) signed with creds; a non-nil
	// error means the client could not make the call at all.
	call(ctx context.Context, op string, input map[string]any, creds clientCreds) (clientResult, error)
	// errorFields reports whether the client shows an error's modeled
	// fields (the AWS CLI prints only its type and message).
	errorFields() bool
}

// clientsEndpoint is the endpoint under test and the credentials it
// accepts; verifies reports whether it checks signatures.
type clientsEndpoint struct {
	url      string
	region   string
	creds    clientCreds
	verifies bool
}

// clientsCredentialsEnv names the variable giving ID:SECRET for an external
// endpoint that verifies signatures (the Signature V4 steps then run).
const clientsCredentialsEnv = "QUARRY_DDB_TEST_CREDENTIALS"

// startClientsEndpoint returns the endpoint under test: an external one
// (QUARRY_DDB_TEST_ENDPOINT), or a fresh store served on loopback with
// Signature V4 verification on, as `quarry ddb serve --credentials` serves it.
func startClientsEndpoint(t *testing.T) clientsEndpoint {
	t.Helper()
	if ep := externalEndpoint(); ep != "" {
		e := clientsEndpoint{url: ep, region: "us-east-1", creds: clientCreds{"AKIDQUARRYTEST", "quarry-test-secret"}}
		if v := os.Getenv(clientsCredentialsEnv); v != "" {
			id, secret, ok := strings.Cut(v, ":")
			if !ok {
				t.Fatalf("%s must be ID:SECRET", clientsCredentialsEnv)
			}
			e.creds, e.verifies = clientCreds{id, secret}, true
		}
		return e
	}
	creds := clientCreds{"AKIDQUARRYCLIENTS", "quarry-clients-secret"}
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true, Credentials: map[string]string{creds.ID: creds.Secret}})
	if err != nil {
		t.Fatalf("ddb.Open: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.Close()
		s.Close()
	})
	return clientsEndpoint{url: srv.URL, region: "us-east-1", creds: creds, verifies: true}
}

// clientCases is testdata/clients/cases.json.
type clientCases struct {
	// Repeat defines string variables by repetition: name → [text, count].
	Repeat map[string][2]any `json:"repeat"`
	Cases  []clientCase      `json:"cases"`
}

// loadClientCases reads testdata/clients/cases.json.
func loadClientCases(t *testing.T) clientCases {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "clients", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f clientCases
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("cases.json: %v", err)
	}
	return f
}

// vars returns the variables a run starts with: the table name prefix and
// the repeated strings.
func (cc clientCases) vars(prefix string) map[string]any {
	vars := map[string]any{"prefix": prefix}
	for name, r := range cc.Repeat {
		text, _ := r[0].(string)
		n, _ := r[1].(float64)
		vars[name] = strings.Repeat(text, int(n))
	}
	return vars
}

// TestClients runs the cases of testdata/clients/cases.json with each
// client, in parallel, against one endpoint; each client's tables have a
// prefix of their own. A client that is not installed is skipped, or fails
// the test when QUARRY_REQUIRE_PEERS=1 (scripts/test-deps.sh installs them).
func TestClients(t *testing.T) {
	cases := loadClientCases(t)
	ep := startClientsEndpoint(t)
	clients := []struct {
		name  string
		start func(t *testing.T, ep clientsEndpoint) ddbTestClient
	}{
		{"aws-sdk-go-v2", startGoSDKClient},
		{"boto3", startBoto3Client},
		{"sdk-js-v3", startJSv3Client},
		{"aws-cli", startCLIClient},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runClientCases(t, c.name, c.start(t, ep), ep, cases)
		})
	}
}

// runClientCases runs every case with cl, one subtest each, in order (the
// later cases use the tables and items of the earlier ones).
func runClientCases(t *testing.T, name string, cl ddbTestClient, ep clientsEndpoint, cases clientCases) {
	vars := cases.vars(fmt.Sprintf("qc-%s-%08x", name, rand.Uint32()))
	passed, skipped := 0, 0
	for _, c := range cases.Cases {
		caseSkipped := false
		ok := t.Run(c.Name, func(t *testing.T) {
			authSteps := 0
			for i, st := range c.Steps {
				if st.Auth && !ep.verifies {
					authSteps++
					continue
				}
				problem, unknown := runClientStep(t, cl, ep, st, vars)
				if unknown != "" {
					t.Logf("step %d (%s) skipped: this client version does not know %s: %s", i+1, st.Op, st.Feature, unknown)
					continue
				}
				if problem != "" {
					t.Fatalf("step %d (%s): %s", i+1, st.Op, problem)
				}
			}
			if authSteps > 0 {
				caseSkipped = true
				t.Skipf("%d steps need an endpoint verifying signatures (set %s=ID:SECRET)", authSteps, clientsCredentialsEnv)
			}
		})
		switch {
		case caseSkipped:
			skipped++
		case ok:
			passed++
		}
	}
	t.Logf("%s: %d of %d cases passed, %d skipped", name, passed, len(cases.Cases), skipped)
}

// runClientStep runs one step, retrying it as it says, and returns what
// did not match ("" when all did), or, for a step with a feature the
// client's model lacks, the client's refusal.
func runClientStep(t *testing.T, cl ddbTestClient, ep clientsEndpoint, st clientStep, vars map[string]any) (problem, unknown string) {
	input := substitute(st.Input, vars).(map[string]any)
	creds := ep.creds
	switch st.Credentials {
	case "":
	case "wrong-secret":
		creds.Secret += "-wrong"
	case "unknown-key":
		creds.ID = "AKIDQUARRYUNKNOWNKEY"
	default:
		return "unknown credentials " + st.Credentials, ""
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		res, err := callSegments(ctx, cl, st, input, creds)
		cancel()
		if err != nil {
			return "client failed: " + err.Error(), ""
		}
		if res.Fail != "" {
			return "client failed: " + res.Fail, ""
		}
		if res.UnknownParameter != "" {
			if st.Feature != "" && strings.Contains(res.UnknownParameter, st.Feature) {
				return "", res.UnknownParameter
			}
			return "client refused the input: " + res.UnknownParameter, ""
		}
		problem := checkClientResult(cl, st, res, vars)
		if problem == "" || attempt >= st.Retry {
			return problem, ""
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// callSegments calls the step's operation once; or once per segment of a
// segmented Scan; or, for pages, again from each LastEvaluatedKey until
// there is none: then it merges the Items and Counts and counts the Pages.
func callSegments(ctx context.Context, cl ddbTestClient, st clientStep, input map[string]any, creds clientCreds) (clientResult, error) {
	if st.Segments == 0 && !st.Pages {
		return cl.call(ctx, st.Op, input, creds)
	}
	merged := map[string]any{"Items": []any{}, "Count": 0.0, "ScannedCount": 0.0, "Pages": 0.0}
	in := map[string]any{}
	for k, v := range input {
		in[k] = v
	}
	for seg := 0; ; {
		if st.Segments > 0 {
			in["Segment"], in["TotalSegments"] = seg, st.Segments
		}
		res, err := cl.call(ctx, st.Op, in, creds)
		if err != nil || res.Fail != "" || res.Error != nil || res.UnknownParameter != "" {
			return res, err
		}
		items, _ := res.Output["Items"].([]any)
		merged["Items"] = append(merged["Items"].([]any), items...)
		for _, k := range []string{"Count", "ScannedCount"} {
			n, _ := res.Output[k].(float64)
			merged[k] = merged[k].(float64) + n
		}
		merged["Pages"] = merged["Pages"].(float64) + 1
		if lek, ok := res.Output["LastEvaluatedKey"]; ok && st.Pages && merged["Pages"].(float64) < 100 {
			in["ExclusiveStartKey"] = lek
			continue
		}
		delete(in, "ExclusiveStartKey")
		if seg++; seg >= st.Segments {
			return clientResult{Output: merged}, nil
		}
	}
}

// checkClientResult compares a result with the step's expectations and
// saves its variables.
func checkClientResult(cl ddbTestClient, st clientStep, res clientResult, vars map[string]any) string {
	if st.Error != "" {
		if res.Error == nil {
			return fmt.Sprintf("want %s, got output %s", st.Error, compactJSON(res.Output))
		}
		if res.Error.Type != st.Error {
			return fmt.Sprintf("want %s, got %s: %s", st.Error, res.Error.Type, res.Error.Message)
		}
		if st.ErrorExpect != nil && cl.errorFields() {
			want := substitute(st.ErrorExpect, vars)
			if p := matchSubset("error", want, normalizeJSON(res.Error.Fields)); p != "" {
				return p + "\nerror fields: " + compactJSON(res.Error.Fields)
			}
		}
		return ""
	}
	if res.Error != nil {
		return fmt.Sprintf("%s: %s", res.Error.Type, res.Error.Message)
	}
	got := normalizeJSON(res.Output)
	var want any = map[string]any{}
	if st.Expect != nil {
		want = substitute(st.Expect, vars)
	}
	for _, p := range st.Sort {
		p = substitute(p, vars).(string)
		sortAt(got, p)
		sortAt(want, p)
	}
	if st.Expect != nil {
		if p := matchSubset("output", want, got); p != "" {
			return p + "\noutput: " + compactJSON(got)
		}
	}
	for _, p := range st.Present {
		if _, ok := lookupPath(got, substitute(p, vars).(string)); !ok {
			return fmt.Sprintf("%s missing\noutput: %s", p, compactJSON(got))
		}
	}
	for _, p := range st.Absent {
		if _, ok := lookupPath(got, p); ok {
			return fmt.Sprintf("%s should be absent\noutput: %s", p, compactJSON(got))
		}
	}
	for name, p := range st.Save {
		v, ok := lookupPath(got, p)
		if !ok {
			return fmt.Sprintf("%s missing (to save as %s)\noutput: %s", p, name, compactJSON(got))
		}
		vars[name] = v
	}
	return ""
}

var clientVarRE = regexp.MustCompile(`\$\{(\w+)\}`)

// substitute replaces ${name} in the strings and map keys of v: a string
// that is exactly "${name}" becomes the variable's value.
func substitute(v any, vars map[string]any) any {
	switch v := v.(type) {
	case string:
		if m := clientVarRE.FindStringSubmatch(v); m != nil && m[0] == v {
			if x, ok := vars[m[1]]; ok {
				return x
			}
		}
		return clientVarRE.ReplaceAllStringFunc(v, func(s string) string {
			if x, ok := vars[s[2:len(s)-1]].(string); ok {
				return x
			}
			return s
		})
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[substitute(k, vars).(string)] = substitute(x, vars)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = substitute(x, vars)
		}
		return out
	}
	return v
}

// matchSubset reports where got differs from want: every key of a wanted
// object must be in got and match; arrays must have the same length and
// match element by element, except SS, NS and BS values, which compare as
// sets; an empty wanted object or array matches only an empty one.
func matchSubset(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %s", path, compactJSON(got))
		}
		if len(w) == 0 && len(g) != 0 {
			return fmt.Sprintf("%s: want {}, got %s", path, compactJSON(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s: missing", path, k)
			}
			if k == "SS" || k == "NS" || k == "BS" {
				if ws, ok := w[k].([]any); ok {
					if gs, ok := gv.([]any); ok {
						ws, gs = sortedJSON(ws), sortedJSON(gs)
						if p := matchSubset(path+"."+k, ws, gs); p != "" {
							return p
						}
						continue
					}
				}
			}
			if p := matchSubset(path+"."+k, w[k], gv); p != "" {
				return p
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %d elements, got %s", path, len(w), compactJSON(got))
		}
		for i := range w {
			if p := matchSubset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); p != "" {
				return p
			}
		}
		return ""
	}
	if want != got {
		return fmt.Sprintf("%s: want %s, got %s", path, compactJSON(want), compactJSON(got))
	}
	return ""
}

// sortedJSON returns a copy of xs sorted by their JSON text.
func sortedJSON(xs []any) []any {
	out := append([]any(nil), xs...)
	sort.Slice(out, func(i, j int) bool { return compactJSON(out[i]) < compactJSON(out[j]) })
	return out
}

// sortAt sorts, in place, the array at the dotted path p of v, if any.
func sortAt(v any, p string) {
	dir, last := "", p
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		dir, last = p[:i], p[i+1:]
	}
	parent := v
	if dir != "" {
		parent, _ = lookupPath(v, dir)
	}
	if m, ok := parent.(map[string]any); ok {
		if xs, ok := m[last].([]any); ok {
			m[last] = sortedJSON(xs)
		}
	}
}

// lookupPath returns the value at a dotted path of objects.
func lookupPath(v any, p string) (any, bool) {
	for _, k := range strings.Split(p, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// normalizeJSON returns v as encoding/json decodes it (numbers float64).
func normalizeJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable: %v", err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Sprintf("undecodable: %v", err)
	}
	return out
}

// compactJSON renders v for a message, cut at 2,000 characters.
func compactJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(data) > 2000 {
		return string(data[:2000]) + "…"
	}
	return string(data)
}

// processClient is a client whose adapter runs as a process reading one
// request a line on stdin and answering one line on stdout
// (testdata/clients/boto3_client.py, sdk_v3_client.cjs).
type processClient struct {
	mu     sync.Mutex
	stdin  io.WriteCloser
	stdout *bufio.Reader
	kill   func()
	dead   error // set once the adapter was killed
}

// startProcessClient starts an adapter and waits for its "ready" line,
// which names the client's version (logged).
func startProcessClient(t *testing.T, ep clientsEndpoint, env []string, name string, args ...string) *processClient {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), append(env, "QC_ENDPOINT="+ep.url, "QC_REGION="+ep.region)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil || t.Failed() {
			t.Logf("%s exited (%v); its stderr:\n%s", name, err, stderr.String())
		}
	})
	pc := &processClient{stdin: stdin, stdout: bufio.NewReader(stdout), kill: func() { cmd.Process.Kill() }}
	line, err := pc.stdout.ReadBytes('\n')
	var ready struct{ Ready string }
	if err != nil || json.Unmarshal(line, &ready) != nil || ready.Ready == "" {
		t.Fatalf("%s did not start (%v): %s\nstderr: %s", name, err, line, stderr.String())
	}
	t.Logf("client: %s", ready.Ready)
	return pc
}

func (pc *processClient) call(ctx context.Context, op string, input map[string]any, creds clientCreds) (clientResult, error) {
	var res clientResult
	err := pc.roundTrip(ctx, map[string]any{"op": op, "input": input, "credentials": creds}, &res)
	return res, err
}

// roundTrip sends req as one line and decodes the answer line into res.
// When ctx ends first the adapter is killed: its answer would come out of
// order.
func (pc *processClient) roundTrip(ctx context.Context, req, res any) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.dead != nil {
		return pc.dead
	}
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := pc.stdin.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("adapter: %w", err)
	}
	type answer struct {
		line []byte
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := pc.stdout.ReadBytes('\n')
		ch <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		pc.kill()
		pc.dead = fmt.Errorf("adapter killed: no answer before %w", ctx.Err())
		return pc.dead
	}
	line, err := a.line, a.err
	if err != nil {
		return fmt.Errorf("adapter: %w", err)
	}
	if err := json.Unmarshal(line, res); err != nil {
		return fmt.Errorf("adapter answered %q: %w", line, err)
	}
	return nil
}

func (pc *processClient) errorFields() bool { return true }

// startBoto3Client starts testdata/clients/boto3_client.py with the
// python3 on PATH, which must import boto3.
func startBoto3Client(t *testing.T, ep clientsEndpoint) ddbTestClient {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "boto3: no python3 on PATH")
	}
	if out, err := exec.Command(py, "-c", "import boto3").CombinedOutput(); err != nil {
		testenv.Missing(t, "boto3: python3 cannot import boto3 (Debian: python3-boto3): %v %s", err, out)
	}
	return startProcessClient(t, ep, nil, py, filepath.Join("testdata", "clients", "boto3_client.py"))
}

// startJSv3Client starts testdata/clients/sdk_v3_client.cjs with node and
// @aws-sdk/client-dynamodb from $PEERS_DIR.
func startJSv3Client(t *testing.T, ep clientsEndpoint) ddbTestClient {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "AWS SDK for JavaScript v3: no node on PATH")
	}
	peers := testenv.PeersDir()
	if _, err := os.Stat(filepath.Join(peers, "node_modules", "@aws-sdk", "client-dynamodb", "package.json")); err != nil {
		testenv.Missing(t, "AWS SDK for JavaScript v3: @aws-sdk/client-dynamodb is not in %s", peers)
	}
	return startProcessClient(t, ep, []string{"PEERS_DIR=" + peers, "NODE_NO_WARNINGS=1"}, node, filepath.Join("testdata", "clients", "sdk_v3_client.cjs"))
}

// cliClient runs `aws dynamodb <operation> --cli-input-json ...` once per
// request: inside one Python process through the CLI's own entry point
// (testdata/clients/aws_cli_client.py) when the python3 on PATH imports
// the aws on PATH's awscli, as pip, pyenv and Debian's awscli package (v2)
// install it: the CLI's start-up, over a second on a loaded machine, is
// then paid once instead of about sixty times. Else aws runs as a process
// of its own.
type cliClient struct {
	aws    string
	ep     clientsEndpoint
	inProc *processClient // nil: run aws once per request
	// v1 is AWS CLI v1, which takes B values in JSON input as text (v2
	// decodes them from base64, as the wire does).
	v1 bool
}

// startCLIClient finds the aws on PATH and its version, and runs the
// commands in process when python3 imports the same awscli.
func startCLIClient(t *testing.T, ep clientsEndpoint) ddbTestClient {
	aws, err := exec.LookPath("aws")
	if err != nil {
		testenv.Missing(t, "AWS CLI: no aws on PATH (Debian: awscli)")
	}
	out, err := exec.Command(aws, "--version").CombinedOutput()
	if err != nil {
		testenv.Missing(t, "AWS CLI: aws --version: %v %s", err, out)
	}
	version := strings.TrimSpace(string(out))
	t.Logf("client: %s", version)
	c := &cliClient{aws: aws, ep: ep, v1: strings.HasPrefix(version, "aws-cli/1.")}
	py, err := exec.Command("python3", "-c", "import awscli; print(awscli.__version__)").Output()
	if err == nil && strings.HasPrefix(version, "aws-cli/"+strings.TrimSpace(string(py))+" ") {
		c.inProc = startProcessClient(t, ep, nil, "python3", filepath.Join("testdata", "clients", "aws_cli_client.py"))
	} else {
		t.Logf("python3 does not import this aws's awscli: aws runs once per request")
	}
	return c
}

var cliErrorRE = regexp.MustCompile(`An error occurred \(([^)]+)\) when calling the \w+ operation(?: \(reached max retries: \d+\))?: ?(.*)`)

func (c *cliClient) call(ctx context.Context, op string, input map[string]any, creds clientCreds) (clientResult, error) {
	if c.v1 {
		var err error
		if input, err = binaryAsText(input); err != nil {
			return clientResult{}, err
		}
	}
	in, err := json.Marshal(input)
	if err != nil {
		return clientResult{}, err
	}
	// The input goes in a file: an argument is limited to 128 KiB.
	f, err := os.CreateTemp("", "quarry-cli-input-*.json")
	if err != nil {
		return clientResult{}, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(in); err != nil {
		f.Close()
		return clientResult{}, err
	}
	if err := f.Close(); err != nil {
		return clientResult{}, err
	}
	args := []string{"dynamodb", cliCommand(op),
		"--endpoint-url", c.ep.url, "--region", c.ep.region, "--output", "json", "--no-paginate",
		"--cli-input-json", "file://" + f.Name()}
	env := map[string]string{"AWS_ACCESS_KEY_ID": creds.ID, "AWS_SECRET_ACCESS_KEY": creds.Secret,
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_MAX_ATTEMPTS": "1", "AWS_RETRY_MODE": "standard", "AWS_PAGER": "", "AWS_EC2_METADATA_DISABLED": "true"}
	var ran struct {
		RC     int    `json:"rc"`
		Stdout string `json:"stdout"`
		Stderr string `json:"stderr"`
	}
	if c.inProc != nil {
		if err := c.inProc.roundTrip(ctx, map[string]any{"args": args, "env": env}, &ran); err != nil {
			return clientResult{}, err
		}
	} else {
		cmd := exec.CommandContext(ctx, c.aws, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "AWS_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return clientResult{}, fmt.Errorf("aws dynamodb %s: %w", cliCommand(op), err)
		}
		ran.RC, ran.Stdout, ran.Stderr = cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	if ran.RC != 0 {
		if strings.Contains(ran.Stderr, "Unknown parameter in input") {
			return clientResult{UnknownParameter: strings.TrimSpace(ran.Stderr)}, nil
		}
		if m := cliErrorRE.FindStringSubmatch(ran.Stderr); m != nil {
			return clientResult{Error: &clientError{Type: m[1], Message: strings.TrimSpace(m[2])}}, nil
		}
		return clientResult{}, fmt.Errorf("aws dynamodb %s exited %d: %s", cliCommand(op), ran.RC, ran.Stderr)
	}
	out := map[string]any{}
	if s := strings.TrimSpace(ran.Stdout); s != "" {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return clientResult{}, fmt.Errorf("aws dynamodb %s printed %q: %w", cliCommand(op), s, err)
		}
	}
	return clientResult{Output: out}, nil
}

func (c *cliClient) errorFields() bool { return false }

// cliCommand turns an operation name into its CLI command: BatchGetItem
// becomes batch-get-item.
func cliCommand(op string) string {
	var b strings.Builder
	for i, r := range op {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// binaryAsText rewrites the base64 B and BS values of input as the text
// they encode, the way AWS CLI v1 takes them; bytes that are not UTF-8
// cannot be written so.
func binaryAsText(input map[string]any) (map[string]any, error) {
	var conv func(v any) (any, error)
	decode := func(x any) (any, error) {
		s, _ := x.(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("binary value %q is not UTF-8: AWS CLI v1 cannot send it", s)
		}
		return string(b), nil
	}
	conv = func(v any) (any, error) {
		switch v := v.(type) {
		case map[string]any:
			if len(v) == 1 {
				if x, ok := v["B"].(string); ok {
					d, err := decode(x)
					return map[string]any{"B": d}, err
				}
				if xs, ok := v["BS"].([]any); ok {
					out := make([]any, len(xs))
					for i, x := range xs {
						d, err := decode(x)
						if err != nil {
							return nil, err
						}
						out[i] = d
					}
					return map[string]any{"BS": out}, nil
				}
			}
			out := make(map[string]any, len(v))
			for k, x := range v {
				c, err := conv(x)
				if err != nil {
					return nil, err
				}
				out[k] = c
			}
			return out, nil
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				c, err := conv(x)
				if err != nil {
					return nil, err
				}
				out[i] = c
			}
			return out, nil
		}
		return v, nil
	}
	out, err := conv(input)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, errors.New("input is not an object")
	}
	return m, nil
}

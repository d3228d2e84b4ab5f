package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The README's tour and the docs' quick starts, run as written. The sh
// blocks between the "<!-- tour: begin -->" and "<!-- tour: end -->"
// comments of README.md (or of a docs page) are
// run by bash, one block after another in one working directory (variables
// carry over, as in the reader's shell), with only the substitutions
// docs/development.md lists:
//
//   - localhost:8080, 127.0.0.1:8000 and 127.0.0.1:8090 (the demo shop)
//     become free ports of this test, and `bin/quarry datashelf demo`
//     without --shop-listen gets the shop's;
//   - `make build` is not run: the test builds bin/quarry itself;
//   - when the AWS CLI is not installed, its lines are skipped (logged), and
//     the table and item they would create are created through the SDK, so
//     the wire-protocol lines still run;
//   - when Chromium is not installed, the Wallcrawler block is skipped
//     (logged).
//
// The tour reaches no other host: its pages are the demo shop's, on
// loopback. A `# {…}` comment after a command (on its last line, or on the
// line below) is the command's output, with … standing for anything; each
// is checked. What a block leaves running in the background (quarry
// serve, the demo) is stopped, with its process group, at the end.

const (
	tourBegin = "<!-- tour: begin -->"
	tourEnd   = "<!-- tour: end -->"
)

// tourCommand is one command of the tour: its text (continuation lines
// included) and the output its comment shows, if any.
type tourCommand struct {
	text string
	want string
}

// tourBlocks returns the sh blocks of the tour section of doc (named
// name in errors).
func tourBlocks(name, doc string) ([][]string, error) {
	b := strings.Index(doc, tourBegin)
	e := strings.Index(doc, tourEnd)
	if b < 0 || e < b {
		return nil, fmt.Errorf("%s has no %q … %q section", name, tourBegin, tourEnd)
	}
	var blocks [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(doc[b:e], "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		return nil, fmt.Errorf("%s's tour has an unterminated sh block", name)
	}
	return blocks, nil
}

// outputComment matches an output shown after a command: ` # {…}`.
var outputComment = regexp.MustCompile(`(?:^|\s)#\s+([{\[].*)$`)

// parseTourBlock splits a block into commands and their shown outputs.
func parseTourBlock(lines []string) []tourCommand {
	var cmds []tourCommand
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			if m := outputComment.FindStringSubmatch(trimmed); m != nil && len(cmds) > 0 && cmds[len(cmds)-1].want == "" {
				cmds[len(cmds)-1].want = m[1]
			}
			continue
		}
		text := line
		// A command goes on over a line ending in \ and over the lines of a
		// single-quoted string (a JSON body written over several lines).
		for (strings.HasSuffix(strings.TrimRight(line, " "), `\`) || inSingleQuotes(text)) && i+1 < len(lines) {
			i++
			line = lines[i]
			text += "\n" + line
		}
		c := tourCommand{text: text}
		if m := outputComment.FindStringSubmatch(line); m != nil {
			c.want = m[1]
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// inSingleQuotes reports whether the shell text ends inside a
// single-quoted string: quotes are counted outside double quotes and
// outside comments (a # after a blank, up to the end of its line).
func inSingleQuotes(text string) bool {
	single, double, comment := false, false, false
	prev := byte('\n')
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case comment:
			comment = c != '\n'
		case single:
			single = c != '\''
		case double:
			double = c != '"' || prev == '\\'
		case c == '\'':
			single = true
		case c == '"':
			double = true
		case c == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			comment = true
		}
		prev = c
	}
	return single
}

// tourPattern turns a shown output into a regular expression: … matches
// anything, the rest literally.
func tourPattern(want string) *regexp.Regexp {
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`)
}

func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds quarry and runs the README's tour; skipped in -short mode")
	}
	t.Parallel()
	runTour(t, "README.md", 5, 6)
}

// TestDocsQuickStarts runs the quick start of each system's page in docs/
// as TestReadmeTour runs the README's: each page's sh blocks between the
// tour markers, as written, against its own quarry serve and demo shop.
func TestDocsQuickStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the docs' quick starts; skipped in -short mode")
	}
	for _, tt := range []struct {
		doc                 string
		minBlocks, minShown int
	}{
		{"docs/datashelf.md", 1, 2},
		{"docs/checks.md", 1, 3},
		{"docs/eecar.md", 1, 3},
		{"docs/wallcrawler.md", 1, 2},
	} {
		t.Run(filepath.Base(tt.doc), func(t *testing.T) {
			t.Parallel()
			runTour(t, tt.doc, tt.minBlocks, tt.minShown)
		})
	}
}

// runTour runs the tour of doc (a path from the repository's root): at
// least minBlocks sh blocks, at least minShown of whose outputs are shown
// and checked.
func runTour(t *testing.T, doc string, minBlocks, minShown int) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	for _, tool := range []string{"curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: the tour uses it", tool)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatal(err)
	}
	_, awsErr := exec.LookPath("aws")
	if awsErr != nil {
		t.Logf("the AWS CLI (aws) is not installed: its lines are skipped, the table they create is created through the SDK")
	}
	_, chromiumErr := exec.LookPath("chromium")
	if chromiumErr != nil {
		t.Logf("chromium is not installed: the Wallcrawler block is skipped")
	}

	api, store, shop := freeAddr(t), freeAddr(t), freeAddr(t)
	_, apiPort, _ := net.SplitHostPort(api)
	_, storePort, _ := net.SplitHostPort(store)
	_, shopPort, _ := net.SplitHostPort(shop)

	text := string(readme)
	text = strings.NewReplacer(
		"localhost:8080", "localhost:"+apiPort,
		"127.0.0.1:8080", "127.0.0.1:"+apiPort,
		"127.0.0.1:8000", "127.0.0.1:"+storePort,
		"127.0.0.1:8090", "127.0.0.1:"+shopPort,
	).Replace(text)
	blocks, err := tourBlocks(doc, text)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if strings.Contains(strings.Join(b, "\n"), "https://") {
			t.Fatalf("%s's tour names an https:// address; it must run offline:\n%s", doc, strings.Join(b, "\n"))
		}
	}
	if len(blocks) < minBlocks {
		t.Fatalf("%s's tour has %d sh blocks; the markers are misplaced", doc, len(blocks))
	}

	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// bin/quarry is the tests' quarry (quarryBinary): this test binary,
	// which runs quarry's main when asQuarryEnv is set (see TestMain), or
	// under -race quarry built without it.
	if err := os.Symlink(quarryBinary(t), filepath.Join(work, "bin", "quarry")); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(work, ".tour-state")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The reader's shell has none of the tests' AWS environment
	// (testAWSEnv): the tour sets its own keys.
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); testAWSEnv[k] == "" {
			env = append(env, kv)
		}
	}
	env = append(env,
		"AWS_CONFIG_FILE="+filepath.Join(work, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(work, "no-aws-credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_PAGER=",
		asQuarryEnv+"=1")

	// The processes the tour starts in the background outlive their
	// blocks: their process groups are stopped at the end, quarry serve's
	// last.
	var demoGroups []int
	serverGroup := 0
	defer func() {
		for _, g := range demoGroups {
			_ = syscall.Kill(-g, syscall.SIGTERM)
		}
		if serverGroup == 0 {
			return
		}
		_ = syscall.Kill(-serverGroup, syscall.SIGTERM)
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", api, 200*time.Millisecond)
			if err != nil {
				break
			}
			c.Close()
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(-serverGroup, syscall.SIGKILL)
	}()

	checked, ran := 0, 0
	for bi, lines := range blocks {
		cmds := parseTourBlock(lines)
		joined := ""
		for _, c := range cmds {
			joined += c.text + "\n"
		}
		if chromiumErr != nil && strings.Contains(joined, "/wallcrawler/v1/sessions") {
			t.Logf("block %d skipped (no chromium):\n%s", bi+1, joined)
			continue
		}
		var script strings.Builder
		// set -a: every variable a block sets is exported, so the next
		// block (another bash) sees it, as the reader's shell would.
		fmt.Fprintf(&script, "set -a -e -o pipefail\n. %s\n", strconv.Quote(state))
		var run []tourCommand
		createsTable := false
		for _, c := range cmds {
			first := strings.TrimSpace(c.text)
			switch {
			case first == "make build" || strings.HasPrefix(first, "make build "):
				t.Logf("block %d: %q not run: the test built bin/quarry", bi+1, first)
				continue
			case strings.HasPrefix(first, "bin/quarry serve "):
				c.text = strings.Replace(c.text, "bin/quarry serve", fmt.Sprintf("bin/quarry serve --listen 127.0.0.1:%s --ddb-listen 127.0.0.1:%s", apiPort, storePort), 1)
			case strings.HasPrefix(first, "bin/quarry datashelf demo") && !strings.Contains(first, "--shop-listen"):
				c.text = strings.Replace(c.text, "bin/quarry datashelf demo", "bin/quarry datashelf demo --shop-listen 127.0.0.1:"+shopPort, 1)
			case strings.HasPrefix(first, "aws ") && awsErr != nil:
				t.Logf("block %d: skipped (no aws): %s", bi+1, first)
				if strings.HasPrefix(first, "aws dynamodb create-table") {
					createsTable = true
				}
				continue
			}
			fmt.Fprintf(&script, "printf '\\n@@tour %d@@\\n'\n%s\n", len(run), c.text)
			run = append(run, c)
		}
		fmt.Fprintf(&script, "export -p > %s\n", strconv.Quote(state))

		stdout, stderr := filepath.Join(work, fmt.Sprintf(".block%d.out", bi+1)), filepath.Join(work, fmt.Sprintf(".block%d.err", bi+1))
		outF, err := os.Create(stdout)
		if err != nil {
			t.Fatal(err)
		}
		errF, err := os.Create(stderr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, bash, "-c", script.String())
		cmd.Dir, cmd.Env = work, env
		// Files, not pipes: Wait must not wait for the server the block
		// leaves running.
		cmd.Stdout, cmd.Stderr = outF, errF
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(script.String(), "bin/quarry serve ") && serverGroup == 0:
			serverGroup = cmd.Process.Pid
		case strings.Contains(script.String(), "bin/quarry datashelf demo"):
			demoGroups = append(demoGroups, cmd.Process.Pid)
		}
		runErr := cmd.Wait()
		cancel()
		outF.Close()
		errF.Close()
		out, _ := os.ReadFile(stdout)
		errOut, _ := os.ReadFile(stderr)
		if runErr != nil {
			t.Fatalf("block %d failed: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", bi+1, runErr, script.String(), out, errOut)
		}
		ran += len(run)

		outputs := map[int]string{}
		parts := regexp.MustCompile(`\n@@tour (\d+)@@\n`).Split("\n"+string(out), -1)
		ids := regexp.MustCompile(`\n@@tour (\d+)@@\n`).FindAllStringSubmatch("\n"+string(out), -1)
		for i, m := range ids {
			n, _ := strconv.Atoi(m[1])
			outputs[n] = strings.TrimSpace(parts[i+1])
		}
		for i, c := range run {
			if c.want == "" {
				continue
			}
			got, ok := outputs[i]
			if !ok {
				t.Fatalf("block %d: no output recorded for %q", bi+1, c.text)
			}
			if !tourPattern(c.want).MatchString(got) {
				t.Errorf("block %d: %s shows\n  %s\nfor\n  %s\nbut it printed\n  %s", bi+1, doc, c.want, c.text, got)
			}
			checked++
		}
		if createsTable {
			tourCreateBooks(t, "http://"+store)
		}
	}
	if checked < minShown {
		t.Fatalf("only %d outputs of %s checked; the tour's # {…} comments are not found", checked, doc)
	}
	t.Logf("ran %d commands of %s's tour, checked %d shown outputs", ran, doc, checked)
}

// tourCreateBooks creates what the tour's AWS CLI lines create, for a
// machine without the AWS CLI.
func tourCreateBooks(t *testing.T, endpoint string) {
	t.Helper()
	ctx := context.Background()
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")})
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String("books"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
	}); err != nil {
		t.Fatalf("create books: %v", err)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("books"), Item: map[string]types.AttributeValue{
		"pk":    &types.AttributeValueMemberS{Value: "shelf-1"},
		"sk":    &types.AttributeValueMemberN{Value: "1"},
		"title": &types.AttributeValueMemberS{Value: "Dune"},
	}}); err != nil {
		t.Fatalf("put into books: %v", err)
	}
}

func TestInSingleQuotes(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{`curl -d '{"a":1}'`, false},
		{`curl -d '{`, true},
		{"curl -d '{\n  \"a\":1}'", false},
		{`curl x   # the API's endpoints`, false},
		{`echo "it's" here`, false},
		{`echo a#b 'c`, true},
	} {
		if got := inSingleQuotes(tt.text); got != tt.want {
			t.Errorf("inSingleQuotes(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

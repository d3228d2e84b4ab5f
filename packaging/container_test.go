package packaging

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// No container runtime is needed here: these tests read the Dockerfile
// and compose.yaml and check what they must hold, since the image cannot
// be built on a machine without a Docker engine.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
	stage     int // index of the FROM it belongs to
}

// parseDockerfile returns the Dockerfile's instructions.
func parseDockerfile(t *testing.T, text string) []instruction {
	t.Helper()
	var out []instruction
	stage := -1
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return out
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	text := readFile(t, "Dockerfile")
	ins := parseDockerfile(t, text)
	var froms []string
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
		}
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:") || !strings.HasSuffix(froms[0], " AS build") || froms[1] != "debian:bookworm-slim" {
		t.Fatalf("FROM lines %q: want a golang build stage, then debian:bookworm-slim", froms)
	}
	final := len(froms) - 1
	all := func(cmd string, stage int) []string {
		var out []string
		for _, in := range ins {
			if in.cmd == cmd && in.stage == stage {
				out = append(out, in.args)
			}
		}
		return out
	}

	// The build: static and stamped as make dist builds.
	build := strings.Join(all("RUN", 0), "\n")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-buildvcs=false", "-X main.version=${VERSION}", "-X main.commit=${COMMIT}", "-X main.date=${DATE}", "./cmd/quarry"} {
		if !strings.Contains(build, want) {
			t.Errorf("build stage lacks %q", want)
		}
	}

	// The run stage: Chromium, fonts, an init, the browser account.
	run := strings.Join(all("RUN", final), "\n")
	for _, want := range []string{"chromium", "fonts-liberation", "tini", "useradd --system", " " + browser.DedicatedUser} {
		if !strings.Contains(run, want) {
			t.Errorf("run stage lacks %q", want)
		}
	}
	if !slices.Contains(all("COPY", final), "--from=build /out/quarry /usr/bin/quarry") {
		t.Errorf("run stage does not copy the built binary to /usr/bin/quarry")
	}

	// Root, on purpose: the reason is stated beside it.
	if users := all("USER", final); len(users) > 0 && users[len(users)-1] != "root" {
		t.Errorf("USER %s: quarry must run as root to switch browsers to %s and make their network namespaces", users[len(users)-1], browser.DedicatedUser)
	}
	for _, why := range []string{"CAP_SYS_ADMIN", browser.DedicatedUser, "network namespace"} {
		if !strings.Contains(text, why) {
			t.Errorf("Dockerfile does not say why quarry runs as root (%q)", why)
		}
	}

	// ENV: known settings; the ports listened on are the ports exposed
	// and checked; the data directory is the volume.
	env := map[string]string{}
	for _, args := range all("ENV", final) {
		for _, kv := range strings.Fields(args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("ENV %q: want KEY=value pairs", args)
			}
			env[k] = v
		}
	}
	known := documentedEnv(t)
	for k := range env {
		if strings.HasPrefix(k, "QUARRY_") && !known[k] {
			t.Errorf("ENV %s is not a setting of docs/flags.md", k)
		}
	}
	exposed := strings.Fields(strings.Join(all("EXPOSE", final), " "))
	apiPort := portOf(t, env["QUARRY_LISTEN"])
	for _, k := range []string{"QUARRY_LISTEN", "QUARRY_DDB_LISTEN"} {
		if p := portOf(t, env[k]); !slices.Contains(exposed, p) {
			t.Errorf("%s=%s: port %s is not in EXPOSE %v", k, env[k], p, exposed)
		}
	}
	if vol := strings.Join(all("VOLUME", final), " "); env["QUARRY_DATA_DIR"] == "" || !strings.Contains(vol, `"`+env["QUARRY_DATA_DIR"]+`"`) {
		t.Errorf("VOLUME %s does not hold QUARRY_DATA_DIR=%s", vol, env["QUARRY_DATA_DIR"])
	}

	health := all("HEALTHCHECK", final)
	if len(health) != 1 || !strings.Contains(health[0], "http://127.0.0.1:"+apiPort+"/healthz") {
		t.Errorf("HEALTHCHECK %q: want one checking /healthz on port %s", health, apiPort)
	} else if strings.Contains(health[0], "--fail") || strings.Contains(health[0], `"-f"`) {
		t.Errorf("HEALTHCHECK fails on a 503; docs/operations.md (Health) says liveness is any answer")
	}

	var entry, cmd []string
	if e := all("ENTRYPOINT", final); len(e) == 1 {
		_ = json.Unmarshal([]byte(e[0]), &entry)
	}
	if c := all("CMD", final); len(c) == 1 {
		_ = json.Unmarshal([]byte(c[0]), &cmd)
	}
	if len(entry) < 3 || entry[0] != "/usr/bin/tini" || entry[len(entry)-1] != "/usr/bin/quarry" || len(cmd) == 0 || cmd[0] != "serve" {
		t.Errorf("ENTRYPOINT %q CMD %q: want tini running /usr/bin/quarry serve", entry, cmd)
	}
	checkServeArgs(t, "Dockerfile CMD", cmd)
}

// portOf returns the port of a host:port address.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		t.Fatalf("address %q has no port", addr)
	}
	return addr[i+1:]
}

func TestCompose(t *testing.T) {
	t.Parallel()
	doc, err := parseYAML(readFile(t, "compose.yaml"))
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	services := mapAt(t, doc, "services")
	quarry, pg, s3, bucket := mapAt(t, services, "quarry"), mapAt(t, services, "postgres"), mapAt(t, services, "s3"), mapAt(t, services, "s3-bucket")

	if quarry["build"] != "." {
		t.Errorf("quarry: build %v, want . (the Dockerfile)", quarry["build"])
	}
	if caps := listAt(t, quarry, "cap_add"); !slices.Contains(caps, "SYS_ADMIN") {
		t.Errorf("quarry: cap_add %v lacks SYS_ADMIN: browsers would share the host's network", caps)
	}
	if vols := listAt(t, quarry, "volumes"); !slices.ContainsFunc(vols, func(v string) bool { return strings.HasSuffix(v, ":/var/lib/quarry") }) {
		t.Errorf("quarry: volumes %v do not hold /var/lib/quarry", vols)
	}
	for _, p := range listAt(t, quarry, "ports") {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("quarry: port %q is published beyond the host's loopback", p)
		}
	}
	var cmd []string
	if err := json.Unmarshal([]byte(fmt.Sprint(quarry["command"])), &cmd); err != nil || len(cmd) == 0 || cmd[0] != "serve" {
		t.Errorf("quarry: command %v, want [\"serve\", ...]", quarry["command"])
	}
	checkServeArgs(t, "compose.yaml quarry command", cmd)

	env := mapAt(t, quarry, "environment")
	known := documentedEnv(t)
	for k := range env {
		if strings.HasPrefix(k, "QUARRY_") && !known[k] {
			t.Errorf("quarry: environment %s is not a setting of docs/flags.md", k)
		}
	}

	// DataShelf's database is the postgres service, with its account.
	db, err := url.Parse(fmt.Sprint(env["QUARRY_DATASHELF_DB"]))
	if err != nil || db.Scheme != "postgres" {
		t.Fatalf("QUARRY_DATASHELF_DB %v: want a postgres:// URL", env["QUARRY_DATASHELF_DB"])
	}
	pgEnv := mapAt(t, pg, "environment")
	pass, _ := db.User.Password()
	if db.Hostname() != "postgres" || db.User.Username() != pgEnv["POSTGRES_USER"] || pass != pgEnv["POSTGRES_PASSWORD"] || strings.TrimPrefix(db.Path, "/") != pgEnv["POSTGRES_DB"] {
		t.Errorf("QUARRY_DATASHELF_DB %s does not match the postgres service (%v)", db.Redacted(), pgEnv)
	}

	// Blobs go to the s3 service, path-style, with its keys, in the bucket
	// s3-bucket creates.
	var gw []string
	if err := json.Unmarshal([]byte(fmt.Sprint(s3["command"])), &gw); err != nil {
		t.Fatalf("s3: command %v: %v", s3["command"], err)
	}
	arg := func(name string) string {
		if i := slices.Index(gw, name); i >= 0 && i+1 < len(gw) {
			return gw[i+1]
		}
		return ""
	}
	ep, err := url.Parse(fmt.Sprint(env["QUARRY_BLOB_S3_ENDPOINT"]))
	if err != nil || ep.Hostname() != "s3" || ":"+ep.Port() != arg("--port") {
		t.Errorf("QUARRY_BLOB_S3_ENDPOINT %v does not reach the s3 service on %s", env["QUARRY_BLOB_S3_ENDPOINT"], arg("--port"))
	}
	if env["QUARRY_BLOB_S3_PATH_STYLE"] != "true" {
		t.Errorf("QUARRY_BLOB_S3_PATH_STYLE %v: versitygw needs path-style requests", env["QUARRY_BLOB_S3_PATH_STYLE"])
	}
	if env["AWS_ACCESS_KEY_ID"] != arg("--access") || env["AWS_SECRET_ACCESS_KEY"] != arg("--secret") {
		t.Errorf("quarry's AWS keys do not match the s3 service's --access/--secret")
	}
	bucketEnv := mapAt(t, bucket, "environment")
	if bucketEnv["AWS_ACCESS_KEY_ID"] != arg("--access") || bucketEnv["AWS_SECRET_ACCESS_KEY"] != arg("--secret") {
		t.Errorf("s3-bucket's AWS keys do not match the s3 service's --access/--secret")
	}
	create := fmt.Sprint(bucket["command"])
	if !strings.Contains(create, "create-bucket --bucket "+fmt.Sprint(env["QUARRY_BLOB_S3_BUCKET"])) || !strings.Contains(create, ep.String()) {
		t.Errorf("s3-bucket does not create QUARRY_BLOB_S3_BUCKET=%v at %s: %s", env["QUARRY_BLOB_S3_BUCKET"], ep, create)
	}

	deps := mapAt(t, quarry, "depends_on")
	if c := mapAt(t, deps, "postgres")["condition"]; c != "service_healthy" {
		t.Errorf("quarry starts before postgres is healthy (condition %v)", c)
	}
	if c := mapAt(t, deps, "s3-bucket")["condition"]; c != "service_completed_successfully" {
		t.Errorf("quarry starts before its bucket exists (condition %v): a missing bucket stops quarry serve", c)
	}
	if _, ok := pg["healthcheck"].(map[string]any); !ok {
		t.Errorf("postgres has no healthcheck for quarry's depends_on")
	}
}

// mapAt returns m[key] as a mapping, failing the test otherwise.
func mapAt(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("compose.yaml: %s is %T, want a mapping", key, m[key])
	}
	return v
}

// listAt returns m[key] as a list of strings, failing the test otherwise.
func listAt(t *testing.T, m map[string]any, key string) []string {
	t.Helper()
	v, ok := m[key].([]any)
	if !ok {
		t.Fatalf("compose.yaml: %s is %T, want a list", key, m[key])
	}
	out := make([]string, len(v))
	for i, e := range v {
		out[i] = fmt.Sprint(e)
	}
	return out
}

// yamlLine is a line of block YAML: its indentation and text.
type yamlLine struct {
	indent int
	text   string
}

var trailingComment = regexp.MustCompile(`\s+#.*$`)

// parseYAML parses the block YAML compose.yaml is written in: mappings,
// lists of scalars, plain and double-quoted scalars, folded scalars
// (>-), and flow sequences kept as their JSON text. It is no general YAML
// parser, and fails on anything else, so that compose.yaml stays in what
// this test can check.
func parseYAML(text string) (map[string]any, error) {
	var lines []yamlLine
	for _, raw := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			lines = append(lines, yamlLine{indent: -1, text: raw})
			continue
		}
		if !strings.ContainsAny(trimmed, `"'`) {
			trimmed = trailingComment.ReplaceAllString(trimmed, "")
		}
		lines = append(lines, yamlLine{indent: len(raw) - len(strings.TrimLeft(raw, " ")), text: trimmed})
	}
	v, next, err := parseBlock(lines, 0, 0)
	if err != nil {
		return nil, err
	}
	for ; next < len(lines); next++ {
		if lines[next].indent >= 0 {
			return nil, fmt.Errorf("line %d: unexpected %q", next+1, lines[next].text)
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the document is not a mapping")
	}
	return m, nil
}

// parseBlock parses the block starting at line i, indented by indent.
func parseBlock(lines []yamlLine, i, indent int) (any, int, error) {
	for i < len(lines) && lines[i].indent < 0 {
		i++
	}
	if i >= len(lines) {
		return nil, i, nil
	}
	if strings.HasPrefix(lines[i].text, "- ") {
		var list []any
		for i < len(lines) && (lines[i].indent < 0 || lines[i].indent == indent && strings.HasPrefix(lines[i].text, "- ")) {
			if lines[i].indent < 0 {
				i++
				continue
			}
			item := strings.TrimPrefix(lines[i].text, "- ")
			if item == ">-" {
				s, next := folded(lines, i+1, indent)
				list, i = append(list, s), next
				continue
			}
			if strings.Contains(item, ": ") {
				return nil, i, fmt.Errorf("line %d: a list of mappings is not parsed here", i+1)
			}
			v, err := scalar(item)
			if err != nil {
				return nil, i, fmt.Errorf("line %d: %w", i+1, err)
			}
			list = append(list, v)
			i++
		}
		return list, i, nil
	}
	m := map[string]any{}
	for i < len(lines) {
		l := lines[i]
		if l.indent < 0 {
			i++
			continue
		}
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, i, fmt.Errorf("line %d: unexpected indentation", i+1)
		}
		key, rest, ok := strings.Cut(l.text, ":")
		if !ok {
			return nil, i, fmt.Errorf("line %d: %q is not key: value", i+1, l.text)
		}
		rest = strings.TrimSpace(rest)
		if _, dup := m[key]; dup {
			return nil, i, fmt.Errorf("line %d: duplicate key %s", i+1, key)
		}
		switch {
		case rest == ">-":
			m[key], i = folded(lines, i+1, indent)
		case rest == "":
			j := i + 1
			for j < len(lines) && lines[j].indent < 0 {
				j++
			}
			if j < len(lines) && (lines[j].indent > indent || lines[j].indent == indent && strings.HasPrefix(lines[j].text, "- ")) {
				v, next, err := parseBlock(lines, j, lines[j].indent)
				if err != nil {
					return nil, i, err
				}
				m[key], i = v, next
			} else {
				m[key], i = nil, i+1
			}
		default:
			v, err := scalar(rest)
			if err != nil {
				return nil, i, fmt.Errorf("line %d: %w", i+1, err)
			}
			m[key], i = v, i+1
		}
	}
	return m, i, nil
}

// folded reads a folded scalar's lines, those indented deeper than indent
// from line i: joined by spaces.
func folded(lines []yamlLine, i, indent int) (string, int) {
	var parts []string
	for i < len(lines) && (lines[i].indent < 0 || lines[i].indent > indent) {
		if lines[i].indent >= 0 {
			parts = append(parts, lines[i].text)
		}
		i++
	}
	return strings.Join(parts, " "), i
}

// scalar decodes a scalar: double-quoted, a flow sequence (kept as its
// JSON text, checked to be JSON), or plain.
func scalar(s string) (any, error) {
	switch {
	case strings.HasPrefix(s, `"`):
		return strconv.Unquote(s)
	case strings.HasPrefix(s, "["):
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("flow sequence %s is not JSON", s)
		}
		return s, nil
	case strings.HasPrefix(s, "'") || strings.HasPrefix(s, "{") || strings.HasPrefix(s, "&") || strings.HasPrefix(s, "*"):
		return nil, fmt.Errorf("%q: not parsed here", s)
	}
	return s, nil
}

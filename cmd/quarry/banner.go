package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/wallcrawler"
)

// bannerLine is one fact of the start banner: Label is what the text
// banner shows (indented under a heading when Sub), Key the attribute of
// the JSON log record, Hint a remark for people that only the text banner
// shows, in parentheses after Value. A line without Key is a heading.
type bannerLine struct {
	Label, Key, Value, Hint string
	Sub                     bool
}

// bannerFacts is what quarry serve reports once it is ready.
type bannerFacts struct {
	c          *config.Config
	dataDir    string // absolute
	api, ddb   string // bound addresses; ddb "" when not served
	embedded   bool   // the embedded store (else c.DynamoDBEndpoint)
	wc         *wallcrawler.System
	policy     *fetch.Policy
	adminSock  string
	dataShelfB string // DataShelf's blobs
	// enabled are the systems --systems names (nil: all).
	enabled map[string]bool
}

// on reports whether --systems names the system.
func (f bannerFacts) on(name string) bool { return f.enabled == nil || f.enabled[name] }

// startBanner lists the facts a new user needs once quarry serve is up:
// where it keeps its data, what it listens on, each system's backends,
// how Wallcrawler's browsers are confined (or why they cannot start), the
// network policy and where to look next.
func startBanner(f bannerFacts) []bannerLine {
	c := f.c
	b := &bannerBuilder{}
	add, hint := b.add, b.hint
	add(false, "version", "version", "%s", version)
	add(false, "data directory", "data_dir", "%s", f.dataDir)

	b.heading("listening")
	add(true, "API", "api", "http://%s", f.api)
	hint("/datashelf /wallcrawler /eecar /checks, /healthz, /metrics")
	switch {
	case f.ddb != "":
		add(true, "DynamoDB", "ddb", "http://%s", f.ddb)
		if c.Credentials == "" {
			hint("AWS CLI and SDKs: --endpoint-url http://" + clientAddr(f.ddb) + ", any credentials")
			add(true, "  requests", "ddb_auth", "UNAUTHENTICATED: any account that can connect reads and writes every table, the systems' included")
			hint("--credentials FILE requires SigV4-signed requests; keep --ddb-listen on loopback of a single-user host")
		} else {
			hint("AWS CLI and SDKs: --endpoint-url http://" + clientAddr(f.ddb) + ", a key of --credentials")
			add(true, "  requests", "ddb_auth", "SigV4-signed with a key of --credentials %s", c.Credentials)
		}
	case !f.embedded:
		add(true, "DynamoDB", "ddb", "not served: the systems use %s", redactURL(c.DynamoDBEndpoint))
	default:
		add(true, "DynamoDB", "ddb", "off (--ddb-listen off)")
	}
	if f.adminSock != "" {
		add(true, "admin channel", "admin_socket", "%s", f.adminSock)
		hint("quarry wallcrawler|checks|eecar … --data-dir " + f.dataDir)
	}

	b.heading("systems")
	var names []string
	for _, n := range config.SystemNames {
		if f.on(n) {
			names = append(names, n)
		}
	}
	add(true, "on this node", "systems", "%s", strings.Join(names, ", "))
	if len(names) < len(config.SystemNames) {
		hint("--systems " + c.Systems + "; the others answer 503")
	}
	notHere := "not started on this node (--systems)"
	tables := "tables in the embedded store"
	if f.embedded {
		add(true, "store", "store", "embedded DynamoDB-compatible store (Pebble) in %s", filepath.Join(f.dataDir, "ddb"))
	} else {
		add(true, "store", "store", "DynamoDB at %s", redactURL(c.DynamoDBEndpoint))
		tables = "tables in DynamoDB"
	}
	b.systems(f, tables, notHere)

	if s := f.policy.String(); s != "" {
		add(false, "network policy", "network_policy", "public addresses and --allow-networks %s", s)
	} else {
		add(false, "network policy", "network_policy", "public addresses only")
		hint("--allow-networks 127.0.0.1:3000 would let tenants reach a local site")
	}
	add(false, "health", "healthz", "http://%s/healthz", clientAddr(f.api))
	add(false, "docs", "docs", "README.md, docs/operations.md, docs/flags.md, docs/<system>.md")
	return b.lines
}

// systems adds each system's line: its backends, or why it does not run
// on this node; Wallcrawler's browsers under it.
func (b *bannerBuilder) systems(f bannerFacts, tables, notHere string) {
	c := f.c
	add, hint := b.add, b.hint
	switch {
	case !f.on("datashelf"):
		add(true, "DataShelf", "datashelf", "%s", notHere)
	case c.DataShelf.DB != "":
		add(true, "DataShelf", "datashelf", "PostgreSQL %s; blobs %s", redactURL(c.DataShelf.DB), f.dataShelfB)
	default:
		add(true, "DataShelf", "datashelf", "SQLite %s; blobs %s", filepath.Join(f.dataDir, "datashelf.db"), f.dataShelfB)
	}
	switch {
	case !f.on("wallcrawler"):
		add(true, "Wallcrawler", "wallcrawler", "%s", notHere)
	case f.wc == nil:
		add(true, "Wallcrawler", "wallcrawler", "%s; blobs %s", tables, blobPlace(c, "wallcrawler", filepath.Join(f.dataDir, "wallcrawler", "blobs")))
		add(true, "  browsers", "browsers", "not started yet: Wallcrawler is waiting for its backends or is disabled (see /healthz)")
	default:
		add(true, "Wallcrawler", "wallcrawler", "%s; blobs %s", tables, blobPlace(c, "wallcrawler", filepath.Join(f.dataDir, "wallcrawler", "blobs")))
		add(true, "  browsers", "browsers", "%s", browserFacts(f.wc, c))
		if _, _, err := f.wc.Browser(); err != nil {
			hint("make run installs chromium when root; else apt-get install chromium, or --chromium PATH")
		}
	}
	if f.on("eecar") {
		embeddings := "built-in local embedder"
		if c.EECAR.EmbeddingsURL != "" {
			embeddings = "embeddings from " + redactURL(c.EECAR.EmbeddingsURL)
		}
		add(true, "EECAR", "eecar", "%s; blobs %s; %s", tables, blobPlace(c, "eecar", filepath.Join(f.dataDir, "eecar", "blobs")), embeddings)
	} else {
		add(true, "EECAR", "eecar", "%s", notHere)
	}
	if f.on("checks") {
		email := "email alerts off (no --checks-smtp)"
		if c.Checks.SMTP != "" {
			email = "email alerts through " + c.Checks.SMTP
		}
		add(true, "Checks", "checks", "%s; %s", tables, email)
	} else {
		add(true, "Checks", "checks", "%s", notHere)
	}
}

// bannerBuilder collects the banner's lines.
type bannerBuilder struct{ lines []bannerLine }

// add appends a fact (indented under the last heading when sub).
func (b *bannerBuilder) add(sub bool, label, key, format string, args ...any) {
	b.lines = append(b.lines, bannerLine{Label: label, Key: key, Value: fmt.Sprintf(format, args...), Sub: sub})
}

// hint sets the remark of the last fact.
func (b *bannerBuilder) hint(h string) { b.lines[len(b.lines)-1].Hint = h }

// heading appends a heading.
func (b *bannerBuilder) heading(label string) { b.lines = append(b.lines, bannerLine{Label: label}) }

// browserFacts says which Chromium Wallcrawler runs and how it is
// confined, or why sessions cannot start.
func browserFacts(w *wallcrawler.System, c *config.Config) string {
	path, cf, err := w.Browser()
	if err != nil {
		return fmt.Sprintf("DEGRADED, sessions cannot start: %v", err)
	}
	var b strings.Builder
	if cf.Switched {
		fmt.Fprintf(&b, "%s as %s (uid %d)", path, cf.User, cf.UID)
	} else {
		fmt.Fprintf(&b, "%s as quarry's own user %s (uid %d)", path, cf.User, cf.UID)
	}
	if cf.Sandbox {
		b.WriteString(", Chromium sandbox on")
	} else {
		b.WriteString(", Chromium sandbox OFF")
	}
	if cf.Netns {
		b.WriteString(", own network each")
	} else {
		b.WriteString(", host network (confinement degraded)")
	}
	if c.Wallcrawler.Pool > 0 {
		fmt.Fprintf(&b, ", %d kept warm", c.Wallcrawler.Pool)
	}
	if len(cf.Warnings) > 0 {
		fmt.Fprintf(&b, "; warning: %s", strings.Join(cf.Warnings, "; "))
	}
	return b.String()
}

// blobPlace is where a system's blobs are kept: its directory, or its
// prefix of the S3 bucket.
func blobPlace(c *config.Config, name, dir string) string {
	if c.BlobS3Bucket == "" {
		return "in " + dir
	}
	place := "in s3://" + c.BlobS3Bucket + "/" + name + "/"
	if c.BlobS3Endpoint != "" {
		place += " at " + redactURL(c.BlobS3Endpoint)
	}
	return place
}

// redactURL hides a URL's password.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// clientAddr is addr as a client on this machine reaches it: an
// unspecified host (":8080", "0.0.0.0:8080") becomes 127.0.0.1.
func clientAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// printBanner writes the banner: a block of text on w when the log format
// is text (what a person reads), one structured log record otherwise, so
// that a JSON log stays one JSON object a line.
func printBanner(c *config.Config, log *slog.Logger, w io.Writer, lines []bannerLine) {
	if c.LogFormat == "json" {
		var attrs []any
		for _, l := range lines {
			if l.Key != "" {
				attrs = append(attrs, l.Key, l.Value)
			}
		}
		log.Info("quarry serving", attrs...)
		return
	}
	var b strings.Builder
	b.WriteString("\nquarry serve is ready\n")
	for _, l := range lines {
		if l.Hint != "" {
			l.Value += "  (" + l.Hint + ")"
		}
		switch {
		case l.Key == "":
			fmt.Fprintf(&b, "  %s\n", l.Label)
		case l.Sub:
			fmt.Fprintf(&b, "    %-14s %s\n", l.Label, l.Value)
		default:
			fmt.Fprintf(&b, "  %-16s %s\n", l.Label, l.Value)
		}
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version, commit and date describe the build. Release builds (make dist,
// the container image) set all three with
// -ldflags "-X main.version=... -X main.commit=... -X main.date=...":
// version from git describe, commit the full commit hash, date the
// commit's time in RFC 3339 (UTC), so that two builds of one commit are
// identical. A build that does not set commit and date takes them from
// Go's VCS stamp when it has one (a go build inside a git checkout).
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// buildInfo is what `quarry version` prints.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Date     string `json:"date"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// currentBuild returns this binary's build information: the linker-set
// values, completed from the VCS stamp (vcs.revision, vcs.time,
// vcs.modified) where they are empty; "unknown" where neither says.
func currentBuild() buildInfo {
	b := buildInfo{
		Version:  version,
		Commit:   commit,
		Date:     date,
		Go:       runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		vcs := map[string]string{}
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
		if b.Commit == "" && vcs["vcs.revision"] != "" {
			b.Commit = vcs["vcs.revision"]
			if vcs["vcs.modified"] == "true" {
				b.Commit += "-dirty"
			}
		}
		if b.Date == "" {
			b.Date = vcs["vcs.time"]
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

// cmdVersion prints the build information: as aligned lines, or with
// --json as one JSON object.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the build information as one JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "quarry version: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	b := currentBuild()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(b)
	}
	_, err := fmt.Fprintf(stdout, "quarry %s\ncommit   %s\nbuilt    %s\ngo       %s %s\n",
		b.Version, b.Commit, b.Date, b.Go, b.Platform)
	return err
}

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/platform/config"
)

// Two processes on one machine without --node-id must not share a node id
// (each would take the other's Wallcrawler lease and sessions for its own);
// a restart of the same process keeps its id.
func TestDefaultNodeID(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	a1 := nodeID(&config.Config{DataDir: "/srv/quarry-a"})
	a2 := nodeID(&config.Config{DataDir: "/srv/quarry-a/"})
	b := nodeID(&config.Config{DataDir: "/srv/quarry-b"})
	if a1 != a2 {
		t.Errorf("same data dir: %q and %q, want one id across restarts", a1, a2)
	}
	if a1 == b {
		t.Errorf("two data dirs on one host share the node id %q", a1)
	}
	if !strings.HasPrefix(a1, host+"-") || strings.ContainsAny(a1, ": /") {
		t.Errorf("default node id %q: want the host name %q and a suffix, without ':', '/' or spaces", a1, host)
	}
	if got := nodeID(&config.Config{DataDir: "/srv/quarry-a", NodeID: "n1"}); got != "n1" {
		t.Errorf("--node-id n1 gave %q", got)
	}
}

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quarrydb/quarry/internal/testenv"
)

// hostAddrEnv marks the test binary re-run inside a network namespace of
// its own by TestHostAddressesRefused.
const hostAddrEnv = "QUARRY_TEST_HOST_ADDR_NETNS"

// hostPublicAddr is the public address the test gives its namespace: an
// address of the host that is not loopback, private or special, so only
// the host-address reservation can refuse it.
const hostPublicAddr = "11.22.33.44"

// TestHostAddressesRefused plays a tenant aiming at a service on one of
// the host's own public addresses: a Checks monitor, a Checks alert
// webhook and a Wallcrawler browser are refused, under the default
// policy, and the canary is never reached. The host is a network
// namespace the test makes (the test binary re-runs itself inside it),
// with a public address on its loopback interface.
func TestHostAddressesRefused(t *testing.T) {
	if os.Getenv(hostAddrEnv) == "" {
		if os.Geteuid() != 0 {
			testenv.Missing(t, "making a network namespace needs root")
		}
		for _, tool := range []string{"unshare", "ip"} {
			if _, err := exec.LookPath(tool); err != nil {
				testenv.Missing(t, "no %s: %v", tool, err)
			}
		}
		testenv.Chromium(t)
		t.Parallel()
		cmd := exec.Command("unshare", "--net", "--", os.Args[0], "-test.run=^TestHostAddressesRefused$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), hostAddrEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestHostAddressesRefused") {
			t.Fatalf("inside the namespace: %v\n%s", err, out)
		}
		return
	}

	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		// On loopback: the dummy and veth drivers may be missing.
		{"addr", "add", hostPublicAddr + "/32", "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var hits atomic.Int64
	ln, err := net.Listen("tcp", hostPublicAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	canary := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "<title>canary</title>HOST-SERVICE-CANARY")
	})}
	go canary.Serve(ln)
	t.Cleanup(func() { canary.Close() })
	target := "http://" + ln.Addr().String() + "/"

	// quarry serve with the default policy; its Checks API through the
	// Checks test helpers.
	w := startWallcrawlerServer(t)
	s := &checksServer{t: t, dir: w.dir, api: w.api, store: w.store}

	token := s.createUser("tenant@example.com")
	if code, body := s.do("POST", "/v1/checks", token, map[string]any{"url": target, "checkType": "AVAILABILITY", "delayMs": 60000}); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body), "address of this host") {
		t.Errorf("a monitor on the host's own address: %d %v, want 400 naming the host's address", code, body)
	}
	if code, body := s.do("PUT", "/v1/me/alerts", token, map[string]any{"webhookUrl": target + "hook"}); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body), "address of this host") {
		t.Errorf("an alert webhook to the host's own address: %d %v, want 400 naming the host's address", code, body)
	}

	w.cli("wallcrawler", "project", "create", "--name", "tenant", "--id", "project_tenant")
	key := w.cli("wallcrawler", "key", "create", "--project", "project_tenant")
	c := dialCDP(t, w.createSession(key).ConnectURL)
	sess, _ := c.attachPage()
	if got := c.navigate(sess, target); strings.Contains(got, "HOST-SERVICE-CANARY") || !strings.Contains(got, "address of this host") {
		t.Errorf("the browser's navigation to the host's own address: %q, want the egress refusal naming it", got)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the host's service was reached %d times", n)
	}
}

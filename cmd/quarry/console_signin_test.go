package main

import (
	"strings"
	"testing"
)

// TestConsoleSignInInfersRealm pastes a Checks API token with the
// Operator realm selected: its chk_ prefix signs it in to Checks, and the
// user lands on their dashboard rather than a home page of one card.
func TestConsoleSignInInfersRealm(t *testing.T) {
	s := startChecksServer(t)
	d := newDriver(t, "http://"+s.api)
	token := s.createUser("carol@example.com")
	d.signIn("operator", token)
	if got := d.text("#who"); !strings.Contains(got, "carol@example.com") || !strings.Contains(got, "checks") {
		t.Errorf("signed in as %q", got)
	}
	if got := d.eval(`location.pathname`); got != "/console/checks/" {
		t.Errorf("landed on %q, want the Checks dashboard", got)
	}
}

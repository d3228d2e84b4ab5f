package scheduler_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// TestNewTypesAreDownEverywhere: a failed TCP, TLS, DNS or JSON check is
// loaded through the type-status index under its type, and its run is
// DOWN with its reason in lastResult, the history and the alert, as an
// AVAILABILITY check's is.
func TestNewTypesAreDownEverywhere(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notAfter := time.Now().Add(5 * 24 * time.Hour).Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "quarry test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	jsonSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"status":"degraded"}`)
	}))
	t.Cleanup(jsonSrv.Close)

	for _, tc := range []struct {
		typ, url string
		attrs    map[string]any
		reason   string // the whole error, or its start when prefix
		prefix   bool
	}{
		{probe.TypeTCP, "tcp://" + closedAddr, nil, "connection refused", false},
		{probe.TypeTLS, tlsSrv.URL + "/", nil, "certificate expires in 4 days (" + notAfter.UTC().Format(time.RFC3339) + "), within attributes.daysBeforeExpiry 14", false},
		{probe.TypeDNS, "dns://quarry-check.invalid", nil, "DNS lookup failed: lookup quarry-check.invalid", true},
		{probe.TypeAvailability, jsonSrv.URL, map[string]any{"jsonPath": "status", "expected": "ok"}, `jsonPath "status" is "degraded", expected "ok"`, false},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			e := newEnv(t)
			e.prb = probe.New(probe.Options{Fetch: fetch.Options{AllowPrivate: true}, RootCAs: roots})
			t.Cleanup(e.prb.Close)
			ctx := context.Background()
			if _, err := e.st.SetAlerts(ctx, e.user.ID, "https://hooks.example/x", "", ""); err != nil {
				t.Fatal(err)
			}
			t0 := e.clock.now()
			c, err := e.st.CreateCheck(ctx, store.Check{UserID: e.user.ID, URL: tc.url, Type: tc.typ, DelayMs: 10000, Attributes: tc.attrs}, t0)
			if err != nil {
				t.Fatal(err)
			}
			var al sentAlerts
			s := e.sched(t, "a", &al, nil) // Refresh reads checkType-status-index per type
			if n := s.RunDue(ctx, t0); n != 1 {
				t.Fatalf("ran %d checks, want the %s check", n, tc.typ)
			}
			same := func(got any) bool {
				g, _ := got.(string)
				return g == tc.reason || tc.prefix && strings.HasPrefix(g, tc.reason)
			}
			got, err := e.st.GetCheck(ctx, "", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.LastResult["status"] != "DOWN" || got.LastResult["condition"] != "down" || !same(got.LastResult["error"]) {
				t.Errorf("lastResult %v, want DOWN with %q", got.LastResult, tc.reason)
			}
			if tc.typ == probe.TypeTLS && got.LastResult["certExpiresAt"] != notAfter.UTC().Format("2006-01-02T15:04:05.000Z") {
				t.Errorf("certExpiresAt %v, want %s", got.LastResult["certExpiresAt"], notAfter.UTC())
			}
			runs, err := e.st.Results(ctx, e.user.ID, c.ID, 10)
			if err != nil || len(runs) != 1 || runs[0].Result["status"] != "DOWN" || !same(runs[0].Result["error"]) {
				t.Errorf("history %+v %v, want one DOWN run with %q", runs, err, tc.reason)
			}
			al.mu.Lock()
			defer al.mu.Unlock()
			if len(al.got) != 1 || al.got[0].Event != "down" || al.got[0].CheckType != tc.typ || !strings.Contains(al.got[0].Message, "is DOWN: "+tc.reason) {
				t.Errorf("alerts %+v, want one down alert with %q", al.got, tc.reason)
			}
		})
	}
}

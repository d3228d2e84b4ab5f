package probe

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// selfSigned returns a self-signed certificate for the given names and
// addresses, valid from notBefore to notAfter.
func selfSigned(t *testing.T, dnsNames []string, ips []net.IP, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "quarry test"},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: dnsNames, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsServer starts an HTTPS server on 127.0.0.1 with cfg and returns its
// address.
func tlsServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// junkHandshakeServer answers every connection with a TLS handshake
// record whose message is malformed: crypto/tls fails the handshake with
// an error of no exported type.
func junkHandshakeServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				_, _ = c.Read(buf) // the ClientHello
				// A handshake record holding a ServerHello of length 1.
				_, _ = c.Write([]byte{0x16, 0x03, 0x03, 0x00, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00})
				_, _ = c.Read(buf)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestTLSErrorClassification runs real TLS servers with bad
// certificates or protocols and checks that the prober reports a TLS
// error, and which of them crypto/tls reports with a type (isTLSError):
// the others are recognised by the failed handshake.
func TestTLSErrorClassification(t *testing.T) {
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	now := time.Now()
	tests := []struct {
		name string
		addr func(t *testing.T) string
		// typed: crypto/tls's error has this type (nil: no exported
		// one; a remote alert's type is unexported).
		typed func(error) bool
	}{
		{"self-signed: unknown authority", func(t *testing.T) string {
			return tlsServer(t, &tls.Config{Certificates: []tls.Certificate{selfSigned(t, nil, loopback, now.Add(-time.Hour), now.Add(time.Hour))}})
		}, as[x509.UnknownAuthorityError]},
		{"expired", func(t *testing.T) string {
			return tlsServer(t, &tls.Config{Certificates: []tls.Certificate{selfSigned(t, nil, loopback, now.Add(-48*time.Hour), now.Add(-24*time.Hour))}})
		}, func(err error) bool {
			var ci x509.CertificateInvalidError
			return errors.As(err, &ci) && ci.Reason == x509.Expired
		}},
		{"wrong host name", func(t *testing.T) string {
			return tlsServer(t, &tls.Config{Certificates: []tls.Certificate{selfSigned(t, []string{"other.example"}, nil, now.Add(-time.Hour), now.Add(time.Hour))}})
		}, as[x509.HostnameError]},
		{"TLS 1.0 only: the server's alert", func(t *testing.T) string {
			return tlsServer(t, &tls.Config{MaxVersion: tls.VersionTLS10, Certificates: []tls.Certificate{selfSigned(t, nil, loopback, now.Add(-time.Hour), now.Add(time.Hour))}})
		}, nil},
		{"plain HTTP on the https port", func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			t.Cleanup(srv.Close)
			return srv.Listener.Addr().String()
		}, as[tls.RecordHeaderError]},
		{"malformed handshake", junkHandshakeServer, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.addr(t)
			// What crypto/tls returns, as the prober's transport sees it.
			conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "127.0.0.1"})
			if err == nil {
				conn.Close()
				t.Fatal("handshake succeeded")
			}
			if tt.typed != nil && !tt.typed(err) {
				t.Errorf("handshake error %T %v: not of the expected type", err, err)
			}
			if got := isTLSError(err); got != (tt.typed != nil) {
				t.Errorf("isTLSError(%T %v) = %v, want %v", err, err, got, tt.typed != nil)
			}
			p := testProber(t)
			res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: "https://" + addr + "/", Timeout: 5 * time.Second})
			if res.Status != StatusDown || res.Permanent || !strings.HasPrefix(res.Error, "TLS error: ") {
				t.Fatalf("got %+v, want DOWN with a TLS error", res)
			}
		})
	}
}

// as reports whether err is or wraps an E.
func as[E error](err error) bool {
	var e E
	return errors.As(err, &e)
}

// TestNotTLSErrors: failures that are not TLS's are not reported as such.
func TestNotTLSErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := testProber(t)
	res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: "https://" + addr + "/", Timeout: 5 * time.Second})
	if res.Error != "connection refused" {
		t.Fatalf("got %+v, want connection refused", res)
	}
	for _, err := range []error{context.Canceled, &net.OpError{Op: "dial", Err: &net.DNSError{IsNotFound: true}}, net.ErrClosed} {
		if isTLSError(err) {
			t.Errorf("isTLSError(%v) = true", err)
		}
	}
}

package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// runTCP connects to ps.addr through the policy's dialer: UP when the
// connection opens (it is closed at once, nothing is sent).
func (p *Prober) runTCP(parent, ctx context.Context, ps spec) Result {
	start := p.now()
	c, err := p.f.Dialer().DialContext(ctx, "tcp", ps.addr)
	elapsed := p.now().Sub(start)
	if err != nil {
		return p.failure(parent, ps, err, false, elapsed)
	}
	c.Close()
	return Result{Status: StatusUp, Condition: ConditionOK, ResponseTime: elapsed.Milliseconds()}
}

// runTLS connects to ps.addr through the policy's dialer and completes a
// TLS handshake (nothing is sent after it). The certificate is verified
// after the handshake rather than by it, so that CertExpiresAt is known
// for an invalid or expired certificate too: DOWN when it does not verify
// for ps.host or expires within ps.days days.
func (p *Prober) runTLS(parent, ctx context.Context, ps spec) Result {
	start := p.now()
	c, err := p.f.Dialer().DialContext(ctx, "tcp", ps.addr)
	if err != nil {
		return p.failure(parent, ps, err, false, p.now().Sub(start))
	}
	defer c.Close()
	cfg := &tls.Config{
		// Verified below with the same roots and host name, against
		// the chain the server sent; no data crosses this connection.
		InsecureSkipVerify: true,
		NextProtos:         []string{"h2", "http/1.1"},
	}
	if _, err := netip.ParseAddr(ps.host); err != nil {
		cfg.ServerName = ps.host
	}
	tc := tls.Client(c, cfg)
	err = tc.HandshakeContext(ctx)
	elapsed := p.now().Sub(start)
	if err != nil {
		return p.failure(parent, ps, err, true, elapsed)
	}
	certs := tc.ConnectionState().PeerCertificates
	res := Result{ResponseTime: elapsed.Milliseconds(), Status: StatusDown, Condition: ConditionDown, Alerting: true}
	if len(certs) == 0 {
		res.Error = "TLS error: the server sent no certificate"
		return res
	}
	leaf := certs[0]
	res.CertExpiresAt = leaf.NotAfter.UTC()
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	now := p.now()
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: ps.host, Roots: p.roots, Intermediates: inter, CurrentTime: now}); err != nil {
		res.Error = "TLS error: " + err.Error()
		return res
	}
	left := leaf.NotAfter.Sub(now)
	if left < time.Duration(ps.days)*24*time.Hour {
		res.Error = fmt.Sprintf("certificate expires in %d days (%s), within attributes.daysBeforeExpiry %d",
			int(left.Hours()/24), res.CertExpiresAt.Format(time.RFC3339), ps.days)
		return res
	}
	res.Status, res.Condition, res.Alerting = StatusUp, ConditionOK, false
	return res
}

// runDNS resolves ps.name's ps.recordType records with the system
// resolver (the one quarry itself uses; a check cannot name another) and
// connects nowhere: UP when there is an answer and, with expected, it is
// among the answers. The answers are not put in the Result: a name that
// only the server's resolver knows (an internal zone) must not show its
// records to a tenant.
func (p *Prober) runDNS(parent, ctx context.Context, ps spec) Result {
	start := p.now()
	answers, err := p.lookup(ctx, ps.recordType, ps.name)
	elapsed := p.now().Sub(start)
	res := Result{ResponseTime: elapsed.Milliseconds(), Status: StatusDown, Condition: ConditionDown, Alerting: true}
	switch {
	case err != nil && parent.Err() != nil:
		res.Error = "canceled: " + parent.Err().Error()
		res.Alerting, res.Condition = false, ConditionCanceled
	case err != nil && ctx.Err() != nil:
		res.Error = fmt.Sprintf("timeout after %s", ps.timeout)
	case err != nil:
		res.Error = "DNS lookup failed: " + err.Error()
	case len(answers) == 0:
		res.Error = fmt.Sprintf("no %s records for %s", ps.recordType, ps.name)
	case ps.hasWant && !containsAnswer(ps.recordType, answers, ps.want):
		res.Error = fmt.Sprintf("%q is not among the %d %s records of %s", ps.want, len(answers), ps.recordType, ps.name)
	default:
		res.Status, res.Condition, res.Alerting = StatusUp, ConditionOK, false
	}
	return res
}

// lookup returns name's records of type rt as text.
func (p *Prober) lookup(ctx context.Context, rt, name string) ([]string, error) {
	r := net.DefaultResolver
	var out []string
	switch rt {
	case "A", "AAAA":
		network := "ip4"
		if rt == "AAAA" {
			network = "ip6"
		}
		addrs, err := r.LookupNetIP(ctx, network, name)
		for _, a := range addrs {
			out = append(out, a.Unmap().String())
		}
		return out, err
	case "CNAME":
		c, err := r.LookupCNAME(ctx, name)
		if c != "" {
			out = append(out, c)
		}
		return out, err
	case "MX":
		mxs, err := r.LookupMX(ctx, name)
		for _, m := range mxs {
			out = append(out, m.Host)
		}
		return out, err
	case "NS":
		nss, err := r.LookupNS(ctx, name)
		for _, n := range nss {
			out = append(out, n.Host)
		}
		return out, err
	case "TXT":
		return r.LookupTXT(ctx, name)
	}
	return nil, fmt.Errorf("record type %s", rt)
}

// containsAnswer reports whether want is among answers: addresses are
// compared as addresses, host names without case or the final dot, TXT
// strings exactly.
func containsAnswer(rt string, answers []string, want string) bool {
	for _, a := range answers {
		switch rt {
		case "A", "AAAA":
			x, err1 := netip.ParseAddr(a)
			y, err2 := netip.ParseAddr(want)
			if err1 == nil && err2 == nil && x.Unmap() == y.Unmap() {
				return true
			}
		case "TXT":
			if a == want {
				return true
			}
		default:
			if strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(want, ".")) {
				return true
			}
		}
	}
	return false
}

// jsonAt returns the value of body's JSON at path as text (see jsonText),
// or why there is none.
func jsonAt(body []byte, path []string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("the response is not JSON: %w", err)
	}
	for i, seg := range path {
		at := strings.Join(path[:i], ".")
		if at == "" {
			at = "the top level"
		}
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[seg]
			if !ok {
				return "", fmt.Errorf("no key %q in %s", seg, at)
			}
			v = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(t) {
				return "", fmt.Errorf("no index %s in %s (a list of %d)", seg, at, len(t))
			}
			v = t[n]
		default:
			return "", fmt.Errorf("%s is not an object or a list", at)
		}
	}
	return jsonText(v), nil
}

// jsonText renders a decoded JSON value as attributes.expected is
// written: a string as itself, a number, true, false, null, an object or
// list as compact JSON.
func jsonText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(t)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sameValue reports whether the JSON text got equals want, as text or,
// when both are numbers, as numbers (1.0 is 1).
func sameValue(got, want string) bool {
	if got == want {
		return true
	}
	x, err1 := strconv.ParseFloat(got, 64)
	y, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && x == y
}

// evalJSON checks AVAILABILITY's JSON assertion: "" when it holds, else
// the reason.
func evalJSON(ps spec, body []byte, truncated bool) string {
	path := strings.Join(ps.jsonPath, ".")
	got, err := jsonAt(body, ps.jsonPath)
	if err != nil {
		msg := fmt.Sprintf("jsonPath %q: %s", path, err)
		if truncated {
			msg += fmt.Sprintf(" (body cut at %d bytes)", len(body))
		}
		return msg
	}
	if ps.hasWant && !sameValue(got, ps.want) {
		if len(got) > 100 {
			got = got[:100] + "…"
		}
		return fmt.Sprintf("jsonPath %q is %q, expected %q", path, got, ps.want)
	}
	return ""
}

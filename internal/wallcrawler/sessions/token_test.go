package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestNodeTokens(t *testing.T) {
	now := time.Now()
	tk := NewTokens([]byte("shared-secret-of-the-installation"), func() time.Time { return now })
	tok, err := tk.SignNode("node-a", "sess_1", "")
	if err != nil {
		t.Fatal(err)
	}
	if node, err := tk.VerifyNode(tok, "sess_1", ""); err != nil || node != "node-a" {
		t.Fatalf("VerifyNode = %q, %v", node, err)
	}
	for name, check := range map[string]func() error{
		"other session": func() error { _, err := tk.VerifyNode(tok, "sess_2", ""); return err },
		"other page":    func() error { _, err := tk.VerifyNode(tok, "sess_1", "PAGE"); return err },
		"another page of the same length": func() error {
			p1, err := tk.SignNode("node-a", "sess_1", "PAGE1")
			if err != nil {
				t.Fatal(err)
			}
			_, err = tk.VerifyNode(p1, "sess_1", "PAGE2")
			return err
		},
		"other secret": func() error {
			_, err := NewTokens([]byte("another-secret-entirely-000000"), nil).VerifyNode(tok, "sess_1", "")
			return err
		},
		"a signingKey as node token": func() error {
			sk, err := tk.Sign("sess_1", "p", now.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tk.VerifyNode(sk, "sess_1", "")
			return err
		},
		"a node token as signingKey": func() error { _, err := tk.Verify(tok); return err },
		"expired": func() error {
			late := NewTokens([]byte("shared-secret-of-the-installation"), func() time.Time { return now.Add(NodeTokenTTL + time.Second) })
			_, err := late.VerifyNode(tok, "sess_1", "")
			return err
		},
	} {
		if err := check(); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: %v, want ErrBadToken", name, err)
		}
	}
}

func TestLiveTokens(t *testing.T) {
	now := time.Now()
	tok := NewTokens([]byte("0123456789abcdef0123456789abcdef"), func() time.Time { return now })
	live, err := tok.SignLive("wc_1", "PAGE", true, now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, err := tok.VerifyLive(live)
	if err != nil || c.SessionID != "wc_1" || c.PageID != "PAGE" || !c.ViewOnly || !c.ExpiresAt.Equal(now.Add(LiveTokenTTL).Truncate(time.Second)) {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := tok.Verify(live); err == nil {
		t.Fatal("a live-view token is accepted as a signingKey")
	}
	key, _ := tok.Sign("wc_1", "p", now.Add(time.Hour))
	if _, err := tok.VerifyLive(key); err == nil {
		t.Fatal("a signingKey is accepted as a live-view token")
	}
	short, _ := tok.SignLive("wc_1", "", false, now.Add(time.Minute))
	now = now.Add(2 * time.Minute)
	if _, err := tok.VerifyLive(short); err == nil {
		t.Fatal("a live-view token outlives its session")
	}
}

// TestSigningKeySubjectIsTheSession: a signingKey signed with the
// installation's secret whose subject names another session than its
// sessionId claim is refused (a token minted for one session must not be
// read as another's by code that trusts either claim).
func TestSigningKeySubjectIsTheSession(t *testing.T) {
	now := time.Now()
	secret := []byte("shared-secret-of-the-installation")
	tk := NewTokens(secret, func() time.Time { return now })
	mint := func(session, subject string) string {
		c := Claims{SessionID: session, ProjectID: "p", RegisteredClaims: jwt.RegisteredClaims{
			Issuer: tokenIssuer, Subject: subject, Audience: jwt.ClaimStrings{tokenAudience},
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now),
		}}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if _, err := tk.Verify(mint("sess_1", "sess_1")); err != nil {
		t.Fatalf("a well-formed signingKey: %v", err)
	}
	for name, tok := range map[string]string{
		"sub names another session": mint("sess_1", "sess_2"),
		"no sub":                    mint("sess_1", ""),
		"no sessionId":              mint("", "sess_1"),
	} {
		if _, err := tk.Verify(tok); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: %v, want ErrBadToken", name, err)
		}
	}
}

package config

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// ServePolicy builds the one network policy of quarry serve from
// --allow-networks, warns about the deprecated alias, and reserves quarry's
// own listeners and configured backends, which tenants may never reach
// whatever the policy allows.
func (c *Config) ServePolicy(ctx context.Context, log *slog.Logger) (*fetch.Policy, error) {
	for _, w := range c.Deprecations() {
		log.Warn(w)
	}
	p, err := c.NetworkPolicy()
	if err != nil {
		return nil, err
	}
	reserve := func(what, addr string) error {
		if err := p.Reserve(ctx, what, addr); err != nil {
			return fmt.Errorf("network policy: %w", err)
		}
		return nil
	}
	if err := reserve("quarry's API listener", c.Listen); err != nil {
		return nil, err
	}
	if err := reserve("quarry's DynamoDB endpoint", c.DDBListen); err != nil {
		return nil, err
	}
	for _, b := range []struct{ what, rawURL string }{
		{"the DynamoDB backend", c.DynamoDBEndpoint},
		{"DataShelf's PostgreSQL", c.DataShelf.DB},
		{"the S3 endpoint", c.BlobS3Endpoint},
		{"EECAR's embeddings service", c.EECAR.EmbeddingsURL},
	} {
		if addr := urlHostPort(b.rawURL); addr != "" {
			// A backend whose name does not resolve here is refused by
			// name later; it cannot be reserved by address now.
			if err := p.Reserve(ctx, b.what, addr); err != nil {
				log.Warn("network policy: cannot reserve a backend's address", "backend", b.what, "err", err)
			}
		}
	}
	if c.Checks.SMTP != "" {
		if err := p.Reserve(ctx, "the SMTP server", c.Checks.SMTP); err != nil {
			log.Warn("network policy: cannot reserve the SMTP server's address", "err", err)
		}
	}
	if s := p.String(); s != "" {
		log.Info("network policy", "allow", s)
	}
	return p, nil
}

// urlHostPort returns the host:port a backend URL connects to ("" when
// rawURL is empty or has no host), with the scheme's default port.
func urlHostPort(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "postgres", "postgresql":
			port = "5432"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

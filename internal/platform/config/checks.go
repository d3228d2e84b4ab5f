package config

import (
	"errors"
	"fmt"
	"time"
)

// Checks is the configuration of the web-monitoring system.
type Checks struct {
	// TablePrefix prefixes Checks' USER and CHECK tables.
	TablePrefix string
	// MinInterval is the shortest period a check may have.
	MinInterval time.Duration
	// RunTimeout bounds one run of a check; its process renews the run's
	// short lease meanwhile, so a process that dies mid-run delays that
	// check by about the lease (scheduler.Options.RunLease), not this.
	RunTimeout time.Duration
	// Retention keeps each run in a check's history this long.
	Retention time.Duration
	// FreeLimit and ProLimit are the tiers' checkLimit.
	FreeLimit, ProLimit int
	// MaxInflight bounds this process's runs in flight (a run claimed
	// ahead counts from its claim); due checks it has no room for are
	// claimed by the other processes.
	MaxInflight int
	// SMTP (host:port) enables email alerts, sent from SMTPFrom,
	// authenticated with SMTPUser/SMTPPassword when set.
	SMTP, SMTPFrom, SMTPUser, SMTPPassword string
}

func checksDefaults() Checks {
	return Checks{
		TablePrefix: "checks-",
		MinInterval: 10 * time.Second,
		RunTimeout:  30 * time.Second,
		Retention:   7 * 24 * time.Hour,
		FreeLimit:   5,
		ProLimit:    100,
		MaxInflight: 512,
	}
}

func (k *Checks) fields() []field {
	return group(GroupChecks, []field{
		{flag: "checks-table-prefix", usage: "prefix of Checks' USER and CHECK tables", str: &k.TablePrefix},
		{flag: "checks-min-interval", usage: "shortest period (delayMs) a check may have", dur: &k.MinInterval},
		{flag: "checks-run-timeout", usage: "bound of one run of a check (its process renews the run's 8 s lease meanwhile; the checks of a process that dies are taken over within 10 s)", dur: &k.RunTimeout},
		{flag: "checks-retention", usage: "how long each run stays in a check's history (0: none)", dur: &k.Retention},
		{flag: "checks-max-inflight", usage: "most runs in flight in this process; the due checks it has no room for are run by the other processes sharing the store", num: &k.MaxInflight},
		{flag: "checks-free-limit", usage: "checkLimit of the FREE tier", num: &k.FreeLimit},
		{flag: "checks-pro-limit", usage: "checkLimit of the PRO tier", num: &k.ProLimit},
		{flag: "checks-smtp", usage: "SMTP server (host:port) for email alerts; empty: no email", str: &k.SMTP},
		{flag: "checks-smtp-from", usage: "sender of email alerts", str: &k.SMTPFrom},
		{flag: "checks-smtp-user", usage: "SMTP user (PLAIN auth, over TLS or to localhost)", str: &k.SMTPUser},
		{flag: "checks-smtp-password", usage: "SMTP password", str: &k.SMTPPassword},
	})
}

func (k *Checks) validate() []error {
	var errs []error
	if k.MinInterval < time.Second {
		errs = append(errs, fmt.Errorf("config: --checks-min-interval %v: at least 1s", k.MinInterval))
	}
	if k.RunTimeout < time.Second || k.RunTimeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("config: --checks-run-timeout %v: want 1s to 10m", k.RunTimeout))
	}
	if k.MaxInflight < 1 || k.MaxInflight > 100_000 {
		errs = append(errs, fmt.Errorf("config: --checks-max-inflight %d: want 1 to 100000", k.MaxInflight))
	}
	if k.Retention < 0 {
		errs = append(errs, fmt.Errorf("config: --checks-retention %v: must not be negative", k.Retention))
	}
	if k.FreeLimit < 0 || k.ProLimit < 0 {
		errs = append(errs, errors.New("config: --checks-free-limit and --checks-pro-limit must not be negative"))
	}
	if k.SMTP != "" {
		if err := checkAddr("checks-smtp", k.SMTP, false); err != nil {
			errs = append(errs, err)
		}
		if k.SMTPFrom == "" {
			errs = append(errs, errors.New("config: --checks-smtp needs --checks-smtp-from"))
		}
	}
	return errs
}

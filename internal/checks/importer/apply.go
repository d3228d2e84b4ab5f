package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// Server serves a request of the Checks API on behalf of a user
// (api.Handler's ServeAs): an import creates each check as POST
// /v1/checks does, with every validation of the API.
type Server interface {
	ServeAs(w http.ResponseWriter, r *http.Request, userID string)
}

// Validator validates a check's target and attributes under the network
// policy (probe.Prober): what a dry run checks without creating.
type Validator interface {
	Validate(ctx context.Context, s probe.Spec) error
}

// Options says how Apply creates the checks.
type Options struct {
	// DryRun reports what would be created without creating anything:
	// each check's target is validated with Validator, and Room (the
	// checks the user may still have) stands for the tier limit.
	DryRun    bool
	Validator Validator
	Room      int
}

// Summary counts what Apply did.
type Summary struct {
	// Created counts the checks created (would be, in a dry run).
	Created int
	// Refused counts the checks the API refused (its reason reported).
	Refused int
	// Skipped counts the monitors not imported.
	Skipped int
	// Stopped says the import stopped at the user's tier limit (or a
	// suspended account); NotCreated counts the checks left.
	Stopped    bool
	NotCreated int
}

// Apply creates plan's checks for userID through srv, in order, and
// writes to out a line per check created or refused, per monitor not
// imported and per reason something was not carried over. It stops at
// the first refusal for the tier limit or a suspended account (a 403),
// listing the checks it did not create. Notes are reported for checks
// that are created; a refused check reports the API's reason instead.
func Apply(ctx context.Context, srv Server, userID string, plan Plan, o Options, out io.Writer) (Summary, error) {
	var s Summary
	for _, k := range plan.Skipped {
		fmt.Fprintf(out, "not imported  %s: %s\n", k.Source, k.Reason)
		s.Skipped++
	}
	room := o.Room
	for i, c := range plan.Checks {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		var id, refused string
		var limit bool
		if o.DryRun {
			switch {
			case room <= 0:
				limit, refused = true, "the user's tier limit is reached"
			default:
				if err := o.Validator.Validate(ctx, c.Spec()); err != nil && !errors.Is(err, probe.ErrUnresolved) {
					refused = plainReason(err.Error())
				} else {
					id, room = "(dry run)", room-1
				}
			}
		} else {
			id, refused, limit = create(ctx, srv, userID, c)
		}
		if limit {
			fmt.Fprintf(out, "stopped  %s: %s\n", c.Source, refused)
			s.Stopped = true
			for _, left := range plan.Checks[i:] {
				fmt.Fprintf(out, "not created  %s (%q): the import stopped at the limit\n", left.Source, left.Name)
				s.NotCreated++
			}
			break
		}
		if refused != "" {
			fmt.Fprintf(out, "refused  %s (%q): %s\n", c.Source, c.Name, refused)
			s.Refused++
			continue
		}
		verb := "created"
		if o.DryRun {
			verb = "would create"
		}
		fmt.Fprintf(out, "%s %s  %s (%q): %s %s every %v\n", verb, id, c.Source, c.Name, c.Type, c.URL, time.Duration(c.DelayMs)*time.Millisecond)
		for _, n := range c.Notes {
			fmt.Fprintf(out, "  %s: %s\n", c.Source, n)
		}
		s.Created++
	}
	fmt.Fprintf(out, "%d created, %d refused, %d not imported", s.Created, s.Refused, s.Skipped)
	if o.DryRun {
		fmt.Fprint(out, " (dry run: nothing was created)")
	}
	if s.Stopped {
		fmt.Fprintf(out, "; stopped at the limit with %d not created", s.NotCreated)
	}
	fmt.Fprintln(out)
	return s, nil
}

// create POSTs c to the API as userID: the new check's id, or the API's
// refusal and whether it is a 403 (limit reached, account suspended).
func create(ctx context.Context, srv Server, userID string, c Check) (id, refused string, limit bool) {
	body, err := json.Marshal(c.Body())
	if err != nil {
		return "", err.Error(), false
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/checks", bytes.NewReader(body))
	w := httptest.NewRecorder()
	srv.ServeAs(w, r, userID)
	var ans struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &ans)
	switch {
	case w.Code == http.StatusCreated:
		return ans.ID, "", false
	case ans.Error == "":
		ans.Error = fmt.Sprintf("status %d", w.Code)
	}
	return "", plainReason(ans.Error), w.Code == http.StatusForbidden
}

// plainReason is a refusal without the words of the layers it passed
// through ("probe: invalid check: ", "fetch: address blocked: "), as the
// API words its other refusals: the reason alone.
func plainReason(msg string) string {
	msg = strings.TrimPrefix(msg, probe.ErrInvalid.Error()+": ")
	msg = strings.TrimPrefix(msg, probe.ErrUnresolved.Error()+": ")
	return strings.Replace(msg, fetch.ErrBlocked.Error()+": ", "", 1)
}

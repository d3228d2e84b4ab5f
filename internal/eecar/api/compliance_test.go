package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/store"
)

// TestComplianceViolation registers and updates parts through the API
// and checks who receives compliance_violation notifications and when:
// the seller, for a battery below the resale state of health or without
// its chemistry, once per change of the broken rules; the sender of a
// proposal naming such a part. The writes themselves succeed.
func TestComplianceViolation(t *testing.T) {
	e := newEnv(t)
	violations := func(key string) []store.Notification {
		return ofType(e.notifications(key), market.NotificationComplianceViolation)
	}
	noChemistry := battery("pack without chemistry", 100, 85)
	noChemistry["specs"].(map[string]any)["chemicalProps"] = map[string]any{"soh": 85}
	motor := battery("drive motor", 100, 10)
	motor["category"] = "motor"

	var low store.Part
	tests := []struct {
		name  string
		write func() store.Part
		rules []string // of the new notification; nil: none
	}{
		{"compliant battery", func() store.Part { return e.register(e.ka, battery("healthy pack", 100, 90)) }, nil},
		{"battery below resale SOH", func() store.Part {
			low = e.register(e.ka, battery("worn pack", 100, 40))
			return low
		}, []string{market.RuleBatterySOH}},
		{"battery without chemistry", func() store.Part { return e.register(e.ka, noChemistry) }, []string{market.RuleBatteryChemistry}},
		{"both rules", func() store.Part {
			b := battery("worn pack, no chemistry", 100, 30)
			b["specs"].(map[string]any)["chemicalProps"] = map[string]any{"soh": 30}
			return e.register(e.ka, b)
		}, []string{market.RuleBatterySOH, market.RuleBatteryChemistry}},
		{"other category, no rules", func() store.Part { return e.register(e.ka, motor) }, nil},
		{"update, same rule broken: already reported", func() store.Part {
			var p store.Part
			if code, text := e.do(e.ka, http.MethodPut, "/eecar/parts/"+low.ID, battery("worn pack v2", 90, 35), &p); code != http.StatusOK {
				t.Fatalf("PUT = %d %s", code, text)
			}
			return p
		}, nil},
		{"update, fixed", func() store.Part {
			var p store.Part
			if code, text := e.do(e.ka, http.MethodPut, "/eecar/parts/"+low.ID, battery("worn pack v3", 90, 55), &p); code != http.StatusOK {
				t.Fatalf("PUT = %d %s", code, text)
			}
			return p
		}, nil},
		{"update, broken again", func() store.Part {
			var p store.Part
			if code, text := e.do(e.ka, http.MethodPut, "/eecar/parts/"+low.ID, battery("worn pack v4", 90, 20), &p); code != http.StatusOK {
				t.Fatalf("PUT = %d %s", code, text)
			}
			return p
		}, []string{market.RuleBatterySOH}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(violations(e.ka))
			p := tt.write()
			ns := violations(e.ka)
			if tt.rules == nil {
				if len(ns) != before {
					t.Fatalf("%d new compliance notifications, want none: %+v", len(ns)-before, ns[0])
				}
				return
			}
			if len(ns) != before+1 {
				t.Fatalf("%d new compliance notifications, want 1", len(ns)-before)
			}
			n := ns[0] // newest first
			if n.RecipientID != e.a.ID || n.Data["partId"] != p.ID || fmt.Sprint(n.Data["rules"]) != fmt.Sprint(tt.rules) || n.Message == "" {
				t.Errorf("notification %+v, want for seller %s, part %s, rules %v", n, e.a.ID, p.ID, tt.rules)
			}
		})
	}
	if ns := violations(e.kb); len(ns) != 0 {
		t.Fatalf("the other company got %d compliance notifications", len(ns))
	}

	// A proposal naming the non-compliant part: created, and its sender told.
	healthy := e.register(e.ka, battery("another healthy pack", 100, 95))
	var prop store.Proposal
	body := map[string]any{"toCompanyId": e.a.ID, "partIds": []string{healthy.ID, low.ID}, "proposalType": "buy"}
	if code, text := e.do(e.kb, http.MethodPost, "/eecar/proposals", body, &prop); code != http.StatusCreated {
		t.Fatalf("POST /proposals = %d %s", code, text)
	}
	ns := violations(e.kb)
	if len(ns) != 1 || ns[0].RecipientID != e.b.ID || ns[0].Data["proposalId"] != prop.ID || fmt.Sprint(ns[0].Data["partIds"]) != fmt.Sprint([]string{low.ID}) {
		t.Fatalf("proposal sender's compliance notifications %+v", ns)
	}
	// A proposal over compliant parts raises nothing.
	body["partIds"] = []string{healthy.ID}
	if code, text := e.do(e.kb, http.MethodPost, "/eecar/proposals", body, &prop); code != http.StatusCreated {
		t.Fatalf("POST /proposals = %d %s", code, text)
	}
	if ns := violations(e.kb); len(ns) != 1 {
		t.Fatalf("%d compliance notifications after a compliant proposal, want still 1", len(ns))
	}
}

package market

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/quarrydb/quarry/internal/eecar/store"
)

// NotificationComplianceViolation is the type of the notification raised
// when a part, or a proposal over one, breaks a compliance rule.
const NotificationComplianceViolation = "compliance_violation"

// Compliance rules. Only batteries carry rules: the original design's
// battery screening grades a pack by state of health and names its
// chemistry, and both decide how a second-life battery may be handled.
const (
	// RuleBatterySOH: a battery whose stated state of health is below
	// MinResaleSOH is graded "dispose" by the screening rules, so it may
	// not be offered as a part for reuse or recycling.
	RuleBatterySOH = "battery_soh_below_minimum"
	// RuleBatteryChemistry: a battery offered without its cathode
	// chemistry (specs chemicalProps.cathode: NCM…, NCA, LMO, LFP) cannot
	// be screened, handled or routed to a recycler safely.
	RuleBatteryChemistry = "battery_chemistry_missing"
)

// MinResaleSOH is the lowest state of health (percent) at which a battery
// may be offered: below it AssessSOH grades it "dispose".
const MinResaleSOH = 50

// Violation is one broken compliance rule.
type Violation struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

// Compliance returns the rules part p breaks (none for a compliant part
// or a category without rules), in a stable order.
func Compliance(p store.Part) []Violation {
	if p.Category != "battery" {
		return nil
	}
	var out []Violation
	flat := SpecMap(p.Specs)
	if soh, estimated := batterySOH(p, flat, 0); !estimated && soh < MinResaleSOH {
		out = append(out, Violation{RuleBatterySOH, fmt.Sprintf("state of health %.0f%% is below %d%%: the battery is graded for disposal, not resale", soh, MinResaleSOH)})
	}
	if strings.TrimSpace(batteryCathode(flat)) == "" {
		out = append(out, Violation{RuleBatteryChemistry, "the cathode chemistry (specs chemicalProps.cathode, e.g. NCM811, LFP) is not stated"})
	}
	return out
}

func rules(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Rule
	}
	return out
}

func details(vs []Violation) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Detail
	}
	return strings.Join(out, "; ")
}

// checkPart notifies the seller of a part just written when it breaks a
// rule it did not break before (prev nil: a new part). Failures are logged:
// the part is written either way.
func (m *Market) checkPart(ctx context.Context, p store.Part, prev *store.Part) {
	vs := Compliance(p)
	if len(vs) == 0 {
		return
	}
	if prev != nil && slices.Equal(rules(Compliance(*prev)), rules(vs)) {
		return // already reported
	}
	m.raise(ctx, store.Notification{
		RecipientID: p.SellerID, Type: NotificationComplianceViolation,
		Title:   "Your part breaks a compliance rule",
		Message: fmt.Sprintf("%s: %s", p.Name, details(vs)),
		Data:    map[string]any{"partId": p.ID, "category": p.Category, "rules": rules(vs)},
	})
}

// CheckProposal notifies the sender of a proposal just created when a
// part it names breaks a compliance rule: the sender offers to trade a
// part that may not be traded as it stands. The proposal stands.
func (m *Market) CheckProposal(ctx context.Context, p store.Proposal, parts []store.Part) {
	var bad []string
	var all []string
	for _, part := range parts {
		if vs := Compliance(part); len(vs) > 0 {
			bad = append(bad, part.ID)
			for _, r := range rules(vs) {
				if !slices.Contains(all, r) {
					all = append(all, r)
				}
			}
		}
	}
	if len(bad) == 0 {
		return
	}
	m.raise(ctx, store.Notification{
		RecipientID: p.FromCompanyID, Type: NotificationComplianceViolation,
		Title:   "Your proposal names a part that breaks a compliance rule",
		Message: fmt.Sprintf("proposal %s: parts %s break %s", p.ID, strings.Join(bad, ", "), strings.Join(all, ", ")),
		Data:    map[string]any{"proposalId": p.ID, "partIds": bad, "rules": all},
	})
}

// raise writes a notification and hands it to the delivery hook.
func (m *Market) raise(ctx context.Context, n store.Notification) {
	n, err := m.st.Notify(ctx, n)
	if err != nil {
		m.log.Warn("eecar: compliance notification", "recipient", n.RecipientID, "err", err)
		return
	}
	if m.o.Notify != nil {
		m.o.Notify(ctx, n)
	}
}

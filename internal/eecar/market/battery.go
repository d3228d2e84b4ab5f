package market

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/internal/eecar/store"
)

// BatteryRequest is POST /eecar/battery-health.
type BatteryRequest struct {
	MinSOH  *float64 `json:"minSoh,omitempty"`
	MaxSOH  *float64 `json:"maxSoh,omitempty"`
	Cathode string   `json:"cathode,omitempty"` // NCM, NCM811, NCA, LMO, LFP, …
	// Recommendation filters on the outcome: reuse, recycle or dispose.
	Recommendation string `json:"recommendation,omitempty"`
	Limit          int    `json:"limit,omitempty"`
}

// BatteryResult is one battery's assessment.
type BatteryResult struct {
	PartID         string   `json:"partId"`
	Name           string   `json:"name"`
	SOH            float64  `json:"soh"`
	SOHEstimated   bool     `json:"sohEstimated"`
	Cathode        string   `json:"cathode,omitempty"`
	Recommendation string   `json:"recommendation"`
	Applications   []string `json:"applications,omitempty"`
	Price          float64  `json:"price"`
	Quantity       int      `json:"quantity"`
}

// AssessSOH applies the original system's rules: a known SOH is used as
// is; otherwise SOH = max(50, 100 − 5 × age in years). ≥ 80 → reuse (EV,
// ESS, e-scooter, forklift); ≥ 70 → reuse (ESS, small devices); ≥ 50 →
// recycle; else dispose.
func AssessSOH(soh float64) (string, []string) {
	switch {
	case soh >= 80:
		return "reuse", []string{"EV", "ESS", "e-scooter", "forklift"}
	case soh >= 70:
		return "reuse", []string{"ESS", "small devices"}
	case soh >= 50:
		return "recycle", nil
	}
	return "dispose", nil
}

// batterySOH finds a part's SOH: specs chemicalProps.soh (or soh, or
// stateOfHealth), else the age rule (year unknown: 50).
func batterySOH(p store.Part, flat map[string]string, year int) (float64, bool) {
	if soh, ok := statedSOH(flat); ok {
		return soh, false
	}
	if p.Year == 0 {
		return 50, true
	}
	return math.Max(50, 100-5*float64(year-p.Year)), true
}

// statedSOH is the state of health a part's flattened specs state.
func statedSOH(flat map[string]string) (float64, bool) {
	for _, k := range []string{"chemicalProps.soh", "soh", "chemicalProps.stateOfHealth", "stateOfHealth", "electricalProps.soh"} {
		if v, ok := flat[k]; ok {
			if f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "%"), 64); err == nil && f >= 0 && f <= 100 {
				return f, true
			}
		}
	}
	return 0, false
}

// Assess screens one battery part as BatteryHealth does (ok is false for
// a part of another category).
func (m *Market) Assess(p store.Part) (BatteryResult, bool) {
	if p.Category != "battery" {
		return BatteryResult{}, false
	}
	flat := SpecMap(p.Specs)
	soh, est := batterySOH(p, flat, m.st.Now().Year())
	rec, apps := AssessSOH(soh)
	return BatteryResult{PartID: p.ID, Name: p.Name, SOH: soh, SOHEstimated: est, Cathode: batteryCathode(flat),
		Recommendation: rec, Applications: apps, Price: p.Price, Quantity: p.Quantity}, true
}

// batteryCathode finds a part's cathode in its flattened specs.
func batteryCathode(flat map[string]string) string {
	for _, k := range []string{"chemicalProps.cathode", "chemicalProps.cathodeType", "cathode", "materialComposition.primary"} {
		if v := flat[k]; v != "" {
			return v
		}
	}
	return ""
}

// BatteryHealth screens the battery category (GSI1 CATEGORY#battery) by
// state of health and cathode.
func (m *Market) BatteryHealth(ctx context.Context, req BatteryRequest) ([]BatteryResult, error) {
	if req.Limit <= 0 || req.Limit > 500 {
		req.Limit = 100
	}
	switch req.Recommendation {
	case "", "reuse", "recycle", "dispose":
	default:
		return nil, fmt.Errorf("%w: recommendation must be reuse, recycle or dispose", store.ErrInvalid)
	}
	year := m.st.Now().Year()
	out := []BatteryResult{}
	cursor := ""
	for {
		parts, next, err := m.st.ListByCategory(ctx, "battery", 100, cursor)
		if err != nil {
			return nil, err
		}
		for _, meta := range parts {
			p, err := m.st.GetPart(ctx, meta.ID)
			if err != nil {
				continue
			}
			flat := SpecMap(p.Specs)
			soh, est := batterySOH(p, flat, year)
			if req.MinSOH != nil && soh < *req.MinSOH || req.MaxSOH != nil && soh > *req.MaxSOH {
				continue
			}
			cat := batteryCathode(flat)
			if req.Cathode != "" && !strings.HasPrefix(strings.ToUpper(strings.ReplaceAll(cat, " ", "")), strings.ToUpper(strings.ReplaceAll(req.Cathode, " ", ""))) {
				continue
			}
			rec, apps := AssessSOH(soh)
			if req.Recommendation != "" && rec != req.Recommendation {
				continue
			}
			out = append(out, BatteryResult{PartID: p.ID, Name: p.Name, SOH: soh, SOHEstimated: est, Cathode: cat,
				Recommendation: rec, Applications: apps, Price: p.Price, Quantity: p.Quantity})
			if len(out) >= req.Limit {
				return out, nil
			}
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

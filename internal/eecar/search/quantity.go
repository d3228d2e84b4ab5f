package search

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// A quantity is a number with a unit, normalised to a dimension and a
// base unit: "11kW" is power 11 (kW), "72.6 kWh" energy 72.6 (kWh),
// "800V" voltage 800 (V), "80%" next to SOH state of health 80 (%).
type quantity struct {
	dim string
	val float64
}

// Comparison operators of a constraint.
const (
	opEq = iota // about equal (within 2 %)
	opGt        // over, above, 초과
	opGe        // at least, 이상
	opLt        // under, below, 미만
	opLe        // at most, up to, 이하
)

// Constraint is one number-with-unit of a query: the dimension, the
// comparison its range word asks for ("over 80 kWh" → energy > 80; no
// range word → about equal) and the number.
type Constraint struct {
	// Dim is the dimension: voltage, power, energy, charge, current, soh,
	// mass, torque.
	Dim string
	// Op is "=", ">", ">=", "<" or "<=".
	Op string
	// Value is in the dimension's base unit (V, kW, kWh, Ah, A, %, kg, Nm).
	Value float64
}

// String renders the constraint, e.g. "energy > 80 kWh", "power 11 kW".
func (c Constraint) String() string {
	v := strconv.FormatFloat(c.Value, 'f', -1, 64) + " " + baseUnit[c.Dim]
	if c.Op == "=" {
		return c.Dim + " " + v
	}
	return fmt.Sprintf("%s %s %s", c.Dim, c.Op, v)
}

// units maps a lower-case unit to its dimension and the factor to the
// dimension's base unit.
var units = map[string]struct {
	dim    string
	factor float64
}{
	"v": {"voltage", 1}, "volt": {"voltage", 1}, "volts": {"voltage", 1}, "kv": {"voltage", 1000},
	"kw": {"power", 1}, "w": {"power", 0.001}, "mw": {"power", 1000},
	"kwh": {"energy", 1}, "wh": {"energy", 0.001}, "mwh": {"energy", 1000},
	"ah": {"charge", 1}, "mah": {"charge", 0.001},
	"a": {"current", 1}, "amp": {"current", 1}, "amps": {"current", 1},
	"%":  {"soh", 1},
	"kg": {"mass", 1},
	"nm": {"torque", 1},
}

var baseUnit = map[string]string{
	"voltage": "V", "power": "kW", "energy": "kWh", "charge": "Ah", "current": "A", "soh": "%", "mass": "kg", "torque": "Nm",
}

// specDims maps a spec key's last segment (lower-cased) to the dimension
// its bare numbers are in.
var specDims = []struct{ key, dim string }{
	{"soh", "soh"}, {"stateofhealth", "soh"},
	{"voltage", "voltage"},
	{"capacity", "energy"}, {"energy", "energy"},
	{"power", "power"},
	{"current", "current"},
	{"torque", "torque"},
	{"weight", "mass"}, {"mass", "mass"},
}

// quantityRE finds numbers with units: "11kW", "72.6 kWh", "1,000 V",
// "80%". The unit must end the word.
var quantityRE = regexp.MustCompile(`(?i)(\d+(?:[.,]\d+)*)\s?(kwh|mwh|wh|kw|mw|kv|mah|ah|volts?|amps?|nm|kg|v|w|a|%)(?:$|[^a-z0-9])`)

// before and after range words: English before the number, Korean after.
var (
	rangeBefore = []struct {
		words []string
		op    int
	}{
		{[]string{"more than", "greater than", "over", "above", "higher than", ">"}, opGt},
		{[]string{"at least", "minimum", "min", "from", ">=", "≥"}, opGe},
		{[]string{"less than", "lower than", "under", "below", "<"}, opLt},
		{[]string{"at most", "maximum", "max", "up to", "<=", "≤"}, opLe},
	}
	rangeAfter = []struct {
		words []string
		op    int
	}{
		{[]string{"이상", "or more", "or above", "and above", "and up", "+"}, opGe},
		{[]string{"이하", "or less", "or below", "and below"}, opLe},
		{[]string{"초과"}, opGt},
		{[]string{"미만"}, opLt},
	}
	opNames = [...]string{opEq: "=", opGt: ">", opGe: ">=", opLt: "<", opLe: "<="}
)

// ParseConstraints finds the numbers with units in a query and the range
// words that go with them: "over 80 kWh", "80kWh 이상", "under 100 kW",
// "7kW 미만", "LFP over 80% SOH".
func ParseConstraints(text string) []Constraint {
	var out []Constraint
	lower := strings.ToLower(text)
	for _, m := range quantityRE.FindAllStringSubmatchIndex(lower, -1) {
		num, unit := lower[m[2]:m[3]], lower[m[4]:m[5]]
		v, err := strconv.ParseFloat(strings.ReplaceAll(num, ",", ""), 64)
		u, ok := units[unit]
		if err != nil || !ok {
			continue
		}
		// A number glued to letters before it ("ncm811", "ioniq5") is
		// part of a name, not a quantity.
		if m[2] > 0 && isWordByte(lower[m[2]-1]) {
			continue
		}
		// One-letter units other than V must follow the number directly
		// ("10A", "500W"): "Model 3 a …" is not 3 amperes.
		if (unit == "a" || unit == "w") && m[4] > m[3] {
			continue
		}
		op := opEq
		head := strings.TrimRight(lower[:m[2]], " ")
		for _, r := range rangeBefore {
			for _, w := range r.words {
				if strings.HasSuffix(head, w) && (len(head) == len(w) || !isWordByte(head[len(head)-len(w)-1]) || !isWordByte(w[0])) {
					op = r.op
				}
			}
		}
		tail := strings.TrimLeft(lower[m[5]:], " ")
		for _, r := range rangeAfter {
			for _, w := range r.words {
				if strings.HasPrefix(tail, w) {
					op = r.op
				}
			}
		}
		out = append(out, Constraint{Dim: u.dim, Op: opNames[op], Value: v * u.factor})
	}
	return out
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 0x80
}

// docQuantities collects a doc's quantities: numbers with units in its
// text (except percentages, which are too ambiguous there: nickel 80 %,
// recyclable 95 %) and its specs, whose bare numbers take the dimension
// their key names (electricalProps.voltage → voltage, chemicalProps.soh →
// soh).
func docQuantities(text string, specs map[string]string) []quantity {
	var out []quantity
	add := func(q quantity) {
		for _, x := range out {
			if x == q {
				return
			}
		}
		out = append(out, q)
	}
	for _, c := range ParseConstraints(text) {
		if c.Dim != "soh" {
			add(quantity{c.Dim, c.Value})
		}
	}
	for key, val := range specs {
		last := strings.ToLower(key[strings.LastIndexByte(key, '.')+1:])
		dim := ""
		for _, sd := range specDims {
			if strings.Contains(last, sd.key) {
				dim = sd.dim
				break
			}
		}
		if dim == "" {
			continue
		}
		val = strings.TrimSpace(val)
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			add(quantity{dim, v})
			continue
		}
		for _, c := range ParseConstraints(val) {
			if c.Dim == dim || (dim == "soh" && c.Dim == "soh") {
				add(quantity{c.Dim, c.Value})
			}
		}
	}
	return out
}

// satisfies reports whether x meets c.
func (c Constraint) satisfies(x float64) bool {
	switch c.Op {
	case ">":
		return x > c.Value
	case ">=":
		return x >= c.Value
	case "<":
		return x < c.Value
	case "<=":
		return x <= c.Value
	}
	return math.Abs(x-c.Value) <= 0.02*math.Abs(c.Value)
}

// quantityMatch is how a doc's quantities meet a query's constraints:
// met counts the constraints some quantity of the dimension satisfies;
// excluded is set when a range constraint (over, 이하, …) is contradicted:
// the doc states the dimension and no value satisfies it.
func quantityMatch(cs []Constraint, qs []quantity) (met int, excluded bool) {
	for _, c := range cs {
		stated, ok := false, false
		for _, q := range qs {
			if q.dim != c.Dim {
				continue
			}
			stated = true
			if c.satisfies(q.val) {
				ok = true
				break
			}
		}
		switch {
		case ok:
			met++
		case stated && c.Op != "=":
			excluded = true
		}
	}
	return met, excluded
}

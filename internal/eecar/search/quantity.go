package search

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A quantity is a number with a unit, normalised to a dimension and a
// base unit: "11kW" is power 11 (kW), "72.6 kWh" energy 72.6 (kWh),
// "800V" voltage 800 (V), "80%" next to SOH state of health 80 (%).
type quantity struct {
	dim uint8 // index in dims
	val float64
}

// dims are the dimensions of quantities; a quantity holds its index.
var dims = []string{"voltage", "power", "energy", "charge", "current", "soh", "mass", "torque"}

// dimIndex returns dim's index in dims.
func dimIndex(dim string) uint8 {
	return uint8(slices.Index(dims, dim))
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

// quantityUnits are the units findQuantities recognises, in the order
// they are tried: a longer unit before the shorter one it starts with
// ("kwh" before "kw"), "volts" before "volt".
var quantityUnits = []string{"kwh", "mwh", "wh", "kw", "mw", "kv", "mah", "ah", "volts", "volt", "amps", "amp", "nm", "kg", "v", "w", "a", "%"}

// quantitySpan locates one number with its unit in findQuantities'
// text: the number is text[num:numEnd], the unit text[unit:unitEnd]
// (name lower-cased, one of quantityUnits).
type quantitySpan struct {
	num, numEnd, unit, unitEnd int
	name                       string
}

// findQuantities finds numbers with units in text, ignoring the case of
// ASCII letters, left to right without overlap: "11kw", "72.6 kwh", "1,000 v", "80%". A number is
// digits with single '.' or ',' between digit groups (the longest such
// number is tried first, then shorter ones); one optional space
// character (\t \n \f \r or ' ') may stand between it and the unit; the
// unit must end the word (the text ends, or a character other than a-z
// and 0-9 follows). It scans bytes, with no regular expression: on Put
// it runs over every part's text and specs.
func findQuantities(text string, out []quantitySpan) []quantitySpan {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		m, ok, runEnd := quantityAt(text, i)
		if ok {
			out = append(out, m)
			i = m.unitEnd + 1 // the byte after the unit is not a digit
			continue
		}
		// A number starting later in the run ends where one starting at i
		// can, and no unit follows any of those ends.
		i = runEnd
	}
	return out
}

// quantityAt matches a number with its unit starting at text[i], a
// digit. Without a match, runEnd is the end of the longest number
// starting at i.
func quantityAt(text string, i int) (m quantitySpan, ok bool, runEnd int) {
	// ends are the ends of the candidate numbers: after each digit group
	// of "d+([.,]d+)*", the longest tried first. A number ending inside a
	// digit group is followed by a digit, which is neither a space nor a
	// unit, so only group ends can match.
	var buf [8]int
	ends := buf[:0]
	j := i
	for {
		for j < len(text) && isDigit(text[j]) {
			j++
		}
		ends = append(ends, j)
		if j+1 < len(text) && (text[j] == '.' || text[j] == ',') && isDigit(text[j+1]) {
			j++
			continue
		}
		break
	}
	for k := len(ends) - 1; k >= 0; k-- {
		end := ends[k]
		starts := [2]int{-1, end}
		if end < len(text) && isSpace(text[end]) {
			starts[0] = end + 1
		}
		for _, u := range starts {
			if u < 0 || u == len(text) || !unitFirst(lowerByte(text[u])) {
				continue
			}
			for _, unit := range quantityUnits {
				if hasPrefixFold(text[u:], unit) && wordEnds(text, u+len(unit)) {
					return quantitySpan{num: i, numEnd: end, unit: u, unitEnd: u + len(unit), name: unit}, true, 0
				}
			}
		}
	}
	return quantitySpan{}, false, ends[len(ends)-1]
}

// unitFirst reports whether b starts one of quantityUnits.
func unitFirst(b byte) bool {
	switch b {
	case 'k', 'm', 'w', 'a', 'v', 'n', '%':
		return true
	}
	return false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// isSpace is the regular-expression class \s: \t \n \f \r and ' '.
func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r' }

// wordEnds reports whether a word ends at text[i]: the text ends there,
// or a character other than a-z, A-Z and 0-9 follows. 'ſ' (U+017F) counts
// as a letter, being an s under Unicode case folding.
func wordEnds(text string, i int) bool {
	if i == len(text) {
		return true
	}
	b := lowerByte(text[i])
	return !(b >= 'a' && b <= 'z' || isDigit(b)) && !strings.HasPrefix(text[i:], "ſ")
}

// lowerByte lower-cases an ASCII letter.
func lowerByte(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// hasPrefixFold reports whether s starts with lower, a lower-case ASCII
// word, ignoring the case of ASCII letters.
func hasPrefixFold(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		if lowerByte(s[i]) != lower[i] {
			return false
		}
	}
	return true
}

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
	return appendConstraints(nil, text, true)
}

// appendConstraints appends ParseConstraints(text) to out; without ranges
// it leaves out the range words (every Op is "="), which a doc's
// quantities do not use.
func appendConstraints(out []Constraint, text string, ranges bool) []Constraint {
	lower := text
	if ranges || foldsToASCII(text) {
		lower = strings.ToLower(text)
	}
	var buf [8]quantitySpan
	for _, q := range findQuantities(lower, buf[:0]) {
		num, unit := lower[q.num:q.numEnd], q.name
		v, err := strconv.ParseFloat(strings.ReplaceAll(num, ",", ""), 64)
		u, ok := units[unit]
		if err != nil || !ok {
			continue
		}
		// A number glued to letters before it ("ncm811", "ioniq5") is
		// part of a name, not a quantity.
		if q.num > 0 && isWordByte(lower[q.num-1]) {
			continue
		}
		// One-letter units other than V must follow the number directly
		// ("10A", "500W"): "Model 3 a …" is not 3 amperes.
		if (unit == "a" || unit == "w") && q.unit > q.numEnd {
			continue
		}
		op := opEq
		if !ranges {
			out = append(out, Constraint{Dim: u.dim, Op: opNames[op], Value: v * u.factor})
			continue
		}
		head := strings.TrimRight(lower[:q.num], " ")
		for _, r := range rangeBefore {
			for _, w := range r.words {
				if strings.HasSuffix(head, w) && (len(head) == len(w) || !isWordByte(head[len(head)-len(w)-1]) || !isWordByte(w[0])) {
					op = r.op
				}
			}
		}
		tail := strings.TrimLeft(lower[q.unitEnd:], " ")
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

// isWordByte reports whether b is part of a word: a letter (either case),
// a digit, or any byte of a non-ASCII character.
func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// containsFold reports whether s contains lower, a lower-case ASCII word,
// ignoring the case of ASCII letters.
func containsFold(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		if hasPrefixFold(s[i:], lower) {
			return true
		}
	}
	return false
}

// foldsToASCII reports whether strings.ToLower would turn a non-ASCII
// character of s into an ASCII letter: the Kelvin sign and 'İ'. Without
// them, findQuantities and its checks (which fold ASCII case, and see
// every non-ASCII byte alike) find in s what they find in ToLower(s), so
// a doc's text and spec keys are not copied to lower them.
func foldsToASCII(s string) bool {
	return strings.Contains(s, "\u212a") || strings.Contains(s, "\u0130")
}

// docQuantities collects a doc's quantities: numbers with units in its
// text (except percentages, which are too ambiguous there: nickel 80 %,
// recyclable 95 %) and its specs, whose bare numbers take the dimension
// their key names (electricalProps.voltage → voltage, chemicalProps.soh →
// soh). specDims caches specDim by key (nil: no cache).
func docQuantities(text string, specs map[string]string, specDims map[string]int8) []quantity {
	var buf [16]quantity
	out := buf[:0]
	var cbuf [8]Constraint
	cs := cbuf[:0]
	add := func(q quantity) {
		for _, x := range out {
			if x == q {
				return
			}
		}
		out = append(out, q)
	}
	cs = appendConstraints(cs[:0], text, false)
	for _, c := range cs {
		if c.Dim != "soh" {
			add(quantity{dimIndex(c.Dim), c.Value})
		}
	}
	for key, val := range specs {
		d, ok := specDims[key]
		if !ok {
			d = specDim(key)
			if specDims != nil {
				if len(specDims) >= maxSpecDims {
					clear(specDims)
				}
				specDims[key] = d
			}
		}
		if d < 0 {
			continue
		}
		dim := uint8(d)
		val = strings.TrimSpace(val)
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			add(quantity{dim, v})
			continue
		}
		cs = appendConstraints(cs[:0], val, false)
		for _, c := range cs {
			if dimIndex(c.Dim) == dim {
				add(quantity{dim, c.Value})
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	// An exact-size copy: the index keeps it for the doc's lifetime.
	return slices.Clone(out)
}

// maxSpecDims bounds a cache of specDim: a catalogue has a few hundred
// distinct spec keys; one whose keys never repeat clears it now and then.
const maxSpecDims = 4096

// specDim returns the index in dims of the dimension the bare numbers of
// the spec key are in, from its last segment, or -1 for none.
func specDim(key string) int8 {
	last := key[strings.LastIndexByte(key, '.')+1:]
	if foldsToASCII(last) {
		last = strings.ToLower(last)
	}
	for _, sd := range specDims {
		if containsFold(last, sd.key) {
			return int8(dimIndex(sd.dim))
		}
	}
	return -1
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
		dim := dimIndex(c.Dim)
		for _, q := range qs {
			if q.dim != dim {
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

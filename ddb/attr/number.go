package attr

import (
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// MaxDigits is the number of significant decimal digits a DynamoDB number
// may have.
const MaxDigits = 38

// The adjusted exponent (the power of ten of the most significant digit) of
// a non-zero DynamoDB number lies within [minAdjExp, maxAdjExp]: magnitudes
// from 1E-130 to 9.9999999999999999999999999999999999999E+125.
const (
	minAdjExp = -130
	maxAdjExp = 125
)

// ctx is the arithmetic context of DynamoDB numbers: 38 digits, exact.
var ctx = apd.Context{Precision: MaxDigits, MaxExponent: apd.MaxExponent, MinExponent: apd.MinExponent, Rounding: apd.RoundHalfEven, Traps: apd.DefaultTraps}

func isNumberSyntax(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		ed := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			ed++
		}
		if ed == 0 {
			return false
		}
	}
	return i == len(s)
}

// ParseDecimal parses a DynamoDB number and checks DynamoDB's limits.
func ParseDecimal(s string) (*apd.Decimal, error) {
	if !isNumberSyntax(s) {
		if s == "" {
			return nil, verr("The parameter cannot be converted to a numeric value")
		}
		return nil, verr("The parameter cannot be converted to a numeric value: %s", s)
	}
	d, _, err := apd.NewFromString(s)
	if err != nil {
		// Well-formed, but the exponent is beyond what apd holds.
		return outOfRange(s)
	}
	d.Reduce(d)
	if err := checkRange(d); err != nil {
		return nil, err
	}
	return d, nil
}

// outOfRange classifies a well-formed number whose exponent is too large
// to parse: zero (whatever its exponent), an overflow or an underflow.
func outOfRange(s string) (*apd.Decimal, error) {
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	if strings.Trim(mant, "+-0.") == "" {
		return apd.New(0, 0), nil
	}
	if strings.HasPrefix(exp, "-") {
		return nil, verr("Number underflow. Attempting to store a number with magnitude smaller than supported range")
	}
	return nil, verr("Number overflow. Attempting to store a number with magnitude larger than supported range")
}

func checkRange(d *apd.Decimal) error {
	if d.IsZero() {
		return nil
	}
	nd := int(d.NumDigits())
	if nd > MaxDigits {
		return verr("Attempting to store more than 38 significant digits in a Number")
	}
	adj := int(d.Exponent) + nd - 1
	if adj > maxAdjExp {
		return verr("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
	if adj < minAdjExp {
		return verr("Number underflow. Attempting to store a number with magnitude smaller than supported range")
	}
	return nil
}

// CanonicalNumber validates s as a DynamoDB number and returns its canonical
// text: plain notation, no leading or trailing zeros ("1.50" → "1.5",
// "1e2" → "100", "-0" → "0").
func CanonicalNumber(s string) (string, error) {
	if isCanonicalInt(s) {
		return s, nil // the common case, spared a decimal parse
	}
	d, err := ParseDecimal(s)
	if err != nil {
		return "", err
	}
	return formatDecimal(d), nil
}

func formatDecimal(d *apd.Decimal) string {
	if d.IsZero() {
		return "0"
	}
	d.Reduce(d)
	return d.Text('f')
}

// mustDecimal parses a canonical number (already validated).
func mustDecimal(s string) *apd.Decimal {
	d, _, err := apd.NewFromString(s)
	if err != nil {
		return apd.New(0, 0)
	}
	return d
}

// CompareNumbers compares two canonical DynamoDB numbers numerically.
func CompareNumbers(a, b string) int {
	if a == b {
		return 0
	}
	return mustDecimal(a).Cmp(mustDecimal(b))
}

// AddNumbers returns a+b (or a-b when subtract is set) as a canonical number,
// or an *Error when the result leaves DynamoDB's range or precision.
func AddNumbers(a, b string, subtract bool) (string, error) {
	x, y := mustDecimal(a), mustDecimal(b)
	var r apd.Decimal
	var cond apd.Condition
	var err error
	if subtract {
		cond, err = ctx.Sub(&r, x, y)
	} else {
		cond, err = ctx.Add(&r, x, y)
	}
	if err != nil {
		return "", verr("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
	if cond.Inexact() {
		return "", verr("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
	r.Reduce(&r)
	if err := checkRange(&r); err != nil {
		return "", err
	}
	return formatDecimal(&r), nil
}

// numberSize approximates DynamoDB's storage size of a number: one byte per
// two significant digits plus one.
func numberSize[T string | []byte](s T) int {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i = 1
	}
	for i < len(s) && (s[i] == '0' || s[i] == '.') {
		i++
	}
	trimmed := s[i:]
	digits, dot := 0, false
	for j := 0; j < len(trimmed); j++ {
		switch c := trimmed[j]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dot = true
		}
	}
	// trailing zeros of an integer are not significant
	if !dot {
		for j := len(trimmed) - 1; j >= 0 && trimmed[j] == '0'; j-- {
			digits--
		}
	}
	if digits < 1 {
		digits = 1
	}
	return (digits+1)/2 + 1
}

// numberParts returns the sign (-1, 0, 1), the significant digits and the
// exponent E such that |n| = 0.d1d2d3... × 10^E, for a canonical number.
func numberParts(s string) (sign int, digits string, exp int) {
	if isCanonicalInt(s) {
		// Most keys: the digits are s's without its sign and trailing
		// zeros, and E is the count of s's digits.
		if s == "0" {
			return 0, "", 0
		}
		sign = 1
		if s[0] == '-' {
			sign, s = -1, s[1:]
		}
		exp = len(s)
		return sign, strings.TrimRight(s, "0"), exp
	}
	return decimalParts(s)
}

// decimalParts is numberParts for any canonical number, through its
// decimal value.
func decimalParts(s string) (sign int, digits string, exp int) {
	d := mustDecimal(s)
	if d.IsZero() {
		return 0, "", 0
	}
	d.Reduce(d)
	sign = 1
	if d.Negative {
		sign = -1
	}
	digits = d.Coeff.String()
	exp = int(d.Exponent) + len(digits)
	return sign, digits, exp
}

// isCanonicalInt reports whether s is an integer already in canonical form:
// an optional minus, then 1 to 38 digits without a leading zero (or "0").
func isCanonicalInt(s string) bool {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
		if digits == "0" {
			return false // "-0" is 0
		}
	}
	if len(digits) == 0 || len(digits) > 38 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

package search

import (
	"fmt"
	"strings"
	"unicode"
)

// Reason is a short human-readable explanation naming the specs and
// words that matched, e.g. "Matches voltage 800, primary material
// NCM811; words: inverter, 800v (score 0.91)". Words contained in
// another matched word (the "800" and "v" split off "800v") are left
// out. Without any match it falls back to a fixed text.
func Reason(h Hit, d Doc) string {
	var specs []string
	for _, c := range h.MatchedConstraints {
		specs = append(specs, c.String())
	}
	for _, key := range h.MatchedSpecs {
		val, ok := d.Specs[key]
		if !ok {
			continue
		}
		specs = append(specs, specLabel(key)+" "+strings.TrimSpace(val))
	}
	words := reasonWords(h.MatchedTerms)
	score := fmt.Sprintf("(score %.2f)", h.Score)
	switch {
	case len(specs) > 0 && len(words) > 0:
		return fmt.Sprintf("Matches %s; words: %s %s", strings.Join(specs, ", "), strings.Join(words, ", "), score)
	case len(specs) > 0:
		return fmt.Sprintf("Matches %s %s", strings.Join(specs, ", "), score)
	case len(words) > 0:
		return fmt.Sprintf("Matches words: %s %s", strings.Join(words, ", "), score)
	}
	return "Similar in description to the request " + score
}

// reasonWords drops terms contained in another matched term.
func reasonWords(terms []string) []string {
	var out []string
	for i, t := range terms {
		covered := false
		for j, u := range terms {
			if i != j && len(u) > len(t) && strings.Contains(u, t) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, t)
		}
	}
	return out
}

// specLabel turns a flattened spec key into words: "electricalProps.voltage"
// → "voltage", "materialComposition.primary" → "primary material",
// "mechanical.tensileStrength" → "tensile strength".
func specLabel(key string) string {
	segs := strings.Split(key, ".")
	last := words(segs[len(segs)-1])
	if len(segs) > 1 {
		switch strings.ToLower(segs[len(segs)-1]) {
		case "primary", "secondary", "type", "value", "min", "max", "unit", "grade":
			if parent := strings.Fields(words(segs[len(segs)-2])); len(parent) > 0 {
				return last + " " + parent[0]
			}
		}
	}
	return last
}

// words splits a camelCase or snake_case identifier into lower-case
// words separated by spaces.
func words(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(splitCamel(s)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

package metric

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Format renders a metric value as a decimal string, because the Kubernetes
// API carries no floats. It is the shortest text that parses back to v, in
// plain notation for magnitudes from 1e-6 up to 1e15 and with an exponent
// outside that range; NaN and infinities are "NaN", "+Inf" and "-Inf".
func Format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		// Negative zero would print as "-0", which reads like a bug in a status.
		return "0"
	}
	if a := math.Abs(v); a >= 1e-6 && a < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'e', -1, 64)
}

// ParseDecimal parses a decimal string as written by Format. It also accepts
// exponents, a leading '+' and any letter case of NaN and Inf.
func ParseDecimal(s string) (float64, error) {
	if s == "" {
		return 0, errors.New("empty decimal string")
	}
	if n := scanNumber(s); n == 0 || n != len(s) {
		return 0, fmt.Errorf("%q is not a decimal number (examples: 0.9979, -12, 1e-07, NaN, +Inf)", s)
	}
	v, err := numberValue(s)
	if err != nil {
		return 0, fmt.Errorf("%q is out of range for a 64-bit float", s)
	}
	return v, nil
}

// scanNumber returns the length of the number at the start of s, or 0 when s
// does not start with one. Numbers are an optional sign followed by digits
// with an optional fraction and exponent, or by nan, inf or infinity in any
// letter case. A '.' or exponent that no digit follows is not part of the
// number, so "1." scans as "1".
func scanNumber(s string) int {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for _, word := range []string{"infinity", "inf", "nan"} {
		if len(s)-i >= len(word) && strings.EqualFold(s[i:i+len(word)], word) {
			return i + len(word)
		}
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	return i
}

// endsNumber reports whether a number that ends at s[i] stands alone rather
// than being the start of a longer token such as 3.1GB, 0x1f, 1.2.3, 1,000 or
// 12:30.
func endsNumber(s string, i int) bool {
	if i == len(s) {
		return true
	}
	if isWordChar(s[i]) {
		return false
	}
	// A separator followed by a digit carries the token on.
	continued := strings.IndexByte(".,:", s[i]) >= 0 && i+1 < len(s) && isDigit(s[i+1])
	return !continued
}

// numberValue converts text accepted by scanNumber. Text too large for a
// float64 returns ±Inf and an error.
func numberValue(raw string) (float64, error) {
	// strconv.ParseFloat rejects a signed NaN, which C's printf emits.
	if unsigned := strings.TrimLeft(raw, "+-"); strings.EqualFold(unsigned, "nan") {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(raw, 64)
}

// Improvement is the change from a baseline to a best value, both decimal
// strings, with its share of the baseline: "-0.1 (-10.0%)". It is "—" when
// either is not a number.
func Improvement(baseline, best string) string {
	b, errB := ParseDecimal(baseline)
	v, errV := ParseDecimal(best)
	if errB != nil || errV != nil {
		return "—"
	}
	delta, _ := strconv.ParseFloat(strconv.FormatFloat(v-b, 'g', 6, 64), 64)
	text := Format(delta)
	if delta > 0 {
		text = "+" + text
	}
	if b != 0 {
		text += fmt.Sprintf(" (%+.1f%%)", 100*delta/math.Abs(b))
	}
	return text
}

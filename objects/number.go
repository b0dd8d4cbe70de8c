package objects

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// maxSafeInteger is 2^53: every integer of magnitude at most this is exactly
// an IEEE-754 double, and so survives every JSON implementation.
const maxSafeInteger = 1 << 53

// checkFloat accepts any finite double.
func checkFloat(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ErrNonFinite
	}
	return nil
}

// checkInt64 accepts n when RFC 8785 prints it unchanged: always when
// |n| <= 2^53, otherwise only when the shortest form of the nearest double is
// the same number (10^18 passes; 2^53+1 and 2^60 do not, because they would
// print as 9007199254740992 and 1152921504606847000).
func checkInt64(n int64) error {
	if n >= -maxSafeInteger && n <= maxSafeInteger {
		return nil
	}
	return checkNumber(json.Number(strconv.FormatInt(n, 10)))
}

// checkUint64 is checkInt64 for unsigned values.
func checkUint64(n uint64) error {
	if n <= maxSafeInteger {
		return nil
	}
	return checkNumber(json.Number(strconv.FormatUint(n, 10)))
}

// checkNumber accepts a JSON number literal when it is valid JSON number
// syntax, finite as a double, and carries no more precision than a double:
// its decimal value equals the value of the shortest decimal form of the
// nearest double (the form RFC 8785 writes). So "1.5", "1e21" and "0.1" pass,
// while "9007199254740993" and "0.10000000000000001" fail.
func checkNumber(s json.Number) error {
	str := string(s)
	if !validJSONNumber(str) {
		return ErrInvalid
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil || math.IsInf(f, 0) {
		return ErrUnsafeNumber
	}
	a, ok1 := parseDecimal(str)
	b, ok2 := parseDecimal(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok1 || !ok2 || a != b {
		return ErrUnsafeNumber
	}
	return nil
}

// decimal is a number as sign × digits × 10^exp, with digits free of leading
// and trailing zeros; zero is the zero value.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal reads a number in JSON or Go 'g' syntax into its normalised
// decimal value. ok is false when the exponent is too large to represent for
// a non-zero value.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg = true
		s = s[1:]
	}
	mant, expPart := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expPart = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp := -len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	if trimmed == "" {
		return decimal{}, true
	}
	if expPart != "" {
		neg := strings.HasPrefix(expPart, "-")
		expPart = strings.TrimLeft(strings.TrimLeft(expPart, "+-"), "0")
		if len(expPart) > 9 {
			return decimal{}, false
		}
		e := 0
		if expPart != "" {
			e, _ = strconv.Atoi(expPart)
		}
		if neg {
			e = -e
		}
		exp += e
	}
	d.digits, d.exp = trimmed, exp
	return d, true
}

// validJSONNumber reports whether s is a number literal in RFC 8259 syntax:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validJSONNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	digits := func(s string) (rest string, n int) {
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return s[n:], n
	}
	if s == "" {
		return false
	}
	if s[0] == '0' {
		s = s[1:]
	} else {
		var n int
		if s, n = digits(s); n == 0 {
			return false
		}
	}
	if strings.HasPrefix(s, ".") {
		var n int
		if s, n = digits(s[1:]); n == 0 {
			return false
		}
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s != "" && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		var n int
		if s, n = digits(s); n == 0 {
			return false
		}
	}
	return s == ""
}

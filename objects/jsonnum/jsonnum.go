// Package jsonnum is the one rule for which JSON numbers ctxstore stores:
// those every backend (and every JSON reader) holds exactly. The store's
// input checks (store.CheckNumber) and the object model's converters
// (objects/conversation) both apply it; docs/security.md explains it.
package jsonnum

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// fastPath is off only in tests that compare it with the full check.
var fastPath = true

// MaxSafeInt is 2^53, the largest integer every JSON reader holds exactly.
const MaxSafeInt = 1 << 53

// Check reports why the JSON number literal s cannot be stored
// exactly, or nil if it can. It refuses non-finite values (1e400),
// integers beyond ±2^53 (9007199254740993 would be rounded), whole values
// between 2^53 and 1e21 however they are written (1.2345678901234567e19:
// its canonical form is a 20-digit integer no JSON reader holds exactly),
// and literals with more precision than a 64-bit float keeps
// (0.1000000000000000000001 would be rounded to 0.1).
func Check(s string) error {
	if fastPath && shortDecimal(s) {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("number %s is not a finite 64-bit number", short(s))
	}
	a := math.Abs(f)
	c, err := jcs.NumberToJSON(f)
	if err != nil {
		return fmt.Errorf("number %s: %v", short(s), err)
	}
	exact := sameDecimal(s, c)
	if !strings.ContainsAny(s, ".eE") && (a > MaxSafeInt || (a == MaxSafeInt && !exact)) {
		return fmt.Errorf("integer %s is beyond ±2^53 and would lose precision; store it as a string", short(s))
	}
	if a > MaxSafeInt && a < 1e21 {
		return fmt.Errorf("number %s is a whole number beyond ±2^53 that JSON readers do not hold exactly; store it as a string", short(s))
	}
	if !exact {
		return fmt.Errorf("number %s would be stored as %s (a 64-bit float holds no more); store it as a string to keep every digit", short(s), c)
	}
	return nil
}

// shortDecimal reports whether s is a JSON number without exponent with
// at most 15 digits: the common case, accepted without converting. Its
// magnitude is below 10^15 < 2^53, and a decimal of at most 15 significant
// digits comes back unchanged from its nearest double (DBL_DIG), so its
// canonical form denotes the same value.
func shortDecimal(s string) bool {
	if len(s) == 0 || len(s) > 17 {
		return false
	}
	i, digits, dot := 0, 0, false
	if s[0] == '-' {
		i++
	}
	start := i
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && i > start && i+1 < len(s):
			dot = true
		default:
			return false
		}
	}
	if digits == 0 || digits > 15 {
		return false
	}
	// JSON: no leading zero before another digit.
	return !(s[start] == '0' && start+1 < len(s) && s[start+1] != '.')
}

// sameDecimal reports whether the JSON number literals a and b denote the
// same decimal value (exactly, without converting to float).
func sameDecimal(a, b string) bool {
	na, da, ea, ok1 := decimal(a)
	nb, db, eb, ok2 := decimal(b)
	return ok1 && ok2 && na == nb && da == db && ea == eb
}

// decimal splits a JSON number literal into sign, significant digits
// (no leading or trailing zeros) and the exponent of the last digit, so
// that the value is ±digits × 10^exp. Zero is "", 0, positive.
func decimal(s string) (neg bool, digits string, exp int, ok bool) {
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	mant, e := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		n, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil {
			return false, "", 0, false
		}
		e = n
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		e -= len(mant) - i - 1
		mant = mant[:i] + mant[i+1:]
	}
	mant = strings.TrimLeft(mant, "0")
	if mant == "" {
		return false, "", 0, true
	}
	t := strings.TrimRight(mant, "0")
	e += len(mant) - len(t)
	return neg, t, e, true
}

func short(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

package jsonnum

import (
	"math/big"
	"strconv"
	"testing"
)

func checkSlow(s string) error {
	// The same steps as Check after its fast path.
	saved := fastPath
	fastPath = false
	defer func() { fastPath = saved }()
	return Check(s)
}

func TestShortDecimal(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-12.5", "0.1", "123456789012345", "-99999999999999.9", "0.00000000000001"} {
		if !shortDecimal(s) {
			t.Errorf("shortDecimal(%s) = false", s)
		}
		if err := checkSlow(s); err != nil {
			t.Errorf("fast path accepts %s, the full check says %v", s, err)
		}
	}
	for _, s := range []string{"", "-", ".5", "5.", "1e5", "1234567890123456", "0.1234567890123456", "01", "1-", "1..2", "NaN"} {
		if shortDecimal(s) {
			t.Errorf("shortDecimal(%q) = true", s)
		}
	}
}

// FuzzCheck: the fast path never accepts what the full check refuses, and
// an accepted number's value is exactly its nearest double's shortest form.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"0", "1.5", "9007199254740993", "1e21", "0.1", "123456789012345", "1.2345678901234567e19", "-0.000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 {
			return
		}
		err := Check(s)
		if shortDecimal(s) {
			if serr := checkSlow(s); serr != nil {
				t.Fatalf("fast path accepts %q, the full check says %v", s, serr)
			}
		}
		if err != nil {
			return
		}
		fl, perr := strconv.ParseFloat(s, 64)
		want, ok1 := new(big.Rat).SetString(s)
		got, ok2 := new(big.Rat).SetString(strconv.FormatFloat(fl, 'g', -1, 64))
		if perr != nil || !ok1 || !ok2 || want.Cmp(got) != 0 {
			t.Fatalf("Check accepts %q, whose nearest double prints as %s", s, strconv.FormatFloat(fl, 'g', -1, 64))
		}
	})
}

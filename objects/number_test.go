package objects

import (
	"encoding/json"
	"testing"
)

func TestValidJSONNumber(t *testing.T) {
	valid := []string{"0", "-0", "1", "-12", "1.5", "0.001", "1e5", "1E+5", "1e-5", "12.34e56"}
	invalid := []string{"", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "NaN", "Infinity", "1_000", " 1", "1 "}
	for _, s := range valid {
		if !validJSONNumber(s) {
			t.Errorf("validJSONNumber(%q) = false", s)
		}
	}
	for _, s := range invalid {
		if validJSONNumber(s) {
			t.Errorf("validJSONNumber(%q) = true", s)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		want decimal
	}{
		{"0", decimal{}},
		{"-0.000e10", decimal{}},
		{"100", decimal{digits: "1", exp: 2}},
		{"1.50", decimal{digits: "15", exp: -1}},
		{"-0.001", decimal{neg: true, digits: "1", exp: -3}},
		{"1e+21", decimal{digits: "1", exp: 21}},
		{"12.5E-3", decimal{digits: "125", exp: -4}},
	}
	for _, tt := range tests {
		got, ok := parseDecimal(tt.in)
		if !ok || got != tt.want {
			t.Errorf("parseDecimal(%q) = %+v, %v; want %+v", tt.in, got, ok, tt.want)
		}
	}
	if _, ok := parseDecimal("1e99999999999"); ok {
		t.Error("huge exponent accepted")
	}
}

func TestCheckNumber(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"0", true}, {"1.5", true}, {"1e21", true}, {"0.1", true}, {"9007199254740992", true},
		{"9007199254740994", true}, // 2^53+2 is a double
		{"9007199254740993", false},
		{"0.10000000000000001", false},
		{"1e400", false},
		{"1e-400", false}, // underflows to 0
		{"0e999999999999", true},
		{"bad", false},
	}
	for _, tt := range tests {
		err := checkNumber(json.Number(tt.in))
		if (err == nil) != tt.ok {
			t.Errorf("checkNumber(%q) = %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}

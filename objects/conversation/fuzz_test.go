package conversation

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// FuzzExact: Storable never panics, and a literal it accepts survives a
// float64 round trip; ExactArgs leaves no number Storable refuses.
func FuzzExact(f *testing.F) {
	for _, s := range []string{"1", "1.5", "18446744073709551616", "9007199254740993", "1e400", "-0", "0.10000000000000001", "1e21", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Storable(s) {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsInf(v, 0) {
				t.Fatalf("Storable(%q) but it is not a finite float", s)
			}
		}
		tc := ToolCall{Args: map[string]any{"n": json.Number(s), "l": []any{json.Number(s)}}}
		args := tc.ExactArgs()
		for _, v := range []any{args["n"], args["l"].([]any)[0]} {
			if n, ok := v.(json.Number); ok && !Storable(string(n)) {
				t.Fatalf("ExactArgs kept %q", n)
			}
		}
	})
}

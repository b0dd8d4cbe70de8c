package objects

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	type point struct{ X int }
	tests := []struct {
		name string
		in   any
		want string
		err  error
	}{
		{"null", nil, `null`, nil},
		{"empty object", map[string]any{}, `{}`, nil},
		{"empty array", []any{}, `[]`, nil},
		{"nil map is null", map[string]any(nil), `null`, nil},
		{"nil slice is null", []any(nil), `null`, nil},
		{"keys sorted", map[string]any{"b": 1, "a": 2, "c": map[string]any{"z": true, "y": false}}, `{"a":2,"b":1,"c":{"y":false,"z":true}}`, nil},
		// UTF-16 order puts U+1F600 (D83D DE00) before U+E000, unlike code point order.
		{"keys by UTF-16 units", map[string]any{"\ue000": 1, "😀": 2, "é": 3}, "{\"é\":3,\"😀\":2,\"\ue000\":1}", nil},
		{"escapes", map[string]any{"s": "q\"b\\n\n t\t c\u0001 <>& \u2028 é"}, `{"s":"q\"b\\n\n t\t c\u0001 <>& ` + "\u2028" + ` é"}`, nil},
		{"int", 42, `42`, nil},
		{"negative int", int64(-7), `-7`, nil},
		{"float 1.5", 1.5, `1.5`, nil},
		{"float 1e21", 1e21, `1e+21`, nil},
		{"float 1e20", 1e20, `100000000000000000000`, nil},
		{"float 1e-7", 1e-7, `1e-7`, nil},
		{"negative zero", math.Copysign(0, -1), `0`, nil},
		{"float32", float32(0.5), `0.5`, nil},
		{"2^53", int64(1 << 53), `9007199254740992`, nil},
		{"-2^53", int64(-1 << 53), `-9007199254740992`, nil},
		{"2^60 rejected", int64(1 << 60), ``, ErrUnsafeNumber},
		{"10^18 prints unchanged", int64(1e18), `1000000000000000000`, nil},
		{"2^53+1 rejected", int64(1<<53 + 1), ``, ErrUnsafeNumber},
		{"max int64 rejected", int64(math.MaxInt64), ``, ErrUnsafeNumber},
		{"max uint64 rejected", uint64(math.MaxUint64), ``, ErrUnsafeNumber},
		{"uint 2^63 rejected", uint64(1 << 63), ``, ErrUnsafeNumber},
		{"uint 10^19 ok", uint64(1e19), `10000000000000000000`, nil},
		{"NaN", math.NaN(), ``, ErrNonFinite},
		{"+Inf", math.Inf(1), ``, ErrNonFinite},
		{"-Inf in array", []any{1, math.Inf(-1)}, ``, ErrNonFinite},
		{"number text 1.50", json.Number("1.50"), `1.5`, nil},
		{"number text 1E21", json.Number("1E21"), `1e+21`, nil},
		{"number text 0.1", json.Number("0.1"), `0.1`, nil},
		{"number text -0", json.Number("-0"), `0`, nil},
		{"number text 2^53+1", json.Number("9007199254740993"), ``, ErrUnsafeNumber},
		{"number text too precise", json.Number("0.10000000000000001"), ``, ErrUnsafeNumber},
		{"number text overflow", json.Number("1e400"), ``, ErrUnsafeNumber},
		{"number text not a number", json.Number("NaN"), ``, ErrInvalid},
		{"invalid utf-8 value", map[string]any{"a": "\xff"}, ``, ErrInvalidUTF8},
		{"invalid utf-8 key", map[string]any{"\xfe": 1}, ``, ErrInvalidUTF8},
		{"string slice", []string{"a", "b"}, `["a","b"]`, nil},
		{"typed map", map[string]string{"k": "v"}, `{"k":"v"}`, nil},
		{"typed slice", []int{1, 2}, `[1,2]`, nil},
		{"nested", map[string]any{"args": map[string]any{"list": []any{1, "x", nil, []any{}}, "obj": map[string]any{}}}, `{"args":{"list":[1,"x",null,[]],"obj":{}}}`, nil},
		{"struct rejected", point{1}, ``, ErrInvalid},
		{"bytes rejected", []byte("x"), ``, ErrInvalid},
		{"int-keyed map rejected", map[int]any{1: 1}, ``, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical(tt.in)
			if tt.err != nil {
				wantErr(t, err, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCanonicalErrorNamesPath(t *testing.T) {
	_, err := Canonical(map[string]any{"args": map[string]any{"list": []any{1, "\xff"}}})
	wantErr(t, err, ErrInvalidUTF8, `"args.list[1]"`)
}

func TestCanonicalDepthLimit(t *testing.T) {
	var v any = "leaf"
	for i := 0; i < maxDepth+2; i++ {
		v = []any{v}
	}
	_, err := Canonical(v)
	wantErr(t, err, ErrInvalid, "nested deeper")
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"whitespace and order", ` { "b" : [ 1 , 2 ] , "a" : "x" } `, `{"a":"x","b":[1,2]}`, nil},
		{"numbers", `[1.0, 1e21, 1E-7, -0, 0.5, 100]`, `[1,1e+21,1e-7,0,0.5,100]`, nil},
		{"unicode escapes", `{"s":"\u00e9\ud83d\ude00\u000a\/"}`, `{"s":"é😀\n/"}`, nil},
		{"duplicate key", `{"a":1,"a":2}`, ``, ErrInvalid},
		{"lone surrogate", `{"s":"\ud800"}`, ``, ErrInvalid},
		{"invalid utf-8", "{\"s\":\"\xff\"}", ``, ErrInvalidUTF8},
		{"unsafe integer", `{"n":9007199254740993}`, ``, ErrUnsafeNumber},
		{"trailing garbage", `{} x`, ``, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(tt.in))
			if tt.err != nil {
				wantErr(t, err, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestHashBytes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tt := range tests {
		if got := HashBytes([]byte(tt.in)); got != tt.want {
			t.Errorf("HashBytes(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	h, err := HashValue(map[string]any{})
	if err != nil || h != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("HashValue({}) = %s, %v", h, err)
	}
	if isHash(strings.ToUpper(h)) || !isHash(h) || isHash(h[:63]) {
		t.Error("isHash accepts only 64 lowercase hex digits")
	}
}

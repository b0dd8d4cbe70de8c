package jsontext

import (
	"encoding/json"
	"testing"
)

func TestMarshal(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{map[string]any{"b": "<a> & </a>", "a": 1}, `{"a":1,"b":"<a> & </a>"}`},
		{json.RawMessage(` { "x" : [ 1, 2 ] } `), `{"x":[1,2]}`},
		{"line\n", `"line\n"`},
		{nil, `null`},
	} {
		got, err := Marshal(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal of a func: no error")
	}
}

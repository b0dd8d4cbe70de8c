package jsonlimit

import "testing"

func TestLoneSurrogate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`{"a":"k"}`, -1},
		{`{"a":"\ud83d\ude00"}`, -1},
		{`{"a":"\uD83D\uDE00x"}`, -1},
		{`{"a":"\u00e9\n\\ud800"}`, -1}, // an escaped backslash, then text
		{`{"a":"k\ud800"}`, 7},
		{`{"a":"k\udfff"}`, 7},
		{`{"a":"\ud800\u0041"}`, 6},
		{`{"a":"\ud800\\udc00"}`, 6},
		{`{"k\udc00":1}`, 3},
		{`"\ud800`, 1},
	} {
		if got := LoneSurrogate([]byte(c.in)); got != c.want {
			t.Errorf("LoneSurrogate(%s) = %d, want %d", c.in, got, c.want)
		}
	}
}

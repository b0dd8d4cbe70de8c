package jsonlimit

import (
	"errors"
	"strings"
	"testing"
)

func TestDepth(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for s, ok := range map[string]bool{
		`{}`: true, deep(MaxDepth): true, deep(MaxDepth + 1): false, deep(10000): false,
		`{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}`: true,
		`"\"[[[[` + strings.Repeat("[", 200) + `"`: true,
		`{"a":{"b":[1,{"c":[]}]}}`:                 true,
	} {
		err := Depth([]byte(s), MaxDepth)
		if (err == nil) != ok || (!ok && !errors.Is(err, ErrTooDeep)) {
			t.Errorf("Depth(%.40q) = %v, want ok %v", s, err, ok)
		}
	}
}

func FuzzDepth(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"\"["}]}`), 3)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 0 || max > 1000 {
			return
		}
		// Never panics; a text without brackets always passes.
		_ = Depth(b, max)
		if !strings.ContainsAny(string(b), "[{") && Depth(b, max) != nil {
			t.Fatal("no brackets, but too deep")
		}
	})
}

package tools

import (
	"reflect"
	"testing"
)

func TestParsers(t *testing.T) {
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"ls plain", ParseLs("a.go  b.go\nc.txt\n"), []string{"a.go  b.go", "a.go", "b.go", "c.txt"}},
		{"ls -l", ParseLs("total 8\n-rw-r--r-- 1 u g 10 Jan  1 00:00 x.go\ndrwxr-xr-x 2 u g 4096 Jan  1 00:00 dir\nlrwxrwxrwx 1 u g 4 Jan 1 00:00 l -> x.go\n"),
			[]string{"x.go", "dir", "l"}},
		{"ls -F and headers", ParseLs("sub:\nrun*\ndocs/\n"), []string{"run", "docs"}},
		{"find", ParseFind("./a\n\n./b c\n"), []string{"./a", "./b c"}},
		{"grep", ParseGrep("a.go:12:func x\nb.go:y\n--\nBinary file z.bin matches\n"),
			[]string{"a.go:12:func x", "a.go", "b.go:y", "b.go", "z.bin"}},
		{"grep -l", ParseGrep("a.go\nb.go\n"), []string{"a.go", "b.go"}},
		{"bash", BashCandidates(`cat "x y.txt" | grep -n foo > out.txt; rm $TMP/*.o`, "z.txt\n"),
			[]string{"cat", "x", "y.txt", "grep", "foo", "out.txt", "rm", "z.txt"}},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

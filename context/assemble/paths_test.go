package assemble

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathsDisplay(t *testing.T) {
	p := Paths{Root: "/m/home/me/proj", Mount: "/m"}
	for _, tc := range []struct{ in, want string }{
		{"/m/home/me/proj/src/main.go", "src/main.go"},
		{"/m/home/me/proj", "/home/me/proj"},                 // the root itself is not below it
		{"/m/home/me/project/x.go", "/home/me/project/x.go"}, // a sibling sharing the root's prefix
		{"/m/etc/hosts", "/etc/hosts"},
		{"/other/file", "/other/file"},
		{"/mx/file", "/mx/file"},
	} {
		if got := p.Display(tc.in); got != tc.want {
			t.Errorf("Display(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (Paths{Root: "/"}).Display("/a/b"); got != "/a/b" {
		t.Errorf("root / : %q", got)
	}
	if got := (Paths{}).Display("/a/b"); got != "/a/b" {
		t.Errorf("no paths: %q", got)
	}
}

// A session's metadata lines show files below its working directory by
// their relative path; the paths are the first commit's, so a resumed
// session (whose options name none) keeps showing them so and every call
// rebuilds byte for byte.
func TestPathsShownAndKept(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 100, Horizon: 200})
	var err error
	e.a, err = New(e.ctx, e.tools.Session(), Options{Layout: LayoutStream, Tools: testTools, Policy: Policy{StaleThreshold: 100, Horizon: 200},
		Now: e.a.o.Now, Paths: Paths{Root: filepath.Join(e.dir, "proj")}})
	e.must(err)
	e.must(os.MkdirAll(filepath.Join(e.dir, "proj"), 0o755))
	e.turn("read two files")
	in := e.file("proj/main.go", "package main\n")
	out := e.file("notes.txt", "outside the root\n")
	e.read(in)
	e.read(out)
	c1 := e.call()
	got := string(c1.Bytes)
	if !strings.Contains(got, " path=main.go ") || strings.Contains(got, "path="+in) || !strings.Contains(got, " path="+out+" ") {
		t.Fatalf("metadata lines do not show main.go relative and notes.txt as it is:\n%s", got)
	}
	e.reopen(t, Policy{StaleThreshold: 100, Horizon: 200})
	e.turn("one more")
	e.read(e.file("proj/util.go", "package main\n\nfunc f() {}\n"))
	c2 := e.call()
	if !strings.Contains(string(c2.Bytes), " path=util.go ") {
		t.Fatalf("the resumed session lost its paths:\n%s", c2.Bytes)
	}
	for n := 1; n <= c2.N; n++ {
		if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
}

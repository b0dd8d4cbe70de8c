package assemble

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/objects"
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

// A rebase (rendering 4) leaves out a collapsed file the stream already
// names, and the note that it went inactive, rather than rewriting them as
// "collapsed:" lines; the metadata line stays, and every call rebuilds.
func TestRebaseDropsNamedCollapsedFiles(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 50, Horizon: 200})
	f := e.file("big.go", "package big\n\n"+output("file", 40))
	e.turn("read it")
	e.read(f)
	id := objects.DisplayID(mustID(t, e, f))
	var last *Assembled
	rebased := false
	for turn := 2; turn <= 6; turn++ { // the read leaves the 3-turn window
		e.turn("more")
		e.bash("make", output(fmt.Sprint(turn), 2))
		e.now = e.now.Add(20 * time.Second)
		last = e.call()
		rebased = rebased || last.Rebased
	}
	got := string(last.Bytes)
	if !rebased || !strings.Contains(got, "file id="+id+" ") {
		t.Fatalf("rebased %v; the metadata line of %s must stay:\n%s", rebased, id, got)
	}
	if strings.Contains(got, "collapsed: file "+id) || strings.Contains(got, "inactive now: "+id) || strings.Contains(got, "file line 0") {
		t.Fatalf("the collapsed file is still rendered after the rebase:\n%s", got)
	}
	for n := 1; n <= last.N; n++ {
		if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
}

// An output brought back by activate and collapsed again leaves a
// "collapsed:" stub (a tool call is not a file the stream lists); a later
// rebase over that stub rewrites it as it is (the stream item no longer
// holds its object).
func TestRebaseOverAStub(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 50, Horizon: 200})
	e.turn("build")
	f := e.file("kept.go", "package kept\n\n"+output("kept", 20))
	e.read(f) // pinned: its block stays before everything below
	fid := mustID(t, e, f)
	if _, err := e.tools.Pin(e.ctx, fid); err != nil {
		t.Fatal(err)
	}
	e.bash("make", output("build", 40))
	id := e.uid("toolu_0002")
	rebases := 0
	step := func(turns int) {
		for i := 0; i < turns; i++ {
			e.turn("more")
			e.bash("true", output(fmt.Sprint(e.seq), 2))
			e.now = e.now.Add(20 * time.Second)
			if e.call().Rebased {
				rebases++
			}
		}
	}
	step(5) // the output collapses and a rebase rewrites it
	if _, err := e.tools.Activate(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	e.turn("look again")
	e.call()
	step(5) // collapsed again: its content block becomes a stub
	if !strings.Contains(string(e.call().Bytes), "collapsed: output of") {
		t.Fatal("no stub for the re-collapsed output")
	}
	before := rebases
	if _, err := e.tools.Deactivate(e.ctx, fid); err != nil { // its early block goes stale
		t.Fatal(err)
	}
	e.now = e.now.Add(10 * time.Minute)
	step(1) // a cold start rebases from the first stale item, before the stub
	if rebases <= before {
		t.Fatalf("no rebase after the stub (%d rebases)", rebases)
	}
	last := e.call()
	for n := 1; n <= last.N; n++ {
		if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
}

package tools

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session"
)

func (e *env) id(p string) string {
	e.t.Helper()
	id, err := e.ix.ObjectID(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func TestWriteEditIndex(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		p := e.file("w.txt", "one")
		r, err := e.tools.Write(e.ctx, Call{ID: e.uid("toolu_w"), Tool: "write", Args: map[string]any{"path": p}}, p)
		if err != nil {
			t.Fatal(err)
		}
		id := e.id(p)
		if !reflect.DeepEqual(r.Object.Toolcall.FileRefs, []string{id}) || !e.state().InPool(id) || e.state().IsActive(id) {
			t.Fatalf("write: %+v pool %v", r.Object.Toolcall, e.state().Pool)
		}
		e.file("w.txt", "two")
		if _, err := e.tools.Edit(e.ctx, Call{ID: e.uid("toolu_e"), Tool: "edit"}, p); err != nil {
			t.Fatal(err)
		}
		o, _, err := resolveLatest(e, id)
		if err != nil || *o.Content != "two" {
			t.Fatalf("edit did not version: %v %v", o, err)
		}
	})
}

func TestDiscoveryTools(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		a := e.file("a.go", "package a")
		b := e.file("sub/b.go", "package b")
		e.file("c d.txt", "spaces")
		if err := os.Mkdir(filepath.Join(e.dir, "emptydir"), 0o755); err != nil {
			t.Fatal(err)
		}

		ls, err := e.tools.Ls(e.ctx, Call{ID: e.uid("toolu_ls"), Tool: "ls", Output: out("a.go\nc d.txt\nemptydir/\nsub/\n")}, e.dir)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{e.id(a), e.id(filepath.Join(e.dir, "c d.txt"))}
		if !reflect.DeepEqual(ls.Files, want) {
			t.Fatalf("ls files %v, want %v", ls.Files, want)
		}
		for _, id := range want {
			if !e.state().Indexed(id) || e.state().InPool(id) || e.state().IsActive(id) {
				t.Fatalf("%s should be in the session index only", id)
			}
		}

		find, err := e.tools.Find(e.ctx, Call{ID: e.uid("toolu_find"), Tool: "find", Output: out("./a.go\n./sub/b.go\n./gone.go\n")}, e.dir)
		if err != nil || !reflect.DeepEqual(find.Files, []string{e.id(a), e.id(b)}) {
			t.Fatalf("find: %v %v", find.Files, err)
		}
		grep, err := e.tools.Grep(e.ctx, Call{ID: e.uid("toolu_grep"), Tool: "grep", Output: out("sub/b.go:1:package b\n")}, e.dir)
		if err != nil || !reflect.DeepEqual(grep.Files, []string{e.id(b)}) {
			t.Fatalf("grep: %v %v", grep.Files, err)
		}
	})
}

func TestBashAttribution(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		a := e.file("a.txt", "a")
		if _, err := e.tools.Read(e.ctx, a); err != nil {
			t.Fatal(err)
		}
		// The command created b.txt and removed a.txt.
		b := e.file("b.txt", "b")
		if err := os.Remove(a); err != nil {
			t.Fatal(err)
		}
		r, err := e.tools.Bash(e.ctx, Call{ID: e.uid("toolu_b"), Tool: "bash", Output: out("")}, e.dir, `echo b > b.txt && rm -f "a.txt"`)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(r.Files, e.id(b)) || !slices.Contains(r.Files, e.id(a)) {
			t.Fatalf("bash files %v", r.Files)
		}
		o, _, err := resolveLatest(e, e.id(a))
		if err != nil || !files.IsDeletedVersion(o) {
			t.Fatalf("a.txt should have a deletion version: %v %v", o, err)
		}
	})
}

func TestResumeReconciles(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		a := e.file("a.txt", "a1")
		g := e.file("gone.txt", "g")
		for _, p := range []string{a, g} {
			if _, err := e.tools.Read(e.ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		// While no process runs: a changes, gone.txt is deleted.
		e.file("a.txt", "a2")
		if err := os.Remove(g); err != nil {
			t.Fatal(err)
		}
		st2 := se.Reopen()
		s, err := session.Open(e.ctx, st2, e.sid)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := files.NewTracker(files.NewIndexer(st2, e.ix.Resolver(), 0), files.TrackerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		tl := New(s, files.NewIndexer(st2, e.ix.Resolver(), 0), Options{Tracker: tr})
		res, err := tl.Resume(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]files.Outcome{}
		for _, r := range res {
			got[filepath.Base(r.Path)] = r.Outcome
		}
		if got["a.txt"] != files.Updated || got["gone.txt"] != files.Deleted || len(got) != 2 {
			t.Fatalf("resume outcomes: %v", got)
		}
		if len(tr.Tracked()) != 2 {
			t.Fatalf("tracked after resume: %v", tr.Tracked())
		}
		if !reflect.DeepEqual(s.State(), e.state()) {
			t.Fatalf("pools differ after resume")
		}
	})
}

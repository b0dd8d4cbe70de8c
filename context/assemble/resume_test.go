package assemble

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session"
)

// reopen replaces e's store handle, session, tools and assembler by new
// ones over the same file, as a new process would: only the store carries
// over.
func (e *env) reopen(t *testing.T, pol Policy) {
	t.Helper()
	st := e.se.Reopen()
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-test"})
	e.must(err)
	e.st, e.ix = st, files.NewIndexer(st, res, 0)
	s, err := session.Open(e.ctx, st, e.sid)
	e.must(err)
	e.tools = tools.New(s, e.ix, tools.Options{Policy: collapse.Default()})
	a, err := Resume(e.ctx, s, Options{Policy: pol, Now: func() time.Time { return e.now }})
	e.must(err)
	e.a = a
}

// TestResumeContinuesByteForByte runs one session twice on two stores with
// the same script; the second is torn down and resumed from its commits in
// a "new process" several times (also in the middle of a turn, with tool
// calls reported and not yet assembled). Every call of the resumed run must
// equal the uninterrupted run's byte for byte, and be rebuildable. It runs
// on SQLite only: it needs two databases that assign the same transaction
// ids (versions are rendered), and the XTDB tests share one database.
func TestResumeContinuesByteForByte(t *testing.T) {
	for _, layout := range []Layout{LayoutStream, LayoutLiteral} {
		t.Run(string(layout), func(t *testing.T) {
			pol := Policy{StaleThreshold: 600, Horizon: 200}
			x := newEnv(t, layout, pol)
			y := newEnv(t, layout, pol)
			y.dir = x.dir // the same files, so both stores index the same bytes
			a := x.file("a.go", "package a\n")
			b := x.file("b.go", "package b\n\nfunc B() {}\n")
			resumes := 0
			shown := map[int]map[string]int{} // the uninterrupted run's shown map after each call
			for turn := 1; turn <= 16; turn++ {
				for _, e := range []*env{x, y} {
					e.turn(fmt.Sprintf("turn %d", turn))
					switch {
					case turn == 1:
						e.read(a)
					case turn == 2:
						e.read(b)
					case turn == 6:
						if _, err := e.tools.Deactivate(e.ctx, mustID(t, e, b)); err != nil {
							t.Fatal(err)
						}
					}
					id := fmt.Sprintf("mk_%d", turn)
					args := map[string]any{"command": "make"}
					out := output(fmt.Sprintf("t%d", turn), 4)
					e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: id, Name: "bash", Args: args}}))
					r, err := e.tools.Record(e.ctx, tools.Call{ID: id, Tool: "bash", Args: args, Output: &out})
					e.must(err)
					e.must(e.a.ToolResult(e.ctx, r))
					if e == y && turn%4 == 3 {
						// Mid-turn: what was reported since the last call is
						// in no commit; the harness reports it again. (Only
						// tool calls happened since the last call: other
						// state changes made before a crash show at the
						// first sync point after it, which may differ from
						// the uninterrupted order.)
						y.reopen(t, pol)
						resumes++
						e.must(e.a.User(e.ctx, fmt.Sprintf("turn %d", turn)))
						e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: id, Name: "bash", Args: args}}))
						e.must(e.a.ToolResult(e.ctx, r))
					}
					e.bash("make test", output(fmt.Sprintf("u%d", turn), 4))
					e.now = e.now.Add(20 * time.Second)
					if turn == 10 {
						e.now = e.now.Add(6 * time.Minute)
					}
				}
				if turn == 5 { // an external edit, seen by both
					p := x.file("a.go", "package a\n\n// edited\n")
					for _, e := range []*env{x, y} {
						if _, err := e.ix.Index(e.ctx, p); err != nil {
							t.Fatal(err)
						}
					}
				}
				cx, cy := x.call(), y.call()
				shown[cx.N] = maps.Clone(x.a.shown)
				if cx.N != cy.N || !bytes.Equal(cx.Bytes, cy.Bytes) {
					dumpDiff(t, cx.Bytes, cy.Bytes)
					t.Fatalf("turn %d: call %d/%d differs after %d resumes: common prefix %d of %d/%d bytes",
						turn, cx.N, cy.N, resumes, lcp(cx.Bytes, cy.Bytes), len(cx.Bytes), len(cy.Bytes))
				}
				if cx.Rebased != cy.Rebased || cx.StaleTokens != cy.StaleTokens {
					t.Fatalf("turn %d: rebased %v/%v, stale %d/%d", turn, cx.Rebased, cy.Rebased, cx.StaleTokens, cy.StaleTokens)
				}
				if turn%4 == 0 { // between calls, too
					y.reopen(t, pol)
					resumes++
					if c := y.a.LastCommit(); c == nil || c.N != cy.N {
						t.Fatalf("resumed from %v, want commit %d", c, cy.N)
					}
				}
			}
			for n := 1; n <= 16; n++ {
				if _, err := Rebuild(y.ctx, y.st, y.sid, n); err != nil {
					t.Fatalf("rebuild %d: %v", n, err)
				}
			}
			checkShown(t, y, shown, 16)
		})
	}
}

// checkShown checks that the commits of e's session record the shown map
// whole in the first only, and changes in the others (resumes included),
// and the system prompt's reference in the first only (the others name
// it: ReadCommit fills it), that replaying them gives want[n] after every
// call n, and that commits of the earlier form (the map and the reference
// whole in each, here the first half rewritten so) replay and rebuild the
// same.
func checkShown(t *testing.T, e *env, want map[int]map[string]int, calls int) {
	t.Helper()
	changes := 0
	for n := 1; n <= calls; n++ {
		d, err := e.st.Entity(e.ctx, CommitID(e.sid, n), store.Basis{})
		e.must(err)
		_, whole := d["shown"]
		if whole != (n == 1) {
			t.Errorf("commit %d records the shown map whole: %v", n, whole)
		}
		if d["shown_set"] != nil || d["shown_del"] != nil {
			changes++
		}
		if _, ok := d["system_ref"]; ok != (n == 1) || (n > 1 && fmt.Sprint(d["system_ref_call"]) != "1") {
			t.Errorf("commit %d: system_ref %v, system_ref_call %v (want the reference in the first only)", n, d["system_ref"], d["system_ref_call"])
		}
	}
	first, err := ReadCommit(e.ctx, e.st, e.sid, 1)
	e.must(err)
	for n := 2; n <= calls; n++ {
		if c, err := ReadCommit(e.ctx, e.st, e.sid, n); err != nil || c.SystemRef != first.SystemRef || first.SystemRef.ID == "" {
			t.Fatalf("commit %d alone: system ref %v, %v; the first records %v", n, c.SystemRef, err, first.SystemRef)
		}
	}
	if changes == 0 {
		t.Error("no commit records a change of the shown map")
	}
	check := func(form string) {
		for n := 1; n <= calls; n++ {
			_, last, err := replay(e.ctx, e.st, e.sid, n)
			e.must(err)
			if !maps.Equal(last.Shown, want[n]) {
				t.Fatalf("%s: call %d replays shown %v, the assembler had %v", form, n, last.Shown, want[n])
			}
			if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
				t.Fatalf("%s: rebuild %d: %v", form, n, err)
			}
		}
	}
	check("changes")
	for n := 1; n <= calls/2; n++ {
		d, err := e.st.Entity(e.ctx, CommitID(e.sid, n), store.Basis{})
		e.must(err)
		whole := map[string]any{}
		for id, i := range want[n] {
			whole[id] = int64(i)
		}
		d["shown"] = whole
		d["system_ref"] = first.SystemRef.String()
		delete(d, "shown_set")
		delete(d, "shown_del")
		delete(d, "system_ref_call")
		_, err = store.SubmitWait(e.ctx, e.st, []store.Op{store.Put(d)})
		e.must(err)
	}
	check("earlier form")
}

func TestResumeWithoutCommits(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnvOn(t, se, LayoutStream, Policy{})
		if _, err := Resume(e.ctx, e.tools.Session(), Options{}); !errors.Is(err, ErrNoCommits) {
			t.Fatalf("Resume without commits: %v, want ErrNoCommits", err)
		}
		for want := 1; want <= 9; want++ {
			e.turn("hi")
			e.call()
			if n, err := Calls(e.ctx, e.st, e.sid); err != nil || n != want {
				t.Fatalf("Calls = %d, %v; want %d", n, err, want)
			}
		}
		a, err := Open(e.ctx, e.tools.Session(), Options{})
		e.must(err)
		if c := a.LastCommit(); c == nil || c.N != 9 {
			t.Fatalf("Open resumed from %+v, want commit 9", c)
		}
	})
}

func dumpDiff(t *testing.T, a, b []byte) {
	p := lcp(a, b)
	lo := max(0, p-300)
	t.Logf("x: %q", a[lo:min(len(a), p+400)])
	t.Logf("y: %q", b[lo:min(len(b), p+400)])
}

// A session begun with rendering version 1 keeps it: its calls are rebuilt
// and resumed with the rendering they were sent with.
func TestRenderVersionKept(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 100, Horizon: 200})
	e.a.style.setRendering(renderings[1], LayoutStream)
	e.turn("one")
	e.bash("make", output("a", 4))
	c1 := e.call()
	if !strings.Contains(string(c1.Bytes), "toolcall_ref id=toolu_0001 tool=bash args=") {
		t.Fatalf("version 1 tool result expected:\n%s", c1.Bytes)
	}
	e.reopen(t, Policy{StaleThreshold: 100, Horizon: 200})
	for turn := 2; turn <= 6; turn++ {
		e.turn("more")
		e.bash("make", output(fmt.Sprint(turn), 4))
		e.now = e.now.Add(time.Minute)
		e.call()
	}
	last := e.call()
	if strings.Contains(string(last.Bytes), "output_chars=") || !strings.Contains(string(last.Bytes), "collapsed: toolcall_ref") {
		t.Fatal("the resumed session changed its rendering")
	}
	for n := 1; n <= last.N; n++ {
		if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
	f := newEnv(t, LayoutStream, Policy{})
	f.turn("one")
	f.bash("make", output("a", 4))
	if c := f.call(); !strings.Contains(string(c.Bytes), "<<tool_result id=toolu_0001>>\na line 0") {
		t.Fatalf("version 3 tool result (the live output itself) expected:\n%s", c.Bytes)
	}
}

// TestMetadataVersionKept (issue 11): the metadata line is part of the
// bytes, so its version is recorded in the root commit; a commit without
// it is version 1, and a version this code does not know is refused rather
// than rebuilt with another line.
func TestMetadataVersionKept(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{})
	e.a.style.setRendering(renderings[1], LayoutStream) // tool results as full metadata lines
	e.turn("one")
	e.bash("make", output("a", 4))
	c1 := e.call()
	doc, err := e.st.Entity(e.ctx, CommitID(e.sid, 1), store.Basis{})
	if err != nil {
		t.Fatal(err)
	}
	if v := fmt.Sprint(doc["metadata"]); v != fmt.Sprint(objects.MetadataVersion) {
		t.Fatalf("the root commit records metadata version %s, want %d", v, objects.MetadataVersion)
	}
	rewrite := func(v any) {
		t.Helper()
		d := store.Doc{}
		for k, val := range doc {
			d[k] = val
		}
		if v == nil {
			delete(d, "metadata")
		} else {
			d["metadata"] = v
		}
		if _, err := store.SubmitWait(e.ctx, e.st, []store.Op{store.Put(d)}); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(nil) // a commit written before the version was recorded
	got, err := Rebuild(e.ctx, e.st, e.sid, 1)
	if err != nil || !bytes.Equal(got.Bytes, c1.Bytes) {
		t.Fatalf("rebuild of a commit without a metadata version: %v", err)
	}
	rewrite(int64(objects.MetadataVersion + 1))
	if _, err := Rebuild(e.ctx, e.st, e.sid, 1); err == nil || !strings.Contains(err.Error(), "metadata version") {
		t.Fatalf("rebuild of a commit with an unknown metadata version: %v", err)
	}
	if _, err := objects.RenderMetadataAt(c1Object(t, e), objects.MetadataVersion+1); err == nil {
		t.Fatal("RenderMetadataAt rendered an unknown version")
	}
}

// c1Object is the session's chat object (any object will do).
func c1Object(t *testing.T, e *env) *objects.Object {
	t.Helper()
	doc, err := e.st.Entity(e.ctx, "chat:"+e.sid, store.Basis{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := objects.FromDoc(doc)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

package assemble

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var leanTools = append(slices.Clone(testTools),
	ToolSpec{Name: "activate", Description: "Show an object's content again"},
	ToolSpec{Name: "deactivate", Description: "Collapse an object's content"})

const leanGuide = "# Your context (test guide)"

// TestLeanHead: a session with a lean head is sent without the guide and
// the withheld tools until its first rebase; that call rewrites
// everything (the head precedes every cached prefix) and every later call
// has the managed head. Each call's head is recorded: a rebuild gives the
// bytes sent, and a session resumed on either side of the switch goes on
// with the head it had.
func TestLeanHead(t *testing.T) {
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) { testLeanHead(t, release) })
	}
}

// testLeanHead is TestLeanHead, with the frozen prefix released from
// memory or not (Options.Release: nothing is released while lean).
func testLeanHead(t *testing.T, release bool) {
	pol := Policy{StaleThreshold: 600, Horizon: 200}
	e := newEnv(t, LayoutStream, pol)
	a, err := New(e.ctx, e.tools.Session(), Options{Layout: LayoutStream, Tools: leanTools, Policy: pol, Release: release,
		Now: func() time.Time { return e.now }, Lean: &LeanHead{Guide: leanGuide, Withheld: []string{"activate", "deactivate", "pin"}}})
	e.must(err)
	e.a = a
	var got []*Assembled
	switched := 0
	for turn := 1; turn <= 12 && (switched == 0 || len(got) < switched+3); turn++ {
		e.turn(fmt.Sprintf("turn %d", turn))
		e.bash("make", output(fmt.Sprintf("t%d", turn), 30))
		e.now = e.now.Add(20 * time.Second)
		c := e.call()
		got = append(got, c)
		// HeadTokens counts the head as rendered: the lean head's, then the
		// managed one's, larger.
		head, err := renderHead(c.System(), c.Tools())
		e.must(err)
		if want := e.a.tok.Count(string(head)); c.HeadTokens != want || want == 0 {
			t.Fatalf("call %d: HeadTokens %d, want %d", c.N, c.HeadTokens, want)
		}
		if len(got) > 1 && c.HeadChanged && c.HeadTokens <= got[len(got)-2].HeadTokens {
			t.Fatalf("call %d: the managed head's %d tokens, the lean head's %d", c.N, c.HeadTokens, got[len(got)-2].HeadTokens)
		}
		if turn == 2 {
			// A new process resumes the lean session: still lean.
			e.reopen(t, pol)
		}
		names := func() (out []string) {
			for _, tl := range c.Tools() {
				out = append(out, tl.Name)
			}
			return out
		}()
		if switched == 0 && !c.HeadChanged {
			if strings.Contains(c.System(), leanGuide) || slices.Contains(names, "activate") || slices.Contains(names, "deactivate") {
				t.Fatalf("call %d: lean head with the guide or a withheld tool: %q %v", c.N, c.System(), names)
			}
			if !slices.Equal(c.Withheld(), []string{"activate", "deactivate"}) {
				t.Fatalf("call %d: withheld %v, want activate and deactivate (pin is not a tool of the session)", c.N, c.Withheld())
			}
			if c.Rebased {
				t.Fatalf("call %d rebased with a lean head and no head change", c.N)
			}
			if c.BytesFrom != 0 {
				t.Fatalf("call %d: %d bytes released while the head is lean", c.N, c.BytesFrom)
			}
			continue
		}
		if switched == 0 {
			switched = c.N
			if !c.Rebased || c.PrefixBytes != 0 || c.PrefixTokens != 0 {
				t.Fatalf("call %d: head changed (rebased %v), shared prefix %d bytes %d tokens; want a rebase and nothing shared", c.N, c.Rebased, c.PrefixBytes, c.PrefixTokens)
			}
			prev := got[len(got)-2].Bytes
			if n := lcp(prev, c.Bytes); n >= len(e.a.head) {
				t.Fatalf("call %d: shares %d bytes with the previous call, beyond the head (%d)", c.N, n, len(e.a.head))
			}
			if !strings.Contains(string(c.Bytes[c.RebaseOffset:]), "collapsed: ") {
				t.Fatalf("call %d: rebase offset %d does not point at the collapsed part: %.200q", c.N, c.RebaseOffset, c.Bytes[c.RebaseOffset:])
			}
		} else if c.HeadChanged {
			t.Fatalf("call %d: the head changed again", c.N)
		}
		if c.System() != "You are a careful agent.\n\n"+leanGuide || !slices.Equal(names, []string{"read", "bash", "activate", "deactivate"}) || c.Withheld() != nil {
			t.Fatalf("call %d: managed head %q %v, withheld %v", c.N, c.System(), names, c.Withheld())
		}
		if c.N == switched+1 {
			if c.BytesFrom == 0 && !bytes.HasPrefix(c.Bytes, got[len(got)-2].Bytes) && !c.Rebased {
				t.Fatalf("call %d does not extend the call that switched", c.N)
			}
			// A new process resumes the managed session: still managed.
			e.reopen(t, pol)
		}
	}
	if switched == 0 {
		t.Fatal("the head never switched: no rebase in 12 turns")
	}
	for _, cm := range rebuildHeads(t, e, got) {
		if cm.Lean != (cm.N < switched) {
			t.Fatalf("commit %d records lean=%v, switch at %d", cm.N, cm.Lean, switched)
		}
		if cm.N == 1 && (cm.LeanHead == nil || cm.LeanHead.Guide != leanGuide) {
			t.Fatalf("the root commit records lean head %+v", cm.LeanHead)
		}
	}
}

// rebuildHeads checks that every call of got rebuilds as sent, its head
// and withheld tools included, and returns the calls' commits.
func rebuildHeads(t *testing.T, e *env, got []*Assembled) []*Commit {
	t.Helper()
	var out []*Commit
	for _, c := range got {
		r, err := Rebuild(e.ctx, e.st, e.sid, c.N)
		if err != nil {
			t.Fatalf("rebuild call %d: %v", c.N, err)
		}
		if r.Len() != c.Len() || !bytes.Equal(r.Bytes[c.BytesFrom:], c.Bytes) || r.System() != c.System() || !slices.Equal(r.Withheld(), c.Withheld()) {
			t.Fatalf("rebuild call %d differs: system %q, withheld %v", c.N, r.System(), r.Withheld())
		}
		cm, err := ReadCommit(e.ctx, e.st, e.sid, c.N)
		e.must(err)
		out = append(out, cm)
	}
	rebuildAll(t, e.ctx, e.st, e.sid, got)
	return out
}

// TestBareHead: a bare head (LeanHead.Bare) is lean for the whole
// session: the guide and the withheld tools are never sent and the head
// never changes, yet the session rebases; its first collapse adds one
// note naming where outputs are whole, a preview names its output's spill
// file, and a rebuild and a resume (before and after the note) give the
// bytes sent and go on without a second note.
func TestBareHead(t *testing.T) {
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) { testBareHead(t, release) })
	}
}

func testBareHead(t *testing.T, release bool) {
	const spill = "/work/.ctxstore/spill/s1"
	pol := Policy{StaleThreshold: 600, Horizon: 200, PreviewTokens: 200}
	e := newEnv(t, LayoutStream, pol)
	a, err := New(e.ctx, e.tools.Session(), Options{Layout: LayoutStream, Tools: leanTools, Policy: pol, Release: release,
		Now: func() time.Time { return e.now }, Lean: &LeanHead{Guide: leanGuide, Withheld: []string{"activate", "deactivate", "pin"}, Bare: true, Spill: spill}})
	e.must(err)
	e.a = a
	note := spillNote(spill)
	if !strings.Contains(note, spill+"/<its call id>.txt") {
		t.Fatalf("the note names no spill file pattern: %q", note)
	}
	var got []*Assembled
	rebases, noted := 0, 0
	written := map[string]string{} // the spill files, as the harness integration writes them
	listed := map[string]bool{}    // listed in Spill since the assembler (re)opened
	for turn := 1; turn <= 12; turn++ {
		e.turn(fmt.Sprintf("turn %d", turn))
		e.bash("make", output(fmt.Sprintf("t%d", turn), 30))
		e.bash("git status", output(fmt.Sprintf("s%d", turn), 2)) // small: collapses without a preview
		var big string
		if turn == 5 {
			e.bash("cat big.log", output("big", 100))
			big = e.uid(fmt.Sprintf("toolu_%04d", e.seq))
		}
		e.now = e.now.Add(20 * time.Second)
		c := e.call()
		got = append(got, c)
		for _, f := range c.Spill {
			if listed[f.CallID] {
				t.Fatalf("call %d lists %s's spill file again", c.N, f.CallID)
			}
			listed[f.CallID], written[f.CallID] = true, f.Content
		}
		spilled := 0
		for _, it := range e.a.items {
			if it != nil && it.kind == kToolRef && (it.collapsed || it.preview) { // nil: released (Options.Release)
				spilled++
				// listed since the (re)open: a new process lists every file again
				if w := written[it.ref.ID]; !listed[it.ref.ID] || it.obj != nil && w != *it.obj.Content {
					t.Fatalf("call %d names the spill file of %s, not listed with its output since the assembler opened", c.N, it.ref.ID)
				}
			}
		}
		if rebases > 0 && spilled == 0 {
			t.Fatalf("call %d: nothing collapsed or previewed after a rebase", c.N)
		}
		var names []string
		for _, tl := range c.Tools() {
			names = append(names, tl.Name)
		}
		if c.HeadChanged || strings.Contains(c.System(), leanGuide) || slices.Contains(names, "activate") || !slices.Equal(c.Withheld(), []string{"activate", "deactivate"}) {
			t.Fatalf("call %d: head changed %v, system %q, tools %v, withheld %v: want the lean head for good", c.N, c.HeadChanged, c.System(), names, c.Withheld())
		}
		if c.Rebased {
			rebases++
			if n := lcp(got[max(0, len(got)-2)].Bytes, c.Bytes); len(got) > 1 && n < len(e.a.head) {
				t.Fatalf("call %d: a rebase shares %d bytes, less than the head (%d): it rewrote the head", c.N, n, len(e.a.head))
			}
		}
		whole, err := c.Whole(e.ctx)
		e.must(err)
		if n := strings.Count(string(whole.Bytes), note); n > 1 || (n == 0) != (rebases == 0) {
			t.Fatalf("call %d: the spill note is there %d times after %d rebases", c.N, n, rebases)
		}
		if rebases > 0 && noted == 0 {
			noted = c.N
		}
		if big != "" && !strings.Contains(string(c.Bytes), "left out here; read "+spillPath(spill, big)+" for the output whole") {
			t.Fatalf("call %d: the preview does not name %s: %.300q", c.N, spillPath(spill, big), c.Bytes)
		}
		if turn == 2 || c.N == noted {
			e.reopen(t, pol) // a new process goes on bare, noted or not
			clear(listed)    // and lists every spill file again: they may be gone
		}
	}
	if rebases == 0 {
		t.Fatal("no rebase in 12 turns")
	}
	for _, cm := range rebuildHeads(t, e, got) {
		if !cm.Lean || cm.N == 1 && (cm.LeanHead == nil || !cm.LeanHead.Bare || cm.LeanHead.Spill != spill) {
			t.Fatalf("commit %d records lean=%v, lean head %+v", cm.N, cm.Lean, cm.LeanHead)
		}
	}
}

package assemble

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/tools"
)

// TestPreviewSizeAdapts (issue 17 item 3, "kept under 5%"): a preview the
// model reads back whole (activate) is a fault; while faults pass 5% of the
// previews, each doubles the size from which outputs enter as a preview.
// The same command run again is no fault here (live it is as often a new
// run after an edit). The count and the size are in the commits: a
// resumed assembler continues with them.
func TestPreviewSizeAdapts(t *testing.T) {
	pol := Policy{StaleThreshold: 100000, Horizon: 200, PreviewTokens: 1000}
	e := newEnv(t, LayoutStream, pol)
	log := func(what string, n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "%s line %d\n", what, i)
		}
		return b.String()
	}
	// A preview shows an output's first and last lines, never its middle.
	previewed := func(c *Assembled, what string, lines int) bool {
		s := string(c.Bytes)
		if !strings.Contains(s, what+" line 0\n") {
			t.Fatalf("the %s output is not in the context", what)
		}
		return !strings.Contains(s, fmt.Sprintf("%s line %d\n", what, lines/2))
	}
	e.turn("build")
	e.bash("make", log("make", 20000))
	first := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	if c := e.call(); !previewed(c, "make", 1500) || e.a.previewTokens() != 1000 {
		t.Fatalf("the first output is no preview (size %d)", e.a.previewTokens())
	}
	// activate reads it back: 1 fault of 1 preview, the size doubles.
	activate := func(id string) {
		t.Helper()
		e.activate(id)
		e.call()
	}
	activate(first)
	if !slices.Equal(e.a.shape.Faulted, []string{first}) || e.a.shape.PreviewDoublings != 1 || e.a.previewTokens() != 2000 {
		t.Fatalf("after activate: faulted %v, doublings %d", e.a.shape.Faulted, e.a.shape.PreviewDoublings)
	}
	// 6,000 bytes (1,500 tokens of 4 bytes) were a preview at 1,000
	// tokens, not at 2,000.
	e.bash("make lint", log("lint", 6000))
	if c := e.call(); previewed(c, "lint", 500) {
		t.Fatal("a 6,000-byte output is a preview after the size doubled")
	}
	e.bash("make test", log("test", 40000))
	if c := e.call(); !previewed(c, "test", 3000) {
		t.Fatal("a 40,000-byte output is no preview")
	}
	test := e.uid(fmt.Sprintf("toolu_%04d", e.seq))

	// A new process: the faults and the size come back from the commits.
	e.reopen(t, pol)
	if !slices.Equal(e.a.shape.Faulted, []string{first}) || e.a.previewTokens() != 2000 {
		t.Fatalf("resumed: faulted %v, size %d", e.a.shape.Faulted, e.a.previewTokens())
	}
	// The same command run again: no fault.
	e.bash("make test", "ok\n")
	e.call()
	if len(e.a.shape.Faulted) != 1 || e.a.previewTokens() != 2000 {
		t.Fatalf("a re-run counted: faulted %v, size %d", e.a.shape.Faulted, e.a.previewTokens())
	}
	// Activated: 2 faults of 2 previews, the size doubles; again: counted once.
	activate(test)
	if !slices.Equal(e.a.shape.Faulted, []string{first, test}) || e.a.previewTokens() != 4000 {
		t.Fatalf("after the second activate: faulted %v, size %d", e.a.shape.Faulted, e.a.previewTokens())
	}
	activate(test)
	if len(e.a.shape.Faulted) != 2 || e.a.previewTokens() != 4000 {
		t.Fatalf("an output activated twice counted twice: faulted %v, size %d", e.a.shape.Faulted, e.a.previewTokens())
	}
	for n := 1; n <= e.a.calls; n++ {
		if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
}

// TestPreviewSizeKeptUnderRate: once previews outnumber faults twenty to
// one, a fault no longer doubles the size.
func TestPreviewSizeKeptUnderRate(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 100000, Horizon: 200, PreviewTokens: 100})
	a := e.a
	a.shape.Previews = 20
	a.fault("x1")
	if a.shape.PreviewDoublings != 0 {
		t.Fatalf("1 fault of 20 previews (5%%) doubled the size")
	}
	a.fault("x2")
	if a.shape.PreviewDoublings != 1 || a.previewTokens() != 200 {
		t.Fatalf("2 faults of 20 previews: %d doublings", a.shape.PreviewDoublings)
	}
}

// TestPreviewCountSurvivesRebase: the previews a rebase rewrote as
// collapsed still count after a resume (Shape.Previews is in the commits):
// 1 fault of 30 previews is under 5% live and resumed alike, where a count
// of the previews the items still show (2) would have doubled the size.
func TestPreviewCountSurvivesRebase(t *testing.T) {
	pol := Policy{StaleThreshold: 100, Horizon: 200, PreviewTokens: 100}
	e := newEnv(t, LayoutStream, pol)
	e.turn("run the checks")
	var ids []string
	for i := range 30 {
		e.bash(fmt.Sprintf("check %d", i), strings.Repeat(fmt.Sprintf("check %d says something long enough\n", i), 60))
		ids = append(ids, e.uid(fmt.Sprintf("toolu_%04d", e.seq)))
	}
	e.call()
	if e.a.shape.Previews != 30 {
		t.Fatalf("%d previews, want 30", e.a.shape.Previews)
	}
	for _, id := range ids[:28] {
		_, err := e.tools.Deactivate(e.ctx, id)
		e.must(err)
	}
	e.turn("go on")
	e.now = e.now.Add(10 * time.Minute) // cold: the rebase rewrites the stale previews as collapsed
	if c := e.call(); !c.Rebased {
		t.Fatal("no rebase")
	}
	e.reopen(t, pol)
	if e.a.shape.Previews != 30 || e.a.previews == 30 {
		t.Fatalf("resumed: Shape.Previews %d (items show %d)", e.a.shape.Previews, e.a.previews)
	}
	e.activate(ids[29])
	e.call()
	if !slices.Equal(e.a.shape.Faulted, []string{ids[29]}) || e.a.shape.PreviewDoublings != 0 {
		t.Fatalf("faulted %v, %d doublings; want 1 fault of 30 previews, no doubling", e.a.shape.Faulted, e.a.shape.PreviewDoublings)
	}
}

// TestPreviewFaultOnlyWhileShown: a preview deactivated, then activated,
// is a collapsed output read back, not a fault; a resumed assembler (which
// knows only the previews still shown) decides the same.
func TestPreviewFaultOnlyWhileShown(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 100000, Horizon: 200, PreviewTokens: 100})
	e.turn("build")
	e.bash("make", strings.Repeat("a line of the build that goes on\n", 200))
	id := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	e.call()
	_, err := e.tools.Deactivate(e.ctx, id)
	e.must(err)
	e.call()
	e.activate(id)
	e.call()
	if len(e.a.shape.Faulted) != 0 || e.a.shape.PreviewDoublings != 0 {
		t.Fatalf("a deactivated preview activated counted as a fault: %v", e.a.shape.Faulted)
	}
}

// TestSpillReadCoveringWhole: under a bare head, a read of the spill file
// with an offset and limit that cover the whole output (what models often
// send) loads it whole, as a read without them: the tool activates the
// output, and the assembler drops the preview and counts the fault.
func TestSpillReadCoveringWhole(t *testing.T) {
	root := t.TempDir()
	spill := tools.SpillDir(root, "s1")
	pol := Policy{StaleThreshold: 100000, Horizon: 200, PreviewTokens: 100}
	e := newEnv(t, LayoutStream, pol)
	a, err := New(e.ctx, e.tools.Session(), Options{Layout: LayoutStream, Tools: leanTools, Policy: pol,
		Now: func() time.Time { return e.now }, Lean: &LeanHead{Guide: leanGuide, Withheld: []string{"activate", "deactivate", "pin"}, Bare: true, Spill: spill}})
	e.must(err)
	e.a = a
	e.tools.SetSpill(tools.Spill{Root: root, Dir: spill})
	e.turn("build")
	out := ""
	for i := range 3000 {
		out += fmt.Sprintf("build line %d\n", i)
	}
	e.bash("make", out)
	id := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	if c := e.call(); strings.Contains(string(c.Bytes), "build line 1500\n") {
		t.Fatal("the output is not a preview")
	}
	for _, bounds := range []map[string]any{{"offset": 10, "limit": 5}, {"offset": 1, "limit": 5000}} {
		e.seq++
		rid := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
		args := map[string]any{"path": filepath.Join(spill, tools.SpillName(id)), "offset": bounds["offset"], "limit": bounds["limit"]}
		e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: rid, Name: "read", Args: args}}))
		r, err := e.tools.ReadPart(e.ctx, tools.Call{ID: rid, Tool: "read", Args: args}, args["path"].(string), bounds["offset"].(int), bounds["limit"].(int))
		e.must(err)
		e.must(e.a.ToolResult(e.ctx, r))
		c := e.call()
		whole := strings.Contains(string(c.Bytes), "build line 1500\n")
		if bounds["offset"] == 10 && (whole || len(e.a.shape.Faulted) != 0) {
			t.Fatalf("5 lines loaded the output whole (faulted %v)", e.a.shape.Faulted)
		}
		if bounds["offset"] == 1 && (!whole || !slices.Equal(e.a.shape.Faulted, []string{id})) {
			t.Fatalf("lines 1-5000 of a 3,000-line output did not load it whole (faulted %v)", e.a.shape.Faulted)
		}
	}
}

package assemble

import (
	"fmt"
	"slices"
	"strings"
	"testing"

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
		e.seq++
		aid := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
		args := map[string]any{"id": id}
		e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: aid, Name: "activate", Args: args}}))
		r, err := e.tools.Activate(e.ctx, id)
		e.must(err)
		rr, err := e.tools.RecordResult(e.ctx, tools.Call{ID: aid, Tool: "activate", Args: args}, r)
		e.must(err)
		e.must(e.a.ToolResult(e.ctx, rr))
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
	a.previews = 20
	a.fault("x1")
	if a.shape.PreviewDoublings != 0 {
		t.Fatalf("1 fault of 20 previews (5%%) doubled the size")
	}
	a.fault("x2")
	if a.shape.PreviewDoublings != 1 || a.previewTokens() != 200 {
		t.Fatalf("2 faults of 20 previews: %d doublings", a.shape.PreviewDoublings)
	}
}

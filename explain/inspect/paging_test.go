package inspect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// TestPaging: a live session whose large outputs enter as previews, read
// back by activate (twice: one fault), by running the command again (once
// more after an edit: a new run, not counted), by
// some lines of the spill file and then all of it, and one never; an
// output activated while shown whole is no read back, and once collapsed
// by a rebase it is. The counts, the rate and the
// list of faults are exactly these, from the call records alone.
func TestPaging(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		ctx := context.Background()
		sid := "s-paging/1" // a '/' the spill directory's name escapes
		l := inspecttest.NewLive(t, se.Store, sid)
		seq := 0
		call := func(tool string, args map[string]any, out string) string {
			t.Helper()
			seq++
			id := fmt.Sprintf("toolu_paging_%04d", seq)
			if err := l.A.Assistant(ctx, "", []assemble.ToolCall{{ID: id, Name: tool, Args: args}}); err != nil {
				t.Fatal(err)
			}
			var r tools.Result
			var err error
			if tool == "activate" {
				var a tools.Result
				if a, err = l.Tools.Activate(ctx, args["id"].(string)); err == nil {
					r, err = l.Tools.RecordResult(ctx, tools.Call{ID: id, Tool: tool, Args: args}, a)
				}
			} else {
				r, err = l.Tools.Record(ctx, tools.Call{ID: id, Tool: tool, Args: args, Output: &out})
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := l.A.ToolResult(ctx, r); err != nil {
				t.Fatal(err)
			}
			l.Call(5 * time.Second)
			return id
		}
		// Outputs past the preview size (4,000 tokens of 4 bytes, 8,000
		// after the first activate).
		big := func(what string, n int) string {
			var b strings.Builder
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, "%s: line %d of a long log that the model does not need whole\n", what, i)
			}
			return b.String()
		}
		spill := func(id string) string {
			return filepath.Join(tools.SpillDir("/home/u/.cache/ctxstore/spill", sid), tools.SpillName(id))
		}

		l.Turn("list the files, then build, test, lint and document")
		small := call("bash", map[string]any{"command": "ls"}, "a.go\nb.go\n")
		call("activate", map[string]any{"id": small}, "") // shown whole: no read back
		id1 := call("bash", map[string]any{"command": "make"}, big("make", 24000))
		call("activate", map[string]any{"id": id1}, "")
		call("activate", map[string]any{"id": id1}, "")
		id2 := call("bash", map[string]any{"command": "make test"}, big("test", 48000))
		call("bash", map[string]any{"command": "make test"}, "ok\n") // run again
		call("edit", map[string]any{"path": "a.go", "old_string": "x", "new_string": "y"}, "edited")
		call("bash", map[string]any{"command": "make test"}, "ok\n") // after an edit: a new run
		id3 := call("bash", map[string]any{"command": "make lint"}, big("lint", 96000))
		call("read", map[string]any{"path": spill(id3), "offset": 10, "limit": 5}, "lines")
		call("read", map[string]any{"path": spill(id3), "offset": 1, "limit": 100000}, "activated") // lines that are all of it
		call("read", map[string]any{"path": spill(id3)}, "activated")                               // ctxstore's read answers from the store
		call("bash", map[string]any{"command": "make docs"}, big("docs", 200000))
		call("read", map[string]any{"path": spill("toolu_unknown")}, "no such call")
		call("read", map[string]any{"path": filepath.Join("/elsewhere", tools.SpillName(id1))}, "not a spill directory")

		// A new turn after the cache went cold: the rebase collapses the
		// first turn's outputs, and the model activates the listing.
		l.Turn("show me the listing again")
		if c := l.Call(10 * time.Minute); !c.Rebased {
			t.Fatal("the cold call did not rebase")
		}
		call("activate", map[string]any{"id": small}, "")

		p, err := inspect.New(se.Reopen(), inspect.Options{}).Paging(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if p.Previews != 4 || p.Faulted != 3 || p.FaultRate != 0.75 || p.ByActivate != 2 || p.ByRerun != 1 || p.BySpillRead != 2 || p.Partial != 1 {
			t.Fatalf("paging %+v; want 4 previews, 3 faulted (rate 0.75): 2 by activate, 1 rerun, 2 spill reads, 1 partial", *p)
		}
		// The assembler counts only the activate (it leaves re-runs to
		// this report, and this session has no spill directory, so to it
		// the spill path is a file): its preview size doubled once.
		if p.PreviewDoublings != 1 {
			t.Fatalf("paging %+v; want the preview size doubled once", *p)
		}
		if p.Collapsed == 0 || p.CollapsedReadBack != 1 {
			t.Fatalf("paging %+v; want the collapsed listing read back once", *p)
		}
		var got []string
		for _, f := range p.Faults {
			got = append(got, fmt.Sprintf("%s:%s:%v", f.How, f.Output, f.Preview))
		}
		want := []string{"activate:" + id1 + ":true", "activate:" + id1 + ":true", "rerun:" + id2 + ":true",
			"spill_lines:" + id3 + ":true", "spill_read:" + id3 + ":true", "spill_read:" + id3 + ":true", "activate:" + small + ":false"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("faults\n got %v\nwant %v", got, want)
		}
		if _, err := inspect.New(se.Store, inspect.Options{Allowed: func(string) bool { return false }}).Paging(ctx, sid); err == nil {
			t.Fatal("a grant without the session read its paging")
		}
	})
}

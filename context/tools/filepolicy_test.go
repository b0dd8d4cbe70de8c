package tools

import (
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// A read's file stays active while the read is in the auto-activation
// window, longer when it is edited or read again, for good when pinned.
func TestReadFilesCollapse(t *testing.T) {
	storetestenv.RunParallel(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Default())
		read := func(name string) string {
			t.Helper()
			p := e.file(name, "content of "+name)
			r, err := e.tools.Read(e.ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.tools.RecordResult(e.ctx, Call{ID: e.uid("read-" + name), Tool: "read", Args: map[string]any{"path": p}}, r); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		turn := func() {
			if _, err := e.tools.BeginTurn(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		turn()
		idle, edited, pinned := read("idle.txt"), read("edited.txt"), read("pinned.txt")
		if _, err := e.tools.Pin(e.ctx, pinned); err != nil {
			t.Fatal(err)
		}
		if s := e.state(); !s.IsActive(idle) || !s.IsActive(edited) || s.IsActive(e.uid("read-idle.txt")) {
			t.Fatalf("after the reads: active %v", s.Active)
		}
		turn()
		turn()
		p := e.file("edited.txt", "edited")
		if _, err := e.tools.Edit(e.ctx, Call{ID: e.uid("edit"), Tool: "edit", Output: out("ok")}, p); err != nil {
			t.Fatal(err)
		}
		turn() // turn 4: turn 1's reads are out of the window
		s := e.state()
		if s.IsActive(idle) {
			t.Error("a file read 3 turns ago and not touched since is still active")
		}
		if !s.IsActive(edited) {
			t.Error("a file edited in the window was collapsed")
		}
		if !s.IsActive(pinned) {
			t.Error("a pinned file was collapsed")
		}
		if !s.InPool(idle) {
			t.Error("a collapsed file left the pool")
		}
	})
}

package tools

import (
	"os"
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// A name only a bash output gives counts only if it is on disk: a file it
// names is indexed, a gone file it names is not marked deleted (only a
// command word does that), so a long output costs no lookup per line.
func TestBashOutputNamesOnlyFilesOnDisk(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		a := e.file("a.txt", "a")
		if _, err := e.tools.Read(e.ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(a); err != nil {
			t.Fatal(err)
		}
		b := e.file("b.txt", "b")
		r, err := e.tools.Bash(e.ctx, Call{ID: e.uid("toolu_ls"), Tool: "bash", Output: out("a.txt\nb.txt\nno such file\n")}, e.dir, "cat list")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(r.Files, e.id(b)) || slices.Contains(r.Files, e.id(a)) {
			t.Fatalf("bash files %v: want b.txt, not the gone a.txt", r.Files)
		}
		if o, _, err := resolveLatest(e, e.id(a)); err != nil || files.IsDeletedVersion(o) {
			t.Fatalf("a.txt, named by the output only, got a deletion version: %v %v", o, err)
		}
	})
}

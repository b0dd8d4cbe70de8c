package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// TestReconcileTracked checks the resume path of a new process: one
// metadata query per 500 ids finds what is tracked, unchanged files cost no
// store lookup at all, and changed and deleted files get their versions as
// Reconcile gives them.
func TestReconcileTracked(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix := newIndexer(t, st)
	dir := t.TempDir()
	const n = 1203 // three query batches
	var ids, paths []string
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("f%04d.txt", i))
		writeFile(t, p, fmt.Sprintf("file %d", i))
		r, err := ix.Index(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ids, paths = append(ids, r.Object.ID()), append(paths, p)
	}
	// An object of another kind is left out (before its source is read:
	// this one's would not parse).
	other := store.Doc{store.IDKey: "toolcall:x", "type": "toolcall", "source": "not a source"}
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(other)}); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, "not-there", ids[0], "toolcall:x") // unknown, repeated and other ids
	writeFile(t, paths[7], "changed")
	if err := os.Remove(paths[8]); err != nil {
		t.Fatal(err)
	}

	fresh := newIndexer(t, st) // as in a new process: nothing remembered
	before := st.lookups.Load()
	tracked, err := LookupTracked(ctx, st, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(tracked) != n {
		t.Fatalf("tracked %d, want %d", len(tracked), n)
	}
	if st.lookups.Load() != before {
		t.Fatal("LookupTracked read entities one by one")
	}
	res, err := fresh.ReconcileTracked(ctx, tracked)
	if err != nil {
		t.Fatal(err)
	}
	got := map[Outcome][]string{}
	for _, r := range res {
		got[r.Outcome] = append(got[r.Outcome], filepath.Base(r.Path))
	}
	for _, o := range got {
		sort.Strings(o)
	}
	if len(got[Unchanged]) != n-2 || len(got[Updated]) != 1 || got[Updated][0] != "f0007.txt" ||
		len(got[Deleted]) != 1 || got[Deleted][0] != "f0008.txt" {
		t.Fatalf("outcomes: %d unchanged, updated %v, deleted %v", len(got[Unchanged]), got[Updated], got[Deleted])
	}
	// Only the changed and the deleted file were looked up.
	if l := st.lookups.Load() - before; l > 4 {
		t.Fatalf("%d entity lookups for 2 changed files", l)
	}
}

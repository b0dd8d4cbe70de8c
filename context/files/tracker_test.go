package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
	"github.com/fsnotify/fsnotify"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// latest returns the current object of id, nil when absent.
func latest(t *testing.T, st store.Store, id string) *objects.Object {
	t.Helper()
	doc, err := st.Entity(context.Background(), id, store.Basis{})
	if err != nil {
		return nil
	}
	o, err := objects.FromDoc(doc)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func content(o *objects.Object) string {
	if o == nil || o.Content == nil {
		return "<nil>"
	}
	return *o.Content
}

func newTracker(t *testing.T, ix *Indexer) *Tracker {
	t.Helper()
	tr, err := NewTracker(ix, TrackerOptions{Debounce: 20 * time.Millisecond, OnError: func(err error) { t.Log(err) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func TestTrackerChangeDeleteRename(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix := newIndexer(t, st)
	tr := newTracker(t, ix)
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"), filepath.Join(dir, "c.txt")
	writeFile(t, a, "v1")
	writeFile(t, b, "bee")
	for _, p := range []string{a, b} {
		if _, err := ix.Index(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := tr.Track(p); err != nil {
			t.Fatal(err)
		}
	}
	idA, _ := ix.ObjectID(a)
	idB, _ := ix.ObjectID(b)
	idC, _ := ix.ObjectID(c)

	// Several quick writes: debounced into the final state.
	for _, s := range []string{"v2", "v3", "v4"} {
		writeFile(t, a, s)
	}
	waitFor(t, "a.txt v4", func() bool { return content(latest(t, st, idA)) == "v4" })

	// Delete: a null-content version, history kept.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a.txt deletion version", func() bool {
		o := latest(t, st, idA)
		return o != nil && IsDeletedVersion(o)
	})

	// Rename b -> c: b gets a deletion version, c is indexed and tracked.
	if err := os.Rename(b, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rename", func() bool {
		ob, oc := latest(t, st, idB), latest(t, st, idC)
		return ob != nil && IsDeletedVersion(ob) && content(oc) == "bee"
	})
	cp, _ := CleanPath(c)
	waitFor(t, "c tracked", func() bool {
		for _, p := range tr.Tracked() {
			if p == cp {
				return true
			}
		}
		return false
	})
	writeFile(t, c, "bee2")
	waitFor(t, "c.txt change", func() bool { return content(latest(t, st, idC)) == "bee2" })

	// Untracked files in the same directory are not indexed.
	writeFile(t, filepath.Join(dir, "other.txt"), "x")
	idO, _ := ix.ObjectID(filepath.Join(dir, "other.txt"))
	writeFile(t, c, "bee3")
	waitFor(t, "c.txt change 2", func() bool { return content(latest(t, st, idC)) == "bee3" })
	if latest(t, st, idO) != nil {
		t.Fatal("untracked file was indexed")
	}
}

func TestTrackerOverflowRescans(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix := newIndexer(t, st)
	tr := newTracker(t, ix)
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	writeFile(t, a, "one")
	if _, err := ix.Index(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := tr.Track(a); err != nil {
		t.Fatal(err)
	}
	id, _ := ix.ObjectID(a)
	// Stop watching the directory, so the change below produces no event,
	// then report an overflow: the rescan must find the change.
	if err := tr.w.Remove(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a, "two")
	tr.w.Errors <- fsnotify.ErrEventOverflow
	waitFor(t, "rescan after overflow", func() bool { return content(latest(t, st, id)) == "two" })
}

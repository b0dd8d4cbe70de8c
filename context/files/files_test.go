package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// countingStore counts submitted transactions and entity lookups (Entity
// and EntityTx).
type countingStore struct {
	store.Store
	submits, lookups, reads atomic.Int64 // reads: Entity calls alone
}

func (c *countingStore) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	c.submits.Add(1)
	return c.Store.Submit(ctx, ops)
}

func (c *countingStore) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	c.lookups.Add(1)
	c.reads.Add(1)
	return c.Store.Entity(ctx, id, b)
}

func (c *countingStore) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	c.lookups.Add(1)
	return c.Store.EntityTx(ctx, id, b)
}

func openStore(t *testing.T) *countingStore {
	t.Helper()
	st, err := bitemporal.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &countingStore{Store: st}
}

func newIndexer(t *testing.T, st store.Store) *Indexer {
	t.Helper()
	res, err := NewResolver(ResolverOptions{DefaultID: "fs-test"})
	if err != nil {
		t.Fatal(err)
	}
	return NewIndexer(st, res, 0)
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An indexer re-indexes an unchanged file it has seen with one EntityTx and
// no document read, and returns the stored version with its content; a
// version written since by another client is noticed even when the bytes
// on disk are back to what this indexer saw; a new indexer reads once and
// then remembers.
func TestRememberedVersions(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix1, ix2 := newIndexer(t, st), newIndexer(t, st)
	p := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, p, "one")
	r1, err := ix1.Index(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	reads := func() int64 { return st.reads.Load() }
	before, looks := reads(), st.lookups.Load()
	r, err := ix1.Index(ctx, p)
	if err != nil || r.Outcome != Unchanged || st.lookups.Load()-looks != 1 || reads() != before {
		t.Fatalf("re-index: %v %v, %d lookups, %d reads", r.Outcome, err, st.lookups.Load()-looks, reads()-before)
	}
	if !reflect.DeepEqual(r.Object, r1.Object) {
		t.Fatalf("remembered object differs:\n%+v\n%+v", r.Object, r1.Object)
	}
	// Another client indexes a change; the file then goes back to "one".
	writeFile(t, p, "two")
	if r, err := ix2.Index(ctx, p); err != nil || r.Outcome != Updated {
		t.Fatalf("other client: %v %v", r.Outcome, err)
	}
	writeFile(t, p, "one")
	if r, err = ix1.Index(ctx, p); err != nil || r.Outcome != Updated || *r.Object.Content != "one" {
		t.Fatalf("after another client's version: %v %v", r.Outcome, err)
	}
	// A new indexer: a point lookup and a read the first time, then one lookup.
	ix3 := newIndexer(t, st)
	for i, want := range []int64{1, 0} {
		before := reads()
		r, err := ix3.Index(ctx, p)
		if err != nil || r.Outcome != Unchanged || *r.Object.Content != "one" || reads()-before != want {
			t.Fatalf("new indexer, pass %d: %v %v, %d reads", i, r.Outcome, err, reads()-before)
		}
	}
}

func TestIndexProtocol(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix := newIndexer(t, st)
	p := filepath.Join(t.TempDir(), "a.go")
	writeFile(t, p, "package a\n")

	r1, err := ix.Index(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Outcome != Created || r1.Tx < 0 || *r1.Object.Content != "package a\n" || r1.Object.File.FileType != "go" {
		t.Fatalf("first index: %+v", r1)
	}
	id, _ := ix.ObjectID(p)
	if r1.Object.ID() != id {
		t.Fatalf("id %s, ObjectID %s", r1.Object.ID(), id)
	}

	// Unchanged: one lookup, no write.
	subs, looks := st.submits.Load(), st.lookups.Load()
	r2, err := ix.Index(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Outcome != Unchanged || r2.Written() {
		t.Fatalf("second index: %+v", r2)
	}
	if d := st.submits.Load() - subs; d != 0 {
		t.Fatalf("unchanged file wrote %d transactions", d)
	}
	if d := st.lookups.Load() - looks; d != 1 {
		t.Fatalf("unchanged file took %d lookups, want 1", d)
	}

	writeFile(t, p, "package a\n\nvar X = 1\n")
	r3, err := ix.Index(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Outcome != Updated || r3.Object.ID() != id || r3.Object.SourceHash == r1.Object.SourceHash {
		t.Fatalf("changed: %+v", r3)
	}
	// With corrections: both writes may fall in one millisecond of valid time.
	hist, err := st.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true})
	if err != nil || len(hist) != 2 {
		t.Fatalf("history: %d rows, %v", len(hist), err)
	}
}

func TestIndexBinaryAndMissing(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix := newIndexer(t, st)
	dir := t.TempDir()
	bin := filepath.Join(dir, "img.png")
	if err := os.WriteFile(bin, []byte{0x89, 'P', 'N', 'G', 0, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ix.Index(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	if r.Object.Content != nil || r.Object.SourceHash == "" || IsDeletedVersion(r.Object) {
		t.Fatalf("binary: content %v hash %q", r.Object.Content, r.Object.SourceHash)
	}
	if note, null := objects.NullContent(r.Object); !null || note == "" {
		t.Fatal("binary file should have null content")
	}
	if _, err := ix.Index(ctx, filepath.Join(dir, "nope.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := ix.Index(ctx, dir); err == nil {
		t.Fatal("indexing a directory should fail")
	}

	// Large text is stored like binary.
	small := NewIndexer(st, ix.Resolver(), 4)
	big := filepath.Join(dir, "big.txt")
	writeFile(t, big, "0123456789")
	rb, err := small.Index(ctx, big)
	if err != nil || rb.Object.Content != nil || rb.Object.SourceHash != objects.HashBytes([]byte("0123456789")) {
		t.Fatalf("big file: %+v %v", rb, err)
	}
	if rb2, err := small.Index(ctx, big); err != nil || rb2.Outcome != Unchanged {
		t.Fatalf("big file again: %+v %v", rb2, err)
	}
}

func TestMarkDeletedAndReconcile(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix := newIndexer(t, st)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	writeFile(t, a, "a")
	writeFile(t, b, "b")
	for _, p := range []string{a, b} {
		if _, err := ix.Index(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// While nothing watches: a changes, b is deleted.
	writeFile(t, a, "a2")
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	res, err := ix.Reconcile(ctx, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != Updated || *res[0].Object.Content != "a2" {
		t.Fatalf("a: %+v", res[0])
	}
	if res[1].Outcome != Deleted || !IsDeletedVersion(res[1].Object) {
		t.Fatalf("b: %+v", res[1])
	}
	// Marking again writes nothing; never-indexed paths are left alone.
	subs := st.submits.Load()
	if r, err := ix.MarkDeleted(ctx, b); err != nil || r.Outcome != Unchanged {
		t.Fatalf("mark again: %+v %v", r, err)
	}
	if r, err := ix.MarkDeleted(ctx, filepath.Join(dir, "never")); err != nil || r.Object != nil {
		t.Fatalf("mark never indexed: %+v %v", r, err)
	}
	if st.submits.Load() != subs {
		t.Fatal("no-op deletions wrote")
	}
	// History keeps the old content.
	id, _ := ix.ObjectID(b)
	hist, err := st.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithDocs: true})
	if err != nil || len(hist) != 2 || hist[0].Doc["content"] != "b" || hist[1].Doc["content"] != nil {
		t.Fatalf("history of b: %+v %v", hist, err)
	}
}

func TestReconcileUnreachable(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ix := newIndexer(t, st)
	mount := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(mount, "f.txt")
	writeFile(t, p, "x")
	if _, err := ix.Index(ctx, p); err != nil {
		t.Fatal(err)
	}
	// The whole directory disappears, as an unmounted volume would.
	if err := os.RemoveAll(mount); err != nil {
		t.Fatal(err)
	}
	subs := st.submits.Load()
	res, err := ix.Reconcile(ctx, []string{p})
	if err != nil || res[0].Outcome != Unreachable || st.submits.Load() != subs {
		t.Fatalf("unreachable: %+v %v", res, err)
	}
	id, _ := ix.ObjectID(p)
	if o := latest(t, st, id); o == nil || IsDeletedVersion(o) {
		t.Fatal("an unreachable file was marked deleted")
	}
}

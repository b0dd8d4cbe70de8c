package bitemporal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// An evict removes the entity's content from the whole file: its points,
// documents and field rows, the expected documents of logged matches on it
// (TxLog marks those ops Evicted), and the bytes themselves (secure_delete,
// checkpoint).
func TestEvictLeavesNoContent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := "secret-" + "c0ffee-do-not-keep"
	doc := store.Doc{store.IDKey: "e1", "text": secret}
	other := store.Doc{store.IDKey: "e2", "text": "kept"}
	for _, ops := range [][]store.Op{
		{store.Put(doc), store.Put(other)},
		{store.Match("e1", doc), store.Match("e2", other), store.Put(store.Doc{store.IDKey: "e3", "n": 1.0})},
		{store.Evict("e1")},
	} {
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	log, err := st.TxLog(ctx, -1, 10)
	if err != nil {
		t.Fatal(err)
	}
	m := log[1].Ops
	if !m[0].Evicted || m[0].Doc != nil || m[1].Evicted || m[1].Doc == nil {
		t.Fatalf("match ops after the evict: %+v", m)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("%s still holds the evicted content", filepath.Base(f))
		}
		if f == path && !bytes.Contains(b, []byte("kept")) {
			t.Fatal("the file lost content that was not evicted")
		}
	}
}

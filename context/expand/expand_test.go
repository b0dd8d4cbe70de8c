package expand

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

func put(t *testing.T, st store.Store, o *objects.Object) int64 {
	t.Helper()
	doc, err := o.Doc()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := store.SubmitWait(context.Background(), st, []store.Op{store.Put(doc)})
	if err != nil {
		t.Fatal(err)
	}
	return tx.ID
}

func toolcall(t *testing.T, id, out string) *objects.Object {
	t.Helper()
	o, err := objects.NewToolcall(id, objects.ToolcallFields{Tool: "bash", Args: map[string]any{"command": "ls"}, Status: objects.StatusOK, ChatRef: "chat:s"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestMain(m *testing.M) { storetestenv.Main(m) }

func TestResolve(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		st := e.Store

		tc1 := toolcall(t, e.ID("toolu_1"), "one")
		tx1 := put(t, st, tc1)
		static1 := objects.StaticRef(tc1, tx1)
		tx2 := put(t, st, toolcall(t, e.ID("toolu_1"), "one, edited"))

		if o, tx, err := Resolve(ctx, st, static1); err != nil || *o.Content != "one" || tx != tx1 {
			t.Fatalf("static ref: %v %d %v", o, tx, err)
		}
		if o, tx, err := Resolve(ctx, st, objects.DynamicRef(e.ID("toolu_1"))); err != nil || *o.Content != "one, edited" || tx != tx2 {
			t.Fatalf("dynamic ref: %v %d %v", o, tx, err)
		}
		if _, _, err := Resolve(ctx, st, objects.DynamicRef(e.ID("missing"))); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}

		// A static ref whose recorded hash does not match fails verification.
		bad := static1
		bad.ContentHash = objects.HashBytes([]byte("other"))
		if _, _, err := Resolve(ctx, st, bad); !errors.Is(err, objects.ErrHashMismatch) {
			t.Fatalf("bad hash: %v", err)
		}
	})
}

// openStore opens a new SQLite store. The portable-reference tests need
// two stores whose tx ids they control, so they run on SQLite only (the
// XTDB tests share one database).
func openStore(t *testing.T, name string) store.Store {
	t.Helper()
	st, err := bitemporal.Open(context.Background(), filepath.Join(t.TempDir(), name), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Static references are portable: in a store holding the same versions at
// other transaction ids (an imported session), they resolve by their
// hashes; a reference without all three hashes, or whose hashes no version
// has, does not.
func TestResolvePortable(t *testing.T) {
	ctx := context.Background()
	src, dst := openStore(t, "src.db"), openStore(t, "dst.db")
	for i := 0; i < 5; i++ { // source tx ids run ahead of the target's
		put(t, src, toolcall(t, "filler", "x"))
	}
	v1, v2 := toolcall(t, "toolu_p", "first"), toolcall(t, "toolu_p", "second")
	r1 := objects.StaticRef(v1, put(t, src, v1))
	r2 := objects.StaticRef(v2, put(t, src, v2))

	d1 := put(t, dst, v1)
	put(t, dst, v2)
	put(t, dst, v1) // the same version again: the earliest tx is returned

	// Both references name txs beyond the target's latest: they resolve by hashes.
	for _, c := range []struct {
		ref  objects.Ref
		want string
	}{{r1, "first"}, {r2, "second"}} {
		o, _, err := Resolve(ctx, dst, c.ref)
		if err != nil || *o.Content != c.want {
			t.Fatalf("resolving %s in the target: %v", c.ref, err)
		}
	}
	if _, tx, _ := Resolve(ctx, dst, r1); tx != d1 {
		t.Errorf("resolved at tx %d, want the earliest writer %d", tx, d1)
	}
	// As of a tx that exists in the target but shows another version.
	at := r1
	at.Tx = d1 + 1 // the target's v2
	if o, _, err := Resolve(ctx, dst, at); err != nil || *o.Content != "first" {
		t.Fatalf("as of a tx showing another version: %v", err)
	}
	// Without all three hashes there is no fallback.
	partial := at
	partial.MetadataViewHash = ""
	if _, _, err := Resolve(ctx, dst, partial); !errors.Is(err, objects.ErrHashMismatch) {
		t.Fatalf("partial hashes: %v", err)
	}
	// Hashes no version has: the as-of read's error.
	bad := r1
	bad.ContentHash = objects.HashBytes([]byte("other"))
	if _, _, err := Resolve(ctx, dst, bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("unknown hashes beyond the latest tx: %v", err)
	}
	bad.Tx = d1
	if _, _, err := Resolve(ctx, dst, bad); !errors.Is(err, objects.ErrHashMismatch) {
		t.Fatalf("unknown hashes: %v", err)
	}
	missing := objects.StaticRef(toolcall(t, "toolu_none", "x"), 0)
	if _, _, err := Resolve(ctx, dst, missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing entity: %v", err)
	}
}

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

func TestExpand(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		st := e.Store

		tc1 := toolcall(t, e.ID("toolu_1"), "one")
		tx1 := put(t, st, tc1)
		static1 := objects.StaticRef(tc1, tx1)
		put(t, st, toolcall(t, e.ID("toolu_1"), "one, edited"))
		bin, _ := objects.NewFile(objects.FilesystemSource{FilesystemID: "fs", Path: "/" + e.ID("x") + ".png"}, nil, []byte{0})
		put(t, st, bin)

		items := Refs(ctx, st, []objects.Ref{static1, objects.DynamicRef(e.ID("toolu_1")), objects.DynamicRef(bin.ID()), objects.DynamicRef(e.ID("missing"))}, Content)
		if items[0].Err != nil || *items[0].Content != "one" || items[0].Tx != tx1 {
			t.Fatalf("static ref: %+v", items[0])
		}
		if items[1].Err != nil || *items[1].Content != "one, edited" {
			t.Fatalf("dynamic ref: %+v", items[1])
		}
		if items[2].Err != nil || items[2].Content != nil || items[2].Note == "" {
			t.Fatalf("null content: %+v", items[2])
		}
		if !errors.Is(items[3].Err, store.ErrNotFound) {
			t.Fatalf("missing: %+v", items[3])
		}

		meta := Refs(ctx, st, []objects.Ref{static1}, Metadata)
		if meta[0].Content != nil || meta[0].Metadata == "" {
			t.Fatalf("metadata only: %+v", meta[0])
		}

		// A static ref whose recorded hash does not match fails verification.
		bad := static1
		bad.ContentHash = objects.HashBytes([]byte("other"))
		if _, _, err := Resolve(ctx, st, bad); !errors.Is(err, objects.ErrHashMismatch) {
			t.Fatalf("bad hash: %v", err)
		}
	})
}

func TestExpandChatToolcalls(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		st := e.Store
		put(t, st, toolcall(t, e.ID("toolu_a"), "A1"))
		put(t, st, toolcall(t, e.ID("toolu_b"), "B1"))
		chat, err := objects.NewChat(e.ID("s"), []objects.Turn{{ToolcallIDs: []string{e.ID("toolu_a"), e.ID("toolu_b")}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx1 := put(t, st, chat)
		put(t, st, toolcall(t, e.ID("toolu_a"), "A2"))

		_, now, err := ChatToolcalls(ctx, st, objects.DynamicRef(chat.ID()), Content)
		if err != nil || len(now) != 2 || *now[0].Content != "A2" || *now[1].Content != "B1" {
			t.Fatalf("dynamic chat: %+v %v", now, err)
		}
		_, then, err := ChatToolcalls(ctx, st, objects.StaticRef(chat, ctx1), Content)
		if err != nil || len(then) != 2 || *then[0].Content != "A1" {
			t.Fatalf("static chat: %+v %v", then, err)
		}
		if _, _, err := ChatToolcalls(ctx, st, objects.DynamicRef(e.ID("toolu_a")), Content); err == nil {
			t.Fatal("a toolcall expanded as a chat")
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

// A static chat reference from another store expands to the toolcalls as
// of the transaction that wrote that chat version in this store.
func TestChatToolcallsPortable(t *testing.T) {
	ctx := context.Background()
	src, dst := openStore(t, "src.db"), openStore(t, "dst.db")
	chat, err := objects.NewChat("s", []objects.Turn{{ToolcallIDs: []string{"toolu_a"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []store.Store{src, dst} {
		if st == src {
			put(t, src, toolcall(t, "filler", "x"))
			put(t, src, toolcall(t, "filler", "y"))
		}
		put(t, st, toolcall(t, "toolu_a", "A1"))
		put(t, st, chat)
		put(t, st, toolcall(t, "toolu_a", "A2"))
	}
	ref := objects.StaticRef(chat, 3) // the chat's tx in src
	_, then, err := ChatToolcalls(ctx, dst, ref, Content)
	if err != nil || len(then) != 1 || then[0].Err != nil || *then[0].Content != "A1" {
		t.Fatalf("static chat from another store: %+v %v", then, err)
	}
}

package expand

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
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

func TestExpand(t *testing.T) {
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	tc1 := toolcall(t, "toolu_1", "one")
	tx1 := put(t, st, tc1)
	static1 := objects.StaticRef(tc1, tx1)
	put(t, st, toolcall(t, "toolu_1", "one, edited"))
	bin, _ := objects.NewFile(objects.FilesystemSource{FilesystemID: "fs", Path: "/x.png"}, nil, []byte{0})
	put(t, st, bin)

	items := Refs(ctx, st, []objects.Ref{static1, objects.DynamicRef("toolu_1"), objects.DynamicRef(bin.ID()), objects.DynamicRef("missing")}, Content)
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
}

func TestExpandChatToolcalls(t *testing.T) {
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put(t, st, toolcall(t, "toolu_a", "A1"))
	put(t, st, toolcall(t, "toolu_b", "B1"))
	chat, err := objects.NewChat("s", []objects.Turn{{ToolcallIDs: []string{"toolu_a", "toolu_b"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx1 := put(t, st, chat)
	put(t, st, toolcall(t, "toolu_a", "A2"))

	_, now, err := ChatToolcalls(ctx, st, objects.DynamicRef(chat.ID()), Content)
	if err != nil || len(now) != 2 || *now[0].Content != "A2" || *now[1].Content != "B1" {
		t.Fatalf("dynamic chat: %+v %v", now, err)
	}
	_, then, err := ChatToolcalls(ctx, st, objects.StaticRef(chat, ctx1), Content)
	if err != nil || len(then) != 2 || *then[0].Content != "A1" {
		t.Fatalf("static chat: %+v %v", then, err)
	}
	if _, _, err := ChatToolcalls(ctx, st, objects.DynamicRef("toolu_a"), Content); err == nil {
		t.Fatal("a toolcall expanded as a chat")
	}
}

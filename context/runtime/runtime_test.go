package runtime

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// TestOpenCreateResume: a session is created, used, closed, and resumed by
// a second Open with its assembler and ingester where they were; the modes
// refuse what they must.
func TestOpenCreateResume(t *testing.T) {
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-runtime"})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Create: session.CreateOptions{SystemPrompt: "Be brief."}, Indexer: files.NewIndexer(st, res, 0),
		Ingest: ingest.Options{Cwd: t.TempDir()}}
	if _, err := Open(ctx, st, "s1", Options{Mode: ResumeOnly, Indexer: o.Indexer}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ResumeOnly of a missing session: %v", err)
	}
	if _, err := Open(ctx, st, "s1", Options{}); err == nil {
		t.Fatal("Open without an Indexer succeeded")
	}
	rt, err := Open(ctx, st, "s1", o)
	if err != nil || rt.State != Created {
		t.Fatalf("open: %v %+v", err, rt)
	}
	log := []conversation.Message{{Role: conversation.RoleUser, Text: "Hello."}, {Role: conversation.RoleAssistant, Text: "Hi."}}
	first, _, err := rt.Ingester.Context(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, st, "s1", Options{Mode: CreateOnly, Indexer: o.Indexer}); err == nil {
		t.Fatal("CreateOnly of an existing session succeeded")
	}
	again, err := Open(ctx, st, "s1", o)
	if err != nil || again.State != Resumed || again.ResumeFiles != nil {
		t.Fatalf("reopen: %v %+v", err, again)
	}
	log = append(log, conversation.Message{Role: conversation.RoleUser, Text: "Bye."})
	next, rep, err := again.Ingester.Context(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	if next.N != first.N+1 || rep.Applied != 1 || len(next.Bytes) <= len(first.Bytes) || string(next.Bytes[:len(first.Bytes)]) != string(first.Bytes) {
		t.Fatalf("resumed call %d (after %d), applied %d; extends the first: %v", next.N, first.N, rep.Applied,
			len(next.Bytes) > len(first.Bytes) && string(next.Bytes[:len(first.Bytes)]) == string(first.Bytes))
	}
}

package commits_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestBatch: a chain made in one batch (parents inside the batch) and an
// extra op are written in one transaction; the same requests again are
// the stored commits and write nothing new; a bad request is refused at
// Add, before anything is written.
func TestBatch(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		svc := commits.New(e.Store, commits.Options{})
		sess := e.ID("batch")
		extra := e.ID("batch-extra")
		build := func() (*commits.Batch, []*commits.Commit) {
			b := svc.NewBatch()
			var out []*commits.Commit
			parent := ""
			for i, text := range []string{"one", "two", "three"} {
				c, err := b.Add(ctx, commits.CheckpointRequest{Parent: parent, Events: []events.Event{prompt(text)},
					Provenance: commits.Provenance{Session: sess, Cwd: "/w", Source: "/f", SourceStart: int64(i), SourceEnd: int64(i + 1)}, Created: t0})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, c)
				parent = c.ID
			}
			return b, out
		}
		b, cs := build()
		if b.Len() != 3 {
			t.Fatalf("len %d", b.Len())
		}
		if _, err := svc.Show(ctx, cs[2].ID, store.Basis{}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("written before Write: %v", err)
		}
		if err := b.Write(ctx, store.Put(store.Doc{store.IDKey: extra, "n": 1})); err != nil {
			t.Fatal(err)
		}
		tx, err := e.Store.EntityTx(ctx, extra, store.Basis{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := svc.History(ctx, cs[2].ID, 0)
		if err != nil || len(h) != 3 || h[2].ID != cs[0].ID || h[0].TxID != tx.TxID || h[0].Cwd != "/w" || h[0].SourceEnd != 3 {
			t.Fatalf("history %+v %v (extra op in tx %d)", h, err, tx.TxID)
		}
		// Again: the stored commits, nothing written.
		b2, again := build()
		if again[2].ID != cs[2].ID || again[2].TxID != tx.TxID {
			t.Fatalf("again %+v", again[2])
		}
		if err := b2.Write(ctx); err != nil {
			t.Fatal(err)
		}
		if tx2, _ := e.Store.EntityTx(ctx, cs[2].ID, store.Basis{}); tx2.TxID != tx.TxID {
			t.Fatal("an unchanged batch wrote the commit again")
		}
		// A bad parent is refused at Add.
		_, err = svc.NewBatch().Add(ctx, commits.CheckpointRequest{Parent: "ctx-00000000000000000000", Events: []events.Event{prompt("x")}})
		if !errors.Is(err, commits.ErrUnknownParent) {
			t.Fatalf("bad parent: %v", err)
		}
	})
}

package tests

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

// TestConcurrentWriters: eight writer processes on one SQLite file, each
// committing transactions as fast as it can: every acknowledged transaction is committed with
// exactly its documents, tx ids are unique, and the file is intact.
func TestConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "conc.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const writers = 8
	acks := crashRun(t, path, 0, writers, 3*time.Second)
	perWriter := map[string]int{}
	for _, a := range acks {
		perWriter[a.tag]++
	}
	if len(perWriter) != writers {
		t.Fatalf("only %d of %d writers acknowledged a write: %v", len(perWriter), writers, perWriter)
	}
	checkIntegrity(t, path)
	s, err = bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := map[int64]bool{}
	for _, a := range acks {
		if seen[a.tx] {
			t.Errorf("tx %d acknowledged twice", a.tx)
		}
		seen[a.tx] = true
		ok, err := s.TxCommitted(ctx, a.tx)
		if err != nil || !ok {
			t.Errorf("acknowledged tx %d (%s seq %d): committed %v, %v", a.tx, a.tag, a.seq, ok, err)
			continue
		}
		for j := range crashDocsPerTx(a.seq) {
			want := crashDoc(a.tag, a.seq, j)
			id := want["xt/id"].(string)
			got, err := s.Entity(ctx, id, store.AtTx(a.tx, time.Time{}))
			if err != nil || !store.SameDoc(got, want) {
				t.Errorf("acknowledged tx %d: document %s = %v, %v", a.tx, id, got, err)
			}
		}
	}
	t.Logf("%d writers, %d transactions acknowledged: %v", writers, len(acks), perWriter)
}

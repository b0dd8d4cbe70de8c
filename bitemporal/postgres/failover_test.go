package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
	"github.com/ctxstore/ctxstore/store"
)

// TestFailoverToSynchronousReplica: the store is opened on a URL naming a
// primary and its synchronous streaming replica
// (target_session_attrs=read-write). Under a steady writer the primary is
// killed with SIGKILL (postmaster and backends: a crash of its machine)
// and, a second later, the replica promoted. The writes in between fail
// with ErrUnavailable; the writer's next writes succeed on the promoted
// replica without reopening the store; every acknowledged write is there;
// the log's tx ids stay 0..n-1 with no gap or repeat.
func TestFailoverToSynchronousReplica(t *testing.T) {
	primary, replica := pgtest.Replicated(t)
	u := pgtest.FailoverURL(t, primary.Schema(t), primary, replica)
	ctx := context.Background()
	s := openURL(t, u, nil)

	var mu sync.Mutex
	var acked []store.Tx
	var ackedIDs []string
	var errs []error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("fo-%d", i)
			tx, err := s.Submit(ctx, []store.Op{store.Put(store.Doc{"xt/id": id, "i": i})})
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			} else {
				acked = append(acked, tx)
				ackedIDs = append(ackedIDs, id)
			}
			mu.Unlock()
			if err != nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor := func(n int, what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for count() < n {
			if time.Now().After(deadline) {
				close(stop)
				<-done
				t.Fatalf("%s: %d writes acknowledged, want %d; errors: %v", what, count(), n, errs)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(20, "before the failover")
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := count()
	time.Sleep(time.Second)
	if err := replica.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(killedAt+20, "after the promotion")
	close(stop)
	<-done
	t.Logf("%d writes acknowledged (%d before the kill), %d failed around the failover", len(acked), killedAt, len(errs))
	for _, err := range errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("a write during the failover failed with %v, want ErrUnavailable", err)
		}
	}

	// A store opened afresh on the same URL reaches the promoted replica
	// only (the primary is dead): every acknowledged write is there.
	r := openURL(t, u, nil)
	for k, tx := range acked {
		d, err := r.Entity(ctx, ackedIDs[k], store.Basis{})
		if err != nil {
			t.Fatalf("acknowledged write %s (tx %d) after the failover: %v", ackedIDs[k], tx.ID, err)
		}
		if d["xt/id"] != ackedIDs[k] {
			t.Fatalf("acknowledged write %s reads %v", ackedIDs[k], d)
		}
		if ok, err := r.TxCommitted(ctx, tx.ID); err != nil || !ok {
			t.Fatalf("acknowledged tx %d: committed %v, %v", tx.ID, ok, err)
		}
		if k > 0 && tx.ID <= acked[k-1].ID {
			t.Fatalf("acknowledged tx ids go back: %d then %d", acked[k-1].ID, tx.ID)
		}
	}
	log, err := r.TxLog(ctx, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k, tx := range log {
		if tx.ID != int64(k) {
			t.Fatalf("tx log after the failover: entry %d has tx id %d (a gap or a repeat)", k, tx.ID)
		}
	}
	if len(log) < len(acked) {
		t.Fatalf("tx log after the failover: %d transactions, %d acknowledged", len(log), len(acked))
	}
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the failover: %s, %d transactions logged", st.Location, len(log))
}

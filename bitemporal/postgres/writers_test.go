package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/store"
)

// writerEnv holds the store URL of a writer child process.
const writerEnv = "CTXSTORE_PGTEST_WRITER"

const (
	writers    = 8  // processes
	increments = 25 // per process
	counterID  = "counter"
)

// writerChild increments the shared counter `increments` times, each a
// read then a transaction that matches what it read (retried when another
// writer got there first), and puts a document of its own in the same
// transaction. It prints how many transactions it submitted.
func writerChild(u string) int {
	ctx := context.Background()
	s, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	me := os.Getpid()
	submitted := 0
	for i := 0; i < increments; {
		cur, err := s.Entity(ctx, counterID, store.Basis{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		n, _ := store.Num(cur["n"])
		next := store.Doc{store.IDKey: counterID, "n": int64(n) + 1}
		own := store.Doc{store.IDKey: fmt.Sprintf("w%d-%d", me, i), "writer": int64(me), "i": int64(i)}
		_, err = store.SubmitWait(ctx, s, []store.Op{store.Match(counterID, cur), store.Put(next), store.Put(own)})
		submitted++
		switch {
		case errors.Is(err, store.ErrConflict):
			continue
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		i++
	}
	fmt.Println(submitted)
	return 0
}

// TestManyWriterProcesses runs 8 processes incrementing one counter at
// once through matches: no increment is lost, every transaction (committed
// or aborted) has an id, the ids are 0..N-1 with no gap, and tx times never
// go back.
func TestManyWriterProcesses(t *testing.T) {
	ctx := context.Background()
	u := newSchema(t)
	s := openURL(t, u, nil)
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.Put(store.Doc{store.IDKey: counterID, "n": 0})}); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	counts := make([]int, writers)
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), writerEnv+"="+u)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				errs[w] = fmt.Errorf("writer %d: %v\n%s", w, err, stderr.String())
				return
			}
			counts[w], errs[w] = strconv.Atoi(strings.TrimSpace(string(out)))
		}()
	}
	wg.Wait()
	total := 1 // the first put
	for w := range writers {
		if errs[w] != nil {
			t.Fatal(errs[w])
		}
		total += counts[w]
	}
	cur, err := s.Entity(ctx, counterID, store.Basis{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := store.Num(cur["n"]); int(n) != writers*increments {
		t.Fatalf("counter is %v after %d increments: updates were lost", n, writers*increments)
	}
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.LatestCompleted == nil || st.LatestCompleted.ID != int64(total-1) {
		t.Fatalf("latest tx %+v, want id %d: %d transactions were submitted", st.LatestCompleted, total-1, total)
	}
	aborted := 0
	for id := range int64(total) {
		ok, err := s.TxCommitted(ctx, id)
		if err != nil {
			t.Fatalf("tx %d: %v (a gap in the tx ids)", id, err)
		}
		if !ok {
			aborted++
		}
	}
	log, err := s.TxLog(ctx, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1+writers*increments || len(log)+aborted != total {
		t.Fatalf("tx log has %d committed txs and %d aborted, want %d committed of %d", len(log), aborted, 1+writers*increments, total)
	}
	var last time.Time
	for _, tx := range log {
		if tx.Time.Before(last) {
			t.Fatalf("tx %d at %s is before the one before it (%s)", tx.ID, store.FormatTime(tx.Time), store.FormatTime(last))
		}
		last = tx.Time
	}
	t.Logf("%d writers: %d committed, %d aborted by a match, ids 0..%d", writers, len(log), aborted, total-1)
}

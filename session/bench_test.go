package session

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/store"
)

// countingStore counts the bytes of the documents put through it.
type countingStore struct {
	store.Store
	bytes, puts int64
}

func (c *countingStore) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	for _, op := range ops {
		if op.Kind == store.OpPut {
			b, _ := json.Marshal(op.Doc)
			c.bytes += int64(len(b))
			c.puts++
		}
	}
	return c.Store.Submit(ctx, ops)
}

// BenchmarkUpdate measures one tool turn's session change (a new toolcall
// recorded, pooled and activated, an older one collapsed) on a session whose
// pool already holds 10 or 10,000 entries (half of them toolcalls, 50
// active), on each backend. B/update is the size of the documents the
// update puts, puts/update their number.
//
//	CTXSTORE_TEST_BACKENDS=sqlite go test -run '^$' -bench Update -benchtime 200x -count 3 ./session/
func BenchmarkUpdate(b *testing.B) {
	for _, backend := range storetestenv.Backends() {
		for _, n := range []int{10, 10_000} {
			b.Run(fmt.Sprintf("%s/pool=%d", backend, n), func(b *testing.B) { benchUpdate(b, backend, n) })
		}
	}
}

func benchUpdate(b *testing.B, backend string, n int) {
	ctx := context.Background()
	e := storetestenv.New(b, backend)
	st := &countingStore{Store: e.Store}
	s, err := Create(ctx, st, e.ID("bench"), CreateOptions{SystemPrompt: "sys"})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.Update(ctx, nil, func(s *State) error { fill(s, n); return nil }); err != nil {
		b.Fatal(err)
	}
	st.bytes, st.puts = 0, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("toolu_bench_%08d", i)
		_, _, err := s.Update(ctx, nil, func(s *State) error {
			s.AddToolcall(id, false)
			s.Activate(id)
			return s.Deactivate(s.Active[2]) // the oldest after chat and system prompt
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(st.bytes)/float64(b.N), "B/update")
	b.ReportMetric(float64(st.puts)/float64(b.N), "puts/update")
}

// fill adds n pool entries: n/2 toolcalls and n/2 files (with as many ids
// seen but never pooled), the last 50 of them active.
func fill(s *State, n int) {
	s.Turn = 1
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			s.AddToolcall(fmt.Sprintf("toolu_%08d", i), false)
		} else {
			s.AddToPool(fmt.Sprintf("%064x", i)) // file ids are 64 hex digits
			s.AddToIndex(fmt.Sprintf("seen-%064x", i))
		}
		if i >= n-50 {
			s.Activate(s.Pool[len(s.Pool)-1])
		}
	}
}

// BenchmarkSessionMemory opens a session with 10,000 pool entries (15,000
// index entries, 5,000 toolcalls, 50 active; fill) b.N times, keeping every
// handle, and reports the live heap per open session (B/session) and per
// pool entry, after a GC, on SQLite. ids-B/session is the bytes of the
// distinct id strings alone, for scale.
//
//	CTXSTORE_TEST_BACKENDS=sqlite go test -run '^$' -bench SessionMemory -benchtime 20x ./session/
func BenchmarkSessionMemory(b *testing.B) {
	ctx := context.Background()
	e := storetestenv.New(b, storetestenv.SQLite)
	id := e.ID("mem")
	s, err := Create(ctx, e.Store, id, CreateOptions{SystemPrompt: "sys"})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.Update(ctx, nil, func(s *State) error { fill(s, 10_000); return nil }); err != nil {
		b.Fatal(err)
	}
	st := s.State()
	var idBytes int
	for _, x := range st.Index { // every id of the state, once
		idBytes += len(x)
	}
	s = nil
	kept := make([]*Session, 0, b.N)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Open(ctx, e.Store, id)
		if err != nil {
			b.Fatal(err)
		}
		kept = append(kept, r)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(b.N)
	b.ReportMetric(per, "B/session")
	b.ReportMetric(per/float64(len(st.Pool)), "B/pool-entry")
	b.ReportMetric(float64(idBytes), "ids-B/session")
	runtime.KeepAlive(kept)
}

package bitemporal

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// TestValuesCostDoesNotGrow: listing the sessions that have commits
// (type = commit, field session) in a store whose one session holds n
// commits counts the same field-index rows at n = 2,000 and n = 4,000,
// and answers as store.ValuesByQuery. Before an existence probe's counts
// were bounded, choosing the driver of the probe "type = commit and
// session = big" counted every row of the shorter of the two, so the
// sessions page's cost followed the store's commit count.
func TestValuesCostDoesNotGrow(t *testing.T) {
	ctx := context.Background()
	q := store.Query{Where: []store.Pred{store.Where("type", "commit")}}
	counts := map[int]int64{}
	for _, n := range []int{2000, 4000} {
		st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ops []store.Op
		for i := range n {
			ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("big-%d", i), "type": "commit", "session": "big", "depth": float64(i)}))
		}
		for i := range 3 {
			ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("small-%d", i), "type": "commit", "session": "small", "depth": float64(i)}),
				store.Put(store.Doc{store.IDKey: fmt.Sprintf("other-%d", i), "type": "other", "session": "elsewhere"}))
		}
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
		st.counted = new(atomic.Int64)
		got, err := st.Values(ctx, q, "session", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		counts[n] = st.counted.Load()
		want, err := store.ValuesByQuery(ctx, st, q, "session", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || !slices.Equal(got, []string{"big", "small"}) {
			t.Errorf("%d commits: Values %v, ValuesByQuery %v, want [big small]", n, got, want)
		}
		st.Close()
	}
	t.Logf("rows counted: %v", counts)
	if counts[4000] != counts[2000] || counts[2000] > 5*firstRows {
		t.Errorf("rows counted to list the sessions grow with the commits: %v", counts)
	}
}

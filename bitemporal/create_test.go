package bitemporal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

// TestConcurrentCreate: eight openers creating one new store at once all
// succeed (each with its own connections, as separate processes have),
// and every one can write. tests/ runs the same with real processes.
func TestConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	fails := 0
	for r := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("new-%d.db", r))
		var wg sync.WaitGroup
		errs := make([]error, 8)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
				if err != nil {
					errs[i] = err
					return
				}
				defer s.Close()
				_, errs[i] = store.SubmitWait(ctx, s, []store.Op{store.Put(store.Doc{store.IDKey: fmt.Sprintf("w%d", i)})})
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				fails++
				t.Errorf("round %d opener %d: %v", r, i, err)
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d of %d concurrent opens of a new store failed", fails, 8*rounds)
	}
}

package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// The lookup answers exactly as a scan of the lists, through updates
// that are written, refused by their function (whose drafts wrote into the
// shared arrays past the state's entries) and reloaded: random changes,
// and after each one every id asked both ways.
func TestLookupAnswersAsAScan(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s, err := Create(ctx, e.Store, e.ID("s"), CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		refuse := errors.New("refused")
		var ids []string
		for step := range 300 {
			fail := r.IntN(4) == 0
			_, _, err := s.Update(ctx, nil, func(st *State) error {
				for range 1 + r.IntN(3) {
					id := fmt.Sprintf("o%d", r.IntN(step+5))
					if !slices.Contains(ids, id) {
						ids = append(ids, id)
					}
					switch r.IntN(6) {
					case 0:
						st.AddToIndex(id)
					case 1:
						st.AddToPool(id)
					case 2:
						if !st.Recorded("c" + id) {
							st.AddToolcall("c"+id, false)
						}
					case 3:
						if !st.Recorded("r" + id) {
							st.AddTargetToolcall("r"+id, id)
						}
					case 4:
						st.TouchTarget(id)
					case 5:
						st.TouchToolcall("c" + id)
					}
				}
				if fail {
					return refuse
				}
				return nil
			})
			if err != nil && !errors.Is(err, refuse) {
				t.Fatal(err)
			}
			if step%50 == 49 {
				if err := s.Reload(ctx); err != nil {
					t.Fatal(err)
				}
			}
			s.mu.Lock()
			got := s.state
			s.mu.Unlock()
			scan := got.Clone() // no lookup: scans
			if got.look == nil || scan.look != nil {
				t.Fatal("the session's state should have a lookup, its clone none")
			}
			for _, id := range ids {
				for _, q := range []string{id, "c" + id, "r" + id} {
					if got.Indexed(q) != scan.Indexed(q) || got.InPool(q) != scan.InPool(q) ||
						got.Recorded(q) != scan.Recorded(q) || got.ToolcallAt(q) != scan.ToolcallAt(q) ||
						!slices.Equal(got.ToolcallsFor(q), scan.ToolcallsFor(q)) {
						t.Fatalf("step %d, id %s: the lookup answers %v %v %v %d %v, a scan %v %v %v %d %v", step, q,
							got.Indexed(q), got.InPool(q), got.Recorded(q), got.ToolcallAt(q), got.ToolcallsFor(q),
							scan.Indexed(q), scan.InPool(q), scan.Recorded(q), scan.ToolcallAt(q), scan.ToolcallsFor(q))
					}
				}
			}
		}
	})
}

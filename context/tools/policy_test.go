package tools

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/session"
)

// TestPolicySkipsWhatIsCollapsed: applyPolicy, which gives the policy only
// the calls in its window and the older ones with something active,
// deactivates exactly what giving it every call does, on random states
// (outputs, reads of shared files, management calls, pins, budgets,
// files kept for ever).
func TestPolicySkipsWhatIsCollapsed(t *testing.T) {
	cfgs := []collapse.Config{collapse.Default(), {PerTurn: 2, TurnsBack: 2}, {PerTurn: 3, TurnsBack: 4, Budget: 300},
		{PerTurn: 2, TurnsBack: 1, FilesPerTurn: -1}, {PerTurn: 1, TurnsBack: 3, FilesPerTurn: 2, Budget: 100}}
	deactivated := 0
	for seed := range 400 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		cfg := cfgs[seed%len(cfgs)]
		var s session.State
		turns := 1 + r.IntN(12)
		for turn := 1; turn <= turns; turn++ {
			s.Turn = turn
			for k := r.IntN(5); k > 0; k-- {
				id := fmt.Sprintf("call%d-%d", turn, k)
				switch r.IntN(4) {
				case 0:
					f := fmt.Sprintf("file%d", r.IntN(4))
					s.Activate(f)
					s.AddTargetToolcall(id, f)
				case 1:
					s.AddToolcall(id, true)
				default:
					s.AddToolcall(id, false)
					s.Activate(id)
				}
				s.SetToolcallTokens(id, r.IntN(120))
				if r.IntN(8) == 0 {
					s.Pin(id)
				}
			}
		}
		if r.IntN(3) == 0 {
			s.Pin(fmt.Sprintf("file%d", r.IntN(4)))
		}
		if r.IntN(4) == 0 && len(s.Toolcalls) > 0 { // an old call activated again
			s.Activate(s.Toolcalls[r.IntN(len(s.Toolcalls))].ID)
		}
		want, got := s.Clone(), s.Clone()
		applyPolicy(cfg, &want, true)
		(&Tools{policy: cfg}).applyPolicy(&got)
		if !slices.Equal(got.Active, want.Active) {
			t.Fatalf("seed %d, %+v: active %v, want %v", seed, cfg, got.Active, want.Active)
		}
		deactivated += len(s.Active) - len(want.Active)
	}
	if deactivated == 0 {
		t.Fatal("the policy never deactivated anything")
	}
}

package assemble

import (
	"fmt"
	"testing"
	"time"
)

// TestRenewed: a pause longer than the cache's lifetime makes the next
// call's cache cold (a rebase from the first stale item is free, and
// taken) unless the harness renewed the entry during the pause (Pi's cache
// warming): then the idle time counts from the renewal, the cache is warm,
// and nothing is rebased for expiry. A renewal before the previous call,
// or after the call, counts for nothing; a renewal counts for one call.
func TestRenewed(t *testing.T) {
	const ttl = 5 * time.Minute
	// staleSession runs turns until something is stale, then pauses 6
	// minutes (past the cache's lifetime).
	staleSession := func(t *testing.T) *env {
		e := newEnv(t, LayoutStream, Policy{StaleThreshold: 1 << 30, Horizon: 200, CacheTTL: ttl})
		for turn := 1; e.a.stale == 0; turn++ {
			if turn > 40 {
				t.Fatal("nothing went stale in 40 turns")
			}
			e.turn(fmt.Sprintf("turn %d", turn))
			e.bash(fmt.Sprintf("make step%d", turn), output(fmt.Sprintf("t%d", turn), 40))
			e.now = e.now.Add(20 * time.Second)
			e.call()
		}
		e.turn("after the pause")
		e.now = e.now.Add(6 * time.Minute)
		return e
	}
	for _, tc := range []struct {
		name    string
		renewed time.Duration // before the call; 0: none
		idle    time.Duration
		expired bool
	}{
		{"no renewal", 0, 6 * time.Minute, true},
		{"renewed a minute before", time.Minute, time.Minute, false},
		{"renewed before the previous call", 7 * time.Minute, 6 * time.Minute, true},
		{"renewed after the call", -time.Minute, 6 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := staleSession(t)
			if tc.renewed != 0 {
				e.a.Renewed(e.now.Add(-tc.renewed))
			}
			c := e.call()
			if c.Idle != tc.idle {
				t.Errorf("idle %v, want %v", c.Idle, tc.idle)
			}
			if got := c.Rebased && c.Reason == ReasonExpired; got != tc.expired {
				t.Errorf("rebased for expiry: %v (rebased %v, %q), want %v", got, c.Rebased, c.Reason, tc.expired)
			}
			if cold := e.a.shape.ColdStarts; (cold > 0) != tc.expired {
				t.Errorf("cold starts %d, want the turn counted cold: %v", cold, tc.expired)
			}
			// The next pause: the renewal is spent.
			e.turn("later")
			e.now = e.now.Add(6 * time.Minute)
			if c := e.call(); c.Idle != 6*time.Minute {
				t.Errorf("the call after: idle %v, want 6m (a renewal counts once)", c.Idle)
			}
		})
	}
}

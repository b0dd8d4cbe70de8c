package assemble

import (
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

func TestDecide(t *testing.T) {
	p := DefaultPolicy()
	warm := 30 * time.Second
	for _, tc := range []struct {
		name string
		in   Inputs
		p    Policy
		want Decision
	}{
		{"nothing stale", Inputs{StaleTokens: 0, ContextTokens: 199000, Idle: time.Hour, HasPrevious: true}, p, Decision{}},
		{"few stale, warm", Inputs{StaleTokens: 3999, ContextTokens: 50000, Idle: warm, HasPrevious: true}, p, Decision{}},
		{"threshold reached", Inputs{StaleTokens: 4000, ContextTokens: 50000, Idle: warm, HasPrevious: true}, p, Decision{true, ReasonStale}},
		{"cache expired", Inputs{StaleTokens: 1, ContextTokens: 50000, Idle: 5 * time.Minute, HasPrevious: true}, p, Decision{true, ReasonExpired}},
		{"just before expiry", Inputs{StaleTokens: 1, ContextTokens: 50000, Idle: 5*time.Minute - time.Millisecond, HasPrevious: true}, p, Decision{}},
		{"first call", Inputs{StaleTokens: 10, ContextTokens: 100}, p, Decision{true, ReasonExpired}},
		{"window nearly full", Inputs{StaleTokens: 10, ContextTokens: 180000, Idle: warm, HasPrevious: true}, p, Decision{true, ReasonWindow}},
		{"window not yet", Inputs{StaleTokens: 10, ContextTokens: 179999, Idle: warm, HasPrevious: true}, p, Decision{}},
		{"custom threshold", Inputs{StaleTokens: 500, ContextTokens: 1000, Idle: warm, HasPrevious: true}, Policy{StaleThreshold: 500}, Decision{true, ReasonStale}},
		{"custom ttl", Inputs{StaleTokens: 5, ContextTokens: 1000, Idle: 2 * time.Minute, HasPrevious: true}, Policy{CacheTTL: time.Minute}, Decision{true, ReasonExpired}},
		{"custom window", Inputs{StaleTokens: 5, ContextTokens: 8000, Idle: warm, HasPrevious: true}, Policy{Window: 10000, WindowMargin: 0.8}, Decision{true, ReasonWindow}},
		{"zero policy is default", Inputs{StaleTokens: 4000, ContextTokens: 1, Idle: warm, HasPrevious: true}, Policy{}, Decision{true, ReasonStale}},
	} {
		if got := Decide(tc.in, tc.p); got != tc.want {
			t.Errorf("%s: Decide(%+v) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestBytesTokenizer(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "héllo": 2} {
		if got := (BytesTokenizer{}).Count(s); got != want {
			t.Errorf("Count(%q) = %d, want %d", s, got, want)
		}
	}
}

// Stale content is batched: collapses below the threshold leave the bytes
// untouched (only a note is appended) until enough stale tokens pile up.
func TestRebaseBatching(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnvOn(t, se, LayoutStream, Policy{StaleThreshold: 2000})
		var prev *Assembled
		rebases := 0
		for turn := 1; turn <= 12; turn++ {
			e.turn("go on")
			e.bash("make", output("x", 20))
			e.now = e.now.Add(10 * time.Second)
			c := e.call()
			if c.Rebased {
				rebases++
				if c.Reason != ReasonStale || prev.StaleTokens+400 < 2000 {
					t.Fatalf("call %d: rebase %q with %d stale tokens before", c.N, c.Reason, prev.StaleTokens)
				}
				if c.StaleTokens != 0 {
					t.Fatalf("call %d: %d stale tokens left after a rebase", c.N, c.StaleTokens)
				}
			} else if prev != nil && c.StaleTokens >= 2000 {
				t.Fatalf("call %d: %d stale tokens and no rebase", c.N, c.StaleTokens)
			}
			prev = c
		}
		if rebases == 0 || rebases > 3 {
			t.Fatalf("%d rebases in 12 calls", rebases)
		}
	})
}

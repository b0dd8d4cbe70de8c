package assemble

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

func TestDecide(t *testing.T) {
	p := Policy{StaleThreshold: 4000} // the other fields at their defaults
	warm := 30 * time.Second
	for _, tc := range []struct {
		name string
		in   Inputs
		p    Policy
		want Decision
	}{
		{"nothing stale", Inputs{StaleTokens: 0, ContextTokens: 199000, Idle: time.Hour, HasPrevious: true}, p, Decision{}},
		{"few stale, warm", Inputs{StaleTokens: 3999, ContextTokens: 50000, Idle: warm, HasPrevious: true}, p, Decision{}},
		{"threshold reached, short tail", Inputs{StaleTokens: 4000, ContextTokens: 50000, Idle: warm, HasPrevious: true,
			Candidates: []Candidate{{Tail: 6000, Stale: 4000}}}, p, Decision{Rebase: true, Reason: ReasonStale}},
		// 0.1·10·4000 = 4000 saved against 1.25·(40000-4000) - 0.1·40000 = 41000 spent.
		{"threshold reached, long tail", Inputs{StaleTokens: 4000, ContextTokens: 50000, Idle: warm, HasPrevious: true,
			Candidates: []Candidate{{Tail: 40000, Stale: 4000}}}, p, Decision{}},
		{"long horizon pays for a long tail", Inputs{StaleTokens: 4000, ContextTokens: 50000, Idle: warm, HasPrevious: true,
			Candidates: []Candidate{{Tail: 40000, Stale: 4000}}}, Policy{StaleThreshold: 4000, Horizon: 150}, Decision{Rebase: true, Reason: ReasonStale}},
		{"estimated horizon: a long turn runs on", Inputs{StaleTokens: 4000, ContextTokens: 50000, Idle: warm, HasPrevious: true, Shape: Shape{Current: 150},
			Candidates: []Candidate{{Tail: 40000, Stale: 4000}}}, p, Decision{Rebase: true, Reason: ReasonStale}},
		// The best of three: the first spends too much, the last saves too little.
		{"best candidate", Inputs{StaleTokens: 9000, ContextTokens: 50000, Idle: warm, HasPrevious: true,
			Candidates: []Candidate{{Tail: 40000, Stale: 9000}, {Tail: 8000, Stale: 6000}, {Tail: 3000, Stale: 1000}}}, p,
			Decision{Rebase: true, Reason: ReasonStale, From: 1}},
		{"no candidate reaches the threshold", Inputs{StaleTokens: 4500, ContextTokens: 50000, Idle: warm, HasPrevious: true,
			Candidates: []Candidate{{Tail: 40000, Stale: 4500}, {Tail: 3000, Stale: 3000}}}, p, Decision{}},
		{"cache expired", Inputs{StaleTokens: 1, ContextTokens: 50000, Idle: 5 * time.Minute, HasPrevious: true}, p, Decision{Rebase: true, Reason: ReasonExpired}},
		{"just before expiry", Inputs{StaleTokens: 1, ContextTokens: 50000, Idle: 5*time.Minute - time.Millisecond, HasPrevious: true}, p, Decision{}},
		{"first call", Inputs{StaleTokens: 10, ContextTokens: 100}, p, Decision{Rebase: true, Reason: ReasonExpired}},
		{"window nearly full", Inputs{StaleTokens: 10, ContextTokens: 180000, Idle: warm, HasPrevious: true}, p, Decision{Rebase: true, Reason: ReasonWindow}},
		{"window not yet", Inputs{StaleTokens: 10, ContextTokens: 179999, Idle: warm, HasPrevious: true}, p, Decision{}},
		{"custom threshold", Inputs{StaleTokens: 500, ContextTokens: 800, Idle: warm, HasPrevious: true}, Policy{StaleThreshold: 500}, Decision{Rebase: true, Reason: ReasonStale}},
		{"below the custom threshold", Inputs{StaleTokens: 499, ContextTokens: 800, Idle: warm, HasPrevious: true}, Policy{StaleThreshold: 500}, Decision{}},
		{"custom ttl", Inputs{StaleTokens: 5, ContextTokens: 1000, Idle: 2 * time.Minute, HasPrevious: true}, Policy{CacheTTL: time.Minute}, Decision{Rebase: true, Reason: ReasonExpired}},
		{"custom window", Inputs{StaleTokens: 5, ContextTokens: 8000, Idle: warm, HasPrevious: true}, Policy{Window: 10000, WindowMargin: 0.8}, Decision{Rebase: true, Reason: ReasonWindow}},
		{"zero policy is default", Inputs{StaleTokens: 8000, ContextTokens: 8000, Idle: warm, HasPrevious: true}, Policy{}, Decision{Rebase: true, Reason: ReasonStale}},
		{"below the default threshold", Inputs{StaleTokens: 7999, ContextTokens: 7999, Idle: warm, HasPrevious: true}, Policy{}, Decision{}},
	} {
		if got := Decide(tc.in, tc.p); got != tc.want {
			t.Errorf("%s: Decide(%+v) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestHorizon: the estimated horizon follows the session's rhythm as
// known at the call, not the session's length.
func TestHorizon(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s        Shape
		min, max float64
	}{
		{"nothing known yet", Shape{}, 15, 25},
		{"short turns, users back after the TTL", Shape{Turns: 10, TurnCalls: 40, Current: 1, WarmStarts: 0, ColdStarts: 10}, 3, 5},
		{"short turns, users back within the TTL", Shape{Turns: 10, TurnCalls: 40, Current: 1, WarmStarts: 10, ColdStarts: 0}, 40, 60},
		{"a long autonomous turn", Shape{Turns: 2, TurnCalls: 10, Current: 80, ColdStarts: 2}, 80, 90},
		{"late in a turn of usual length", Shape{Turns: 20, TurnCalls: 100, Current: 5, WarmStarts: 1, ColdStarts: 19}, 5, 6},
		{"capped", Shape{Current: 1000}, 200, 200},
	} {
		if h := tc.s.Horizon(); h < tc.min || h > tc.max {
			t.Errorf("%s: Horizon(%+v) = %.1f, want %.0f..%.0f", tc.name, tc.s, h, tc.min, tc.max)
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
		e := newEnvOn(t, se, LayoutStream, Policy{StaleThreshold: 2000, Horizon: 200})
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

// A rebase starts where it pays: stale content far back stays rendered
// (re-sending everything after it would cost more than it saves) while
// recent stale output is collapsed; the old content goes when the cache
// expires and a rebase is free.
func TestPartialRebase(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 500, Horizon: 40})
	old := e.file("old.txt", strings.Repeat("early content that went stale\n", 60))
	e.turn("start")
	e.read(old)
	keep := e.file("keep.txt", output("kept active", 200))
	e.read(keep) // a long, live tail after it
	if _, err := e.tools.Pin(e.ctx, mustID(t, e, keep)); err != nil {
		t.Fatal(err)
	}
	e.call()
	if _, err := e.tools.Deactivate(e.ctx, mustID(t, e, old)); err != nil {
		t.Fatal(err)
	}
	var partial *Assembled
	for turn := 2; turn <= 12 && partial == nil; turn++ {
		e.turn(fmt.Sprintf("turn %d", turn))
		for k := 0; k < 3; k++ {
			e.bash("make", output(fmt.Sprintf("t%d.%d", turn, k), 8))
		}
		e.now = e.now.Add(30 * time.Second)
		if c := e.call(); c.Rebased {
			partial = c
		}
	}
	if partial == nil || partial.Reason != ReasonStale {
		t.Fatalf("no stale rebase: %+v", partial)
	}
	b := string(partial.Bytes)
	if !strings.Contains(b, "early content that went stale") || partial.StaleTokens == 0 {
		t.Fatalf("the rebase reached back to the old file (stale left %d)", partial.StaleTokens)
	}
	if partial.RebaseOffset <= strings.Index(b, "early content that went stale") {
		t.Fatal("the rebase started before the old content")
	}
	e.turn("after a break")
	e.now = e.now.Add(6 * time.Minute)
	c := e.call()
	if !c.Rebased || c.Reason != ReasonExpired || strings.Contains(string(c.Bytes), "early content that went stale") || c.StaleTokens != 0 {
		t.Fatalf("expired rebase: rebased=%v reason=%q stale=%d", c.Rebased, c.Reason, c.StaleTokens)
	}
	for n := 1; n <= c.N; n++ {
		if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
}

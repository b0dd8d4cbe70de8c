// Package inspecttest makes real sessions for the inspector's tests: it
// replays a transcript of the shared datasets through the real context
// manager (context/replay) into a store.
package inspecttest

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/replay"
	"github.com/ctxstore/ctxstore/context/transcript"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Small is a short Claude Code session of the datasets (30 calls).
const Small = "claude-code/attio-mcp-server__465eb442__8664c04e.jsonl"

// Replay replays the dataset file rel (relative to the datasets directory)
// with the named ctxstore strategies ("ctxstore_stream", ...) into st and
// returns the new sessions' ids in the order of strategies. Token counts
// use assemble.BytesTokenizer (fast, deterministic).
func Replay(tb testing.TB, st store.Store, rel string, strategies ...string) []string {
	tb.Helper()
	path := filepath.Join(datasets.Dir(tb), rel)
	s, err := transcript.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	known := map[string]replay.Strategy{}
	for _, x := range append(replay.DefaultStrategies(), replay.OtherStrategies()...) {
		known[x.Name()] = x
	}
	var strats []replay.Strategy
	for _, n := range strategies {
		x, ok := known[n]
		if !ok {
			tb.Fatalf("inspecttest: unknown strategy %q", n)
		}
		strats = append(strats, x)
	}
	ctx := context.Background()
	before, err := session.List(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := replay.Run(ctx, s, replay.Options{Strategies: strats, Counter: replay.NewCounter(assemble.BytesTokenizer{}),
		Store: st, Dir: tb.TempDir()}); err != nil {
		tb.Fatalf("replaying %s: %v", rel, err)
	}
	after, err := session.List(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, id := range after {
		if !slices.Contains(before, id) {
			out = append(out, id)
		}
	}
	// ids are replay-{transcript}-{k}-{nanos}: order by strategy index k
	slices.SortFunc(out, func(a, b string) int { return cmpStrategy(a) - cmpStrategy(b) })
	if len(out) != len(strategies) {
		tb.Fatalf("inspecttest: %d new sessions for %d strategies", len(out), len(strategies))
	}
	return out
}

// cmpStrategy extracts k from replay-{id}-{k}-{nanos}.
func cmpStrategy(id string) int {
	// the strategy index is the second-to-last dash-separated field
	end := len(id)
	dashes := 0
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '-' {
			dashes++
			if dashes == 1 {
				end = i
			} else {
				k := 0
				for _, c := range id[i+1 : end] {
					k = k*10 + int(c-'0')
				}
				return k
			}
		}
	}
	return 0
}

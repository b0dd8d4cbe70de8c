package inspect

import (
	"bytes"
	"context"
	"path/filepath"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/eval/replay"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// WouldCost is what a recorded session would have cost with ctxstore
// managing its context, beside what it cost: the replay of its transcript
// (eval/replay) under what the harness recorded and under ctxstore's
// stream layout with a bare head (the harness's own system prompt and
// tools, nothing of ctxstore's added; the replay's defaults otherwise),
// both priced by the replay's cost model. Ratio is ctxstore's cost over
// the recorded one; WouldUSD the session's recorded cost (CostUSD, per
// model from the price table) times Ratio.
type WouldCost struct {
	recorded.Replay
	Ratio       float64 `json:"ratio"`
	CostUSD     float64 `json:"cost_usd"`
	WouldUSD    float64 `json:"would_usd"`
	CostUnknown bool    `json:"cost_unknown,omitempty"`
	// Stale: the session grew since the replay was computed.
	Stale bool `json:"stale,omitempty"`
}

// WouldCostStrategy is the ctxstore strategy WouldCost replays.
const WouldCostStrategy = "ctxstore_stream_bare_head"

// StoredWouldCost returns a recorded session's stored replay (nil when
// none was computed) with s's recorded cost (its summary: Session).
func (in *Inspector) StoredWouldCost(ctx context.Context, s *SessionDetail) (*WouldCost, error) {
	r, ok, err := recorded.ReadReplay(ctx, in.st, s.ID, s.Commits)
	if err != nil || (r.Strategy == "" && !ok) {
		return nil, err
	}
	w := &WouldCost{Replay: r, CostUSD: s.CostUSD, CostUnknown: s.CostUnknown, Stale: !ok}
	if r.RecordedCost > 0 {
		w.Ratio = r.Cost / r.RecordedCost
	}
	if !w.CostUnknown {
		w.WouldUSD = w.CostUSD * w.Ratio
	}
	return w, nil
}

// Replay replays recorded session sid's transcript (its commits' lines)
// under what the harness recorded and under WouldCostStrategy, in scratch
// stores under dir (a temporary directory when ""). It reads the store
// and writes nothing to it (recorded.PutReplay stores the result).
func (in *Inspector) Replay(ctx context.Context, sid, dir string) (*recorded.Replay, error) {
	if err := in.check(sid); err != nil {
		return nil, err
	}
	reg := in.o.Formats
	if reg == nil {
		reg = formats.Commits()
	}
	_, data, n, err := recorded.Transcript(ctx, commits.New(in.st, commits.Options{Registry: reg}), sid)
	if err != nil {
		return nil, err
	}
	s, err := transcript.Reader{Formats: formats.Registry()}.Read(bytes.NewReader(data), transcript.FormatAuto)
	if err != nil {
		return nil, err
	}
	o := replay.Options{
		Strategies: []replay.Strategy{replay.Recorded{}, &replay.Ctxstore{Layout: assemble.LayoutStream, BareHead: true, Label: WouldCostStrategy}},
		Counter:    replay.NewCounter(tokens.Default()),
		Dir:        dir,
		OpenStore: func(ctx context.Context, dir string) (store.Store, error) {
			return bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
		},
	}
	rep, err := replay.Run(ctx, s, o)
	if err != nil {
		return nil, err
	}
	r := &recorded.Replay{Commits: n, Computed: time.Now().UTC(), Strategy: WouldCostStrategy, CacheModel: rep.CacheModel}
	for _, x := range rep.Results {
		switch x.Strategy {
		case "recorded":
			r.RecordedCost, r.RecordedContext, r.RecordedShare = x.Totals.Cost, x.Totals.Context, x.Totals.CacheShare
		case WouldCostStrategy:
			r.Cost, r.Context, r.CacheShare, r.Calls = x.Totals.Cost, x.Totals.Context, x.Totals.CacheShare, x.Totals.Calls
		}
	}
	return r, nil
}

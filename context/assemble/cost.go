package assemble

import (
	"context"
	"slices"
	"time"
)

// Tokenizer counts the tokens of a text. Implementations must be
// deterministic and safe for concurrent use.
type Tokenizer interface {
	Count(s string) int
}

// BytesTokenizer is the default Tokenizer: one token per four bytes,
// rounded up, a usual estimate for English text and code.
type BytesTokenizer struct{}

// Count returns ceil(len(s)/4).
func (BytesTokenizer) Count(s string) int { return (len(s) + 3) / 4 }

// Policy configures the rebase cost model. The zero value of each field
// means its default.
type Policy struct {
	// StaleThreshold is the number of stale tokens (collapsed content still
	// rendered) from which a rebase is considered: collapses are applied in
	// batches of at least this size, never one by one (default 8,000).
	StaleThreshold int
	// CacheTTL is the provider's prompt-cache lifetime (default 5 minutes):
	// after that long without a call the cache is cold and a rebase is free.
	CacheTTL time.Duration
	// Window is the model's context window in tokens (default 200,000).
	Window int
	// WindowMargin is the fraction of Window at which the context counts as
	// nearly full (default 0.9).
	WindowMargin float64
	// InputBytes is the size of a tool call's arguments (JSON) from which
	// they collapse with the call: every value longer than 80 bytes becomes
	// a reference (default 400).
	InputBytes int
	// Horizon is how many more calls a rebase is expected to serve, for
	// weighing its cost against its saving; 0 means estimated from the
	// session's shape so far (Horizon, Inputs.Shape): the calls left in the
	// current turn, then the turns expected before the cache goes cold.
	Horizon int
	// Breakpoints is where the harness asks the provider to cache, which
	// decides what a rebase rewrites: BreakpointsPrefix
	// (the default: any prefix shared with the previous call is read, as
	// OpenAI's automatic cache does), BreakpointsStable (the end of the
	// stable messages, Assembled.Stable, as ctxstore's Pi and OpenClaw
	// extensions place them: a rebase rewrites from the previous call's
	// stable boundary) or BreakpointsEnd (only the end of each request, as
	// Claude Code places them: a rebase rewrites everything after the head).
	Breakpoints string
	// PreviewTokens is the size from which a live tool output enters as a
	// preview, its start and end with a line saying how to load it whole
	// (activate(call id)); 0 means the default, 4,000; negative, never.
	PreviewTokens int
	// HeadOverhead is the tokens a request holds before the assembled
	// bytes that a head change also invalidates (the replay's calibrated
	// overhead: the harness's own prompt and tools, which it does not
	// render); 0 in the service, whose head is the whole request's head.
	// A rebase that switches a lean head (LeanHead) is priced as a rewrite
	// of the context and this.
	HeadOverhead int
	// HeadTTL is how long a harness that places its own breakpoints asks
	// the provider to keep the head (system prompt and tools) cached once
	// the session has shown that it pauses: from the first turn that began
	// with the cache cold (Shape.ColdStarts), each call's
	// Assembled.HeadTTL. A head that lives past the pauses is read after
	// them instead of written again; a session that never pauses never
	// pays the longer lifetime's write price. 0 means the default, one
	// hour (Anthropic's longer lifetime); negative, or no longer than
	// CacheTTL, never.
	HeadTTL time.Duration
}

// DefaultHeadTTL is Policy.HeadTTL's default.
const DefaultHeadTTL = time.Hour

// The values of Policy.Breakpoints.
const (
	BreakpointsPrefix = "prefix"
	BreakpointsStable = "stable"
	BreakpointsEnd    = "end"
)

// DefaultPolicy returns the defaults: 8,000 stale tokens, 5 minute cache,
// a 200,000-token window, 90%.
func DefaultPolicy() Policy {
	return Policy{StaleThreshold: 8000, CacheTTL: 5 * time.Minute, Window: 200000, WindowMargin: 0.9, InputBytes: minInputBytes}
}

func (p Policy) withDefaults() Policy {
	d := DefaultPolicy()
	if p.StaleThreshold <= 0 {
		p.StaleThreshold = d.StaleThreshold
	}
	if p.CacheTTL <= 0 {
		p.CacheTTL = d.CacheTTL
	}
	if p.Window <= 0 {
		p.Window = d.Window
	}
	if p.WindowMargin <= 0 || p.WindowMargin > 1 {
		p.WindowMargin = d.WindowMargin
	}
	if p.InputBytes <= 0 {
		p.InputBytes = d.InputBytes
	}
	if p.PreviewTokens == 0 {
		p.PreviewTokens = 4000
	}
	if p.HeadTTL == 0 {
		p.HeadTTL = DefaultHeadTTL
	}
	return p
}

// Inputs are what the cost model looks at before a call.
type Inputs struct {
	// StaleTokens are tokens of content still rendered but no longer
	// active (deactivated, collapsed or superseded by a newer version).
	StaleTokens int
	// ContextTokens is the size of the context as it would be sent.
	ContextTokens int
	// Idle is the time since the previous call; meaningful only when
	// HasPrevious.
	Idle time.Duration
	// HasPrevious is false for the first call (nothing is cached).
	HasPrevious bool
	// Calls is the number of calls so far.
	Calls int
	// Shape is what the session has shown of its rhythm, for the
	// estimated horizon.
	Shape Shape
	// Candidates are the positions a rebase could start from, one per
	// stale item, first to last. Nil means one candidate covering the whole
	// context (Tail = ContextTokens, Stale = StaleTokens).
	Candidates []Candidate
}

// Shape is the rhythm of a session so far, as known at a call: how many
// calls its completed turns took, how many calls the current turn has made,
// and whether the prompt cache survived the gap before each turn (a user
// message: the time a person takes to answer, against the cache's TTL).
type Shape struct {
	// Turns and TurnCalls: completed turns (with at least one call) and
	// their calls in all. Current: calls of the turn in progress so far.
	Turns, TurnCalls, Current int
	// WarmStarts and ColdStarts count the turns whose first call found the
	// cache warm or cold (idle >= CacheTTL).
	WarmStarts, ColdStarts int
	// Rebases counts the session's rebases so far (0 in commits written
	// before it was kept).
	Rebases int
	// Previews counts the outputs that entered as a preview so far (a
	// resume of a commit without it counts the previews its items still
	// show). Faulted are those the model read
	// back whole while shown (an activate naming it, a whole read of its
	// spill file), each once; PreviewDoublings how many times that made
	// the session's preview size double (Assembler.previewTokens).
	Previews         int
	Faulted          []string
	PreviewDoublings int
}

// Horizon estimates how many more calls the current cache will serve,
// from what is known at the call, never from the session's future:
//
//	m = (TurnCalls + 10) / (Turns + 1)    mean calls per turn (a prior turn of 10)
//	r = max(m - Current, Current, 1)      calls left in this turn: a turn that has
//	                                      run long tends to run on (Lindy)
//	p = (WarmStarts + 1) / (WarmStarts + ColdStarts + 2)
//	                                      chance that the cache survives a turn's gap
//	H = r + m·p/(1-p)                     at most 200
//
// So a rebase is judged against the rest of the turn, plus later turns
// only as far as the user has answered within the cache's lifetime before;
// a session whose users come back after the TTL gets little more than the
// turn in progress. This replaces "as many calls as so far", which let a
// rebase near a session's end count on calls that never came.
func (s Shape) Horizon() float64 {
	m := float64(s.TurnCalls+10) / float64(s.Turns+1)
	k := float64(s.Current)
	r := max(m-k, k, 1)
	p := float64(s.WarmStarts+1) / float64(s.WarmStarts+s.ColdStarts+2)
	return min(r+m*p/(1-p), 200)
}

// Candidate is a position a rebase could start from: the tokens rendered
// from there to the end, and how many of them are stale. Rewrite, when
// larger than Tail, is what the provider cannot serve from its cache after
// the rebase (from the last breakpoint before the position; see
// Policy.Breakpoints): the tokens the rebase writes again, stale ones
// dropped.
type Candidate struct {
	Tail, Stale, Rewrite int
}

// Reasons a rebase is taken.
const (
	ReasonNone    = ""
	ReasonStale   = "stale"   // stale tokens passed the threshold
	ReasonExpired = "expired" // the cache is cold anyway
	ReasonWindow  = "window"  // the context is nearly full
)

// Decision is the cost model's verdict: whether to rebase, why, and from
// which candidate (an index into Inputs.Candidates; stale items before it
// stay rendered until a later rebase).
type Decision struct {
	Rebase bool
	Reason string
	From   int
}

// Decide is the rebase cost model, a pure function. A cache serves only a
// byte-identical prefix: cached tokens cost 0.1x base input, tokens after
// the first changed byte 1.25x. A rebase from a position with T tokens
// after it, S of them stale, re-sends the T-S that stay at 1.25x instead of
// reading T from the cache at 0.1x, once: it costs 1.25(T-S) - 0.1T. It
// saves 0.1S on every later call. So:
//
//   - no stale tokens: never rebase (nothing to gain);
//   - not HasPrevious, or Idle >= CacheTTL: rebase from the first stale
//     item (the cache is cold, the whole context is written at 1.25x
//     anyway, so dropping stale content is free) — ReasonExpired;
//   - ContextTokens >= Window·WindowMargin: rebase from the first stale
//     item to make room — ReasonWindow;
//   - otherwise, among the candidates with at least StaleThreshold stale
//     tokens after them (collapses are applied in batches, never one by
//     one), take the one with the greatest net saving over the horizon H,
//     0.1·H·S - (1.25(T-S) - 0.1T), and rebase from it if that is positive
//     — ReasonStale. Stale items before it stay until a later rebase: old
//     stale content far back is dropped when the cache expires or the
//     window fills, when dropping it is cheap or necessary.
//   - otherwise keep the prefix warm.
func Decide(in Inputs, p Policy) Decision {
	p = p.withDefaults()
	switch {
	case in.StaleTokens <= 0:
		return Decision{}
	case !in.HasPrevious || in.Idle >= p.CacheTTL:
		return Decision{Rebase: true, Reason: ReasonExpired}
	case float64(in.ContextTokens) >= float64(p.Window)*p.WindowMargin:
		return Decision{Rebase: true, Reason: ReasonWindow}
	case in.StaleTokens < p.StaleThreshold:
		return Decision{}
	}
	cands := in.Candidates
	if cands == nil {
		cands = []Candidate{{Tail: in.ContextTokens, Stale: in.StaleTokens}}
	}
	h := float64(p.Horizon)
	if h <= 0 {
		h = in.Shape.Horizon()
	}
	best, bestNet := -1, 0.0
	for i, c := range cands {
		if c.Stale < p.StaleThreshold {
			continue
		}
		t := float64(max(c.Tail, c.Rewrite))
		net := 0.1*h*float64(c.Stale) - (1.25*(t-float64(c.Stale)) - 0.1*t)
		if net > bestNet {
			best, bestNet = i, net
		}
	}
	if best < 0 {
		return Decision{}
	}
	return Decision{Rebase: true, Reason: ReasonStale, From: best}
}

// Live is one live content block: what deactivating its object would free.
type Live struct {
	ID     string
	Tokens int
}

// Overflow brings the stream up to date and returns by how many tokens the
// context would exceed WindowMargin·Window even after a rebase dropped
// every stale token (0 when it fits), and the live content blocks of
// unpinned objects, oldest first: what a harness can deactivate to make
// room, since a rebase alone cannot.
func (a *Assembler) Overflow(ctx context.Context) (int, []Live, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.sync(ctx, true); err != nil {
		return 0, nil, err
	}
	size := a.tokens - a.stale
	if a.o.Layout == LayoutLiteral {
		size = a.tokens // the literal layout has no stale content; a.tokens is the stream's
	}
	over := size - int(float64(a.pol.Window)*a.pol.WindowMargin)
	if over <= 0 {
		return 0, nil, nil
	}
	pinned := map[string]bool{}
	for _, id := range a.s.Pinned() {
		pinned[id] = true
	}
	var live []Live
	a.overflow, a.overBy = map[string]bool{}, over
	for id, i := range a.shown {
		if !pinned[id] {
			n := a.items[i].liveTokens()
			for _, p := range a.patches[id] {
				n += a.items[p].tokens
			}
			live = append(live, Live{ID: id, Tokens: n})
			a.overflow[id] = true // a deactivation before the next call is for the window: the note says so
		}
	}
	slices.SortFunc(live, func(x, y Live) int { return a.shown[x.ID] - a.shown[y.ID] })
	return over, live, nil
}

package replay

import (
	"time"

	"github.com/ctxstore/ctxstore/context/cachewarm"
)

// Cache warming (docs/replay.md, "Cache warming"): between two calls the
// harness may send the earlier call's request again with a one-token
// output cap before its cache entry expires, so that the next call reads
// the cache instead of writing it again. Pi 0.87 does (its CacheWarmer:
// while the agent runs by default, idle too when the user asks), and
// ctxstore's Pi extension decides each warm by ski rental; ctxstore's
// Claude Code proxy warms by the same rule (package cachewarm). The replay
// applies one warming rule to every strategy but the recorded one (what
// the harness paid, which did not warm), the naive baseline included.

// The warming modes (cachewarm's).
const (
	// WarmOff sends no warm request (the replay's default: the recorded
	// harnesses did not warm).
	WarmOff = cachewarm.Off
	// WarmRunning warms while the agent runs: after a call whose response
	// asked for tools (Pi 0.87's default, "streaming").
	WarmRunning = cachewarm.Running
	// WarmIdle warms after every call, also while the harness waits for
	// the user (Pi's "idle").
	WarmIdle = cachewarm.Idle
)

// WarmModes are the names --warm accepts.
var WarmModes = cachewarm.Modes

// WarmOutputPrice is the price of a warm's one output token, in
// base-input tokens.
const WarmOutputPrice = cachewarm.OutputPrice

// checkWarm validates a warming mode ("" is WarmOff).
func checkWarm(mode string) (string, error) { return cachewarm.Check(mode) }

// missTokens is what a call after the cache expired would write again of
// a context of p tokens: less the stale tokens it would drop (Step.Stale,
// calibrated) and the tokens of a head that lives longer (read then).
func missTokens(p, stale, longHead int) int {
	return max(p-max(stale, 0)-longHead, 0)
}

// warmTimes returns when warm requests are sent after a call made at t
// while the agent runs (running: the call's response asked for tools and
// a call followed) or waits for the user, the next call being at next
// (zero: none follows; the harness does not know, so it warms as long as
// its rules allow for a harness that waits): every cachewarm.Delay while
// the entry lives, before the next call, within the mode's phases and the
// harness's limits (cachewarm.Limit), at most budget of them.
func warmTimes(mode string, ttl time.Duration, t, next time.Time, running bool, budget int) []time.Time {
	d := cachewarm.Delay(ttl)
	if d == 0 || mode == WarmOff || mode == WarmRunning && !running {
		return nil
	}
	limit := cachewarm.Limit(running)
	var out []time.Time
	for k := 1; k <= budget; k++ {
		at := t.Add(time.Duration(k) * d)
		if at.Sub(t) > limit || !next.IsZero() && !at.Before(next) {
			break
		}
		out = append(out, at)
	}
	return out
}

package replay

import (
	"fmt"
	"strings"
	"time"
)

// Cache warming (docs/replay.md, "Cache warming"): between two calls the
// harness may send the earlier call's request again with a one-token
// output cap before its cache entry expires, so that the next call reads
// the cache instead of writing it again. Pi 0.87 does (its CacheWarmer:
// while the agent runs by default, idle too when the user asks), and
// ctxstore's Pi extension decides each warm by ski rental. The replay
// applies one warming rule to every strategy but the recorded one (what
// the harness paid, which did not warm), the naive baseline included.

// The warming modes.
const (
	// WarmOff sends no warm request (the replay's default: the recorded
	// harnesses did not warm).
	WarmOff = "off"
	// WarmRunning warms while the agent runs: after a call whose response
	// asked for tools (Pi 0.87's default, "streaming").
	WarmRunning = "running"
	// WarmIdle warms after every call, also while the harness waits for
	// the user (Pi's "idle").
	WarmIdle = "idle"
)

// WarmModes are the names --warm accepts.
var WarmModes = []string{WarmOff, WarmRunning, WarmIdle}

// The harness's limits on warming (Pi 0.87's CacheWarmer): no warm later
// than an hour after the request it keeps warm while the agent runs, 30
// minutes while it is idle. And the price of a warm's one output token, in
// base-input tokens (Anthropic prices output at 5x input).
const (
	WarmRunningFor  = time.Hour
	WarmIdleFor     = 30 * time.Minute
	WarmOutputPrice = 5.0
)

// checkWarm validates a warming mode ("" is WarmOff).
func checkWarm(mode string) (string, error) {
	switch mode {
	case "":
		return WarmOff, nil
	case WarmOff, WarmRunning, WarmIdle:
		return mode, nil
	}
	return "", fmt.Errorf("unknown warming mode %q (known: %s)", mode, strings.Join(WarmModes, ", "))
}

// warmDelay is the interval between warm requests for a cache lifetime:
// 90% of it, keeping at least ten seconds of margin; 0 when the lifetime is
// too short to warm (Pi's getCacheWarmingDelayMs).
func warmDelay(ttl time.Duration) time.Duration {
	if ttl <= 10*time.Second {
		return 0
	}
	return max(time.Millisecond, min(ttl*9/10, ttl-10*time.Second))
}

// warmBudget is how many warm requests one pause may send for a prompt of
// p tokens: ski rental, the warms (a cache read of the prompt and one
// output token each) costing together no more than the rewrite they would
// save ((write - read) per token).
func warmBudget(p int, write, read float64) int {
	cost := read*float64(p) + WarmOutputPrice
	if cost <= 0 || write <= read {
		return 0
	}
	return int((write - read) * float64(p) / cost)
}

// warmTimes returns when warm requests are sent after a call made at t
// while the agent runs (running: the call's response asked for tools and
// a call followed) or waits for the user, the next call being at next
// (zero: none follows; the harness does not know, so it warms as long as
// its rules allow for a harness that waits): every warmDelay while the entry lives, before
// the next call, within the mode's phases and the harness's limits, at
// most budget of them.
func warmTimes(mode string, ttl time.Duration, t, next time.Time, running bool, budget int) []time.Time {
	d := warmDelay(ttl)
	if d == 0 || mode == WarmOff || mode == WarmRunning && !running {
		return nil
	}
	limit := WarmIdleFor
	if running {
		limit = WarmRunningFor
	}
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

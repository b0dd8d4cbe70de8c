// Package cachewarm holds the rule by which ctxstore keeps a prompt-cache
// entry alive between two model calls: when a harness sends the previous
// request again (a warm request, its output capped at one token) and how
// many times one pause may do so. The Pi extension applies it through Pi's
// cache warmer (docs/pi.md, "Cache warming"), the Claude Code proxy by
// itself (docs/claude-code.md, "The proxy"), and the replay prices it
// (docs/replay.md, "Cache warming").
//
// The rule is ski rental: warm while the warms sent in this pause cost no
// more than the rewrite a cold cache would cost. A pause's length is not
// known while it lasts; this choice never pays more than twice what the
// best choice made in hindsight pays.
package cachewarm

import (
	"fmt"
	"strings"
	"time"
)

// The warming modes.
const (
	// Off sends no warm request.
	Off = "off"
	// Running warms while the agent runs: after a response that asked for
	// tools, while they run (Pi 0.87's default, "streaming").
	Running = "running"
	// Idle warms after every response, also while the harness waits for
	// the person (Pi's "idle").
	Idle = "idle"
)

// Modes are the mode names, in order.
var Modes = []string{Off, Running, Idle}

// Check validates a mode; "" is Off.
func Check(mode string) (string, error) {
	switch mode {
	case "":
		return Off, nil
	case Off, Running, Idle:
		return mode, nil
	}
	return "", fmt.Errorf("unknown warming mode %q (known: %s)", mode, strings.Join(Modes, ", "))
}

// The limits on warming (Pi 0.87's cache warmer's, which the proxy keeps
// too): no warm later than an hour after the request it keeps warm while
// the agent runs, 30 minutes while it waits for the person. And the price
// of a warm's one output token, in base-input tokens (Anthropic prices
// output at 5x input).
const (
	RunningFor  = time.Hour
	IdleFor     = 30 * time.Minute
	OutputPrice = 5.0
)

// Limit is how long after a request warms may be sent: RunningFor while
// the agent runs, IdleFor while it waits.
func Limit(running bool) time.Duration {
	if running {
		return RunningFor
	}
	return IdleFor
}

// Delay is the interval between warm requests for a cache lifetime: 90% of
// it, keeping at least ten seconds of margin; 0 when the lifetime is too
// short to warm (as Pi's getCacheWarmingDelayMs).
func Delay(ttl time.Duration) time.Duration {
	if ttl <= 10*time.Second {
		return 0
	}
	return max(time.Millisecond, min(ttl*9/10, ttl-10*time.Second))
}

// Budget is how many warm requests one pause may send for a prompt of p
// tokens, of which a call after the entry expired would write miss again
// and still read kept from a longer-lived entry (a head cached for an
// hour); p itself and 0 for a harness that sends the same prompt again,
// less when the next call would drop stale content anyway. Ski rental: the
// warms (a cache read of the prompt and one output token each) cost
// together no more than what they save the next call, the cold call's
// price less the warm one's: write·miss + read·kept - read·p (with
// miss = p - kept, (write - read)·miss). Write and read are the prices per
// token of a cache write and a cache read, in base-input tokens
// (Anthropic: 1.25 and 0.1).
func Budget(p, miss, kept int, write, read float64) int {
	miss = max(min(miss, p), 0)
	kept = max(min(kept, p-miss), 0)
	cost := read*float64(p) + OutputPrice
	save := write*float64(miss) + read*float64(kept) - read*float64(p)
	if cost <= 0 || save <= 0 {
		return 0
	}
	return int(save / cost)
}

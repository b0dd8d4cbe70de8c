package ccproxy

import (
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ccmanaged"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/integrations/claudecode/hooks"
)

// Managed mode: the proxy sends the model a managed context for each
// conversation instead of the whole history Claude Code sends
// (docs/claude-code.md, "Managed mode"). What it sends is decided by
// package ccmanaged, which the replay runs too (one code path); the proxy
// keeps each conversation's state, records the calls, checks every
// managed request against the Messages API's rules and passes a request
// through unchanged whenever managed mode cannot manage it
// (managed_proxy.go).

// MinCollapseChars is the size from which an output the policy no longer
// keeps collapses (ccmanaged.MinCollapseChars).
const MinCollapseChars = ccmanaged.MinCollapseChars

// ManagedConfig configures managed mode (Config.Managed).
type ManagedConfig struct {
	// Spill is where outputs are whole: the hooks' spill directory, one
	// directory per session (hooks.Spill.File). Its Chars is the preview
	// size (0: hooks.DefaultPreviewChars).
	Spill hooks.Spill
	// Collapse is the auto-collapse window (zero: collapse.Default()).
	Collapse collapse.Config
	// Policy is the rebase cost model's (zero fields: its defaults; the
	// cache lifetime is the conversation's, breakpoints at the end).
	Policy assemble.Policy
	// MinChars is the smallest output that collapses (0:
	// MinCollapseChars).
	MinChars int
	// Store keeps each conversation's decisions and records each managed
	// call (nil: decisions are kept in memory only, calls not recorded).
	Store Store
}

// convState is what managed mode decided for one conversation, kept in
// the Store.
type convState = ccmanaged.State

// errUnknown marks a request managed mode does not understand: it passes
// through unchanged.
type errUnknown = ccmanaged.Unknown

// applied is what managed mode did to one request.
type applied = ccmanaged.Applied

// core returns the configuration of managed mode's core.
func (mc *ManagedConfig) core() *ccmanaged.Config {
	chars := mc.Spill.Chars
	if chars <= 0 {
		chars = hooks.DefaultPreviewChars
	}
	return &ccmanaged.Config{Spill: mc.Spill, PreviewChars: chars, Collapse: mc.Collapse, Policy: mc.Policy, MinChars: mc.MinChars}
}

// manage returns the managed body for a request of conversation st of
// session sid, sent at now with the cache lifetime ttl, and updates st. An
// errUnknown says the request was not understood.
func (mc *ManagedConfig) manage(sid string, st *convState, body []byte, now time.Time, ttl time.Duration) ([]byte, applied, error) {
	return mc.core().Apply(sid, st, body, now, ttl)
}

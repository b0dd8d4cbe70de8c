// Package ccmanaged is managed mode's core: it decides, for one
// conversation of a Claude Code session, what a Messages API request sends
// the model, and rewrites the request's body so (docs/claude-code.md,
// "Managed mode"). It is a function of the body, the conversation's State
// and the time, with the spill files reached through Spill: the Claude Code
// proxy (server/ccproxy) runs it on every request, and the replay
// (eval/replay, claude_code_managed) on every recorded call, so that both
// run one code path.
package ccmanaged

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/context/collapse"
)

// Managed mode: the proxy sends the model a managed context for each
// conversation instead of the whole history Claude Code sends:
//
//   - a tool output past the preview size enters as a preview
//     (assemble.PreviewText) naming the spill file that holds it whole,
//     unless ctxstore's hook already made it one;
//   - an output the auto-collapse policy (package collapse, its defaults:
//     the 5 most recent outputs of each of the last 3 turns, 16,000 tokens)
//     no longer keeps, and a whole read of a file a later whole read of the
//     same file superseded, becomes one line naming its spill file, which
//     the model reads back with Claude Code's own Read;
//   - what the model was shown of each output is sticky: an output shown
//     whole stays whole until a rebase collapses it, and the collapses
//     waiting are applied together only when assemble.Decide (the rebase
//     cost model Pi's bare head uses, priced with breakpoints at the end
//     of each request as Claude Code places them) says their saving pays
//     for the prefix they make the provider write again, or the cache is
//     cold anyway;
//   - the breakpoints of the messages are ctxstore's: one at the end of
//     the request, with the lifetime Claude Code asked for, and, when the
//     limit of four allows and no rebase happened, one where the previous
//     request ended (its cache entry is read whatever Claude Code appended
//     since); none when Claude Code placed none (its caching is off).
//
// Claude Code's system prompt, its tools, every parameter and every block
// other than a tool_result's content are sent as they came.

// MinCollapseChars is the size from which an output the policy no longer
// keeps collapses: a shorter one costs less than the collapsed line and
// the read it may call for.
const MinCollapseChars = 1000

// The forms an output is shown in.
const (
	formWhole     = "whole"
	formPreview   = "preview"
	formCollapsed = "collapsed"
	formStale     = "stale" // a file read superseded by a later read of the file
)

// DefaultPreviewChars is the preview size when Config.PreviewChars is 0:
// the size from which ctxstore's Claude Code hooks make an output a preview
// (hooks.DefaultPreviewChars, the same 4,000 tokens at four characters a
// token).
const DefaultPreviewChars = 16000

// Spill names and writes the spill files, where outputs are whole:
// hooks.Spill for the proxy (one directory per session, the hooks'), a
// stand-in that writes nothing for the replay.
type Spill interface {
	// File returns the spill file of tool call toolUseID's output in
	// session's spill directory; false when the ids cannot name one.
	File(session, toolUseID string) (string, bool)
	// Keep makes sure the output is whole in its spill file (File), and
	// returns the file.
	Keep(session, toolUseID, whole string) (string, error)
}

// Config configures managed mode.
type Config struct {
	// Spill is where outputs are whole.
	Spill Spill
	// PreviewChars is the preview size (0: DefaultPreviewChars).
	PreviewChars int
	// Collapse is the auto-collapse window (zero: collapse.Default()).
	Collapse collapse.Config
	// Policy is the rebase cost model's (zero fields: its defaults; the
	// cache lifetime is the conversation's, breakpoints at the end).
	Policy assemble.Policy
	// MinChars is the smallest output that collapses (0:
	// MinCollapseChars).
	MinChars int
}

// State is what managed mode decided for one conversation: the proxy keeps
// it in its store, so that a restarted proxy or a resumed session
// continues the same managed stream.
type State struct {
	// Shown is the form each tool call's output was sent in, by
	// tool_use id.
	Shown map[string]string `json:"shown"`
	// Len is how many messages the last managed request held.
	Len int `json:"len"`
	// Last is when it was sent; Calls how many managed requests so far.
	Last  time.Time `json:"last"`
	Calls int       `json:"calls"`
	// Shape is the conversation's rhythm, for the cost model's horizon.
	Shape assemble.Shape `json:"shape"`
	// Renewed is when a warm request last renewed the cache entry of the
	// last managed request (the caller sets it: the proxy when a warm is
	// answered, the replay from its warming). The cache is cold only past
	// the lifetime since the later of Last and Renewed: a pause the proxy
	// kept warm is no reason to rebase for free.
	Renewed time.Time `json:"renewed,omitzero"`
}

// touched is when the conversation's cache entry was last written or
// read: its last managed request, or a warm request after it.
func (st *State) touched() time.Time {
	if st.Renewed.After(st.Last) {
		return st.Renewed
	}
	return st.Last
}

// Unknown marks a request managed mode does not understand: it passes
// through unchanged. Why says what was not understood.
type Unknown struct{ Why string }

func (e Unknown) Error() string { return e.Why }

func unknown(format string, args ...any) error { return Unknown{fmt.Sprintf(format, args...)} }

// Applied is what managed mode did to one request, for the log and the
// record.
type Applied struct {
	Collapsed   int    `json:"collapsed"`             // outputs shown collapsed (or superseded)
	New         int    `json:"new,omitempty"`         // of them, collapsed by this request's rebase
	Previews    int    `json:"previews,omitempty"`    // outputs shown as the proxy's preview
	Rebase      string `json:"rebase,omitempty"`      // why this request rebased ("" none)
	Breakpoints int    `json:"breakpoints,omitempty"` // message breakpoints placed
	Pending     int    `json:"pending,omitempty"`     // tokens of collapses left waiting
}

// Apply returns the managed body for a request of conversation st of
// session sid, sent at now with the cache lifetime ttl, and updates st. An
// Unknown error says the request was not understood. The body is not
// checked against the Messages API's rules (Manage checks it).
func (mc *Config) Apply(sid string, st *State, body []byte, now time.Time, ttl time.Duration) ([]byte, Applied, error) {
	var ap Applied
	rq, err := mc.parse(sid, body)
	if err != nil {
		return nil, ap, err
	}
	if st.Shown == nil {
		st.Shown = map[string]string{}
	}
	if st.Len > len(rq.msgs) {
		// Fewer messages than last time: Claude Code rewound (an edited
		// prompt, a rewind). The outputs keep their forms; the stream's end
		// is where this request ends.
		st.Len = len(rq.msgs)
	}
	sh := mc.sticky(sid, st, rq)
	waiting := mc.collapse(sid, st, rq, sh, mc.wanted(rq))
	mc.rebase(st, rq, sh, waiting, len(body), now, ttl, &ap)
	rq.show(st, sh, &ap)
	rq.breakpoints(st, &ap)
	out, err := rq.encode()
	if err != nil {
		return nil, ap, err
	}
	st.advance(rq, now, ttl)
	return out, ap, nil
}

// Manage is managed mode as a function, for a caller that runs a
// session's requests through the code the proxy runs (the replay, and the
// proxy's own Manage): it returns the body sent for a request of
// conversation state (what the previous call returned; nil for a
// conversation's first request) of session sid, sent at now with cache
// lifetime ttl, and the state after it. An error says the request passes
// through unchanged: not understood (Unknown), or a managed body the
// Messages API's rules refuse where the request kept them (apicheck).
// Spill files are written through Spill; nothing is recorded.
func (mc *Config) Manage(sid string, state, body []byte, now time.Time, ttl time.Duration) ([]byte, []byte, error) {
	var st State
	if len(state) > 0 {
		if err := json.Unmarshal(state, &st); err != nil {
			return nil, nil, fmt.Errorf("ccmanaged: managed state: %w", err)
		}
	}
	out, _, err := mc.Apply(sid, &st, body, now, ttl)
	if err != nil {
		return nil, nil, err
	}
	if err := Checked(body, out); err != nil {
		return nil, nil, err
	}
	ns, err := json.Marshal(st)
	return out, ns, err
}

// Checked returns an error when managed body out breaks a Messages API
// rule that request body kept (apicheck.Check): such a request passes
// through unchanged.
func Checked(body, out []byte) error {
	if errs := apicheck.Check(out); len(errs) > 0 && len(apicheck.Check(body)) == 0 {
		return fmt.Errorf("a managed request broke a Messages API rule: %w", errs[0])
	}
	return nil
}

package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/store"
)

// Strategy decides what each model call of a replayed session sends. A
// Strategy value replays one session at a time: Begin, then Step for every
// call in order, then End.
type Strategy interface {
	// Name is the strategy's name in reports ("naive", "clear_tool_uses", ...).
	Name() string
	// Begin prepares a replay of the session.
	Begin(ctx context.Context, env *Env) error
	// Step returns the context of one call.
	Step(ctx context.Context, call *CallInput) (*Step, error)
	// End finishes the replay; notes are added to the strategy's result.
	End(ctx context.Context) (notes []string, err error)
}

// decliner is a Strategy that has nothing to report on some sessions:
// Declines says why, or "" to replay the session.
type decliner interface {
	Declines(cs []*CallInput) string
}

// harnessOnly is a Strategy of one harness's sessions: the others decline
// it (Report.Declined says it is not applicable).
type harnessOnly interface {
	Harness() transcript.Format
}

// Env is what a strategy may use while replaying one session.
type Env struct {
	// Session is the transcript replayed.
	Session *transcript.Session
	// Counter counts tokens (the same for every strategy).
	Counter *Counter
	// Calibration maps raw token counts onto the provider's (fitted on the
	// naive history before the other strategies run).
	Calibration Calibration
	// TTL is the prompt-cache lifetime; Window the model's context window
	// (in provider tokens).
	TTL    time.Duration
	Window int
	// HeadTTL is the run's head lifetime (Options.HeadTTL): what a
	// strategy that places its own breakpoints (ctxstore's, through its Pi
	// extension) asks for on the breakpoint at the end of the head once
	// the session has paused (Step.HeadTTL); no longer than TTL: never.
	HeadTTL time.Duration
	// Warm is the harness's cache warming (Options.Warm; runStrategy
	// applies it, the strategies do nothing for it).
	Warm string
	// Proxy tells that the session is replayed as sent through ctxstore's
	// Claude Code proxy (Options.ClaudeCodeProxy; runStrategy applies its
	// head lifetime rule).
	Proxy bool
	// Dir is a temporary directory for this strategy's files (stores,
	// mirrored files), removed after the replay.
	Dir string
	// Store, when not nil, is the store ctxstore strategies use; else
	// OpenStore opens one in Dir.
	Store     store.Store
	OpenStore func(ctx context.Context, dir string) (store.Store, error)
	// SessionID names the ctxstore session (unique per strategy and run).
	SessionID string
	// Cache is the provider cache model the calls are priced under
	// (CacheAnthropic, CacheOpenAI or CachePrefix; "" is CachePrefix);
	// Placement where the harness puts Anthropic's breakpoints; Model the
	// session's model (its minimum cacheable length).
	Cache     string
	Placement string
	Model     string

	// faults is the session's fault index (faults.go), set for the
	// strategies reported; nil: faults are not checked.
	faults *faultIndex
}

func (e *Env) cacheModel() string {
	if e.Cache == "" {
		return CachePrefix
	}
	return e.Cache
}

// request turns a measured context into a cache request in provider
// tokens: block ends calibrated as the call's context is, breakpoints as
// the strategy chose (byte offsets) or as the harness places them, the
// one at the end of the head (block 0) living headTTL when that is longer
// than the TTL.
func (e *Env) request(r raw, emptyHead int, at time.Time, offsets []int, headTTL time.Duration, sim cacheSim) *cacheRequest {
	cal := e.Calibration
	q := &cacheRequest{blocks: make([]cacheBlock, len(r.blocks)), at: at}
	for i, b := range r.blocks {
		q.blocks[i] = cacheBlock{end: cal.Overhead + cal.scale(max(b.end-emptyHead, 0)), hash: b.hash, user: b.user, msgStart: b.msgStart}
	}
	if offsets == nil {
		q.breakpoints = sim.place(q.blocks)
	} else {
		for _, off := range offsets {
			for i, b := range r.blocks {
				if b.byteEnd >= off {
					if n := len(q.breakpoints); n == 0 || q.breakpoints[n-1] < i {
						q.breakpoints = append(q.breakpoints, i)
					}
					break
				}
			}
		}
	}
	if headTTL > e.TTL && len(q.breakpoints) > 0 && q.breakpoints[0] == 0 {
		q.ttls = make([]time.Duration, len(q.breakpoints))
		q.ttls[0] = headTTL
	}
	return q
}

// CallInput is one model call to replay.
type CallInput struct {
	// N is the call number, from 1.
	N int
	// Index is the index of the call's assistant message in the session's
	// messages; Messages are every message before it (the call's context
	// in the harness's log).
	Index    int
	Messages []conversation.Message
	// Time is when the call was made: the time of the last message before
	// it (never earlier than the previous call's).
	Time time.Time
	// Usage is what the harness recorded for the call (nil if nothing).
	Usage *conversation.Usage
	// Renewed is when the harness last sent a warm request renewing the
	// previous call's cache entry (Options.Warm), zero when it sent none:
	// set per strategy, since the warms depend on its contexts' sizes.
	Renewed time.Time
}

// Naive sends the full history every call: every message, every tool
// output in full.
type Naive struct {
	r     *renderer
	env   *Env
	seen  int      // messages whose composition is in run
	run   [3]int64 // chat, outputs, inputs of messages[:seen]
	total [3]int64 // summed over calls
}

// Name returns "naive".
func (*Naive) Name() string { return "naive" }

// Begin starts a replay.
func (n *Naive) Begin(_ context.Context, env *Env) error {
	n.r, n.env, n.seen, n.run, n.total = newRenderer(), env, 0, [3]int64{}, [3]int64{}
	return nil
}

// Step renders the full history.
func (n *Naive) Step(_ context.Context, c *CallInput) (*Step, error) {
	for ; n.seen < len(c.Messages); n.seen++ {
		ch, out, in := messageComposition(n.env.Counter, c.Messages[n.seen])
		n.run[0], n.run[1], n.run[2] = n.run[0]+int64(ch), n.run[1]+int64(out), n.run[2]+int64(in)
	}
	for k := range n.total {
		n.total[k] += n.run[k]
	}
	return &Step{Bytes: n.r.render(c.Messages, nil), HeadLen: len(EmptyHead)}, nil
}

// End ends a replay.
func (n *Naive) End(context.Context) ([]string, error) {
	n.r = nil
	c := composition{catChat: n.total[0], catOutputs: n.total[1], catInputs: n.total[2]}
	if note := c.note(); note != "" {
		return []string{note}, nil
	}
	return nil, nil
}

// ClearToolUses is Anthropic's server-side context editing strategy
// clear_tool_uses_20250919, applied as its documentation describes it
// (docs/replay.md): the client sends the full history every call, and the
// API edits each request before the model sees it, independently of the
// previous requests:
//
//   - when the request's input tokens exceed Trigger, the tool uses are
//     cleared oldest first: every tool result except those of the Keep most
//     recent tool uses is replaced by a placeholder (and, with
//     ClearToolInputs, the call's arguments too); results of ExcludeTools
//     are never cleared;
//   - when ClearAtLeast is set and clearing would free fewer tokens than
//     that, nothing is cleared in this request.
//
// The prefix cache is then judged on the edited request, as the API does:
// an edit invalidates the cached prefix from the first cleared block on.
//
// Batched is another reading, for comparison: what was cleared stays
// cleared, and a new clearing happens only when the context as already
// edited exceeds Trigger again, clearing all but the Keep most recent tool
// uses if that frees at least ClearAtLeast (a client-side edit that
// remembers its edits behaves this way).
type ClearToolUses struct {
	// Trigger is in input tokens (default 100,000); Keep the tool uses kept
	// (default 3); ClearAtLeast the minimum tokens to free (0: none).
	Trigger, Keep, ClearAtLeast int
	// ClearToolInputs clears the arguments of cleared calls too.
	ClearToolInputs bool
	// ExcludeTools are tool names never cleared.
	ExcludeTools []string
	// Batched keeps what was cleared (see the type's comment).
	Batched bool
	// Label overrides the name.
	Label string

	env      *Env
	r        *renderer
	full     *renderer
	resultOf map[string]int // tool-call id -> index of its result message
	freed    map[int]int    // message index -> provider tokens clearing it frees
	cleared  map[string]bool
}

// Name returns the strategy's name.
func (c *ClearToolUses) Name() string {
	if c.Label != "" {
		return c.Label
	}
	n := "clear_tool_uses"
	if c.ClearAtLeast > 0 {
		n += fmt.Sprintf("_%dk", c.ClearAtLeast/1000)
	}
	if c.Batched {
		n += "_batched"
	}
	return n
}

// Begin starts a replay.
func (c *ClearToolUses) Begin(_ context.Context, env *Env) error {
	if c.Trigger <= 0 {
		c.Trigger = 100000
	}
	if c.Keep <= 0 {
		c.Keep = 3
	}
	c.env, c.r, c.full = env, newRenderer(), newRenderer()
	c.resultOf, c.freed, c.cleared = map[string]int{}, map[int]int{}, map[string]bool{}
	return nil
}

// toolUse is one tool call and where its result is.
type toolUse struct {
	id, name string
	call     int // assistant message index
	result   int // result message index, -1 if none yet
}

// freedBy returns the provider tokens clearing message i frees (its output,
// or its calls' arguments), memoized.
func (c *ClearToolUses) freedBy(msgs []conversation.Message, i int) int {
	if n, ok := c.freed[i]; ok {
		return n
	}
	tok := c.env.Counter.tok
	n := 0
	switch m := msgs[i]; m.Role {
	case conversation.RoleToolResult:
		n = tok.Count(m.Output) - tok.Count(Placeholder)
	case conversation.RoleAssistant:
		for _, tc := range m.ToolCalls {
			n += tok.Count(canonicalArgs(tc.Args)) - 1
		}
	}
	n = c.env.Calibration.scale(max(n, 0))
	c.freed[i] = n
	return n
}

// Step renders the history as the API would edit it for this request.
func (c *ClearToolUses) Step(_ context.Context, in *CallInput) (*Step, error) {
	msgs := in.Messages
	var uses []toolUse
	for i, m := range msgs {
		switch m.Role {
		case conversation.RoleAssistant:
			for _, tc := range m.ToolCalls {
				uses = append(uses, toolUse{id: tc.ID, name: tc.Name, call: i, result: -1})
			}
		case conversation.RoleToolResult:
			c.resultOf[m.ToolCallID] = i
		}
	}
	for k := range uses {
		if j, ok := c.resultOf[uses[k].id]; ok && j < len(msgs) {
			uses[k].result = j
		}
	}
	excluded := map[string]bool{}
	for _, t := range c.ExcludeTools {
		excluded[strings.ToLower(t)] = true
	}
	// The candidates: every tool use but the Keep last, not excluded, not
	// cleared already (Batched).
	var cands []toolUse
	if len(uses) > c.Keep {
		for _, u := range uses[:len(uses)-c.Keep] {
			if !excluded[strings.ToLower(u.name)] && !c.cleared[u.id] {
				cands = append(cands, u)
			}
		}
	}
	mark := func(set map[string]bool) func(i int) bool {
		res, calls := map[int]bool{}, map[int]bool{}
		for _, u := range uses {
			if !set[u.id] {
				continue
			}
			if u.result >= 0 {
				res[u.result] = true
			}
			if c.ClearToolInputs {
				calls[u.call] = true
			}
		}
		return func(i int) bool { return res[i] || calls[i] }
	}
	step := &Step{HeadLen: len(EmptyHead)}
	// The request as the API receives it: the full history (stateless), or
	// the history with the earlier clearings (Batched).
	var base []byte
	if c.Batched && len(c.cleared) > 0 {
		base = c.r.render(msgs, mark(c.cleared))
	} else {
		base = c.full.render(msgs, nil)
	}
	input := c.env.Calibration.tokens(c.env.Counter.Count(base[len(EmptyHead):]))
	clear := map[string]bool{}
	if c.Batched {
		for id := range c.cleared {
			clear[id] = true
		}
	}
	if input > c.Trigger && len(cands) > 0 {
		freed := 0
		for _, u := range cands {
			if u.result >= 0 {
				freed += c.freedBy(msgs, u.result)
			}
		}
		if c.ClearToolInputs {
			seen := map[int]bool{}
			for _, u := range cands {
				if !seen[u.call] {
					seen[u.call] = true
					freed += c.freedBy(msgs, u.call)
				}
			}
		}
		if freed < c.ClearAtLeast || freed == 0 {
			step.Reason = fmt.Sprintf("over the trigger (%d) but clearing would free %d < %d tokens: not applied", input, freed, max(c.ClearAtLeast, 1))
		} else {
			for _, u := range cands {
				clear[u.id] = true
			}
			step.Reason = fmt.Sprintf("over the trigger (%d): cleared %d tool uses (%d tokens)", input, len(cands), freed)
		}
	}
	if c.Batched {
		c.cleared = clear
	}
	switch {
	case len(clear) == 0:
		step.Bytes = c.full.render(msgs, nil)
	case c.Batched && len(c.cleared) > 0 && step.Reason == "":
		step.Bytes = base // nothing new cleared
	default:
		step.Bytes = c.r.render(msgs, mark(clear))
	}
	step.Hidden = func(id string) bool { return clear[id] }
	return step, nil
}

// End ends a replay.
func (c *ClearToolUses) End(context.Context) ([]string, error) {
	c.r, c.full, c.freed, c.cleared = nil, nil, nil, nil
	return nil, nil
}

// Recorded is what the harness really sent and paid, from the usage in the
// transcript: sent = input + cache read + cache write; cost = input·1 +
// cache write·1.25 + cache read·0.1 (Anthropic's prices relative to base
// input, with the 5-minute cache). Calls without recorded usage count zero.
type Recorded struct{}

// Name returns "recorded".
func (Recorded) Name() string { return "recorded" }

// Begin starts a replay.
func (Recorded) Begin(context.Context, *Env) error { return nil }

// Declines a session whose transcript records no usage (a SWE-agent
// trajectory): there is nothing the harness is known to have paid, and
// zeros would read as a free session.
func (Recorded) Declines(cs []*CallInput) string {
	for _, c := range cs {
		if c.Usage != nil {
			return ""
		}
	}
	return "the transcript records no usage"
}

// Step returns the recorded usage.
func (Recorded) Step(_ context.Context, c *CallInput) (*Step, error) {
	u := conversation.Usage{}
	if c.Usage != nil {
		u = *c.Usage
	}
	return &Step{Recorded: &u}, nil
}

// End ends a replay.
func (Recorded) End(context.Context) ([]string, error) { return nil, nil }

// NaiveCapped is the naive history as a harness could really send it: the
// full history while it fits the window, then without its oldest turns: at
// each call, the messages before the first user prompt (not a tool result)
// from which the rest fits the window (in calibrated tokens, the head
// included) are left out. What was left out stays out; each cut moves the
// start of the history, so the cache misses from there.
type NaiveCapped struct {
	env   *Env
	r     *renderer
	start int
	cuts  int
}

// Name returns "naive_capped".
func (*NaiveCapped) Name() string { return "naive_capped" }

// Begin starts a replay.
func (n *NaiveCapped) Begin(_ context.Context, env *Env) error {
	n.env, n.r, n.start, n.cuts = env, newRenderer(), 0, 0
	return nil
}

// Step renders the history from the current start, cutting when over the
// window.
func (n *NaiveCapped) Step(_ context.Context, c *CallInput) (*Step, error) {
	msgs := c.Messages
	cal := n.env.Calibration
	fits := func(b []byte) bool {
		return cal.tokens(n.env.Counter.Count(b[len(EmptyHead):])) <= n.env.Window
	}
	b := n.r.render(msgs[n.start:], nil)
	reason := ""
	for !fits(b) {
		next := -1
		for i := n.start + 1; i < len(msgs); i++ {
			if msgs[i].Role == conversation.RoleUser {
				next = i
				break
			}
		}
		if next < 0 {
			break // one turn larger than the window: sent as it is
		}
		n.start, n.r = next, newRenderer()
		b = n.r.render(msgs[n.start:], nil)
		reason = fmt.Sprintf("over the window: history from message %d", n.start)
	}
	if reason != "" {
		n.cuts++
	}
	start := n.start
	return &Step{Bytes: b, HeadLen: len(EmptyHead), Reason: reason,
		Hidden: func(id string) bool { return start > 0 && hiddenBefore(msgs[:start], id) }}, nil
}

func hiddenBefore(msgs []conversation.Message, id string) bool {
	for _, m := range msgs {
		if m.Role == conversation.RoleToolResult && m.ToolCallID == id {
			return true
		}
	}
	return false
}

// End ends a replay.
func (n *NaiveCapped) End(context.Context) ([]string, error) {
	n.r = nil
	if n.cuts > 0 {
		return []string{fmt.Sprintf("the history was cut %d times to fit the window", n.cuts)}, nil
	}
	return nil, nil
}

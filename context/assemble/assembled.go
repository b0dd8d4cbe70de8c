package assemble

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// Assembled is one call's context.
type Assembled struct {
	// N is the call number, from 1.
	N int
	// CommitID is the context commit recording the call ("ctx-{session}-{N}").
	CommitID string
	// Layout is the layout used.
	Layout Layout
	// Bytes is the deterministic text rendering of the whole context
	// (system prompt, tools, messages): what prefix caching is judged on.
	// It must not be modified. With Options.Release it holds the
	// rendering from byte BytesFrom on (the frozen prefix's bytes were
	// released; Len is the whole length, Whole rebuilds them).
	Bytes     []byte
	BytesFrom int
	// Tokens is the Tokenizer's count of Bytes; StaleTokens the part that is
	// collapsed content still rendered.
	Tokens, StaleTokens int
	// PoolTokens is the size of the metadata pool as rendered (metadata
	// lines, tool-result lines and collapsed references); ActiveTokens the
	// size of the active set's live content blocks.
	PoolTokens, ActiveTokens int
	// Rebased tells whether this call rebased, why (Reason) and from which
	// byte on the context differs from the previous call (RebaseOffset, -1
	// without a rebase).
	Rebased      bool
	Reason       string
	RebaseOffset int
	// PrefixBytes and PrefixTokens measure the part of the context shared,
	// byte for byte, with the previous call's (0 for the first call): what
	// a prompt cache can serve. PrefixTokens is exact in LayoutStream (the
	// tokens of the items before the first changed one) and estimated in
	// proportion to bytes in LayoutLiteral. -1 when unknown (a literal
	// layout's first call after Resume).
	PrefixBytes, PrefixTokens int
	// Idle is the time since the previous call (0 for the first), or since
	// the harness last renewed the cache after it (Renewed; then Renewed
	// is when, and the commit records it as "cache_renewed"); a cache that
	// lives shorter than that served nothing of the prefix.
	Idle    time.Duration
	Renewed time.Time
	// SessionTx is the session version the context reflects.
	SessionTx int64
	// Stable is the number of leading messages (of Messages) that no later
	// call of the session changes: they precede every item a rebase could
	// rewrite (a content block, live or stale, and an assistant message
	// whose tool input can collapse). A prompt-cache breakpoint at the end
	// of them stays valid whatever the cost model decides later. It is 0 in
	// LayoutLiteral (which re-renders its blocks every call) and for a
	// rebuilt context.
	Stable int

	// HeadChanged tells that this call's head (system prompt and tools)
	// differs from the previous call's: a lean head became the managed
	// one (LeanHead), so nothing of the previous context is a prefix.
	HeadChanged bool

	// HeadTokens is the Tokenizer's count of the head (system prompt and
	// tools) as rendered: what a head cached for longer (HeadTTL) holds;
	// 0 for a rebuilt context (Rebuild).
	HeadTokens int

	// HeadTTL is how long the harness should ask the provider to keep
	// this call's head cached (Policy.HeadTTL): set once the session has
	// begun a turn with the cache cold, 0 (the harness's default) before.
	HeadTTL time.Duration

	// Spill are, under a bare head (LeanHead.Bare), the outputs whose
	// spill file this call's context names for the first time (a preview,
	// a line an output collapsed to) or, on the first call after Resume,
	// names at all: the harness integration writes each before the model
	// reads the context (the service: docs/service.md, "Bare head").
	Spill []SpillFile

	system   string
	tools    []ToolSpec
	withheld []string
	items    []*item // LayoutStream: the stream, shared with the Assembler (append-only view)
	frags    []*frag // LayoutLiteral, and rebuilt contexts
	spans    []Span  // rebuilt contexts (LayoutLiteral; LayoutStream: from spanEnds, at the first Spans)
	spanEnds []int   // a rebuilt stream's: where each item's bytes end

	// frozen and frozenMsgs: items[:frozen] are the first frozenMsgs
	// messages, whole; items[:gone], the first goneMsgs, were dropped
	// from memory (Options.Release), and st and session are where Whole
	// finds them.
	frozen, frozenMsgs int
	gone, goneMsgs     int
	st                 store.Store
	session            string
}

// System returns the system prompt text.
func (c *Assembled) System() string { return c.system }

// Tools returns the tool list offered at this call.
func (c *Assembled) Tools() []ToolSpec { return c.tools }

// Withheld returns the names of the session's tools not offered at this
// call (a lean head, LeanHead): the harness leaves them out of the request.
func (c *Assembled) Withheld() []string { return c.withheld }

// Messages returns the context's messages, in order; building them takes
// time proportional to the context. It panics when messages were released
// (Released > 0): Whole rebuilds them.
func (c *Assembled) Messages() []Message {
	ms, _ := c.MessagesFrom(0)
	return ms
}

// Len is the length of the whole rendering.
func (c *Assembled) Len() int { return c.BytesFrom + len(c.Bytes) }

// Released is how many leading messages of the context the Assembler
// dropped from memory (Options.Release): MessagesFrom(k) needs k at least
// Released, and Whole rebuilds the rest from the context commits.
func (c *Assembled) Released() int { return c.goneMsgs }

// Whole returns c itself when it holds every message, and otherwise the
// same context rebuilt from the store (Rebuild: reads proportional to the
// session, checked against the commit's SHA-256).
func (c *Assembled) Whole(ctx context.Context) (*Assembled, error) {
	if c.gone == 0 && c.BytesFrom == 0 {
		return c, nil
	}
	return Rebuild(ctx, c.st, c.session, c.N)
}

// MessagesFrom returns the context's messages from message k on, and how
// many messages it has in all: building them takes time proportional to
// what it returns past the frozen prefix, and counting them no memory (a
// caller that re-encodes only the end of a context it answered before,
// so its cost follows the new messages, not the session). k must be at
// least Released.
func (c *Assembled) MessagesFrom(k int) ([]Message, int) {
	var out []Message
	n := 0
	var prev *frag
	add := func(f *frag) {
		out, n = appendMessage(out, n, k, prev, f)
		prev = f
	}
	if c.frags == nil && c.items != nil {
		// The frozen prefix is whole messages: start after it, or after
		// what was released.
		items := c.items
		switch {
		case k >= c.frozenMsgs:
			items, n = c.items[c.frozen:], c.frozenMsgs
		case k < c.goneMsgs:
			panic(fmt.Sprintf("assemble: messages from %d of call %d asked for, the first %d were released: use Whole", k, c.N, c.goneMsgs))
		case c.gone > 0:
			items, n = c.items[c.gone:], c.goneMsgs
		}
		for _, it := range items {
			if it == nil {
				panic(fmt.Sprintf("assemble: call %d read after a later call released its items", c.N))
			}
			add(it.f)
		}
	} else {
		for _, f := range c.frags {
			add(f)
		}
	}
	return out, n
}

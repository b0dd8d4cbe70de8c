package assemble

import (
	"context"
	"fmt"
	"time"
)

// rhythm is the session's calls so far: how many, when the last was and
// whether its cache entry was renewed since, the previous call's size,
// and the shape the cost model's horizon reads.
type rhythm struct {
	calls         int       // calls assembled
	lastCall      time.Time // time of the previous call
	renewed       time.Time // the last renewal of the cache entry after it (Renewed), or zero
	shape         Shape     // the session's rhythm so far, for the cost model's horizon
	newTurn       bool      // a user message came since the last call
	prevLen       int       // bytes of the previous call's context
	prevTok       int       // its tokens
	prevBytes     []byte    // its bytes (LayoutLiteral; nil after Resume)
	prevStableTok int       // tokens before its stable boundary (Policy.Breakpoints stable)
}

// Call assembles the context of the next model call and records it as a
// context commit. In LayoutStream it first brings the stream up to date
// (new pool entries, activations, deactivations, new versions of active
// objects), then asks the cost model (Decide) whether to rebase, and rebases
// from the first stale item if so.
func (a *Assembler) Call(ctx context.Context) (*Assembled, error) {
	return a.CallWith(ctx, nil)
}

// CallWith is Call, and records meta in the context commit under
// "harness", in the same transaction: the harness's own position (an
// ingestion cursor) then moves atomically with the context it produced.
// Commit.Harness gives it back, and LastCommit after Resume. meta must be
// plain JSON values.
func (a *Assembler) CallWith(ctx context.Context, meta map[string]any) (*Assembled, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deferred = nil // results the harness did not report again are listed now
	a.advanceFrozen()
	if err := a.sync(ctx, true); err != nil {
		return nil, err
	}
	now := a.o.Now()
	c := &Assembled{N: a.calls + 1, Layout: a.o.Layout, RebaseOffset: -1, SessionTx: a.s.Tx()}
	c.CommitID = CommitID(a.s.ID(), c.N)
	since := a.rhythm.startCall(c, now, a.pol.CacheTTL)
	var pool, active []*item
	if a.shape.ColdStarts > 0 && a.pol.HeadTTL > a.pol.CacheTTL {
		c.HeadTTL = a.pol.HeadTTL
	}
	switch a.o.Layout {
	case LayoutStream:
		in := Inputs{StaleTokens: a.stale, ContextTokens: a.tokens, Idle: now.Sub(since), HasPrevious: a.calls > 0, Calls: a.calls, Shape: a.shape}
		var at []int
		if a.stale > 0 {
			in.Candidates, at = a.candidates()
			// What the cache cannot serve after a rebase, by where the
			// harness places its breakpoints.
			floor := -1
			switch {
			case a.switches():
				floor = 0 // the rebase switches the head: all of it is written
			case a.pol.Breakpoints == BreakpointsEnd:
				floor = a.tok.Count(string(a.head))
			case a.pol.Breakpoints == BreakpointsStable:
				floor = a.prevStableTok
			}
			for i := range in.Candidates {
				if floor >= 0 {
					in.Candidates[i].Rewrite = a.tokens - min(floor, a.tokens-in.Candidates[i].Tail)
				}
				if a.switches() {
					in.Candidates[i].Rewrite += a.pol.HeadOverhead
				}
			}
		}
		d := Decide(in, a.pol)
		if p, ok := a.editRebase(); ok {
			d, at = Decision{Rebase: true, Reason: ReasonContextEdit}, []int{p}
		}
		c.PrefixBytes, c.PrefixTokens = a.prevLen, a.prevTok
		if d.Rebase && d.From < len(at) {
			c.Rebased, c.Reason = true, d.Reason
			c.RebaseOffset, c.PrefixTokens = a.rebase(at[d.From])
			a.shape.Rebases++
			c.PrefixBytes = c.RebaseOffset
			a.needsHead() // it collapses what the model saw
		}
		if a.needHead {
			was := len(a.head)
			if err := a.manage(); err != nil {
				return nil, fmt.Errorf("assemble: head: %w", err)
			}
			c.HeadChanged = true
			c.PrefixBytes, c.PrefixTokens = 0, 0
			if c.Rebased {
				c.RebaseOffset += len(a.head) - was
			}
		}
		if a.calls == 0 {
			c.PrefixBytes, c.PrefixTokens = 0, 0
		}
		c.Bytes, c.BytesFrom = a.buf[:len(a.buf):len(a.buf)], a.bufBase
		c.Tokens, c.StaleTokens, c.PoolTokens = a.tokens, a.stale, a.metaTok
		c.HeadTokens = a.headTok
		for id, i := range a.shown {
			c.ActiveTokens += a.items[i].liveTokens()
			for _, p := range a.patches[id] {
				c.ActiveTokens += a.items[p].tokens
			}
		}
		c.items = a.items[:len(a.items):len(a.items)]
		c.frozen, c.frozenMsgs, c.gone, c.goneMsgs = a.frozen, a.frozenMsgs, a.gone, a.goneMsgs
		c.st, c.session = a.st, a.s.ID()
		c.Stable = a.frozenPrefix.stableMessages(&a.stream, a.rewritable)
		a.prevStableTok = a.frozenPrefix.stableTokens(&a.stream, a.rewritable)
	case LayoutLiteral:
		var err error
		if pool, active, err = a.literalBlocks(ctx); err != nil {
			return nil, err
		}
		c.frags = literalFrags(a.items, pool, active)
		c.Bytes = renderFrags(a.head, c.frags)
		c.HeadTokens = a.headTok
		c.Tokens = a.tok.Count(string(c.Bytes))
		for _, it := range pool {
			c.PoolTokens += a.tok.Count(it.f.blocks[0].Text)
		}
		for _, it := range active {
			c.ActiveTokens += a.tok.Count(it.f.blocks[0].Text)
		}
		c.PrefixBytes, c.PrefixTokens = -1, -1
		switch {
		case a.calls == 0:
			c.PrefixBytes, c.PrefixTokens = 0, 0
		case a.prevBytes != nil:
			c.PrefixBytes = commonPrefix(a.prevBytes, c.Bytes)
			c.PrefixTokens = c.Tokens * c.PrefixBytes / max(len(c.Bytes), 1)
		}
		a.prevBytes = c.Bytes
	}
	c.system, c.tools = a.headText()
	c.withheld = withheld(a.o.Tools, a.lean, a.isLean())
	c.Spill = a.toSpill
	a.shape.Current++
	if err := a.commit(ctx, c, pool, active, meta); err != nil {
		return nil, err
	}
	a.toSpill = nil
	a.rhythm.endCall(c, now)
	// The harness sends its own messages after this context (rendering 6).
	a.closed = a.o.Layout == LayoutStream && a.style.rules.userFirst()
	a.overflow = nil
	if a.o.Layout == LayoutStream {
		a.nextFrozen = a.frozenPrefix.boundary(&a.stream, func(it *item) bool { return a.rewritable(it) || a.unanswered(it) })
	}
	return c, nil
}

// startCall starts call c at now: its idle time since the previous call or a
// renewal after it (since, which it returns) and, when a turn began since
// the previous call, whether the turn started with the cache warm (idle
// under ttl) or cold.
func (r *rhythm) startCall(c *Assembled, now time.Time, ttl time.Duration) time.Time {
	since := r.since(now)
	if r.calls > 0 {
		c.Idle = now.Sub(since)
		if since != r.lastCall {
			c.Renewed = since
		}
	}
	if r.newTurn && r.calls > 0 {
		if now.Sub(since) >= ttl {
			r.shape.ColdStarts++
		} else {
			r.shape.WarmStarts++
		}
	}
	r.newTurn = false
	return since
}

// endCall counts call c, made at now and committed.
func (r *rhythm) endCall(c *Assembled, now time.Time) {
	r.calls++
	r.lastCall, r.renewed = now, time.Time{}
	r.prevLen, r.prevTok = c.Len(), c.Tokens
}

// sysContent is the text of the session's system prompt object (the head
// adds the guide of a LeanHead once managed: headText).
func (h *headState) sysContent() string {
	if h.sys.Content == nil {
		return ""
	}
	return *h.sys.Content
}

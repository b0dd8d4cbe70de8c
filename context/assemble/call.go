package assemble

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects"
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
	// size of the active set's live content blocks (issue 5 item 9).
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
	spans    []Span  // rebuilt contexts

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
// issue 18). k must be at least Released.
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
	since := a.since(now)
	if a.calls > 0 {
		c.Idle = now.Sub(since)
		if since != a.lastCall {
			c.Renewed = since
		}
	}
	var pool, active []*item
	if a.newTurn && a.calls > 0 {
		if now.Sub(since) >= a.pol.CacheTTL {
			a.shape.ColdStarts++
		} else {
			a.shape.WarmStarts++
		}
	}
	a.newTurn = false
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
		c.Stable = a.stableMessages()
		a.prevStableTok = a.stableTokens()
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
	a.calls++
	a.lastCall, a.renewed = now, time.Time{}
	a.overflow = nil
	if a.o.Layout == LayoutStream {
		a.nextFrozen = a.frozenBoundary()
	}
	a.prevLen, a.prevTok = c.Len(), c.Tokens
	return c, nil
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && string(a[i:i+8]) == string(b[i:i+8]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// sysContent is the text of the session's system prompt object (the head
// adds the guide of a LeanHead once managed: headText).
func (a *Assembler) sysContent() string {
	if a.sys.Content == nil {
		return ""
	}
	return *a.sys.Content
}

// stableMessages counts the messages before the first item a rebase could
// rewrite (see Assembled.Stable); a message that item continues is not
// counted.
func (a *Assembler) stableMessages() int {
	n := a.frozenMsgs
	prev := a.frozenLast
	for _, it := range a.items[a.frozen:] {
		if a.rewritable(it) {
			if it.f.joins(prev) {
				n--
			}
			return n
		}
		if !it.f.joins(prev) {
			n++
		}
		prev = it.f
	}
	return n
}

// stableTokens is the tokens before the first item a rebase could
// rewrite: where a breakpoint at the end of the stable messages caches up
// to (approximately: a message that item continues is counted whole).
func (a *Assembler) stableTokens() int {
	n := a.frozenTok
	for _, it := range a.items[a.frozen:] {
		if a.rewritable(it) {
			return n
		}
		n += it.tokens
	}
	return a.tokens
}

// frozenBoundary returns where the frozen prefix can end after this call:
// the start of the message holding the last item before the first one a
// rebase could rewrite or an assistant message with a tool call not
// listed yet (its result may make its input collapsible). Items before it
// never change, and neither does where their messages end: an item a
// rebase writes at the first rewritable item's place may join the message
// before it, which is not frozen.
func (a *Assembler) frozenBoundary() int {
	r := len(a.items)
	for i := a.frozen; i < len(a.items); i++ {
		if it := a.items[i]; a.rewritable(it) || a.unanswered(it) {
			r = i
			break
		}
	}
	g := r - 1
	for g > a.frozen && a.items[g].f.joins(a.items[g-1].f) {
		g--
	}
	return max(g, a.frozen)
}

// unanswered reports whether it is an assistant message with a tool call
// whose result the stream has not listed.
func (a *Assembler) unanswered(it *item) bool {
	if it.kind != kAssistant {
		return false
	}
	for _, c := range it.calls {
		if !a.listed[c.ID] {
			return true
		}
	}
	return false
}

// advanceFrozen moves the frozen prefix to nextFrozen: it counts the
// messages and tokens it adds, hashes their bytes and, with
// Options.Release, drops the items (and the tool-call positions of the
// assistant messages among them, which nothing reads again).
func (a *Assembler) advanceFrozen() {
	g := min(a.nextFrozen, len(a.items))
	if a.o.Layout != LayoutStream || g <= a.frozen || a.switches() {
		return // a lean head changes once more: its bytes are not final
	}
	for i := a.frozen; i < g; i++ {
		it := a.items[i]
		if !it.f.joins(a.frozenLast) {
			a.frozenMsgs++
		}
		a.frozenTok += it.tokens
		a.frozenLast = it.f
		if a.o.Release {
			for _, c := range it.calls {
				if a.callAt[c.ID] == i {
					delete(a.callAt, c.ID)
				}
			}
			a.items[i] = nil
		}
	}
	a.frozen = g
	if a.o.Release {
		a.gone, a.goneMsgs = a.frozen, a.frozenMsgs
	}
	end := a.bufBase + len(a.buf)
	if g < len(a.offs) {
		end = a.offs[g]
	}
	a.hashed.Write(a.buf[a.hashedOff-a.bufBase : end-a.bufBase])
	a.hashedOff = end
	// The released bytes leave memory once they are half the buffer (a
	// copy of what follows them; the rendering's offsets stay absolute).
	if drop := end - a.bufBase; a.o.Release && drop > 0 && drop >= cap(a.buf)/2 {
		a.buf = append(make([]byte, 0, len(a.buf)-drop+4096), a.buf[drop:]...)
		a.bufBase = end
	}
}

// bytesDigest returns the SHA-256, in hex, of c's bytes: in
// LayoutStream, where they are the stream's, the frozen prefix's bytes
// were hashed once (advanceFrozen), and only the rest is hashed here.
func (a *Assembler) bytesDigest(c *Assembled) string {
	if c.Layout != LayoutStream {
		return digest(c.Bytes)
	}
	h, err := a.hashed.(hash.Cloner).Clone()
	if err != nil {
		return digest(c.Bytes)
	}
	h.Write(a.buf[a.hashedOff-a.bufBase:])
	return hex.EncodeToString(h.Sum(nil))
}

// rewritable reports whether a rebase could change it: a content block
// (live content may go stale), or an assistant message with a call whose
// input can collapse.
func (a *Assembler) rewritable(it *item) bool {
	switch it.kind {
	case kContent, kPatch:
		return true
	case kToolRef:
		return it.out
	case kAssistant:
		if it.staleInput {
			return true
		}
		for _, c := range it.calls {
			if _, ok := a.inputs[c.ID]; ok {
				return true
			}
		}
	}
	return false
}

// candidates returns a rebase candidate for every stale item, first to
// last, and the item index of each.
func (a *Assembler) candidates() ([]Candidate, []int) {
	var cands []Candidate
	var at []int
	tail, stale := 0, 0
	for i := len(a.items) - 1; i >= a.frozen; i-- { // nothing frozen is stale
		it := a.items[i]
		tail += it.tokens
		s := a.staleTokens(it)
		if s == 0 {
			continue
		}
		stale += s
		cands = append(cands, Candidate{Tail: tail, Stale: stale})
		at = append(at, i)
	}
	slices.Reverse(cands)
	slices.Reverse(at)
	return cands, at
}

// staleTokens returns the stale tokens an item holds: a stale content
// block's, or the collapsible inputs of an assistant message.
func (a *Assembler) staleTokens(it *item) int {
	n := 0
	if it.stale {
		n += it.liveTokens()
	}
	if it.staleInput {
		for _, c := range it.calls {
			if in, ok := a.inputs[c.ID]; ok && in.stale {
				n += in.saved
			}
		}
	}
	return n
}

// rebase rewrites the stream from item p (a stale one): stale content
// blocks from there on become "collapsed:" references, stale inputs are
// collapsed, everything else is kept; stale items before p stay. It returns
// the byte offset from which the rendering changed and the tokens before
// it. The previous buffers are left untouched, so earlier Assembled values
// stay valid.
func (a *Assembler) rebase(p int) (int, int) {
	off := a.offs[p]
	tail := a.items[p:]
	a.items = append(make([]*item, 0, len(a.items)+16), a.items[:p]...)
	a.offs = append(make([]int, 0, cap(a.items)), a.offs[:p]...)
	a.buf = append(make([]byte, 0, len(a.buf)+4096), a.buf[:off-a.bufBase]...)
	for _, it := range tail {
		a.tokens -= it.tokens
		a.stale -= a.staleTokens(it)
		if it.kind.isMeta() {
			a.metaTok -= it.tokens
		}
	}
	prefixTok := a.tokens
	// A live block rewritten here is replaced, with its live patches, by
	// one block of the version the model holds.
	merged := map[string]bool{}
	for id, i := range a.shown {
		if i >= p && len(a.patches[id]) > 0 {
			merged[id] = true
		}
	}
	staleBefore := a.staleShownBefore(p)
	for _, it := range tail {
		switch {
		case a.rv >= 4 && a.dropsAtRebase(it, staleBefore):
			if it.kind != kNote {
				a.dropped = append(a.dropped, it.ref.String())
			}
			continue
		case it.stale && it.kind == kContent:
			it = &item{kind: kStub, ref: it.ref, obj: it.obj}
		case it.stale && it.kind == kToolRef:
			if !it.collapsed && !it.preview {
				a.spillOut(it) // a preview's file is listed already
			}
			it = &item{kind: kToolRef, ref: it.ref, obj: it.obj, input: it.input, collapsed: true}
		case it.stale && it.kind == kPatch:
			continue // the change of a block that collapses: nothing to show
		case it.kind == kPatch && merged[it.ref.ID]:
			continue
		case it.kind == kContent && merged[it.ref.ID]:
			h := a.held[it.ref.ID]
			it = &item{kind: kContent, ref: h.ref, obj: h.obj}
		case it.staleInput:
			it = a.rewriteInputs(it)
		}
		a.push(it)
	}
	a.rescanLive(p)
	if a.rebaseAt < 0 || p < a.rebaseAt {
		a.rebaseAt = p
	}
	return off, prefixTok
}

// dropsAtRebase reports whether a rebase (rendering version 4) leaves it
// out of the rewritten tail instead of rewriting it: a stale content block
// of a file or note whose id the stream already names (its metadata line,
// or the write or edit call that pooled it), which a "collapsed:"
// reference would only repeat, and a note that an object went inactive or
// changed when none of the objects it names still shows stale content
// before the rebase's start (the tail keeps no stale content: the note's
// "ignore the content above" or "new version below" points at nothing any
// more). A "collapsed:" stub a rendering-4 rebase wrote is one it chose to
// keep, and is kept (it no longer holds its object: push).
func (a *Assembler) dropsAtRebase(it *item, staleBefore map[string]bool) bool {
	switch {
	case it.kind == kContent && it.stale:
		k := it.obj.Kind()
		return (k == objects.KindFile || k == objects.KindNote) && a.listed[it.ref.ID]
	case it.kind == kNote:
		ids, ok := stateNoteIDs(it.text)
		if !ok {
			return false
		}
		for _, id := range ids {
			if staleBefore[id] {
				return false
			}
		}
		return true
	}
	return false
}

// staleShownBefore returns the display ids of the stale content blocks
// (deactivated or superseded, still rendered) before item p.
func (a *Assembler) staleShownBefore(p int) map[string]bool {
	out := map[string]bool{}
	for _, it := range a.items[a.frozen:p] { // nothing frozen is stale
		if it.stale && it.kind == kContent {
			out[objects.DisplayID(it.ref.ID)] = true
		}
	}
	return out
}

// stateNoteIDs returns the ids an "inactive now" or "changed, new version
// below" note (rendering version 3 and later) names, and whether text is
// such a note.
func stateNoteIDs(text string) ([]string, bool) {
	for _, prefix := range []string{ctxPrefix + "inactive now: ", ctxPrefix + "changed, new version below: "} {
		if rest, ok := strings.CutPrefix(text, prefix); ok {
			return strings.Split(rest, ", "), true
		}
	}
	return nil, false
}

// rescanLive re-derives, after a rebase from item p, where the live
// content blocks and patches of the rewritten tail are: a content block
// or patch is live unless stale.
func (a *Assembler) rescanLive(p int) {
	for id, i := range a.shown {
		if i >= p {
			delete(a.shown, id)
		}
	}
	for id, ps := range a.patches {
		keep := ps[:0]
		for _, i := range ps {
			if i < p {
				keep = append(keep, i)
			}
		}
		a.patches[id] = keep
	}
	for i := p; i < len(a.items); i++ {
		it := a.items[i]
		for _, c := range it.calls {
			if it.kind == kAssistant {
				a.callAt[c.ID] = i // the rebase moved it (an earlier version left this index stale)
			}
		}
		switch {
		case it.stale:
		case it.kind == kContent || (it.kind == kToolRef && it.out):
			a.shown[it.ref.ID] = i
		case it.kind == kPatch:
			a.patches[it.ref.ID] = append(a.patches[it.ref.ID], i)
		}
	}
}

// literalBlocks returns the pool and active items of the literal layout,
// at the latest versions in the store (the literal layout re-renders its
// blocks every call, so an inactive object that changed shows its new
// metadata).
func (a *Assembler) literalBlocks(ctx context.Context) (pool, active []*item, err error) {
	st := a.s.State()
	clear(a.latest)
	for _, id := range st.Pool {
		if !rendered(id) {
			continue
		}
		v, err := a.resolve(ctx, id)
		if err != nil {
			return nil, nil, fmt.Errorf("assemble: pool entry: %w", err)
		}
		pool = append(pool, &item{kind: kMeta, ref: v.ref, obj: v.obj})
	}
	for _, id := range st.Active {
		if !rendered(id) {
			continue
		}
		v, err := a.resolve(ctx, id)
		if err != nil {
			return nil, nil, fmt.Errorf("assemble: active object: %w", err)
		}
		active = append(active, &item{kind: kContent, ref: v.ref, obj: v.obj})
	}
	for _, it := range append(pool[:len(pool):len(pool)], active...) {
		it.rv, it.mv, it.paths, it.spill = a.rv, a.mv, a.paths, a.spill
		it.render()
	}
	return pool, active, nil
}

// literalFrags orders the literal layout: pool block, chat, active block.
// The pool and active blocks are user messages of their own.
func literalFrags(items, pool, active []*item) []*frag {
	var out []*frag
	if len(pool) > 0 {
		f := &frag{role: RoleUser}
		for _, it := range pool {
			f.blocks = append(f.blocks, it.f.blocks...)
		}
		out = append(out, f)
	}
	for _, it := range items {
		if it.kind.chatItem() {
			out = append(out, it.f)
		}
	}
	if len(active) > 0 {
		f := &frag{role: RoleUser}
		for _, it := range active {
			f.blocks = append(f.blocks, it.f.blocks...)
		}
		out = append(out, f)
	}
	return out
}

// renderFrags renders a whole context.
func renderFrags(head []byte, frags []*frag) []byte {
	buf := append([]byte(nil), head...)
	var prev *frag
	for _, f := range frags {
		buf = appendFrag(buf, prev, f)
		prev = f
	}
	return buf
}

// CommitID returns the id of the context commit of call n of a session.
func CommitID(sessionID string, n int) string { return fmt.Sprintf("ctx-%s-%d", sessionID, n) }

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// commit writes c's context commit: only the items added (or rewritten by a
// rebase) since the previous commit, guarded so that an existing commit of
// the same number is never overwritten.
func (a *Assembler) commit(ctx context.Context, c *Assembled, pool, active []*item, meta map[string]any) error {
	base := a.committed
	if a.rebaseAt >= 0 && a.rebaseAt < base {
		base = a.rebaseAt
	}
	docs := make([]ItemDoc, 0, len(a.items)-base)
	for _, it := range a.items[base:] {
		docs = append(docs, it.doc())
	}
	items, err := toJSONValue(docs)
	if err != nil {
		return fmt.Errorf("assemble: commit %s: %w", c.CommitID, err)
	}
	doc := store.Doc{
		store.IDKey: c.CommitID, "type": CommitType, "session_id": a.s.ID(), "call": int64(c.N),
		"layout": string(c.Layout), "session_tx": c.SessionTx,
		"base": int64(base), "items": items, "item_count": int64(len(a.items)),
		"byte_len": int64(c.Len()), "bytes_sha256": a.bytesDigest(c),
		"tokens": int64(c.Tokens), "stale_tokens": int64(c.StaleTokens),
		"time": store.FormatTime(a.o.Now().UTC().Truncate(time.Millisecond)),
	}
	if c.PrefixBytes >= 0 {
		doc["prefix_bytes"], doc["prefix_tokens"] = int64(c.PrefixBytes), int64(c.PrefixTokens)
	}
	if !c.Renewed.IsZero() {
		doc["cache_renewed"] = store.FormatTime(c.Renewed.UTC().Truncate(time.Millisecond))
	}
	if a.isLean() {
		doc["lean"] = true // the head without the LeanHead's guide and tools
	}
	if c.N > 1 {
		doc["parent"] = CommitID(a.s.ID(), c.N-1)
	} else {
		t, err := toJSONValue(a.o.Tools)
		if err != nil {
			return fmt.Errorf("assemble: commit %s: tools: %w", c.CommitID, err)
		}
		doc["tools"] = t
		doc["snapshot_end"] = int64(a.snapEnd)
		if a.lean != nil {
			lh, err := toJSONValue(a.lean)
			if err != nil {
				return fmt.Errorf("assemble: commit %s: lean head: %w", c.CommitID, err)
			}
			doc["lean_head"] = lh
		}
		doc["render"] = int64(a.rv)
		doc["metadata"] = int64(a.mv)
		if !a.paths.zero() {
			p, err := toJSONValue(a.paths)
			if err != nil {
				return fmt.Errorf("assemble: commit %s: paths: %w", c.CommitID, err)
			}
			doc["paths"] = p
		}
	}
	if c.Rebased {
		doc["rebase_from"] = int64(a.rebaseAt)
		doc["rebase_reason"] = c.Reason
		if len(a.dropped) > 0 {
			// What the rebase left out (a collapsed file the stream names),
			// for the record: the items list alone rebuilds the bytes.
			d := make([]any, len(a.dropped))
			for i, r := range a.dropped {
				d[i] = r
			}
			doc["dropped"] = d
		}
	}
	if c.Layout == LayoutLiteral {
		doc["pool"], doc["active"] = refStrings(pool), refStrings(active)
	}
	// The system prompt's reference, a few hundred bytes, is recorded by
	// the commit of the first call that has it; the commits after it name
	// that call (issue 18).
	if a.sysRefCall > 0 && a.sysRefCall < c.N && a.sysRef == a.committedSys {
		doc["system_ref_call"] = int64(a.sysRefCall)
	} else {
		doc["system_ref"] = a.sysRef.String()
	}
	for k, v := range shownFields(a.committedShown, a.shown) {
		doc[k] = v
	}
	shape := map[string]any{"turns": int64(a.shape.Turns), "turn_calls": int64(a.shape.TurnCalls),
		"current": int64(a.shape.Current), "warm_starts": int64(a.shape.WarmStarts), "cold_starts": int64(a.shape.ColdStarts)}
	if a.shape.Rebases > 0 {
		shape["rebases"] = int64(a.shape.Rebases) // absent in commits written before it was kept
	}
	if a.shape.Previews > 0 {
		shape["previews"] = int64(a.shape.Previews)
	}
	if len(a.shape.Faulted) > 0 {
		f := make([]any, len(a.shape.Faulted))
		for i, id := range a.shape.Faulted {
			f[i] = id
		}
		shape["faulted"] = f
	}
	if a.shape.PreviewDoublings > 0 {
		shape["preview_doublings"] = int64(a.shape.PreviewDoublings)
	}
	doc["shape"] = shape
	if meta != nil {
		m, err := toJSONValue(meta)
		if err != nil {
			return fmt.Errorf("assemble: commit %s: harness meta: %w", c.CommitID, err)
		}
		doc["harness"] = m
		// The conversation commit the call rendered (context/ingest), at the
		// top level so that a query finds the calls of a commit.
		if conv, ok := meta["conversation"].(map[string]any); ok {
			if id, ok := conv["commit"].(string); ok && id != "" {
				doc["conversation_commit"] = id
			}
		}
	}
	if _, err := store.SubmitWait(ctx, a.st, []store.Op{store.Match(c.CommitID, nil), store.Put(doc)}); err != nil {
		return fmt.Errorf("assemble: writing context commit %s: %w", c.CommitID, err)
	}
	a.committed = len(a.items)
	a.committedShown = maps.Clone(a.shown)
	if _, ok := doc["system_ref"]; ok {
		a.sysRefCall, a.committedSys = c.N, a.sysRef
	}
	a.rebaseAt = -1
	a.dropped = nil
	a.last = nil
	return nil
}

// shownFields are the fields a commit records its shown map with (issue
// 18): the whole map ("shown") when the previous commit's is unknown (the
// first call, or a call after a commit of a version that did not record
// it), else only what changed since the previous commit: "shown_set" for
// entries added or moved, "shown_del" for ids no longer shown (sorted),
// each left out when empty. The map changes by an entry or two a call and
// was a seventh of a commit; replay puts it back together.
func shownFields(prev, cur map[string]int) map[string]any {
	if prev == nil {
		whole := map[string]any{}
		for id, i := range cur {
			whole[id] = int64(i)
		}
		return map[string]any{"shown": whole}
	}
	set := map[string]any{}
	for id, i := range cur {
		if j, ok := prev[id]; !ok || j != i {
			set[id] = int64(i)
		}
	}
	var del []any
	for _, id := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := cur[id]; !ok {
			del = append(del, id)
		}
	}
	out := map[string]any{}
	if len(set) > 0 {
		out["shown_set"] = set
	}
	if len(del) > 0 {
		out["shown_del"] = del
	}
	return out
}

func refStrings(items []*item) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it.ref.String()
	}
	return out
}

// CommitType is the "type" of context commit documents.
const CommitType = "context_commit"

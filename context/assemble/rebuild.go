package assemble

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Rebuild re-renders the context of call n of a session from the store
// alone: it reads commits 1..n, replays their item lists, resolves every
// static reference as of its transaction (checking its hashes) and renders
// with the commit's layout. The result must have the SHA-256 and length the
// commit recorded, or Rebuild fails; so a successful Rebuild returns exactly
// the bytes the call sent. It costs reads proportional to the session up to
// n; a Rebuilder rebuilds every call of a session in one pass.
func Rebuild(ctx context.Context, st store.Store, sessionID string, n int) (*Assembled, error) {
	if n < 1 {
		return nil, fmt.Errorf("assemble: call numbers start at 1, got %d", n)
	}
	b := NewRebuilder(st, sessionID)
	for b.n < n {
		if _, err := b.Next(ctx); err != nil {
			return nil, err
		}
	}
	return b.Context(ctx)
}

// A Rebuilder rebuilds the calls of a session in order, each from the
// store alone and checked like Rebuild, in one forward pass: it reads each
// commit once, resolves each static reference once and renders each stream
// item again only when a rebase or a head switch rewrote it. Rebuilding
// every call of a session costs about what the session's commits and
// objects take to read, plus hashing each call's bytes.
type Rebuilder struct {
	st      store.Store
	session string
	n       int       // the calls read
	root    *Commit   // call 1's commit: the session's style, tools and lean head
	last    *Commit   // call n's commit
	list    []ItemDoc // call n's items
	r       *resolver

	// The rendering of the stream's first valid items as call n's
	// Context last rendered them (LayoutStream): items, their bytes after
	// the head in buf, ends[i] where item i's bytes end.
	items []*item
	valid int
	buf   []byte
	ends  []int
	lit   []byte // LayoutLiteral: the last call's bytes (rendered whole each call)
	// blocked are the literal layout's pool and active items rendered so
	// far, by kind and reference: the same in every call that lists them.
	blocked map[string]*item
	head    []byte
	system  string
	tools   []ToolSpec
	headOf  struct {
		sys  string // the system prompt's reference the head was rendered with
		lean bool
	}
}

// NewRebuilder returns a Rebuilder of session sessionID before its first
// call.
func NewRebuilder(st store.Store, sessionID string) *Rebuilder {
	return &Rebuilder{st: st, session: sessionID}
}

// Next reads the commit of the next call (1 first) and returns it as
// ReadCommitAfter does; Context then rebuilds that call.
func (b *Rebuilder) Next(ctx context.Context) (*Commit, error) {
	c, err := ReadCommitAfter(ctx, b.st, b.session, b.n+1, b.last)
	if err != nil {
		return nil, err
	}
	if c.Base > len(b.list) {
		return nil, fmt.Errorf("assemble: %s keeps %d items, its parent has %d", c.ID, c.Base, len(b.list))
	}
	b.list = append(b.list[:c.Base], c.Items...) // the Rebuilder's own list: nothing else holds it
	if len(b.list) != c.ItemCount {
		return nil, fmt.Errorf("assemble: %s: replayed %d items, the commit says %d", c.ID, len(b.list), c.ItemCount)
	}
	if c.N == 1 {
		sty, err := newStyle(c.Layout, c.Render, c.Metadata, c.Paths, c.LeanHead)
		if err != nil {
			return nil, fmt.Errorf("assemble: %s: %w", c.ID, err)
		}
		b.root = c
		b.r = &resolver{ctx: ctx, st: b.st, cache: map[string]*objects.Object{}, style: sty}
	}
	b.valid = min(b.valid, c.Base)
	b.n, b.last = c.N, c
	return c, nil
}

// Context rebuilds the call whose commit Next read last, and fails unless
// its bytes have the length and SHA-256 the commit recorded. The result's
// Bytes are the Rebuilder's: they hold until the next call of Next.
func (b *Rebuilder) Context(ctx context.Context) (*Assembled, error) {
	last, root := b.last, b.root
	if last == nil {
		return nil, fmt.Errorf("assemble: rebuilding %s: no call read yet", b.session)
	}
	b.r.ctx = ctx
	if err := b.setHead(); err != nil {
		return nil, err
	}
	c := &Assembled{N: last.N, CommitID: last.ID, Layout: last.Layout, Rebased: last.RebaseFrom >= 0, Reason: last.Reason,
		RebaseOffset: -1, SessionTx: last.SessionTx, Tokens: last.Tokens, StaleTokens: last.StaleTokens,
		PrefixBytes: last.PrefixBytes, PrefixTokens: last.PrefixTokens,
		system: b.system, tools: b.tools, withheld: withheld(root.Tools, root.LeanHead, last.Lean)}
	c.spans = headSpans(b.system, len(b.head))
	if err := b.render(); err != nil {
		return nil, err
	}
	switch last.Layout {
	case LayoutStream:
		// The items and their ends, copied: the Rebuilder renders the next
		// call over them. Messages and Spans read them when asked.
		c.Bytes = b.buf
		c.items, c.spanEnds = slices.Clone(b.items), slices.Clone(b.ends)
		if c.spanEnds == nil {
			c.spanEnds = []int{}
		}
		if last.RebaseFrom >= 0 && last.RebaseFrom < len(b.items) {
			c.RebaseOffset = len(b.head)
			if last.RebaseFrom > 0 {
				c.RebaseOffset = b.ends[last.RebaseFrom-1]
			}
		}
	case LayoutLiteral:
		pool, err := b.blocks(kMeta, last.Pool)
		if err != nil {
			return nil, err
		}
		active, err := b.blocks(kContent, last.Active)
		if err != nil {
			return nil, err
		}
		c.frags = literalFrags(b.items, pool, active)
		c.Bytes = append(b.lit[:0], b.head...)
		var prev *frag
		for _, it := range literalItems(b.items, pool, active) {
			start := len(c.Bytes)
			c.Bytes = appendFrag(c.Bytes, prev, it.f)
			c.spans = append(c.spans, it.span(start, len(c.Bytes)))
			prev = it.f
		}
	default:
		return nil, fmt.Errorf("assemble: %s: unknown layout %q", last.ID, last.Layout)
	}
	if last.Layout == LayoutLiteral {
		b.lit = c.Bytes
	}
	if len(c.Bytes) != last.ByteLen || digest(c.Bytes) != last.BytesSHA256 {
		return nil, fmt.Errorf("assemble: %s: rebuilt %d bytes that do not match the %d recorded", last.ID, len(c.Bytes), last.ByteLen)
	}
	return c, nil
}

// blocks returns the literal layout's items of kind k for refs (a
// commit's pool or active list), each rendered once per session: the
// layout reads their fragments and never changes them.
func (b *Rebuilder) blocks(k ItemKind, refs []string) ([]*item, error) {
	if b.blocked == nil {
		b.blocked = map[string]*item{}
	}
	out := make([]*item, len(refs))
	for i, ref := range refs {
		key := string(k) + " " + ref
		it, ok := b.blocked[key]
		if !ok {
			var err error
			if it, err = b.r.item(ItemDoc{K: k, Ref: ref}); err != nil {
				return nil, err
			}
			b.blocked[key] = it
		}
		out[i] = it
	}
	return out, nil
}

// setHead renders the head of the call read last, unless the previous
// rendering had the same one; a new head invalidates the stream's bytes.
func (b *Rebuilder) setHead() error {
	last, root := b.last, b.root
	if b.head != nil && b.headOf.sys == last.SystemRef.String() && b.headOf.lean == last.Lean {
		return nil
	}
	sys, err := b.r.get(last.SystemRef)
	if err != nil {
		return err
	}
	system := ""
	if sys.Content != nil {
		system = *sys.Content
	}
	system, tools := headOf(system, root.Tools, root.LeanHead, last.Lean)
	head, err := renderHead(system, tools)
	if err != nil {
		return err
	}
	b.head, b.system, b.tools = head, system, tools
	b.headOf.sys, b.headOf.lean = last.SystemRef.String(), last.Lean
	b.valid = 0
	return nil
}

// render brings items (and, in LayoutStream, buf and ends) up to the item
// list of the call read last: the items from the first one a commit since
// the previous rendering rewrote are resolved and rendered again.
func (b *Rebuilder) render() error {
	b.items, b.ends = b.items[:b.valid], b.ends[:b.valid]
	stream := b.last.Layout == LayoutStream
	if b.valid == 0 {
		b.buf = append(b.buf[:0], b.head...)
	} else {
		b.buf = b.buf[:b.ends[b.valid-1]]
	}
	for i := b.valid; i < len(b.list); i++ {
		it, err := b.r.item(b.list[i])
		if err != nil {
			return fmt.Errorf("assemble: %s item %d: %w", b.last.ID, i, err)
		}
		if stream {
			var prev *frag
			if i > 0 {
				prev = b.items[i-1].f
			}
			it.f.follow(prev)
			b.buf = appendFrag(b.buf, prev, it.f)
		}
		b.items = append(b.items, it)
		b.ends = append(b.ends, len(b.buf))
	}
	b.valid = len(b.items)
	return nil
}

// replay reads commits 1..n of a session and returns the item list of
// call n and its commit.
func replay(ctx context.Context, st store.Store, sessionID string, n int) ([]ItemDoc, *Commit, error) {
	var list []ItemDoc
	var last *Commit
	for k := 1; k <= n; k++ {
		c, err := ReadCommitAfter(ctx, st, sessionID, k, last)
		if err != nil {
			return nil, nil, err
		}
		if c.Base > len(list) {
			return nil, nil, fmt.Errorf("assemble: %s keeps %d items, its parent has %d", c.ID, c.Base, len(list))
		}
		list = append(list[:c.Base:c.Base], c.Items...)
		last = c
	}
	if len(list) != last.ItemCount {
		return nil, nil, fmt.Errorf("assemble: %s: replayed %d items, the commit says %d", last.ID, len(list), last.ItemCount)
	}
	return list, last, nil
}

// resolver resolves static references once each.
type resolver struct {
	ctx   context.Context
	st    store.Store
	cache map[string]*objects.Object
	style *style // the session's (its root commit's)
}

func (r *resolver) get(ref objects.Ref) (*objects.Object, error) {
	k := ref.String()
	if o, ok := r.cache[k]; ok {
		return o, nil
	}
	if !ref.Static {
		return nil, fmt.Errorf("assemble: reference %s is not static", k)
	}
	o, _, err := expand.Resolve(r.ctx, r.st, ref)
	if errors.Is(err, store.ErrNotFound) {
		// The versions of an object leave the store only by eviction.
		return nil, fmt.Errorf("%w (%s)", ErrEvicted, k)
	}
	if err != nil {
		return nil, err
	}
	r.cache[k] = o
	return o, nil
}

func (r *resolver) item(d ItemDoc) (*item, error) {
	it, err := fromDoc(d)
	if err != nil {
		return nil, err
	}
	if it.kind.hasRef() {
		if it.obj, err = r.get(it.ref); err != nil {
			return nil, err
		}
	}
	it.style = r.style
	it.render()
	return it, nil
}

package assemble

import (
	"context"
	"fmt"

	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Rebuild re-renders the context of call n of a session from the store
// alone: it reads commits 1..n, replays their item lists, resolves every
// static reference as of its transaction (checking its hashes) and renders
// with the commit's layout. The result must have the SHA-256 and length the
// commit recorded, or Rebuild fails; so a successful Rebuild returns exactly
// the bytes the call sent. It costs reads proportional to the session up to n.
func Rebuild(ctx context.Context, st store.Store, sessionID string, n int) (*Assembled, error) {
	if n < 1 {
		return nil, fmt.Errorf("assemble: call numbers start at 1, got %d", n)
	}
	list, last, err := replay(ctx, st, sessionID, n)
	if err != nil {
		return nil, err
	}
	root := last
	if n > 1 {
		if root, err = ReadCommit(ctx, st, sessionID, 1); err != nil {
			return nil, err
		}
	}
	sty, err := newStyle(root.Render, root.Metadata, root.Paths, root.LeanHead)
	if err != nil {
		return nil, fmt.Errorf("assemble: %s: %w", root.ID, err)
	}
	r := &resolver{ctx: ctx, st: st, cache: map[string]*objects.Object{}, style: sty}
	sys, err := r.get(last.SystemRef)
	if err != nil {
		return nil, err
	}
	system := ""
	if sys.Content != nil {
		system = *sys.Content
	}
	system, tools := headOf(system, root.Tools, root.LeanHead, last.Lean)
	head, err := renderHead(system, tools)
	if err != nil {
		return nil, err
	}
	items := make([]*item, len(list))
	for i, d := range list {
		if items[i], err = r.item(d); err != nil {
			return nil, fmt.Errorf("assemble: %s item %d: %w", last.ID, i, err)
		}
	}
	c := &Assembled{N: n, CommitID: last.ID, Layout: last.Layout, Rebased: last.RebaseFrom >= 0, Reason: last.Reason,
		RebaseOffset: -1, SessionTx: last.SessionTx, Tokens: last.Tokens, StaleTokens: last.StaleTokens,
		PrefixBytes: last.PrefixBytes, PrefixTokens: last.PrefixTokens,
		system: system, tools: tools, withheld: withheld(root.Tools, root.LeanHead, last.Lean)}
	c.spans = headSpans(system, len(head))
	switch last.Layout {
	case LayoutStream:
		c.frags = make([]*frag, len(items))
		var prev *frag
		c.Bytes = head
		for i, it := range items {
			if i == last.RebaseFrom {
				c.RebaseOffset = len(c.Bytes)
			}
			c.frags[i] = it.f
			it.f.follow(prev)
			start := len(c.Bytes)
			c.Bytes = appendFrag(c.Bytes, prev, it.f)
			if !it.f.silent { // nothing to label
				c.spans = append(c.spans, it.span(start, len(c.Bytes)))
			}
			prev = it.f
		}
	case LayoutLiteral:
		pool, err := r.items(kMeta, last.Pool)
		if err != nil {
			return nil, err
		}
		active, err := r.items(kContent, last.Active)
		if err != nil {
			return nil, err
		}
		c.frags = literalFrags(items, pool, active)
		c.Bytes = head
		var prev *frag
		for _, it := range literalItems(items, pool, active) {
			start := len(c.Bytes)
			c.Bytes = appendFrag(c.Bytes, prev, it.f)
			c.spans = append(c.spans, it.span(start, len(c.Bytes)))
			prev = it.f
		}
	default:
		return nil, fmt.Errorf("assemble: %s: unknown layout %q", last.ID, last.Layout)
	}
	if len(c.Bytes) != last.ByteLen || digest(c.Bytes) != last.BytesSHA256 {
		return nil, fmt.Errorf("assemble: %s: rebuilt %d bytes that do not match the %d recorded", last.ID, len(c.Bytes), last.ByteLen)
	}
	return c, nil
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

func (r *resolver) items(k ItemKind, refs []string) ([]*item, error) {
	out := make([]*item, len(refs))
	for i, s := range refs {
		it, err := r.item(ItemDoc{K: k, Ref: s})
		if err != nil {
			return nil, err
		}
		out[i] = it
	}
	return out, nil
}

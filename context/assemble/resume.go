package assemble

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// ErrNoCommits is returned (wrapped) by Resume for a session that has no
// context commit yet.
var ErrNoCommits = errors.New("no context commits")

// Calls returns how many calls of a session have a context commit: the
// commits are numbered densely from 1, so a galloping search finds the last
// one in O(log n) entity reads.
func Calls(ctx context.Context, st store.Store, sessionID string) (int, error) {
	exists := func(n int) (bool, error) {
		_, err := st.EntityTx(ctx, CommitID(sessionID, n), store.Basis{})
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	lo, hi := 0, 1 // commit lo exists (0 = none), hi is the next probe
	for {
		ok, err := exists(hi)
		if err != nil {
			return 0, fmt.Errorf("assemble: counting the commits of %s: %w", sessionID, err)
		}
		if !ok {
			break
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 { // lo exists, hi does not
		mid := lo + (hi-lo)/2
		ok, err := exists(mid)
		if err != nil {
			return 0, fmt.Errorf("assemble: counting the commits of %s: %w", sessionID, err)
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// Open returns the Assembler of session s: resumed from its context
// commits when it has any (Resume), else a new one (New).
func Open(ctx context.Context, s *session.Session, o Options) (*Assembler, error) {
	a, err := Resume(ctx, s, o)
	if errors.Is(err, ErrNoCommits) {
		return New(ctx, s, o)
	}
	return a, err
}

// Resume rebuilds the Assembler of session s, in a new process, from its
// context commits: the stream of the last call, item for item, with the
// stale blocks and pending tool calls it had, so that the next Call
// continues the session exactly as the original process would have (same
// numbering, same bytes, byte-exact extension). The rebuilt stream is
// checked against the last commit's length and SHA-256, unless a commit
// names a version a context edit evicted since (ErrEvicted): that item
// and the ones after it are rendered from the current version of their
// objects, and the next Call rebases from the first of them (reason
// ReasonContextEdit), so the session goes on without what the edit took
// out. The layout and the
// tool list are the session's (from its first commit); o.Layout and o.Tools
// are ignored. Events reported after the last call and never assembled are
// not in any commit: the harness reports them again (an ingestion cursor
// stored with CallWith says which). A session without commits gives an
// error wrapping ErrNoCommits.
func Resume(ctx context.Context, s *session.Session, o Options) (*Assembler, error) {
	n, err := Calls(ctx, s.Store(), s.ID())
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("assemble: resuming %s: %w", s.ID(), ErrNoCommits)
	}
	root, err := ReadCommit(ctx, s.Store(), s.ID(), 1)
	if err != nil {
		return nil, err
	}
	o.Layout, o.Tools, o.Lean = root.Layout, root.Tools, root.LeanHead
	a, err := newAssembler(o, s)
	if err != nil {
		return nil, err
	}
	list, last, err := replay(ctx, s.Store(), s.ID(), n)
	if err != nil {
		return nil, err
	}
	if a.style, err = newStyle(root.Layout, root.Render, root.Metadata, root.Paths, root.LeanHead); err != nil {
		return nil, fmt.Errorf("assemble: resuming %s: %w", s.ID(), err)
	}
	a.managed = a.lean == nil || !last.Lean
	r := &resolver{ctx: ctx, st: a.st, cache: map[string]*objects.Object{}, style: a.style}
	if err := a.setSystem(ctx, r, last.SystemRef); err != nil {
		return nil, err
	}
	for i, d := range list {
		it, err := r.item(d)
		if errors.Is(err, ErrEvicted) {
			// A context edit took the version out of the store: the item
			// shows the current one, and the next call rebases from the
			// first such item (ReasonContextEdit).
			it, err = r.current(d)
			if err == nil && !a.evicted {
				a.evicted, a.evictedAt = true, i
			}
		}
		if err != nil {
			return nil, fmt.Errorf("assemble: resuming %s: item %d: %w", last.ID, i, err)
		}
		if it.collapsed || it.preview {
			// The files may be gone with the process that wrote them:
			// listed again (before push, which may drop the object).
			a.paging.spillOut(a.style.spill, it)
		}
		a.push(it)
		a.told = a.told || (a.style.spill != "" && it.kind == kNote && it.text == spillNote(a.style.spill))
	}
	if a.o.Layout == LayoutStream && !a.evicted && (len(a.buf) != last.ByteLen || digest(a.buf) != last.BytesSHA256) {
		return nil, fmt.Errorf("assemble: resuming %s: the stream rebuilt to %d bytes that do not match the %d recorded", last.ID, len(a.buf), last.ByteLen)
	}
	a.restoreState(last)
	a.committedShown = maps.Clone(last.Shown)
	a.sysRefCall, a.committedSys = last.N, last.SystemRef
	if last.systemCall > 0 {
		a.sysRefCall = last.systemCall
	}
	// Toolcalls recorded after the last call (the process died between
	// recording and assembling) wait for the harness to report their
	// results again, so they come back where they belong rather than at
	// the next sync point.
	for _, tc := range s.State().Toolcalls {
		if !a.listed[tc.ID] {
			if a.deferred == nil {
				a.deferred = map[string]bool{}
			}
			a.deferred[tc.ID] = true
		}
	}
	a.calls, a.committed, a.snapEnd, a.lastCall, a.last = n, len(a.items), root.SnapshotEnd, last.Time, last
	a.prevLen, a.prevTok = last.ByteLen, last.Tokens
	a.shape = last.Shape
	if a.shape.Previews < a.previews {
		a.shape.Previews = a.previews // a commit without shape.previews
	}
	a.prevStableTok = a.frozenPrefix.stableTokens(&a.stream, a.rewritable)
	a.closed = a.o.Layout == LayoutStream && a.style.rules.userFirst() // as after the call
	return a, nil
}

// isShown reports whether id has a live content block.
func (a *Assembler) isShown(id string, live map[int]string) bool {
	for _, v := range live {
		if v == id {
			return true
		}
	}
	return false
}

// LastCommit returns the commit an Assembler was resumed from, until its
// next call, and nil otherwise.
func (a *Assembler) LastCommit() *Commit {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// restoreState derives the live bookkeeping of a resumed stream: which ids
// are listed, which content blocks are live (the rest are stale), and the
// tool calls still waiting for results.
func (a *Assembler) restoreState(last *Commit) {
	live := map[int]string{}
	if last.Shown != nil {
		for id, i := range last.Shown {
			if i >= 0 && i < len(a.items) && (a.items[i].kind == kContent || a.items[i].out) && a.items[i].ref.ID == id {
				live[i] = id
			}
		}
	} else { // a commit without "shown": the last content block of each active id
		active := map[string]bool{}
		for _, id := range a.s.State().Active {
			active[id] = true
		}
		seen := map[string]bool{}
		for i := len(a.items) - 1; i >= 0; i-- {
			it := a.items[i]
			if it.kind == kContent && !seen[it.ref.ID] {
				seen[it.ref.ID] = true
				if active[it.ref.ID] {
					live[i] = it.ref.ID
				}
			}
		}
	}
	// A patch is live when its object's block is live and precedes it; the
	// inputs of the edits a live patch names are tied to its object.
	holder := map[string]string{}
	block := map[string]int{}
	for i, id := range live {
		block[id] = i
	}
	for i, it := range a.items {
		if b, ok := block[it.ref.ID]; ok && it.kind == kPatch && i > b {
			for _, c := range it.calls {
				holder[c.ID] = it.ref.ID
			}
		}
	}
	for i, it := range a.items {
		switch it.kind {
		case kMeta, kToolRef:
			a.listed[it.ref.ID] = true
			for _, f := range it.named {
				a.listed[f] = true
			}
			if it.preview {
				a.previews++
			}
			if it.out {
				if _, ok := live[i]; ok {
					a.shown[it.ref.ID] = i
					a.held[it.ref.ID] = &version{obj: it.obj, ref: it.ref}
					if it.preview {
						a.previewed[it.ref.ID] = true
					}
				} else {
					a.markStale(i)
				}
			}
		case kContent:
			if id, ok := live[i]; ok {
				a.shown[id] = i
				a.held[id] = &version{obj: it.obj, ref: it.ref}
			} else {
				a.markStale(i)
			}
		case kPatch:
			if b, ok := block[it.ref.ID]; ok && i > b {
				a.patches[it.ref.ID] = append(a.patches[it.ref.ID], i)
				a.held[it.ref.ID] = &version{obj: it.obj, ref: it.ref}
			} else {
				a.markStale(i)
			}
		case kAssistant:
			a.pending = map[string]bool{}
			for _, c := range it.calls {
				a.pending[c.ID] = true
				a.callAt[c.ID] = i
			}
		}
		if it.kind == kToolRef {
			delete(a.pending, it.ref.ID)
			if it.input != nil {
				// Still collapsible if the call's arguments are still large;
				// stale if the call is no longer live.
				if a.noteInput(it.ref.ID, &version{ref: *it.input}) {
					h := holder[it.ref.ID]
					a.inputs[it.ref.ID].holder = h
					if !a.isShown(it.ref.ID, live) && (h == "" || !a.isShown(h, live)) {
						a.staleInput(it.ref.ID)
					}
				}
			}
		}
	}
}

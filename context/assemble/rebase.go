package assemble

import (
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
)

// rewritable reports whether a rebase could change it: a content block
// (live content may go stale), or an assistant message with a call whose
// input can collapse.
func (a *Assembler) rewritable(it *item) bool {
	switch it.kind {
	case kContent, kPatch:
		return true
	case kToolRef:
		return it.out || it.sent
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
// block's, the collapsible inputs of an assistant message, or what a tool
// result rendered as the harness sent it holds beyond ctxstore's form.
func (a *Assembler) staleTokens(it *item) int {
	n := it.sentStale
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
// collapsed, tool results rendered as the harness sent them take
// ctxstore's form, everything else is kept; stale items before p stay. It returns
// the byte offset from which the rendering changed and the tokens before
// it. The previous buffers are left untouched, so earlier Assembled values
// stay valid.
func (a *Assembler) rebase(p int) (int, int) {
	off := a.offs[p]
	tail := a.cut(p)
	a.closed = false // the rewritten tail is one context
	for _, it := range tail {
		a.stale -= a.staleTokens(it)
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
		case a.style.rules.rebaseDrops(a.style.r, it, a.listed, staleBefore):
			if it.kind != kNote {
				a.recorder.dropped = append(a.recorder.dropped, it.ref.String())
			}
			continue
		case it.stale && it.kind == kContent:
			it = &item{kind: kStub, ref: it.ref, obj: it.obj}
		case it.stale && it.kind == kToolRef:
			if !it.collapsed && !it.preview {
				a.paging.spillOut(a.style.spill, it) // a preview's file is listed already
			}
			it = &item{kind: kToolRef, ref: it.ref, obj: it.obj, input: it.input, collapsed: true}
		case it.sent:
			// The harness's form until here; ctxstore's from the rebase on.
			c := *it
			c.sent, c.sentStale, c.text, c.f = false, 0, "", nil
			it = &c
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
	a.recorder.rewrote(p)
	return off, prefixTok
}

// dropsAtRebase reports whether a rebase (pathRules) leaves it
// out of the rewritten tail instead of rewriting it: a stale content block
// of a file or note whose id the stream already names (its metadata line,
// or the write or edit call that pooled it), which a "collapsed:"
// reference would only repeat, and a note that an object went inactive or
// changed when none of the objects it names still shows stale content
// before the rebase's start (the tail keeps no stale content: the note's
// "ignore the content above" or "new version below" points at nothing any
// more). A "collapsed:" stub a rendering-4 rebase wrote is one it chose to
// keep, and is kept (it no longer holds its object: push).
func dropsAtRebase(r *rendering, it *item, listed, staleBefore map[string]bool) bool {
	switch {
	case it.kind == kContent && it.stale:
		k := it.obj.Kind()
		return (k == objects.KindFile || k == objects.KindNote) && listed[it.ref.ID]
	case it.kind == kNote:
		ids, ok := r.stateNoteIDs(it.text)
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
// below" note names, and whether text is such a note.
func (r *rendering) stateNoteIDs(text string) ([]string, bool) {
	for _, prefix := range []string{r.inactiveNote, r.changedNote} {
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
				a.callAt[c.ID] = i // the rebase moved it
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

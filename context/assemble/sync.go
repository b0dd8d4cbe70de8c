package assemble

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// holdings is what the model holds of each object: which ids the stream
// lists (a metadata line, a tool result, a write's path), which have a
// live content block and at what version, with the patches shown since,
// and the versions looked up in the store. shown, held and patches name
// the same ids: an id is shown while its block (or inline output) is live.
type holdings struct {
	poolSeen int                      // State.Pool entries already looked at
	listed   map[string]bool          // ids the stream names (a metadata line, a tool result, a write's path)
	latest   map[string]*version      // latest known version of each id seen
	points   map[string]pointVersion  // LayoutLiteral: the version read of each id, and at which point
	same     map[string]int64         // shown id -> a later tx found to hold the same version
	shown    map[string]int           // id -> index of its live content item
	held     map[string]*version      // shown id -> the version the model holds (its block and live patches)
	patches  map[string][]int         // shown id -> item indexes of its live patches
	edits    map[string][]pendingEdit // shown file id -> write/edit calls reported since its last version check
}

// newHoldings returns empty holdings.
func newHoldings() holdings {
	return holdings{listed: map[string]bool{}, latest: map[string]*version{}, points: map[string]pointVersion{}, same: map[string]int64{},
		shown: map[string]int{}, held: map[string]*version{}, patches: map[string][]int{}, edits: map[string][]pendingEdit{}}
}

// version is one version of an object: the object and its static
// reference.
type version struct {
	obj *objects.Object
	ref objects.Ref
}

// resolve returns the latest version of id, from the cache or st.
func (h *holdings) resolve(ctx context.Context, st store.Store, id string) (*version, error) {
	if v, ok := h.latest[id]; ok {
		return v, nil
	}
	o, tx, err := expand.Resolve(ctx, st, objects.DynamicRef(id))
	if err != nil {
		return nil, err
	}
	v := &version{obj: o, ref: objects.StaticRef(o, tx)}
	h.latest[id] = v
	return v, nil
}

// rendered reports whether id is rendered as an object at all (the
// session's own objects are the chat and system prompt themselves).
func rendered(id string) bool {
	_, _, own := objects.SessionIDOf(id)
	return !own
}

// sync brings the stream up to date with the session state: metadata
// entries for new pool entries, a note for deactivated content, content
// blocks for newly active objects; with checkVersions, a new content block
// for every active object that has a newer version in the store.
func (a *Assembler) sync(ctx context.Context, checkVersions bool) error {
	// The pool's new entries and the active set, not a copy of the whole
	// state (which grows with the session).
	pool, poolLen := a.s.PoolSince(a.poolSeen)
	if a.poolSeen > poolLen {
		a.poolSeen = 0 // the pool never shrinks; be safe if it did
	}
	activeIDs := a.s.Active()
	heldBack := false
	for _, id := range pool {
		if a.deferred[id] {
			continue // its ToolResult will list it; sync looks again then
		}
		if !rendered(id) || a.listed[id] {
			continue
		}
		v, err := a.holdings.resolve(ctx, a.st, id)
		if err != nil {
			return fmt.Errorf("assemble: pool entry: %w", err)
		}
		if a.awaitsResult(v, checkVersions) {
			heldBack = true
			continue
		}
		a.listed[id] = true
		delete(a.latest, id) // listed: the pool loop never resolves it again
		if v.obj.Kind() != objects.KindFile {
			a.needsHead() // only activate loads it (read takes files)
		}
		a.push(&item{kind: kMeta, ref: v.ref, obj: v.obj})
	}
	if len(a.deferred) == 0 && !heldBack {
		a.poolSeen = poolLen
	}

	active := make(map[string]bool, len(activeIDs))
	for _, id := range activeIDs {
		active[id] = true
	}
	var gone, changed, window []string
	for _, id := range a.shownIDs() {
		if !active[id] {
			switch a.style.rules.deactivated(a.items[a.shown[id]], a.overflow[id]) {
			case noteWindow:
				window = append(window, id)
			case noteInactive:
				gone = append(gone, id)
			}
			a.unshow(id, true)
		}
	}
	if checkVersions {
		if err := a.checkVersions(ctx, &changed); err != nil {
			return err
		}
	}
	if len(window) > 0 {
		a.needsHead()
		for i := range window {
			window[i] = objects.DisplayID(window[i])
		}
		load := "activate(id) brings one back"
		if a.style.spill != "" {
			load = "reading a file, or an output's " + spillPattern(a.style.spill, "<call id>") + ", brings one back"
		}
		a.push(&item{kind: kNote, text: fmt.Sprintf("%sdeactivated to fit the context window (it was %d tokens over its limit): %s; %s, at the cost of others",
			ctxPrefix, a.overBy, strings.Join(window, ", "), load)})
	}
	r := a.style.r
	for i := range gone {
		gone[i] = r.id(gone[i])
	}
	for i := range changed {
		changed[i] = r.id(changed[i])
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		a.push(&item{kind: kNote, text: r.inactiveNote + strings.Join(gone, ", ")})
	}
	if len(changed) > 0 {
		sort.Strings(changed)
		a.push(&item{kind: kNote, text: r.changedNote + strings.Join(changed, ", ")})
	}
	for _, id := range activeIDs {
		if !rendered(id) {
			continue
		}
		if _, ok := a.shown[id]; ok || a.deferred[id] {
			continue
		}
		delete(a.latest, id) // show the version that is current now, not a cached one
		v, err := a.holdings.resolve(ctx, a.st, id)
		if err != nil {
			return fmt.Errorf("assemble: active object: %w", err)
		}
		if a.awaitsResult(v, checkVersions) {
			continue
		}
		a.shown[id] = len(a.items)
		a.held[id] = v
		delete(a.edits, id)
		a.push(&item{kind: kContent, ref: v.ref, obj: v.obj})
	}
	return nil
}

// changedPrefix opens the note that names the objects shown again in full
// because they changed (rendering 3 on).
const changedPrefix = ctxPrefix + "changed, new version below: "

// patchCost is what the view of shown object id costs beyond its block
// with patch p added: its live patches and, once the session has rebased,
// the edit inputs tied to it. When that passes the block's own size, a new
// full block is cheaper to keep (the old one and its deltas collapse at
// the next rebase). An input tied to the view would otherwise collapse
// only at a rebase, so its saving counts only in a session that rebases;
// one that has not (a short one, so far) pays only what it sends.
func (a *Assembler) patchCost(id string, p *item) int {
	n := a.tok.Count(p.text)
	for _, i := range a.patches[id] {
		n += a.items[i].tokens
	}
	if a.shape.Rebases == 0 {
		return n
	}
	for _, in := range a.inputs {
		if in.holder == id {
			n += in.saved
		}
	}
	for _, c := range p.calls {
		if in, ok := a.inputs[c.ID]; ok && in.holder != id {
			n += in.saved
		}
	}
	return n
}

// awaitsResult reports whether v is a toolcall the stream has not listed
// yet, outside a call (final is false): a harness that reports calls
// before its log (the service's observe route) would otherwise have the
// call's output shown before the call is. Its tool result will list it and
// show its output in it (rendering 3); at the next call, whatever is still
// unlisted is shown.
func (a *Assembler) awaitsResult(v *version, final bool) bool {
	return a.style.rules.waitsForResult() && !final && !a.listed[v.ref.ID] && v.obj.Kind() == objects.KindToolcall
}

// shownIDs returns the ids with a live content block, sorted, so that what
// is appended for them comes in a deterministic order.
func (h *holdings) shownIDs() []string {
	ids := make([]string, 0, len(h.shown))
	for id := range h.shown {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// unshow makes id's content block and patches stale, and the inputs
// collapsing with it (its own, when inactive, and those tied to its view).
func (a *Assembler) unshow(id string, inactive bool) {
	a.markStale(a.shown[id])
	for _, p := range a.patches[id] {
		a.markStale(p)
	}
	delete(a.shown, id)
	delete(a.patches, id)
	delete(a.held, id)
	delete(a.edits, id)
	delete(a.previewed, id) // a preview read back once no longer shown is a collapsed output's
	if inactive {
		a.staleInput(id)
	}
	for call, in := range a.inputs {
		if in.holder == id {
			a.staleInput(call)
		}
	}
}

// checkVersions looks up the latest transaction of every shown object; a
// newer version makes the shown block stale, and sync shows the new one.
func (a *Assembler) checkVersions(ctx context.Context, changed *[]string) error {
	for _, id := range a.shownIDs() {
		i := a.shown[id]
		held := a.held[id]
		heldRef := a.items[i].ref
		if held != nil {
			heldRef = held.ref
		}
		et, err := a.st.EntityTx(ctx, id, store.Basis{})
		if err != nil {
			return fmt.Errorf("assemble: checking %s: %w", id, err)
		}
		if et.TxID == heldRef.Tx || a.same[id] == et.TxID {
			continue
		}
		// Another transaction can hold the same version: a session imported
		// into another store keeps its references' source tx ids. The
		// hashes decide, once per transaction.
		cur, tx, err := expand.Resolve(ctx, a.st, objects.DynamicRef(id))
		if err == nil && heldRef.Verify(cur) == nil {
			a.same[id] = et.TxID
			continue
		}
		if err == nil && a.style.rules.patches() {
			v := &version{obj: cur, ref: objects.StaticRef(cur, tx)}
			// Shown again, the new version costs its block and its
			// name in the note that announces it (the note's opening
			// with the first such object).
			r := a.style.r
			name := r.changedNote + r.id(id)
			if len(*changed) > 0 {
				name = ", " + r.id(id)
			}
			again := a.items[i].tokens + a.tok.Count(name)
			if p := a.patchFor(id, held, v); p != nil && a.patchCost(id, p) <= again {
				for _, c := range p.calls {
					if in, ok := a.inputs[c.ID]; ok {
						in.holder = id // the edit's text is part of the file's view now
					}
				}
				a.patches[id] = append(a.patches[id], len(a.items))
				a.push(p)
				a.held[id], a.latest[id] = v, v
				delete(a.edits, id)
				continue
			}
		}
		delete(a.latest, id)
		a.unshow(id, false) // the new version follows in full
		*changed = append(*changed, id)
	}
	return nil
}

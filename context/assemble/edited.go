package assemble

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/objects"
)

// ErrEvicted is wrapped by the errors of Rebuild (and of a Rebuilder's
// Context) for a call whose context rendered a version of an object that
// is no longer in the store: the harness edited a tool result after it was
// recorded (a context edit, docs/pi.md), and the original left the store
// (store.OpEvict). The call's bytes held the original, so they cannot be
// rebuilt; the calls from the rebase the edit caused on can.
var ErrEvicted = errors.New("the call's context held a version since evicted by a context edit")

// ReasonContextEdit is the rebase reason of the call after a context edit
// evicted a version the stream rendered: the stream is rewritten from the
// first item that rendered it, with the object's current version.
const ReasonContextEdit = "context_edit"

// current returns d's item rendered with the current version of its
// object, for an item whose version was evicted (ErrEvicted). A tool
// result that rendered an output the edit omitted renders the call's line
// instead.
func (r *resolver) current(d ItemDoc) (*item, error) {
	it, err := fromDoc(d)
	if err != nil {
		return nil, err
	}
	o, tx, err := expand.Resolve(r.ctx, r.st, objects.DynamicRef(it.ref.ID))
	if err != nil {
		return nil, fmt.Errorf("the current version of %s: %w", it.ref.ID, err)
	}
	it.ref, it.obj = objects.StaticRef(o, tx), o
	if it.out && o.Content == nil {
		it.out, it.preview = false, false
	}
	it.style = r.style
	it.render()
	return it, nil
}

// Reload rebuilds the Assembler's state from the session's context
// commits, as Resume does, after a context edit evicted versions of
// objects the commits name (ingest.Ingester.EditResults): the stream then
// renders the current versions from the first item that rendered an
// evicted one, and the next call rebases from there (ReasonContextEdit),
// so that its answer holds no byte of what the edit took out. It reads
// every commit of the session, which an edit (rare) may cost. It is meant
// for the moment after a call, before the next event: events reported
// since the last call are not in the commits, and Reload fails rather
// than lose them. When no commit names an evicted version, it changes
// nothing.
func (a *Assembler) Reload(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls == 0 || a.o.Layout != LayoutStream {
		return nil
	}
	if len(a.items) != a.committed || a.recorder.rebaseAt >= 0 {
		return fmt.Errorf("assemble: reloading %s: events since the last call are in no commit", a.s.ID())
	}
	b, err := Resume(ctx, a.s, a.o)
	if err != nil {
		return err
	}
	if !b.evicted {
		return nil
	}
	b.recorder.last = a.recorder.last
	a.headState, a.stream, a.frozenPrefix = b.headState, b.stream, b.frozenPrefix
	a.holdings, a.toolCalls, a.paging, a.recorder = b.holdings, b.toolCalls, b.paging, b.recorder
	// The rhythm is this process's (renewals, a turn begun); the stable
	// boundary is the reloaded stream's.
	a.rhythm.prevStableTok = b.rhythm.prevStableTok
	return nil
}

// editRebase returns where the next call must rebase after a context
// edit (Resume, Reload), and clears it.
func (a *Assembler) editRebase() (int, bool) {
	p, ok := a.evictedAt, a.evicted
	a.evicted, a.evictedAt = false, 0
	return p, ok && p < len(a.items)
}

package assemble

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

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
		v, err := a.holdings.current(ctx, a.st, id)
		if err != nil {
			return nil, nil, fmt.Errorf("assemble: pool entry: %w", err)
		}
		pool = append(pool, &item{kind: kMeta, ref: v.ref, obj: v.obj})
	}
	for _, id := range st.Active {
		if !rendered(id) {
			continue
		}
		v, err := a.holdings.current(ctx, a.st, id)
		if err != nil {
			return nil, nil, fmt.Errorf("assemble: active object: %w", err)
		}
		active = append(active, &item{kind: kContent, ref: v.ref, obj: v.obj})
	}
	for _, it := range append(pool[:len(pool):len(pool)], active...) {
		it.style = a.style
		it.render()
	}
	return pool, active, nil
}

// pointVersion is the version of an object the store's point (its
// transaction and valid time) makes current.
type pointVersion struct {
	v  *version
	tx int64
	vt time.Time
}

// current is resolve for literalBlocks, which asks for the latest version
// of every object at every call: it reads which point is current, a small
// read, and reads and decodes the version only when that point is not the
// one it read it at before.
func (h *holdings) current(ctx context.Context, st store.Store, id string) (*version, error) {
	if v, ok := h.latest[id]; ok {
		return v, nil
	}
	et, err := st.EntityTx(ctx, id, store.Basis{})
	if err != nil || et.Deleted {
		return h.resolve(ctx, st, id) // which fails as Resolve does
	}
	if p, ok := h.points[id]; ok && p.tx == et.TxID && p.vt.Equal(et.ValidTime) {
		h.latest[id] = p.v
		return p.v, nil
	}
	v, err := h.resolve(ctx, st, id)
	if err == nil && v.ref.Tx == et.TxID {
		h.points[id] = pointVersion{v: v, tx: et.TxID, vt: et.ValidTime}
	}
	return v, err
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

// literalItems orders the literal layout's items as literalFrags orders
// their fragments: pool, chat, active.
func literalItems(items, pool, active []*item) []*item {
	out := append([]*item(nil), pool...)
	for _, it := range items {
		if it.kind.chatItem() {
			out = append(out, it)
		}
	}
	return append(out, active...)
}

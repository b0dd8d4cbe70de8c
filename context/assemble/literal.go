package assemble

import (
	"context"
	"fmt"
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
		it.style = a.style
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

package assemble

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// recorder is what the next context commit records beyond the stream: a
// commit stores the items from min(committed, rebaseAt) on, the shown map
// as changes to committedShown, and the system prompt's reference only
// when no earlier commit (sysRefCall) holds it.
type recorder struct {
	committed int      // len(items) at the last commit
	rebaseAt  int      // -1, or the lowest item index rewritten since the last commit
	dropped   []string // refs of the blocks rebases left out since the last commit
	snapEnd   int      // items in the session-start snapshot (the root commit records it)
	last      *Commit  // the commit Resume started from, until the next commit
	// committedShown is shown as the commits up to the last one record it
	// (nil: unknown, so the next commit records it whole).
	committedShown map[string]int
	// sysRefCall is the call whose commit records sysRef (0: none yet);
	// later commits name that call instead of repeating the reference.
	sysRefCall   int
	committedSys objects.Ref // the reference the commit of sysRefCall records
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
	base := a.recorder.base()
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
		doc["render"] = int64(a.style.r.version)
		doc["metadata"] = int64(a.style.mv)
		if !a.style.paths.zero() {
			p, err := toJSONValue(a.style.paths)
			if err != nil {
				return fmt.Errorf("assemble: commit %s: paths: %w", c.CommitID, err)
			}
			doc["paths"] = p
		}
	}
	if c.Rebased {
		a.recorder.rebaseFields(doc, c.Reason)
	}
	if c.Layout == LayoutLiteral {
		doc["pool"], doc["active"] = refStrings(pool), refStrings(active)
	}
	k, v := a.recorder.systemField(c.N, a.sysRef)
	doc[k] = v
	for k, v := range shownFields(a.committedShown, a.shown) {
		doc[k] = v
	}
	doc["shape"] = a.shape.doc()
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
	a.recorder.recorded(c.N, len(a.items), a.shown, a.sysRef, k == "system_ref")
	return nil
}

// base is the first item the next commit stores: the first added since
// the last commit, or the first a rebase rewrote since.
func (r *recorder) base() int {
	if r.rebaseAt >= 0 && r.rebaseAt < r.committed {
		return r.rebaseAt
	}
	return r.committed
}

// rewrote notes that a rebase rewrote the stream from item p on.
func (r *recorder) rewrote(p int) {
	if r.rebaseAt < 0 || p < r.rebaseAt {
		r.rebaseAt = p
	}
}

// rebaseFields adds a rebasing call's fields to its commit's doc: where
// the rewrite began, why, and what the rebases since the last commit left
// out (a collapsed file the stream names), for the record: the items list
// alone rebuilds the bytes.
func (r *recorder) rebaseFields(doc store.Doc, reason string) {
	doc["rebase_from"] = int64(r.rebaseAt)
	doc["rebase_reason"] = reason
	if len(r.dropped) > 0 {
		d := make([]any, len(r.dropped))
		for i, ref := range r.dropped {
			d[i] = ref
		}
		doc["dropped"] = d
	}
}

// systemField is the field with which call n's commit records the system
// prompt's reference ref: the reference itself, a few hundred bytes, in
// the commit of the first call that has it, and in the commits after it
// that call's number.
func (r *recorder) systemField(n int, ref objects.Ref) (string, any) {
	if r.sysRefCall > 0 && r.sysRefCall < n && ref == r.committedSys {
		return "system_ref_call", int64(r.sysRefCall)
	}
	return "system_ref", ref.String()
}

// recorded notes that call n's commit was written, holding items items,
// the live blocks shown and, when withSys, the system prompt's reference
// sys.
func (r *recorder) recorded(n, items int, shown map[string]int, sys objects.Ref, withSys bool) {
	r.committed = items
	r.committedShown = maps.Clone(shown)
	if withSys {
		r.sysRefCall, r.committedSys = n, sys
	}
	r.rebaseAt = -1
	r.dropped = nil
	r.last = nil
}

// doc is the shape as a commit records it ("shape"): a field that is 0
// is absent, as in the commits written before it was recorded.
func (s Shape) doc() map[string]any {
	shape := map[string]any{"turns": int64(s.Turns), "turn_calls": int64(s.TurnCalls),
		"current": int64(s.Current), "warm_starts": int64(s.WarmStarts), "cold_starts": int64(s.ColdStarts)}
	if s.Rebases > 0 {
		shape["rebases"] = int64(s.Rebases)
	}
	if s.Previews > 0 {
		shape["previews"] = int64(s.Previews)
	}
	if len(s.Faulted) > 0 {
		f := make([]any, len(s.Faulted))
		for i, id := range s.Faulted {
			f[i] = id
		}
		shape["faulted"] = f
	}
	if s.PreviewDoublings > 0 {
		shape["preview_doublings"] = int64(s.PreviewDoublings)
	}
	return shape
}

// shownFields are the fields a commit records its shown map with: the whole map ("shown") when the previous commit's is unknown (the
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

// bytesDigest returns the SHA-256, in hex, of c's bytes: in LayoutStream,
// where they are the stream's, the frozen prefix hashed its bytes once.
func (a *Assembler) bytesDigest(c *Assembled) string {
	if c.Layout != LayoutStream {
		return digest(c.Bytes)
	}
	return a.frozenPrefix.digest(&a.stream)
}

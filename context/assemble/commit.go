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
	// that call.
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
		shape["rebases"] = int64(a.shape.Rebases) // absent when 0, as in commits that predate the field
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

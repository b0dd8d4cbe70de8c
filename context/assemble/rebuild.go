package assemble

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Commit is a context commit as stored.
type Commit struct {
	ID          string
	SessionID   string
	N           int
	Parent      string
	Layout      Layout
	SessionTx   int64
	SystemRef   objects.Ref
	Base        int // items kept from the parent's list
	Items       []ItemDoc
	ItemCount   int
	ByteLen     int
	BytesSHA256 string
	Tokens      int
	StaleTokens int
	RebaseFrom  int // -1 without a rebase
	Reason      string
	Tools       []ToolSpec // root commit only
	SnapshotEnd int        // root commit only
	Render      int        // root commit only: the rendering version (1 when absent)
	Metadata    int        // root commit only: the metadata line's version (objects.MetadataVersion; 1 when absent)
	Paths       Paths      // root commit only: how file paths are shown (rendering version 4)
	LeanHead    *LeanHead  // root commit only: the session's lean head, nil for a fixed head
	Lean        bool       // the call was sent with the lean head (LeanHead)
	Dropped     []string   // a rebase's commit: the refs of the collapsed blocks it left out (rendering version 4)
	Pool        []string   // literal layout only
	Active      []string   // literal layout only
	// Shown maps each object whose content block is live (not stale) to
	// its item index (nil for commits of older versions, which did not
	// record it). A commit stores it whole only when its parent's is
	// unknown, else what changed (shownSet, shownDel: shownFields): Shown
	// is the whole map from replay (Rebuild, Resume), and from ReadCommit
	// only for a commit that stores it whole.
	Shown map[string]int
	// shownSet and shownDel are what a commit records of Shown when it
	// records what changed since its parent's.
	shownSet map[string]int
	shownDel []string
	// systemCall is the call whose commit records SystemRef, when this
	// one inherits it (system_ref_call; 0: recorded here).
	systemCall int
	// Harness is what the harness recorded with the call (CallWith).
	Harness map[string]any
	// Shape is the session's rhythm after the call (the cost model's
	// horizon; zero in commits written before it was recorded).
	Shape Shape
	// Time is the assembler's clock at the call.
	Time time.Time
	// PrefixBytes and PrefixTokens: the part shared with the previous
	// call's context (Assembled.PrefixBytes); -1 when the commit does not
	// record it (commits written before it was recorded).
	PrefixBytes, PrefixTokens int
}

// ReadCommit reads context commit n of a session. Commits record the
// system prompt's reference only when it changes and the live blocks' map
// as changes (issue 18): SystemRef is always filled (from the commit that
// records it, one more read), Shown only for a commit that records it
// whole (replay and ReadCommitAfter put it together).
func ReadCommit(ctx context.Context, st store.Store, sessionID string, n int) (*Commit, error) {
	return ReadCommitAfter(ctx, st, sessionID, n, nil)
}

// ReadCommitAfter is ReadCommit for a caller reading a session's commits
// in order: prev is commit n-1 as ReadCommitAfter returned it (nil for the
// first read), which gives what commit n inherits without another read:
// its SystemRef, and its Shown put together from prev's and its changes.
func ReadCommitAfter(ctx context.Context, st store.Store, sessionID string, n int, prev *Commit) (*Commit, error) {
	if prev != nil && prev.N != n-1 {
		prev = nil
	}
	id := CommitID(sessionID, n)
	doc, err := st.Entity(ctx, id, store.Basis{})
	if err != nil {
		return nil, fmt.Errorf("assemble: reading %s: %w", id, err)
	}
	var raw struct {
		SessionID   string         `json:"session_id"`
		Call        int            `json:"call"`
		Parent      string         `json:"parent"`
		Layout      Layout         `json:"layout"`
		SessionTx   int64          `json:"session_tx"`
		SystemRef   string         `json:"system_ref"`
		SystemCall  int            `json:"system_ref_call"`
		Base        int            `json:"base"`
		Items       []ItemDoc      `json:"items"`
		ItemCount   int            `json:"item_count"`
		ByteLen     int            `json:"byte_len"`
		BytesSHA256 string         `json:"bytes_sha256"`
		Tokens      int            `json:"tokens"`
		StaleTokens int            `json:"stale_tokens"`
		RebaseFrom  *int           `json:"rebase_from"`
		Reason      string         `json:"rebase_reason"`
		Tools       []ToolSpec     `json:"tools"`
		SnapshotEnd int            `json:"snapshot_end"`
		Render      int            `json:"render"`
		Metadata    int            `json:"metadata"`
		Paths       Paths          `json:"paths"`
		LeanHead    *LeanHead      `json:"lean_head"`
		Lean        bool           `json:"lean"`
		Dropped     []string       `json:"dropped"`
		Pool        []string       `json:"pool"`
		Active      []string       `json:"active"`
		Shown       map[string]int `json:"shown"`
		ShownSet    map[string]int `json:"shown_set"`
		ShownDel    []string       `json:"shown_del"`
		Harness     map[string]any `json:"harness"`
		Shape       struct {
			Turns            int      `json:"turns"`
			TurnCalls        int      `json:"turn_calls"`
			Current          int      `json:"current"`
			WarmStarts       int      `json:"warm_starts"`
			ColdStarts       int      `json:"cold_starts"`
			Rebases          int      `json:"rebases"`
			Previews         int      `json:"previews"`
			Faulted          []string `json:"faulted"`
			PreviewDoublings int      `json:"preview_doublings"`
		} `json:"shape"`
		Time        string `json:"time"`
		PrefixBytes *int   `json:"prefix_bytes"`
		PrefixTok   *int   `json:"prefix_tokens"`
	}
	if err := fromJSONValue(map[string]any(doc), &raw); err != nil {
		return nil, fmt.Errorf("assemble: decoding %s: %w", id, err)
	}
	var sys objects.Ref
	switch {
	case raw.SystemRef != "" || raw.SystemCall <= 0:
		if sys, err = objects.ParseRef(raw.SystemRef); err != nil {
			return nil, fmt.Errorf("assemble: decoding %s: system_ref: %w", id, err)
		}
	case raw.SystemCall >= raw.Call:
		return nil, fmt.Errorf("assemble: %s: system_ref_call %d is not an earlier call", id, raw.SystemCall)
	case prev != nil && (prev.N == raw.SystemCall || prev.systemCall == raw.SystemCall):
		sys = prev.SystemRef
	default:
		if sys, err = systemRefOf(ctx, st, sessionID, raw.SystemCall); err != nil {
			return nil, fmt.Errorf("assemble: %s: %w", id, err)
		}
	}
	c := &Commit{ID: id, SessionID: raw.SessionID, N: raw.Call, Parent: raw.Parent, Layout: raw.Layout,
		SessionTx: raw.SessionTx, SystemRef: sys, Base: raw.Base, Items: raw.Items, ItemCount: raw.ItemCount,
		ByteLen: raw.ByteLen, BytesSHA256: raw.BytesSHA256, Tokens: raw.Tokens, StaleTokens: raw.StaleTokens,
		RebaseFrom: -1, Reason: raw.Reason, Tools: raw.Tools, SnapshotEnd: raw.SnapshotEnd, Render: max(raw.Render, 1), Metadata: max(raw.Metadata, 1), Pool: raw.Pool, Active: raw.Active}
	if raw.RebaseFrom != nil {
		c.RebaseFrom = *raw.RebaseFrom
	}
	c.Paths, c.Dropped, c.LeanHead, c.Lean = raw.Paths, raw.Dropped, raw.LeanHead, raw.Lean
	if c.Render > RenderVersion {
		return nil, fmt.Errorf("assemble: %s: rendering version %d is newer than this binary's (%d)", id, c.Render, RenderVersion)
	}
	if c.Metadata > objects.MetadataVersion {
		return nil, fmt.Errorf("assemble: %s: metadata version %d is newer than this binary's (%d)", id, c.Metadata, objects.MetadataVersion)
	}
	c.systemCall = raw.SystemCall
	c.Shown, c.shownSet, c.shownDel, c.Harness = raw.Shown, raw.ShownSet, raw.ShownDel, raw.Harness
	switch {
	case c.Shown != nil: // recorded whole
	case prev != nil && prev.Shown != nil:
		c.Shown = maps.Clone(prev.Shown)
		for id, i := range c.shownSet {
			c.Shown[id] = i
		}
		for _, id := range c.shownDel {
			delete(c.Shown, id)
		}
	case prev != nil && (c.shownSet != nil || c.shownDel != nil):
		return nil, fmt.Errorf("assemble: %s records changes to the shown blocks of a parent that records none", id)
	}
	c.Shape = Shape(raw.Shape)
	c.PrefixBytes, c.PrefixTokens = -1, -1
	if raw.PrefixBytes != nil && raw.PrefixTok != nil {
		c.PrefixBytes, c.PrefixTokens = *raw.PrefixBytes, *raw.PrefixTok
	}
	if raw.Time != "" {
		if c.Time, err = store.ParseTime(raw.Time); err != nil {
			return nil, fmt.Errorf("assemble: decoding %s: time: %w", id, err)
		}
	}
	return c, nil
}

// systemRefOf reads the system prompt's reference that commit n of a
// session records (only that field).
func systemRefOf(ctx context.Context, st store.Store, sessionID string, n int) (objects.Ref, error) {
	id := CommitID(sessionID, n)
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where(store.IDKey, id)}, Find: []string{"system_ref"}})
	if err != nil {
		return objects.Ref{}, fmt.Errorf("reading the system_ref of %s: %w", id, err)
	}
	if len(docs) != 1 {
		return objects.Ref{}, fmt.Errorf("reading the system_ref of %s: %w", id, store.ErrNotFound)
	}
	s, _ := docs[0]["system_ref"].(string)
	if s == "" {
		return objects.Ref{}, fmt.Errorf("%s records no system_ref", id)
	}
	return objects.ParseRef(s)
}

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
	r := &resolver{ctx: ctx, st: st, cache: map[string]*objects.Object{}, rv: root.Render, mv: root.Metadata, paths: root.Paths, spill: spillDir(root.LeanHead)}
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
	rv    int // rendering version
	mv    int // metadata line version
	paths Paths
	spill string // the items' spill directory (spillDir of the root commit's lean head)
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
	it.rv, it.mv, it.paths, it.spill = r.rv, r.mv, r.paths, r.spill
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

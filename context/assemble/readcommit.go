package assemble

import (
	"context"
	"fmt"
	"maps"
	"time"

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
// as changes, so a commit's size follows the call's news: SystemRef is always filled (from the commit that
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
	if c.Render > newestRender {
		return nil, fmt.Errorf("assemble: %s: rendering version %d is newer than this binary's (%d)", id, c.Render, newestRender)
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

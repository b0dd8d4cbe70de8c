package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// A page of a session reads what the page shows, however long the
// session: its commits by depth (one query per page, through the field
// index on session and depth), the chain's ends from the tip its recorded
// calls were derived from (else by probing depths: about 35 one-row
// queries for 500,000 commits), and its summary from the
// recorded calls' state document that each import writes. docs/inspector.md
// ("Bounded pages") says what that leaves out.
const (
	// CommitsPerPage is how many depths of a session's commit graph a
	// page shows (every commit at those depths: branches add rows).
	CommitsPerPage = 200
	// MaxWhole is the depth from which a session's chain is summarized
	// from its ends rather than read whole (below it, reading every
	// commit costs no more than a page).
	MaxWhole = 2000
	// MaxTotalled is the number of calls (recorded, or served call
	// records) above which a session's list entry and page leave out its
	// totals (tokens, cached share, cost, cache breaks), which would read
	// every call: TotalsOmitted.
	MaxTotalled = 2000
)

// maxTotalled is MaxTotalled, a variable for the tests.
var maxTotalled = MaxTotalled

// longSummary summarizes a served session of n calls, more than
// MaxTotalled, from its first and last call records (found by probing,
// assemble.Calls): its harness, name, cwd, start (its first call's time:
// the session object's first version would need its whole history), last
// call and last context's size, and its call count, without totals
// (TotalsOmitted), which would read every record.
func (in *Inspector) longSummary(ctx context.Context, sid string, n int) (Session, error) {
	s := Session{ID: sid, Calls: n, TotalsOmitted: true}
	if head, err := in.st.Entity(ctx, objects.SessionObjectID(sid), store.Basis{}); err == nil {
		s.Harness = asString(head["harness"])
	}
	first, err := in.calls(ctx, sid, Page{From: 1, Limit: 1}, false)
	if err != nil {
		return s, err
	}
	last, err := in.calls(ctx, sid, Page{From: n, Limit: 1}, false)
	if err != nil {
		return s, err
	}
	if len(first) == 0 || len(last) == 0 {
		return s, fmt.Errorf("session %s: no record of call 1 or %d: %w", sid, n, store.ErrNotFound)
	}
	s.Started, s.Tokens = first[0].Time, last[0].Tokens
	t := last[0].Time
	s.LastCall = &t
	return s, in.firstCall(ctx, sid, &s)
}

// commitFind are the commit fields a graph node needs: never the content.
var commitFind = []string{"parent", "commit_type", "format", "created", "depth", "meta"}

// atDepths reads the commits of session sid at the given depths (one
// query; the field index gives the candidates by depth).
func (in *Inspector) atDepths(ctx context.Context, sid string, depths []int64) ([]store.Doc, error) {
	vals := make([]any, len(depths))
	for i, d := range depths {
		vals[i] = d
	}
	docs, err := in.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", commits.DocCommit), store.Where("session", sid),
		{Field: "depth", Op: store.In, Values: vals}}, Find: commitFind})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading context commits: %w", sid, err)
	}
	kept := docs[:0]
	for _, d := range docs {
		if meta, _ := d["meta"].(map[string]any); asString(meta["snapshot_of"]) == "" { // a cached materialization is not a commit of the chain
			kept = append(kept, d)
		}
	}
	return kept, nil
}

// hasDepth reports whether session sid has a commit at depth d.
func (in *Inspector) hasDepth(ctx context.Context, sid string, d int64) (bool, error) {
	docs, err := in.atDepths(ctx, sid, []int64{d})
	return len(docs) > 0, err
}

// maxDepth returns the depth of session sid's deepest commit, given that
// it has one at depth from: every depth between a chain's root and its
// deepest commit holds a commit (a commit is one deeper than its parent),
// so the deepest is found by doubling, then halving, the depth probed.
func (in *Inspector) maxDepth(ctx context.Context, sid string, from int64) (int64, error) {
	in.mu.Lock()
	d, ok := in.depths[sid]
	in.mu.Unlock()
	if ok && d >= from {
		return d, nil
	}
	d, ok, err := in.tipDepth(ctx, sid, from)
	if err != nil {
		return 0, err
	}
	if !ok {
		if d, err = in.probeDepth(ctx, sid, from); err != nil {
			return 0, err
		}
	}
	in.mu.Lock()
	if in.depths == nil {
		in.depths = map[string]int64{}
	}
	in.depths[sid] = d
	in.mu.Unlock()
	return d, nil
}

// tipDepth is maxDepth read from the tip the session's recorded calls were
// derived from (their state document names it): its depth d is the
// deepest when the session has a commit at d and none at d+1, two
// one-row queries instead of probing about 2 log2(depth) depths. ok is
// false when there is no such tip, or commits came since.
func (in *Inspector) tipDepth(ctx context.Context, sid string, from int64) (int64, bool, error) {
	st, err := in.st.Entity(ctx, recorded.StateID(sid), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	tip := asString(st["tip"])
	if tip == "" {
		return 0, false, nil
	}
	docs, err := in.st.Query(ctx, store.Query{Where: []store.Pred{store.Where(store.IDKey, tip)}, Find: []string{"type", "session", "depth"}})
	if err != nil {
		return 0, false, fmt.Errorf("session %s: reading its tip: %w", sid, err)
	}
	if len(docs) != 1 || asString(docs[0]["type"]) != commits.DocCommit || asString(docs[0]["session"]) != sid {
		return 0, false, nil
	}
	d := int64(asInt(docs[0]["depth"]))
	if d < from {
		return 0, false, nil
	}
	if ok, err := in.hasDepth(ctx, sid, d); err != nil || !ok {
		return 0, false, err
	}
	deeper, err := in.hasDepth(ctx, sid, d+1)
	if err != nil || deeper {
		return 0, false, err
	}
	return d, true, nil
}

// probeDepth is maxDepth without the Inspector's memory.
func (in *Inspector) probeDepth(ctx context.Context, sid string, from int64) (int64, error) {
	lo, step := from, int64(1)
	for {
		ok, err := in.hasDepth(ctx, sid, lo+step)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, step = lo+step, step*2
	}
	hi := lo + step // absent
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := in.hasDepth(ctx, sid, mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// longChain summarizes session sid's chain from its ends when it is at
// least MaxWhole deep, rooted in the session (a commit at depth 0), and
// its recorded calls were derived from it as it is now (their state
// document names its tip): the commit count is then the state's. ok is
// false otherwise, and the caller reads the chain whole.
func (in *Inspector) longChain(ctx context.Context, sid string) (c commits.Chain, ok bool, err error) {
	deep, err := in.hasDepth(ctx, sid, MaxWhole)
	if err != nil || !deep {
		return c, false, err
	}
	roots, err := in.atDepths(ctx, sid, []int64{0})
	if err != nil || len(roots) == 0 {
		return c, false, err // a fork: its chain starts in another session
	}
	st, err := in.st.Entity(ctx, recorded.StateID(sid), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	max, err := in.maxDepth(ctx, sid, MaxWhole)
	if err != nil {
		return c, false, err
	}
	tips, err := in.atDepths(ctx, sid, []int64{max})
	if err != nil {
		return c, false, err
	}
	ends := append(nodes(roots), nodes(tips)...)
	sort.SliceStable(ends, func(i, j int) bool { return ends[i].Created.Before(ends[j].Created) })
	tip := nodes(tips)
	sort.SliceStable(tip, func(i, j int) bool { return tip[i].Created.Before(tip[j].Created) })
	if len(tip) == 0 || asString(st["tip"]) != tip[len(tip)-1].ID {
		return c, false, nil // commits came since the calls were derived
	}
	c = commits.Chain{Session: sid, Commits: asInt(st["commits"]), First: ends[0].Created, Last: ends[len(ends)-1].Created, Tip: tip[len(tip)-1].ID}
	both := append(append([]store.Doc{}, roots...), tips...)
	sort.SliceStable(both, func(i, j int) bool { return asString(both[i]["created"]) < asString(both[j]["created"]) })
	for _, d := range both { // the latest provenance wins, as Chains takes it
		meta, _ := d["meta"].(map[string]any)
		for _, f := range []struct {
			dst *string
			key string
		}{{&c.Harness, "harness"}, {&c.Cwd, "cwd"}, {&c.Model, "model"}, {&c.Source, "source"}} {
			if v := asString(meta[f.key]); v != "" {
				*f.dst = v
			}
		}
	}
	return c, true, nil
}

// nodes decodes commit documents as graph nodes (no lanes).
func nodes(docs []store.Doc) []CommitNode {
	out := make([]CommitNode, 0, len(docs))
	for _, d := range docs {
		meta, _ := d["meta"].(map[string]any)
		n := CommitNode{ID: asString(d[store.IDKey]), Parent: asString(d["parent"]), Type: asString(d["commit_type"]),
			Trigger: asString(meta["trigger"]), Format: asString(d["format"]), Summary: asString(meta["summary"]),
			Depth: int64(asInt(d["depth"])), Messages: int64(asInt(meta["message_count"])), Tokens: int64(asInt(meta["token_count"]))}
		if t, err := store.ParseTime(asString(d["created"])); err == nil {
			n.Created = t
		}
		out = append(out, n)
	}
	return out
}

// CommitPage is one page of a session's commit graph: the commits at
// depths (Page-1)*CommitsPerPage up to the next page's, parents first,
// in lanes; a parent on an earlier page (or in another session) is an
// External node.
type CommitPage struct {
	Nodes []CommitNode `json:"commits"`
	// Page counts from 1 (the root's); Pages is the number of pages, from
	// the deepest commit's depth.
	Page  int `json:"page"`
	Pages int `json:"pages"`
}

// CommitsPage returns page p (from 1) of session sid's commit graph.
// It reads the page's commits and, for the page count, probes the
// chain's depth: its cost does not grow with the session.
func (in *Inspector) CommitsPage(ctx context.Context, sid string, p int) (*CommitPage, error) {
	if err := in.check(sid); err != nil {
		return nil, err
	}
	if p < 1 {
		return nil, fmt.Errorf("page %d: %w", p, ErrInvalid)
	}
	out := &CommitPage{Page: p}
	first := int64(p-1) * CommitsPerPage
	depths := make([]int64, CommitsPerPage)
	for i := range depths {
		depths[i] = first + int64(i)
	}
	docs, err := in.atDepths(ctx, sid, depths)
	if err != nil {
		return nil, err
	}
	ns := nodes(docs)
	sortNodes(ns)
	out.Nodes = lanes(ns)
	roots, err := in.atDepths(ctx, sid, []int64{0})
	if err != nil {
		return nil, err
	}
	switch {
	case len(roots) > 0:
		max, err := in.maxDepth(ctx, sid, 0)
		if err != nil {
			return nil, err
		}
		out.Pages = int(max/CommitsPerPage) + 1
	case len(ns) > 0:
		out.Pages = p // a fork, rooted in another session: pages are found by following Next
		if ok, err := in.hasDepth(ctx, sid, first+CommitsPerPage); err != nil {
			return nil, err
		} else if ok {
			out.Pages = p + 1
		}
	}
	return out, nil
}

// sortNodes orders nodes parents first: by depth, then time, then id.
func sortNodes(ns []CommitNode) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Depth != ns[j].Depth {
			return ns[i].Depth < ns[j].Depth
		}
		if !ns[i].Created.Equal(ns[j].Created) {
			return ns[i].Created.Before(ns[j].Created)
		}
		return ns[i].ID < ns[j].ID
	})
}

// summarizeRecorded fills a recorded session's summary: from its state
// document alone when its calls are too many to total (recordedCounts),
// else from every call (recordedSummary).
func (in *Inspector) summarizeRecorded(ctx context.Context, s *Session) error {
	if ok, err := in.recordedCounts(ctx, s); err != nil || ok {
		return err
	}
	return in.recordedSummary(ctx, s)
}

// recordedCounts reads a recorded session's call count, title and first
// prompt from its state document when its calls are too many to total on
// a page (more than MaxTotalled): ok is false when they are not, or when
// no current state says.
func (in *Inspector) recordedCounts(ctx context.Context, s *Session) (ok bool, err error) {
	st, current, err := recorded.ReadState(ctx, in.st, s.ID, s.Commits)
	if err != nil || !current || st.Calls <= maxTotalled || st.Totals != nil {
		return false, err // a state with totals totals any session (recordedSummary)
	}
	s.Calls, s.TotalsOmitted = st.Calls, true
	switch {
	case st.Title != "":
		s.Name = firstLine(st.Title, 80)
	case s.Name != "":
	case st.Prompt != "":
		s.Name = firstLine(st.Prompt, 80)
	}
	return true, nil
}

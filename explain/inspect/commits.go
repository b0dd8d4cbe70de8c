package inspect

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// CommitNode is one context commit of a session (session/commits, spec
// 002: the conversation's chain of deltas, compactions and snapshots), as
// a node of its graph: Lane is the branch it is drawn in (0 for the first
// child of each parent, a new lane for every further child), External
// marks a parent in another session (a fork's origin), shown by id only.
type CommitNode struct {
	ID       string    `json:"id"`
	Parent   string    `json:"parent,omitempty"`
	Type     string    `json:"type"`
	Trigger  string    `json:"trigger,omitempty"`
	Format   string    `json:"format,omitempty"`
	Summary  string    `json:"summary,omitempty"`
	Created  time.Time `json:"created"`
	Depth    int64     `json:"depth"`
	Messages int64     `json:"messages"`
	Tokens   int64     `json:"tokens"`
	Lane     int       `json:"lane"`
	External bool      `json:"external,omitempty"`
	// Children counts the commits of the session naming it as parent; more
	// than one is a branch.
	Children int `json:"children"`
}

// MaxCommits caps the commits a session's graph shows (the newest kept).
const MaxCommits = 2000

// Commits returns the context commits whose provenance names the session,
// parents before children (by depth, then time), with lanes assigned so
// that each branch has its own; a parent outside the session comes first
// as an External node. One query, without the commits' content. A chain
// at least MaxWhole deep and rooted in the session gives the commits of
// its CommitsPerPage deepest depths, read by depth (its deepest from the tip
// its recorded calls name, else by probing), never the whole chain: CommitsPage pages through the rest.
func (in *Inspector) Commits(ctx context.Context, sid string) ([]CommitNode, error) {
	if err := in.check(sid); err != nil {
		return nil, err
	}
	deep, err := in.hasDepth(ctx, sid, MaxWhole)
	if err != nil {
		return nil, err
	}
	var roots []store.Doc
	if deep {
		if roots, err = in.atDepths(ctx, sid, []int64{0}); err != nil {
			return nil, err
		}
	}
	if len(roots) > 0 {
		max, err := in.maxDepth(ctx, sid, MaxWhole)
		if err != nil {
			return nil, err
		}
		depths := make([]int64, 0, CommitsPerPage)
		for d := max - CommitsPerPage + 1; d <= max; d++ {
			depths = append(depths, d)
		}
		docs, err := in.atDepths(ctx, sid, depths)
		if err != nil {
			return nil, err
		}
		ns := nodes(docs)
		sortNodes(ns)
		if len(ns) > MaxCommits {
			ns = ns[len(ns)-MaxCommits:]
		}
		return lanes(ns), nil
	}
	docs, err := in.st.Query(ctx, store.Query{
		Where: []store.Pred{store.Where("type", commits.DocCommit), store.Where("session", sid)},
		// Trigger, summary and counts are nested under "meta" (session/commits:
		// no field index copies them).
		Find: []string{"parent", "commit_type", "format", "created", "depth", "meta"},
	})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading context commits: %w", sid, err)
	}
	var out []CommitNode
	for _, d := range docs {
		meta, _ := d["meta"].(map[string]any)
		n := CommitNode{ID: asString(d[store.IDKey]), Parent: asString(d["parent"]), Type: asString(d["commit_type"]),
			Trigger: asString(meta["trigger"]), Format: asString(d["format"]), Summary: asString(meta["summary"]),
			Depth: int64(asInt(d["depth"])), Messages: int64(asInt(meta["message_count"])), Tokens: int64(asInt(meta["token_count"]))}
		if t := asString(d["created"]); t != "" {
			if n.Created, err = store.ParseTime(t); err != nil {
				return nil, fmt.Errorf("context commit %s: created %q: %w", n.ID, t, err)
			}
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Depth != out[j].Depth {
			return out[i].Depth < out[j].Depth
		}
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > MaxCommits {
		out = out[len(out)-MaxCommits:]
	}
	return lanes(out), nil
}

// lanes orders nodes parents first and gives each branch a lane.
func lanes(ns []CommitNode) []CommitNode {
	idx := map[string]int{}
	for i, n := range ns {
		idx[n.ID] = i
	}
	var ext []CommitNode
	seen := map[string]bool{}
	for _, n := range ns {
		if _, ok := idx[n.Parent]; n.Parent != "" && !ok && !seen[n.Parent] {
			seen[n.Parent] = true
			ext = append(ext, CommitNode{ID: n.Parent, External: true, Depth: n.Depth - 1})
		}
	}
	ns = append(ext, ns...)
	idx = map[string]int{}
	used := 0
	for i := range ns {
		n := &ns[i]
		p, ok := idx[n.Parent]
		switch {
		case !ok:
			n.Lane = used
			used++
		case ns[p].Children == 0:
			n.Lane = ns[p].Lane
		default:
			n.Lane = used
			used++
		}
		if ok {
			ns[p].Children++
		}
		idx[n.ID] = i
	}
	return ns
}

package stats

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ctxstore/ctxstore/session/commits"
)

// BranchTag marks commits that repeat, as a branch of their own, lines a
// session's file chain already holds (an import's sub-agent and abandoned
// branch views): read once, through the file chain.
const BranchTag = "branch"

// Compute reads the commits of the scope from svc's store, decodes each
// commit's artifact to events with svc's format registry, and analyzes
// them. Per session, commits are read parents first (depth, then time);
// materialization snapshots, snapshots with a parent and commits tagged
// "branch" are skipped (harness/importer.Counted agrees), and a
// compaction commit's content (the summary replacing a prefix, which the
// session's events already hold) is counted as a compaction, not read as
// events. A content that does not decode is an error naming the commit.
func Compute(ctx context.Context, svc *commits.Service, o Options) (*Report, error) {
	cs, err := svc.ListCommits(ctx, o.Sessions)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	r := newReport(o)
	ranged := !o.From.IsZero() || !o.To.IsZero()
	// Sessions are analyzed one at a time: only one session's events are
	// held in memory.
	var cur *Input
	done := func() {
		if cur == nil {
			return
		}
		cur.Branches++ // a chain is one branch
		// With a time range, a session without events in it is out of
		// scope.
		if !ranged || len(cur.Events) > 0 || cur.CompactionCommits > 0 {
			r.add(analyzeSession(*cur, o), o)
		}
		cur = nil
	}
	children := map[string]int{}
	sessionOf := map[string]string{}
	for _, c := range cs {
		if c.Parent != "" {
			children[c.Parent]++
		}
		sessionOf[c.ID] = c.Session
	}
	for _, c := range cs {
		if cur == nil || cur.ID != c.Session {
			done()
			cur = &Input{ID: c.Session}
		}
		cur.Commits++
		if ps, ok := sessionOf[c.Parent]; c.Parent != "" && cur.ForkOf == "" && (!ok || ps != c.Session) {
			// The chain starts from another session's commit: a
			// sub-agent's lane or a fork.
			cur.ForkOf, cur.ForkOfSession = c.Parent, ps
		}
		if cur.Harness == "" {
			cur.Harness = c.Harness
		}
		if cur.Template == "" {
			cur.Template = c.Template
		}
		if children[c.ID] > 1 {
			cur.Branches += children[c.ID] - 1
		}
		// A snapshot repeats the chain above it (a cached materialization);
		// only a root snapshot (a conversation imported whole) holds events
		// of its own. importer.Counted says the same of imported chains.
		if c.SnapshotOf != "" || (c.Type == commits.Snapshot && c.Parent != "") || slices.Contains(c.Tags, BranchTag) {
			cur.Skipped++
			continue
		}
		if c.Type == commits.Compaction {
			if inRange(c.Created, o) {
				cur.CompactionCommits++
			}
			continue
		}
		f, ok := svc.Registry().Lookup(c.Format)
		if !ok || f.Decode == nil {
			cur.Undecoded++
			continue
		}
		b, err := svc.Content(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("stats: session %s: %w", c.Session, err)
		}
		evs, err := f.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("stats: session %s: commit %s (%s): %w", c.Session, c.ID, c.Format, err)
		}
		for _, e := range evs {
			t := e.Time
			if t.IsZero() {
				t = c.Created
			}
			if inRange(t, o) {
				cur.Events = append(cur.Events, e)
			}
		}
	}
	done()
	r.finish()
	return r, nil
}

// inRange tells whether t is in [o.From, o.To).
func inRange(t time.Time, o Options) bool {
	return (o.From.IsZero() || !t.Before(o.From)) && (o.To.IsZero() || t.Before(o.To))
}

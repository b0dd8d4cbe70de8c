package commits

import (
	"context"
	"fmt"
	"sort"

	"github.com/ctxstore/ctxstore/store"
)

// ListCommits returns the context commits of the given sessions (all
// sessions when none is given), parents before children: by session, then
// depth, then creation time, then id. One query, without the contents
// (Content reads them). Analytics (explain/stats) walk the chains from
// here; a caller limited to some sessions passes them, and no commit of
// another session is read.
func (s *Service) ListCommits(ctx context.Context, sessions []string) ([]*Commit, error) {
	q := store.Query{Where: []store.Pred{store.Where("type", DocCommit)}}
	if len(sessions) > 0 {
		vals := make([]any, len(sessions))
		for i, sid := range sessions {
			vals[i] = sid
		}
		q.Where = append(q.Where, store.Pred{Field: "session", Op: store.In, Values: vals})
	}
	docs, err := s.st.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("commits: listing: %w", err)
	}
	out := make([]*Commit, 0, len(docs))
	for _, d := range docs {
		c, err := fromDoc(d)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Session != b.Session:
			return a.Session < b.Session
		case a.Depth != b.Depth:
			return a.Depth < b.Depth
		case !a.Created.Equal(b.Created):
			return a.Created.Before(b.Created)
		}
		return a.ID < b.ID
	})
	return out, nil
}

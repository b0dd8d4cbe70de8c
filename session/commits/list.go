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

// ListDepths returns the commits of session sid whose depth is in [from,
// to), in ListCommits's order: a page of a long chain read without the
// rest (one query, the depths listed: a store's field index gives the
// candidates by depth, however many commits the session has).
func (s *Service) ListDepths(ctx context.Context, sid string, from, to int64) ([]*Commit, error) {
	depths := make([]any, 0, max(0, to-from))
	for d := from; d < to; d++ {
		depths = append(depths, d)
	}
	docs, err := s.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", DocCommit), store.Where("session", sid),
		{Field: "depth", Op: store.In, Values: depths}}})
	if err != nil {
		return nil, fmt.Errorf("commits: listing %s at depths %d..%d: %w", sid, from, to-1, err)
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
		case a.Depth != b.Depth:
			return a.Depth < b.Depth
		case !a.Created.Equal(b.Created):
			return a.Created.Before(b.Created)
		}
		return a.ID < b.ID
	})
	return out, nil
}

// NextDepth returns the depth of session sid's shallowest commit deeper
// than after (ok false: it has none).
func (s *Service) NextDepth(ctx context.Context, sid string, after int64) (depth int64, ok bool, err error) {
	docs, err := s.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", DocCommit), store.Where("session", sid),
		{Field: "depth", Op: store.Gt, Value: after}}, OrderBy: []store.Order{{Field: "depth"}}, Limit: 1, Find: []string{"depth"}})
	if err != nil || len(docs) == 0 {
		return 0, false, err
	}
	f, _ := store.Num(docs[0]["depth"])
	return int64(f), true, nil
}

// Contents reads the contents of commits cs, one query per 256 distinct
// contents: content hash -> bytes. A content the store does not hold, or
// cannot give back, is left out (Content then says why).
func (s *Service) Contents(ctx context.Context, cs []*Commit) (map[string][]byte, error) {
	out := map[string][]byte{}
	var hashes []any
	for _, c := range cs {
		if _, ok := out[c.Content]; !ok {
			out[c.Content] = nil
			hashes = append(hashes, c.Content)
		}
	}
	clear(out)
	for lo := 0; lo < len(hashes); lo += contentBatch {
		docs, err := s.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", DocContent),
			{Field: "sha256", Op: store.In, Values: hashes[lo:min(lo+contentBatch, len(hashes))]}}})
		if err != nil {
			return nil, fmt.Errorf("commits: reading contents: %w", err)
		}
		for _, d := range docs {
			if b, h, err := contentBytes(d); err == nil {
				out[h] = b
			}
		}
	}
	return out, nil
}

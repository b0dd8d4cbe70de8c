package bitemporal

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

// Values implements store.ValueLister on the field index: the next string
// the index holds for field after the last one listed (one index seek),
// kept when a visible document matching q holds it (a query that stops at
// the first such document, driven by the rows of the value or of a
// shorter predicate of q: driver, with first set), until limit are
// listed. Its cost follows the distinct values, not the documents:
// listing the sessions of a store whose one session has 500,000 commits
// reads one of them per session, and counts at most a few thousand
// index rows to choose how. A
// field the index does not hold, or one holding strings long enough to be
// indexed by prefix only, is answered by store.ValuesByQuery.
func (s *Store) Values(ctx context.Context, q store.Query, field, after string, limit int) ([]string, error) {
	probe := q
	probe.Find, probe.OrderBy, probe.Limit = []string{field}, nil, 0
	if err := probe.Validate(); err != nil {
		return nil, err
	}
	var long int
	if err := s.r.GetContext(ctx, &long, "SELECT count(*) FROM (SELECT 1 FROM fields WHERE field = ? AND kind = 'S' LIMIT 1)", field); err != nil {
		return nil, dbErr("values", "", err)
	}
	if !s.indexed.has(field) || long > 0 {
		return store.ValuesByQuery(ctx, s, q, field, after, limit)
	}
	vt, tx, err := s.resolve(ctx, s.r, "values", q.Basis)
	if err != nil {
		return nil, err
	}
	var out []string
	for limit <= 0 || len(out) < limit {
		var v string
		err := s.r.GetContext(ctx, &v, "SELECT value FROM fields WHERE field = ? AND kind = 's' AND value > ? ORDER BY value LIMIT 1", field, after)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, dbErr("values", "", err)
		}
		after = v
		where := append(append([]store.Pred{}, q.Where...), store.Where(field, v))
		conds, args, err := s.whereSQL(ctx, where, vt, tx, len(where)-1)
		if err != nil {
			return nil, err
		}
		from := "docs d"
		if f := fieldsCandidates(conds[0]); f != "" {
			// The driver's rows are read in order until the first match,
			// not gathered first as an IN list would be.
			from, conds[0] = "fields f CROSS JOIN docs d ON d.id = f.doc", f
		}
		var one int
		err = s.r.GetContext(ctx, &one, "SELECT 1 FROM "+from+" WHERE "+strings.Join(conds, " AND ")+" LIMIT 1", args...)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, dbErr("values", "", err)
		}
		out = append(out, v)
	}
	return out, nil
}

package store

import (
	"context"
	"slices"
)

// ValueLister is a store that lists the values a string field takes among
// the documents a query matches, a page at a time, at a cost that follows
// the values listed rather than the documents holding them: the sessions
// that have context commits, without reading every commit.
//
// Values returns the distinct strings that top-level field holds (the
// field's value, or each string element of an array) in the documents q
// matches (its Where and Basis; Find, OrderBy and Limit are ignored), each
// greater than after (bytewise; "" for all), ascending, at most limit of
// them (limit <= 0: all). Non-string values are not listed.
//
// Fallback when absent: ValuesByQuery, the same answer read from every
// matching document.
type ValueLister interface {
	Values(ctx context.Context, q Query, field, after string, limit int) ([]string, error)
}

// Values lists field's values as ValueLister says, through s's
// ValueLister or, lacking it, ValuesByQuery.
func Values(ctx context.Context, s Store, q Query, field, after string, limit int) ([]string, error) {
	if vl, ok := s.(ValueLister); ok {
		return vl.Values(ctx, q, field, after, limit)
	}
	return ValuesByQuery(ctx, s, q, field, after, limit)
}

// ValuesByQuery answers ValueLister.Values with one Query reading field
// from every document q matches: the reference answer, and the fallback.
func ValuesByQuery(ctx context.Context, s Store, q Query, field, after string, limit int) ([]string, error) {
	q.Find, q.OrderBy, q.Limit = []string{field}, nil, 0
	if err := q.Validate(); err != nil {
		return nil, err
	}
	docs, err := s.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	add := func(v any) {
		if str, ok := v.(string); ok && str > after && !seen[str] {
			seen[str] = true
			out = append(out, str)
		}
	}
	for _, d := range docs {
		if arr, ok := d[field].([]any); ok {
			for _, v := range arr {
				add(v)
			}
			continue
		}
		add(d[field])
	}
	slices.Sort(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

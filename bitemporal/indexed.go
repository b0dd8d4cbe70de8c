package bitemporal

import (
	"context"
	"fmt"
)

// indexSet is the set of top-level fields the field index holds rows for
// (the table indexed_fields, migration 00007). The portable query answers
// a predicate on any other field from the document itself (jsonPredSQL),
// so the set changes only how fast a query is, never its answer; it must
// only be accurate: a field in the set has rows for every document stored.
// Changing it is a migration, which fills the rows of a field it adds.
type indexSet struct {
	all    bool // '*': every field (stores indexed before 00007, tests)
	fields map[string]bool
}

// has reports whether field has field-index rows.
func (x indexSet) has(field string) bool { return x.all || x.fields[field] }

// filter keeps the rows of indexed fields.
func (x indexSet) filter(rows []fieldRow) []fieldRow {
	if x.all {
		return rows
	}
	kept := rows[:0]
	for _, r := range rows {
		if x.fields[r.field] {
			kept = append(kept, r)
		}
	}
	return kept
}

// loadIndexed reads the indexed fields on the writer connection.
func (s *Store) loadIndexed(ctx context.Context) error {
	var fields []string
	if err := s.w.SelectContext(ctx, &fields, "SELECT field FROM indexed_fields"); err != nil {
		return openErr(s.path, fmt.Errorf("reading the indexed fields: %w", err))
	}
	x := indexSet{fields: map[string]bool{}}
	for _, f := range fields {
		if f == "*" {
			x.all = true
		}
		x.fields[f] = true
	}
	s.indexed = x
	return nil
}

package bitemporal

import "context"

// IndexEveryField makes s's field index hold every top-level field (as
// stores did before migration 00007), so that the conformance suite, whose
// documents use their own field names, runs its queries through the index
// as well as on the documents. s must hold no documents yet.
func IndexEveryField(ctx context.Context, s *Store) error {
	if _, err := s.w.ExecContext(ctx, "INSERT OR IGNORE INTO indexed_fields (field) VALUES ('*')"); err != nil {
		return err
	}
	return s.loadIndexed(ctx)
}

package xtdb

import (
	"context"

	"github.com/ctxstore/ctxstore/store"
)

// Values implements store.ValueLister with one query reading the field
// of every matching document (store.ValuesByQuery): XTDB has no index
// this could seek in from outside its query engine, and it is the
// reference the SQLite backend's index walk is checked against.
func (s *Store) Values(ctx context.Context, q store.Query, field, after string, limit int) ([]string, error) {
	return store.ValuesByQuery(ctx, s, q, field, after, limit)
}

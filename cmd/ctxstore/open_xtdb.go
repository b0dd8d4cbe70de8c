package main

import (
	"context"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
)

// openXTDB opens the XTDB 1.x server at baseURL (http:// or https://).
func openXTDB(ctx context.Context, baseURL string) (store.Store, error) {
	return xtdb.Open(ctx, baseURL, xtdb.Options{})
}

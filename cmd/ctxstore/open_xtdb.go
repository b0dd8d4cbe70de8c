package main

import (
	"context"
	"time"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
)

// openXTDB opens the XTDB 1.x server at baseURL (http:// or https://);
// timeout bounds each request (0: the client's default).
func openXTDB(ctx context.Context, baseURL string, timeout time.Duration) (store.Store, error) {
	return xtdb.Open(ctx, baseURL, xtdb.Options{RequestTimeout: timeout})
}

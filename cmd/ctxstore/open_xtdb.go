package main

import (
	"context"
	"errors"

	"github.com/ctxstore/ctxstore/store"
)

// openXTDB opens the XTDB 1.x server at baseURL (http:// or https://).
// This build has no XTDB client; the file is replaced when package xtdb
// lands.
func openXTDB(ctx context.Context, baseURL string) (store.Store, error) {
	return nil, errors.New("XTDB backend: not available in this build")
}

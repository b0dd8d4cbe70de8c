package xtdb_test

import (
	"testing"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/store/storetest"
)

// TestSearch runs the search suite on a real node with XTDB's Lucene
// module and ctxstore's indexer.
func TestSearch(t *testing.T) {
	storetest.RunSearch(t, storetest.Harness{Name: "xtdb", New: func(t *testing.T) store.Store { return open(t) }})
}

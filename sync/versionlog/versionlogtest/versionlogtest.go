// Package versionlogtest holds helpers shared by the version log's own tests
// and the end-to-end tests.
package versionlogtest

import (
	"context"
	"testing"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// Mapping reads source tx -> target tx from dst's cursor for sourceID,
// failing t on a source tx applied twice.
func Mapping(t testing.TB, dst store.Store, sourceID string) map[int64]int64 {
	t.Helper()
	maps, err := versionlog.Mappings(context.Background(), dst, sourceID)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[int64]int64, len(maps))
	for _, mp := range maps {
		if _, dup := m[mp.Source.ID]; dup {
			t.Fatalf("source tx %d was applied twice", mp.Source.ID)
		}
		m[mp.Source.ID] = mp.Target.ID
	}
	return m
}

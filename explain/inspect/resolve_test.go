package inspect_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/store"
)

// TestResolveObject: a whole id is itself, a prefix of one id is that id,
// a prefix of several is an AmbiguousError listing them, and a prefix of
// none is returned as given.
func TestResolveObject(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	var ops []store.Op
	for _, id := range []string{"3f9a1c2b4d5e6f70aaaa", "3f9a1c2b4d5e6f70bbbb", "77aa00"} {
		ops = append(ops, store.Op{Kind: store.OpPut, ID: id, Doc: store.Doc{store.IDKey: id, "v": 1}})
	}
	if _, err := se.Store.Submit(ctx, ops); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"77aa00", "77aa00"}, {"77a", "77aa00"}, {"3f9a1c2b4d5e6f70a", "3f9a1c2b4d5e6f70aaaa"}, {"zz", "zz"},
	} {
		got, err := inspect.ResolveObject(ctx, se.Store, c.in)
		if err != nil || got != c.want {
			t.Errorf("ResolveObject(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	_, err := inspect.ResolveObject(ctx, se.Store, "3f9a1c2b4d5e6f70")
	var amb *inspect.AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 || amb.Kind != "object" {
		t.Fatalf("an ambiguous prefix: %v", err)
	}
}

// TestDefaultPrices: the inspector's default prices are the price
// table's for DefaultModel: $3 per million input tokens, writes 1.25x,
// reads 0.1x.
func TestDefaultPrices(t *testing.T) {
	p := inspect.DefaultPrices()
	if math.Abs(p.InputPerMTok-3) > 1e-9 || math.Abs(p.Write-1.25) > 1e-9 || math.Abs(p.Read-0.1) > 1e-9 {
		t.Fatalf("default prices %+v", p)
	}
}

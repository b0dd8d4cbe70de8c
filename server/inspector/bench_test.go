package inspector_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
)

// BenchmarkCallPage150k renders the call page of a call whose context
// holds 150,000 tokens (the goal: within 1 s), against
// assemble.Rebuild of the same call alone, the floor it builds on.
// docs/benchmarks.md records the figures.
func BenchmarkCallPage150k(b *testing.B) {
	se := storetestenv.New(b, storetestenv.SQLite)
	l := inspecttest.Big(b, se.Store, "big", 150000)
	n, err := assemble.Calls(context.Background(), se.Store, "big")
	if err != nil {
		b.Fatal(err)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		b.Fatal(err)
	}
	path := fmt.Sprintf("/inspect/s/big/c/%d", n)
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			if r := httptestGet(h, path); r.code != 200 {
				b.Fatalf("%d", r.code)
			}
		}
		r := httptestGet(h, path)
		b.ReportMetric(float64(len(r.body)), "html_bytes")
	})
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			c, err := assemble.Rebuild(context.Background(), se.Store, "big", n)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(c.Tokens), "tokens")
		}
	})
	_ = l
}

package bitemporal

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// putMemory decodes a document of about size bytes as put does
// (store.DecodeDoc, store.Normalize) and writes it, and returns the bytes
// allocated per byte of its JSON.
func putMemory(tb testing.TB, size int) float64 {
	tb.Helper()
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(tb.TempDir(), "s.db"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %d of a \"document\" with a tab\t and some words %s\n", i, strings.Repeat("x", i%50))
	}
	data, err := json.Marshal(map[string]any{"xt/id": "big", "type": "doc", "content": b.String(), "n": 1, "tags": []any{"a", "b"}})
	if err != nil {
		tb.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	doc, err := store.DecodeDoc(data)
	if err != nil {
		tb.Fatal(err)
	}
	ops, err := store.Normalize([]store.Op{{Kind: store.OpPut, Doc: doc}})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, st, ops); err != nil {
		tb.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.TotalAlloc-m0.TotalAlloc) / float64(len(data))
}

// TestPutMemoryBounded: putting a 4 MiB document allocates at most a
// fixed multiple of its JSON (about 4 now; 33 when the canonical form was
// made by encoding/json and re-parsed, copied to a string, and the new
// row inflated again by the search triggers).
func TestPutMemoryBounded(t *testing.T) {
	if a := putMemory(t, 4<<20); a > 10 {
		t.Errorf("put allocates %.1f bytes per byte of the document, over 10", a)
	} else {
		t.Logf("put: %.1f bytes allocated per byte of the document", a)
	}
}

// BenchmarkPutMemory reports the bytes a put of a 16 MiB document
// allocates per byte of its JSON (alloc-B/body-B):
//
//	go test -run '^$' -bench PutMemory -benchtime 1x ./bitemporal/
func BenchmarkPutMemory(b *testing.B) {
	var a float64
	for range b.N {
		a = putMemory(b, 16<<20)
	}
	b.ReportMetric(a, "alloc-B/body-B")
}

package tokens_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tokens"
)

var _ assemble.Tokenizer = (*tokens.Tokenizer)(nil)

func TestCounts(t *testing.T) {
	o200k, cl100k := tokens.Default(), must(t, tokens.Cl100kBase)
	if o200k.Name() != tokens.O200kBase || cl100k.Name() != tokens.Cl100kBase {
		t.Fatalf("names %q %q", o200k.Name(), cl100k.Name())
	}
	// Counts cross-checked with an independent implementation
	// (github.com/pkoukk/tiktoken-go, EncodeOrdinary, with the
	// vocabulary files of tiktoken-go-loader).
	for _, c := range []struct {
		text         string
		o200k, cl100 int
	}{
		{"", 0, 0},
		{"hello world", 2, 2},
		{"tiktoken is great!", 6, 6},
		{"func main() {\n\tfmt.Println(\"hi\")\n}\n", 10, 10},
		{"<|endoftext|>", 7, 7}, // special-token text counts as plain text
		{"日本語のテキスト", 6, 8},
		{"\xff\xfe", 1, 1}, // invalid UTF-8: two U+FFFD
	} {
		if got := o200k.Count(c.text); got != c.o200k {
			t.Errorf("o200k_base %q: %d tokens, want %d", c.text, got, c.o200k)
		}
		if got := cl100k.Count(c.text); got != c.cl100 {
			t.Errorf("cl100k_base %q: %d tokens, want %d", c.text, got, c.cl100)
		}
	}
	if _, err := tokens.New("p50k_base"); err == nil {
		t.Fatal("an encoding that is not offered was accepted")
	}
}

// Many goroutines counting the same texts get the serial counts.
func TestConcurrentDeterministic(t *testing.T) {
	tk := tokens.Default()
	texts := strings.Split(corpus(t), "\n\n")
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = tk.Count(s)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := tokens.Default() // shares the codec
			for i := range texts {
				j := (i + g*7) % len(texts)
				if got := other.Count(texts[j]); got != want[j] {
					t.Errorf("goroutine %d, text %d: %d tokens, want %d", g, j, got, want[j])
					return
				}
			}
		}()
	}
	wg.Wait()
}

// corpus is real project text: this repository's architecture and context
// manager documents (prose, tables, code) and a Go source file.
func corpus(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	for _, p := range []string{"../../docs/architecture.md", "../../docs/context-manager.md", "../../session/session.go"} {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(data)
		b.WriteString("\n\n")
	}
	return b.String()
}

func must(t *testing.T, enc string) *tokens.Tokenizer {
	t.Helper()
	tk, err := tokens.New(enc)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// BenchmarkCount counts this repository's docs and a Go file (about 70 KB)
// with each encoding and with assemble.BytesTokenizer in the same loop.
// x-bytes is the BPE tokenizer's time over BytesTokenizer's; tokens/bytes4
// is the BPE count over the ⌈bytes/4⌉ estimate.
//
//	go test -run '^$' -bench Count -benchtime 20x ./context/tokens/
func BenchmarkCount(b *testing.B) {
	text := corpus(b)
	var bytesTok assemble.BytesTokenizer
	for _, enc := range []string{tokens.O200kBase, tokens.Cl100kBase} {
		b.Run(enc, func(b *testing.B) {
			tk, err := tokens.New(enc)
			if err != nil {
				b.Fatal(err)
			}
			tk.Count("warm up")
			b.SetBytes(int64(len(text)))
			var bpe, est int
			var bpeNs, estNs int64
			for i := 0; i < b.N; i++ {
				t0 := nanotime()
				bpe = tk.Count(text)
				t1 := nanotime()
				est = bytesTok.Count(text)
				t2 := nanotime()
				bpeNs += t1 - t0
				estNs += t2 - t1
			}
			b.ReportMetric(float64(bpeNs)/float64(max(estNs, 1)), "x-bytes")
			b.ReportMetric(float64(bpe)/float64(est), "tokens/bytes4")
			b.ReportMetric(float64(bpeNs)/float64(b.N)/1e6, "ms/count")
		})
	}
}

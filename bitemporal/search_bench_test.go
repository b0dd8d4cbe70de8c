package bitemporal_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

// Full-text search benchmarks (docs/benchmarks.md, "Search"). The corpus
// is synthetic text: 40 words per document drawn from a 20,000-word
// vocabulary with a Zipf distribution (s = 1.1), like prose and code,
// written 1,000 documents per transaction.

var vocab = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 20000)
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := range out {
		n := 3 + r.IntN(8)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteByte(letters[r.IntN(len(letters))])
		}
		out[i] = b.String() + strconv.Itoa(i%10) // unique words
	}
	return out
}()

type corpus struct {
	r *rand.Rand
	z *rand.Zipf
}

func newCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, 7))
	return &corpus{r: r, z: rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))}
}

func (c *corpus) text(words int) string {
	var b strings.Builder
	for i := 0; i < words; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[c.z.Uint64()])
	}
	return b.String()
}

// searchDoc is a document of a searchable kind (typ "note") or, for the
// baseline without the index, of a kind the index leaves out.
func searchDoc(i int, typ, text string) store.Doc {
	return store.Doc{store.IDKey: "n" + strconv.Itoa(i), "type": typ, "title": "doc " + strconv.Itoa(i), "content": text}
}

func fill(b testing.TB, s *bitemporal.Store, n int, typ string, seed uint64) (textBytes int64) {
	ctx := context.Background()
	c := newCorpus(seed)
	for i := 0; i < n; i += 1000 {
		var ops []store.Op
		for j := i; j < min(i+1000, n); j++ {
			t := c.text(40)
			textBytes += int64(len(t))
			ops = append(ops, store.Put(searchDoc(j, typ, t)))
		}
		if _, err := s.Submit(ctx, ops); err != nil {
			b.Fatal(err)
		}
	}
	return textBytes
}

// BenchmarkSearchLatency: queries over CTXSTORE_SEARCH_BENCH_N (default
// 100,000; docs/benchmarks.md records 1,000,000) indexed documents; one,
// two and three words drawn from the same distribution, and a rare word.
// Reports p50 and p99 in milliseconds. The store is built once per N in
// a cache directory (CTXSTORE_SEARCH_BENCH_DIR, default a temp dir).
func BenchmarkSearchLatency(b *testing.B) {
	n := 100_000
	if v := os.Getenv("CTXSTORE_SEARCH_BENCH_N"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	dir := os.Getenv("CTXSTORE_SEARCH_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("search-%d.db", n))
	ctx := context.Background()
	_, statErr := os.Stat(path)
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if statErr != nil {
		start := time.Now()
		fill(b, s, n, "note", 1)
		b.Logf("built %d documents in %v", n, time.Since(start))
	}
	c := newCorpus(99)
	queries := make([]string, 200)
	for i := range queries {
		switch i % 4 {
		case 0:
			queries[i] = c.text(1)
		case 1:
			queries[i] = c.text(2)
		case 2:
			queries[i] = c.text(3)
		default:
			queries[i] = vocab[len(vocab)-1-i] // rare
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		t0 := time.Now()
		if _, err := s.Search(ctx, store.SearchQuery{Text: q, Limit: 20}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(float64(n), "docs")
}

// BenchmarkIndexingOverhead writes the same documents twice in one run:
// as notes (indexed: the triggers add search units and FTS5 entries in the
// write's transaction) and as a kind the index leaves out (the triggers
// run but add nothing). Reports the ratio "x-unindexed" and, from the
// first run, the index's size against the text it covers.
func BenchmarkIndexingOverhead(b *testing.B) {
	const n = 20_000
	var indexed, plain time.Duration
	var ratioSize float64
	for i := 0; i < b.N; i++ {
		for _, typ := range []string{"session_chunk", "note"} {
			dir := b.TempDir()
			s, err := bitemporal.Open(context.Background(), filepath.Join(dir, "s.db"), bitemporal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			text := fill(b, s, n, typ, uint64(i+1))
			d := time.Since(t0)
			if typ == "note" {
				indexed += d
				if ratioSize == 0 {
					ratioSize = float64(indexSize(b, filepath.Join(dir, "s.db"))) / float64(text)
				}
			} else {
				plain += d
			}
			s.Close()
		}
	}
	b.ReportMetric(float64(indexed)/float64(plain), "x-unindexed")
	b.ReportMetric(ratioSize, "index-bytes/text-byte")
	b.ReportMetric(float64(indexed.Microseconds())/float64(b.N*n), "us/doc-indexed")
}

// indexSize is the bytes of the search tables' pages (search_units and
// the FTS5 shadow tables), from SQLite's dbstat.
func indexSize(b testing.TB, path string) int64 {
	db := openRawAt(b, path)
	defer db.db.Close()
	var size int64
	if err := db.db.QueryRow(`SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'search%'`).Scan(&size); err != nil {
		b.Fatalf("dbstat: %v", err)
	}
	return size
}

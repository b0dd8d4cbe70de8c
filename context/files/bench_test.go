package files

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
)

// BenchmarkReindexUnchanged re-indexes 10,000 unchanged text files (sizes
// 1-16 KiB, ~85 MB in all, page cache warm) against `sha256sum` of the same
// files in the same loop: the indexing protocol's floor is one hash of the
// bytes, which is what sha256sum does. Two passes per iteration: by the
// indexer that wrote the versions (one EntityTx per file: the version it
// remembers is still the visible one), and by a new indexer, as in a new
// process ("cold": an EntityTx and a read of the stored document, decoded
// and verified, per file), and as a session resuming in a new process does
// ("resume": LookupTracked's batched metadata queries, then one hash per
// file, no per-file store read). x-sha256sum and x-sha256sum-cold are the ratios
// to sha256sum's time; ms-* the absolute figures per pass. The store is
// SQLite on a temp file.
// CTXSTORE_BENCH_FILES changes the count.
//
//	go test -run '^$' -bench ReindexUnchanged -benchtime 5x -count 3 ./context/files/
func BenchmarkReindexUnchanged(b *testing.B) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		b.Skip("sha256sum not on PATH")
	}
	n := 10_000
	if v := os.Getenv("CTXSTORE_BENCH_FILES"); v != "" {
		fmt.Sscan(v, &n)
	}
	ctx := context.Background()
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	var paths, names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("d%02d/f%05d.go", i%100, i)
		p := filepath.Join(dir, name)
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, sourceLike(rng, 1024+rng.IntN(15*1024)), 0o644); err != nil {
			b.Fatal(err)
		}
		paths, names = append(paths, p), append(names, name)
	}
	st, err := bitemporal.Open(ctx, filepath.Join(b.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	res, err := NewResolver(ResolverOptions{DefaultID: "fs-bench"})
	if err != nil {
		b.Fatal(err)
	}
	ix := NewIndexer(st, res, 0)
	for _, p := range paths {
		if _, err := ix.Index(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	shaArgs := append([]string{"--"}, names...)
	pass := func(ix *Indexer) time.Duration {
		t0 := time.Now()
		for _, p := range paths {
			r, err := ix.Index(ctx, p)
			if err != nil || r.Outcome != Unchanged {
				b.Fatalf("%s: %v %v", p, r.Outcome, err)
			}
		}
		return time.Since(t0)
	}
	var ids []string
	for _, p := range paths {
		id, err := ix.ObjectID(p)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	// resume is what a session resuming in a new process pays
	// (tools.Resume): a new indexer, the tracked files' metadata in batched
	// queries, then one hash per unchanged file.
	resume := func() time.Duration {
		t0 := time.Now()
		tracked, err := LookupTracked(ctx, st, ids)
		if err != nil || len(tracked) != n {
			b.Fatalf("lookup: %d tracked, %v", len(tracked), err)
		}
		rs, err := NewIndexer(st, res, 0).ReconcileTracked(ctx, tracked)
		if err != nil || len(rs) != n {
			b.Fatalf("reconcile: %d results, %v", len(rs), err)
		}
		for _, r := range rs {
			if r.Outcome != Unchanged {
				b.Fatalf("%s: %v", r.Path, r.Outcome)
			}
		}
		return time.Since(t0)
	}
	var ixTime, coldTime, resumeTime, shaTime time.Duration
	// CPU time too: on a machine shared with other work, wall times swing
	// with the load, CPU times much less (resume hashes on every core, so
	// its wall time can be below its CPU time; sha256sum uses one).
	var resumeCPU, shaCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ixTime += pass(ix)
		coldTime += pass(NewIndexer(st, res, 0))
		c0 := processCPU()
		resumeTime += resume()
		resumeCPU += processCPU() - c0
		t1 := time.Now()
		cmd := exec.Command("sha256sum", shaArgs...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if c := strings.Count(string(out), "\n"); c != n {
			b.Fatalf("sha256sum hashed %d files", c)
		}
		shaTime += t2.Sub(t1)
		shaCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.StopTimer()
	b.ReportMetric(float64(ixTime)/float64(shaTime), "x-sha256sum")
	b.ReportMetric(float64(coldTime)/float64(shaTime), "x-sha256sum-cold")
	b.ReportMetric(float64(resumeTime)/float64(shaTime), "x-sha256sum-resume")
	b.ReportMetric(float64(resumeTime.Milliseconds())/float64(b.N), "ms-resume")
	if shaCPU > 0 && resumeCPU > 0 {
		b.ReportMetric(float64(resumeCPU)/float64(shaCPU), "x-sha256sum-resume-cpu")
	}
	b.ReportMetric(float64(ixTime.Milliseconds())/float64(b.N), "ms-reindex")
	b.ReportMetric(float64(coldTime.Milliseconds())/float64(b.N), "ms-cold")
	b.ReportMetric(float64(shaTime.Milliseconds())/float64(b.N), "ms-sha256sum")
}

// sourceLike returns n bytes of text that looks like Go source.
func sourceLike(rng *rand.Rand, n int) []byte {
	words := []string{"func", "return", "if", "err", "!=", "nil", "{", "}", "ctx", "store", "index", "package", "x", ":=", "for", "range", "\n\t", "\n"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return []byte(b.String()[:n])
}

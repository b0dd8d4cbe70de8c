package importer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// bigTranscript writes a Claude Code transcript of about mb megabytes:
// the largest dataset file repeated, each copy under another session id
// and uuids (so no copy shares content with another).
func bigTranscript(b *testing.B, mb int) string {
	b.Helper()
	src := filepath.Join(datasets.Dir(b), "claude-code", "attio-mcp-server__1ff6f4ee__c7428042.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	for i := 0; out.Len() < mb<<20; i++ {
		c := bytes.ReplaceAll(data, []byte("c7428042-d9a9"), []byte(fmt.Sprintf("c7428042-%04x", i)))
		c = bytes.ReplaceAll(c, []byte(`"uuid":"`), []byte(fmt.Sprintf(`"uuid":"%d-`, i)))
		c = bytes.ReplaceAll(c, []byte(`"parentUuid":"`), []byte(fmt.Sprintf(`"parentUuid":"%d-`, i)))
		out.Write(c)
	}
	p := filepath.Join(b.TempDir(), fmt.Sprintf("big-%dmb.jsonl", mb))
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func openStore(b *testing.B) *bitemporal.Store {
	st, err := bitemporal.Open(context.Background(), filepath.Join(b.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkImport compares importing a 10 MB transcript into a new SQLite
// store with reading and parsing it alone (the transcript reader replay
// uses), and re-importing it unchanged with hashing it; it reports the
// peak heap of each (docs/benchmarks.md).
func BenchmarkImport(b *testing.B) {
	for _, mb := range []int{2, 10} {
		path := bigTranscript(b, mb)
		fi, _ := os.Stat(path)
		b.Run(fmt.Sprintf("parse/%dMB", mb), func(b *testing.B) {
			b.SetBytes(fi.Size())
			peak := watchHeap()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := transcripttest.ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(peak()), "peak-heap-B")
		})
		b.Run(fmt.Sprintf("import/%dMB", mb), func(b *testing.B) {
			b.SetBytes(fi.Size())
			peak := watchHeap()
			var cpu int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				st := openStore(b)
				im := importer.New(st, importer.Options{})
				b.StartTimer()
				c0 := cpuTime()
				res, err := im.ImportFile(context.Background(), path)
				cpu += cpuTime() - c0
				if err != nil || res.Status != importer.Imported {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(peak()), "peak-heap-B")
		})
		b.Run(fmt.Sprintf("hash/%dMB", mb), func(b *testing.B) {
			b.SetBytes(fi.Size())
			cpu := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op") }()
			for i := 0; i < b.N; i++ {
				f, _ := os.Open(path)
				h := sha256.New()
				io.Copy(h, f)
				f.Close()
				h.Sum(nil)
			}
		})
		b.Run(fmt.Sprintf("reimport-unchanged/%dMB", mb), func(b *testing.B) {
			st := openStore(b)
			im := importer.New(st, importer.Options{})
			if _, err := im.ImportFile(context.Background(), path); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
			b.ResetTimer()
			cpu := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op") }()
			for i := 0; i < b.N; i++ {
				res, err := im.ImportFile(context.Background(), path)
				if err != nil || res.Status != importer.Unchanged {
					b.Fatal(err, res.Status)
				}
			}
		})
	}
}

// watchHeap samples the heap in use until the returned function is
// called, which returns the peak seen.
func watchHeap() func() uint64 {
	runtime.GC()
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// cpuTime is the process's CPU time (user and system) in nanoseconds: on
// a shared machine under load, wall times vary far more than CPU times.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

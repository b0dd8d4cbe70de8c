package inspector_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	hrecorded "github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// BenchmarkCallPage150k renders the call page of a call whose context
// holds 150,000 tokens (the goal: within 1 s on this machine) and,
// in the same loop, assemble.Rebuild of the same call alone, the floor the
// page builds on: page_ms, rebuild_ms and x-rebuild (page / rebuild).
// docs/benchmarks.md records the figures.
func BenchmarkCallPage150k(b *testing.B) {
	se := storetestenv.New(b, storetestenv.SQLite)
	inspecttest.Big(b, se.Store, "big", 150000)
	ctx := context.Background()
	n, err := assemble.Calls(ctx, se.Store, "big")
	if err != nil {
		b.Fatal(err)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		b.Fatal(err)
	}
	path := fmt.Sprintf("/inspect/s/big/c/%d", n)
	var page, rebuild time.Duration
	tokens, html := 0, 0
	for b.Loop() {
		t0 := time.Now()
		c, err := assemble.Rebuild(ctx, se.Store, "big", n)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		r := httptestGet(h, path)
		if r.code != 200 {
			b.Fatalf("%d", r.code)
		}
		page += time.Since(t1)
		rebuild += t1.Sub(t0)
		tokens, html = c.Tokens, len(r.body)
	}
	k := float64(b.N)
	b.ReportMetric(float64(page.Milliseconds())/k, "page_ms")
	b.ReportMetric(float64(rebuild.Milliseconds())/k, "rebuild_ms")
	b.ReportMetric(float64(page)/float64(rebuild), "x-rebuild")
	b.ReportMetric(float64(tokens), "tokens")
	b.ReportMetric(float64(html), "html_bytes")
}

// BenchmarkPagingPage renders the paging page of a 2,000-call session,
// which reads every call record's items (one query), beside the session
// page of the same session, which reads none: paging_ms, session_ms and
// x-session (paging / session), measured in the same loop.
// docs/benchmarks.md records the figures.
func BenchmarkPagingPage(b *testing.B) {
	se := storetestenv.New(b, storetestenv.SQLite)
	l := inspecttest.NewLive(b, se.Store, "long")
	for i := range 2000 {
		if i%10 == 0 {
			l.Turn("next step")
		}
		l.Bash("step", "done\n")
		l.Call(5 * time.Second)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		b.Fatal(err)
	}
	var paging, session time.Duration
	for b.Loop() {
		t0 := time.Now()
		if r := httptestGet(h, "/inspect/s/long/paging"); r.code != 200 {
			b.Fatalf("paging page: %d", r.code)
		}
		t1 := time.Now()
		if r := httptestGet(h, "/inspect/s/long"); r.code != 200 {
			b.Fatalf("session page: %d", r.code)
		}
		paging += t1.Sub(t0)
		session += time.Since(t1)
	}
	k := float64(b.N)
	b.ReportMetric(float64(paging.Milliseconds())/k, "paging_ms")
	b.ReportMetric(float64(session.Milliseconds())/k, "session_ms")
	b.ReportMetric(float64(paging)/float64(session), "x-session")
}

// BenchmarkRecordedPages500k renders, over one recorded session of
// 500,000 context commits (inspecttest.Recorded: a call every 5, 100,000
// calls stored as an import stores them; CTXSTORE_BENCH_COMMITS sets
// another size), the sessions page, the session's first page and a page
// deep in it, and the pages of call 10 and of the middle call (whose
// request holds every message before it)
// (CTXSTORE_BENCH_DB names a store file to build once and reuse):
// index_ms, session_ms and deep_ms per page, cpu_ms/page and
// alloc_mb/page (the process's CPU time and Go allocations per page of
// the three), peak_heap_mb, the most Go heap in use while they render
// above what was in use before (sampled every millisecond), and
// peak_rss_mb, the process's peak resident memory while they render (the
// memory building kept is given back and the peak reset first); for the
// call pages call_ms and mid_call_ms, call_cpu_ms/page,
// call_alloc_mb/page, call_peak_heap_mb and call_peak_rss_mb, measured
// apart. docs/benchmarks.md records the figures.
func BenchmarkRecordedPages500k(b *testing.B) {
	n := 500000
	if v, err := strconv.Atoi(os.Getenv("CTXSTORE_BENCH_COMMITS")); err == nil && v > 0 {
		n = v
	}
	var st store.Store
	if path := os.Getenv("CTXSTORE_BENCH_DB"); path != "" {
		// A store file kept between runs: built once, then only the
		// pages are timed.
		db, err := bitemporal.Open(context.Background(), path, bitemporal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		st = db
	} else {
		st = storetestenv.New(b, storetestenv.SQLite).Store
	}
	state, ok, err := hrecorded.ReadState(context.Background(), st, "big", -1)
	if err != nil {
		b.Fatal(err)
	} else if !ok {
		t0 := time.Now()
		inspecttest.Recorded(b, st, "big", n, 5, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		b.Logf("built %d commits in %v", n, time.Since(t0).Round(time.Second))
		if state, _, err = hrecorded.ReadState(context.Background(), st, "big", -1); err != nil {
			b.Fatal(err)
		}
	}
	h, err := inspector.New(inspector.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	deep := fmt.Sprintf("/inspect/s/big?page=%d", n/inspect.CommitsPerPage/2)
	call10, mid := "/inspect/s/big/c/10", fmt.Sprintf("/inspect/s/big/c/%d", max(1, state.Calls/2))
	debug.FreeOSMemory() // what building kept is given back, so the peak below is the pages'
	resetPeakRSS(b)
	b.ResetTimer()
	type page struct {
		path string
		d    *time.Duration
	}
	// measure renders pages, adding their CPU time and allocations, and
	// returns the peak heap and resident memory while they render.
	measure := func(ps []page, cpu *time.Duration, alloc *uint64) (heap uint64, rss float64) {
		debug.FreeOSMemory() // what the pages before kept is given back
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		resetPeakRSS(b)
		a0 := allocated()
		stop := sampleHeap()
		for _, p := range ps {
			t, c := time.Now(), cpuTime(b)
			if r := httptestGet(h, p.path); r.code != 200 {
				b.Fatalf("%s: %d", p.path, r.code)
			}
			*p.d += time.Since(t)
			*cpu += cpuTime(b) - c
		}
		heap = stop()
		heap -= min(heap, ms.HeapAlloc)
		*alloc += allocated() - a0
		return heap, peakRSSMB(b)
	}
	var index, first, mid0, c10, cmid, cpu, ccpu time.Duration
	var alloc, calloc, peakHeap, cpeakHeap uint64
	var rss, crss float64
	for b.Loop() {
		hp, r := measure([]page{{"/inspect/", &index}, {"/inspect/s/big", &first}, {deep, &mid0}}, &cpu, &alloc)
		peakHeap, rss = max(peakHeap, hp), max(rss, r)
		hp, r = measure([]page{{call10, &c10}, {mid, &cmid}}, &ccpu, &calloc)
		cpeakHeap, crss = max(cpeakHeap, hp), max(crss, r)
	}
	k := float64(b.N)
	b.ReportMetric(float64(index.Milliseconds())/k, "index_ms")
	b.ReportMetric(float64(first.Milliseconds())/k, "session_ms")
	b.ReportMetric(float64(mid0.Milliseconds())/k, "deep_ms")
	b.ReportMetric(float64(cpu.Milliseconds())/k/3, "cpu_ms/page")
	b.ReportMetric(float64(alloc)/k/3/1e6, "alloc_mb/page")
	b.ReportMetric(float64(peakHeap)/1e6, "peak_heap_mb")
	b.ReportMetric(rss, "peak_rss_mb")
	b.ReportMetric(float64(c10.Milliseconds())/k, "call_ms")
	b.ReportMetric(float64(cmid.Milliseconds())/k, "mid_call_ms")
	b.ReportMetric(float64(ccpu.Milliseconds())/k/2, "call_cpu_ms/page")
	b.ReportMetric(float64(calloc)/k/2/1e6, "call_alloc_mb/page")
	b.ReportMetric(float64(cpeakHeap)/1e6, "call_peak_heap_mb")
	b.ReportMetric(crss, "call_peak_rss_mb")
}

// allocated is the Go heap allocated so far, in bytes.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap samples the Go heap in use every millisecond until the
// function it returns is called, which returns the most seen.
func sampleHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var most uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			most = max(most, s[0].Value.Uint64())
			select {
			case <-done:
				peak <- most
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-peak
	}
}

// cpuTime is the CPU time the process has used (user and system): a
// page's cost on a machine other work shares.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the process's peak resident set size (Linux:
// writing 5 to /proc/self/clear_refs).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS here: %v", err)
	}
}

// peakRSSMB reads the process's peak resident set size (VmHWM) in MB.
func peakRSSMB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for l := range strings.SplitSeq(string(raw), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

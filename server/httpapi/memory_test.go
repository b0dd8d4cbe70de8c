package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/files"
)

// Memory per request. Each route's work is measured against its body:
// alloc is the bytes the request allocated (runtime.MemStats.TotalAlloc
// over the request), peak the most heap the process held above what it
// held before (sampled every millisecond, the collector running at
// GOGC=25 meanwhile so that the heap follows what is live rather than the
// collector's pacing), both per byte of the body. A request must cost a
// fixed multiple of its own size, whatever the size.

// memUse is one request's memory, per byte of its body.
type memUse struct {
	body        int
	alloc, peak float64 // per body byte
}

func (m memUse) String() string {
	return fmt.Sprintf("body %d bytes: %.1f bytes allocated, %.1f bytes peak heap per body byte", m.body, m.alloc, m.peak)
}

// heapBytes is the live heap (objects) now, without stopping the world.
func heapBytes(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// measureRequest runs req against the server's handler in this process
// and returns its memory use; the answer must be 200.
func measureRequest(tb testing.TB, e *env, req *http.Request, body int) memUse {
	tb.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	base := heapBytes(s)
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapBytes(s))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, req)
	close(done)
	wg.Wait()
	runtime.ReadMemStats(&m1)
	if w.Code != http.StatusOK {
		tb.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, w.Code, truncate(w.Body.Bytes()))
	}
	peak = max(peak, heapBytes(s))
	return memUse{body: body, alloc: float64(m1.TotalAlloc-m0.TotalAlloc) / float64(body),
		peak: float64(peak-min(peak, base)) / float64(body)}
}

func jsonRequest(method, path string, body []byte) *http.Request {
	req := httptest.NewRequest(method, "http://127.0.0.1"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// proseText is n bytes of tool-output-like text: words from a small
// vocabulary, lines of a dozen words (it compresses as real output does,
// and repeats no line, so that it names no file twice).
func proseText(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 7))
	ws := strings.Fields("the build failed with an error in package main at line of file go test run make output warning compile link object archive function variable returned expected got value 0 1 2 3 42")
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(ws[r.IntN(len(ws))])
		if r.IntN(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

// memRoutes are the routes measured, each making one request whose body
// is about size bytes on a fresh server.
var memRoutes = []struct {
	name string
	run  func(tb testing.TB, size int) memUse
}{
	{"observe", memObserve},
	{"tool", memTool},
	{"context", memContext},
	{"import", memImport},
	{"bundle", memBundle},
}

// memObserve reports one bash call whose output is the body.
func memObserve(tb testing.TB, size int) memUse {
	e := newEnv(tb, nil)
	e.check = false
	e.open("m")
	out := proseText(size, 1)
	body, err := json.Marshal(ObserveRequest{ToolCallID: "call-1", Tool: "bash", Args: map[string]any{"command": "make"}, Output: &out})
	if err != nil {
		tb.Fatal(err)
	}
	return measureRequest(tb, e, jsonRequest("POST", "/v1/sessions/m/observe", body), len(body))
}

// memTool reads a file of the body's size (at most the 4 MiB whose
// content is stored) through ctxstore's read tool (the body is small; the
// work grows with the file): per byte of the file.
func memTool(tb testing.TB, size int) memUse {
	size = min(size, files.DefaultMaxTextBytes)
	e := newEnv(tb, nil)
	e.check = false
	e.open("m")
	p := e.file("big.txt", proseText(size, 2))
	body, _ := json.Marshal(ToolRequest{ToolCallID: "call-1", Args: map[string]any{"path": p}})
	u := measureRequest(tb, e, jsonRequest("POST", "/v1/sessions/m/tools/read", body), size)
	return u
}

// memContext sends a Pi log of turns (a prompt, a bash call, its 20 KB
// output, an answer) whose outputs make up the body, in one request.
func memContext(tb testing.TB, size int) memUse {
	e := newEnv(tb, nil)
	e.check = false
	e.open("m")
	var lg piLogBuilder
	turns := max(1, size/20000)
	for i := range turns {
		lg.user(fmt.Sprintf("Turn %d: run the build.", i))
		id := "call_" + strconv.Itoa(i)
		lg.call(id, "bash", map[string]any{"command": "make " + strconv.Itoa(i)})
		lg.result(id, "bash", proseText(size/turns, uint64(i)), false)
		lg.say("Done " + strconv.Itoa(i))
	}
	body, err := json.Marshal(lg.body())
	if err != nil {
		tb.Fatal(err)
	}
	return measureRequest(tb, e, jsonRequest("POST", "/v1/sessions/m/context", body), len(body))
}

// memImport uploads a Claude Code transcript of the body's size (turns of
// a prompt, a Bash call and its output) to POST /v1/import.
func memImport(tb testing.TB, size int) memUse {
	e := newEnv(tb, nil)
	e.check = false
	var b bytes.Buffer
	parent := "null"
	for i := 0; b.Len() < size; i++ {
		u, a, r := fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i), fmt.Sprintf("r%d", i)
		ts := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		out, _ := json.Marshal(proseText(20000, uint64(i)))
		fmt.Fprintf(&b, `{"type":"user","uuid":%q,"parentUuid":%s,"sessionId":"s-mem","timestamp":%q,"message":{"role":"user","content":"run the build %d"}}`+"\n", u, parent, ts, i)
		fmt.Fprintf(&b, `{"type":"assistant","uuid":%q,"parentUuid":%q,"sessionId":"s-mem","timestamp":%q,"message":{"id":"m%d","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"make"}}]}}`+"\n", a, u, ts, i, i)
		fmt.Fprintf(&b, `{"type":"user","uuid":%q,"parentUuid":%q,"sessionId":"s-mem","timestamp":%q,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%s}]}}`+"\n", r, a, ts, i, out)
		parent = strconv.Quote(r)
	}
	req := httptest.NewRequest("POST", "http://127.0.0.1/v1/import?name=mem.jsonl&as=claude-code", bytes.NewReader(b.Bytes()))
	req.Header.Set("Content-Type", "application/x-ndjson")
	return measureRequest(tb, e, req, b.Len())
}

// memBundle imports a session bundle (POST /v1/sessions/{sid}/import) of
// about size bytes: a session of bash calls with 256 KB outputs, exported
// from one server and imported into a fresh one.
func memBundle(tb testing.TB, size int) memUse {
	src := newEnv(tb, nil)
	src.check = false
	src.open("m")
	for i := 0; i*(256<<10) < size; i++ {
		out := proseText(256<<10, uint64(i))
		src.ok("POST", "/v1/sessions/m/observe", ObserveRequest{ToolCallID: fmt.Sprintf("call-%d", i), Tool: "bash", Args: map[string]any{"command": "make"}, Output: &out}, nil)
	}
	src.ok("POST", "/v1/sessions/m/close", nil, nil)
	st, _, bundle := src.raw("GET", "/v1/sessions/m/export", "", nil)
	if st != http.StatusOK {
		tb.Fatalf("export: %d %s", st, truncate(bundle))
	}
	e := newEnv(tb, nil)
	e.check = false
	req := httptest.NewRequest("POST", "http://127.0.0.1/v1/sessions/m/import", bytes.NewReader(bundle))
	req.Header.Set("Content-Type", "application/x-ndjson")
	return measureRequest(tb, e, req, len(bundle))
}

// memBenchSize is the body size of the benchmarks: CTXSTORE_BENCH_BODY
// bytes, default 16 MiB.
func memBenchSize() int {
	if n, err := strconv.Atoi(os.Getenv("CTXSTORE_BENCH_BODY")); err == nil && n > 0 {
		return n
	}
	return 16 << 20
}

// BenchmarkRequestMemory measures each route's memory per body byte
// (alloc-B/body-B: allocated; peak-B/body-B: the most heap held above
// the idle server's):
//
//	go test -run '^$' -bench RequestMemory -benchtime 1x ./server/httpapi/
func BenchmarkRequestMemory(b *testing.B) {
	for _, rt := range memRoutes {
		b.Run(rt.name, func(b *testing.B) {
			var u memUse
			for range b.N {
				b.StopTimer()
				u = rt.run(b, memBenchSize())
				b.StartTimer()
			}
			b.ReportMetric(u.alloc, "alloc-B/body-B")
			b.ReportMetric(u.peak, "peak-B/body-B")
			b.ReportMetric(float64(u.body)/(1<<20), "body-MiB")
		})
	}
}

// memBounds are the most bytes a route may allocate per byte of its body
// (TestRequestMemoryBounded): about twice what it allocates, loose enough
// for other Go versions and machines, and well under what each allocated
// when it copied its body a dozen times over (observe 262, read 59,
// context 410 per body byte).
var memBounds = map[string]float64{"observe": 40, "tool": 35, "context": 130}

// TestRequestMemoryBounded: observe, the read tool and the context call
// allocate at most a fixed multiple of their body (1 MiB).
func TestRequestMemoryBounded(t *testing.T) {
	for _, rt := range memRoutes {
		bound, ok := memBounds[rt.name]
		if !ok {
			continue
		}
		t.Run(rt.name, func(t *testing.T) {
			u := rt.run(t, 1<<20)
			t.Logf("%v", u)
			if u.alloc > bound {
				t.Errorf("%s allocates %.1f bytes per body byte, over %v", rt.name, u.alloc, bound)
			}
		})
	}
}

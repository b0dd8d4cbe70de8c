package httpapi

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// benchTurns is the number of turns BenchmarkContextCall plays:
// CTXSTORE_BENCH_TURNS, default 1,019 (windows at turns 10, 500 and 1,000;
// 10,019 adds the window at turn 10,000).
func benchTurns() int {
	if n, err := strconv.Atoi(os.Getenv("CTXSTORE_BENCH_TURNS")); err == nil && n > 0 {
		return n
	}
	return 1019
}

// benchStore is the store BenchmarkContextCall's server runs on:
// CTXSTORE_BENCH_BACKEND=xtdb runs it on an XTDB node (started as the
// tests start one), =postgres on a PostgreSQL server (likewise), anything
// else on the SQLite file newEnv opens.
func benchStore(b *testing.B) func(*Options) {
	backend := os.Getenv("CTXSTORE_BENCH_BACKEND")
	if backend != storetestenv.XTDB && backend != storetestenv.Postgres {
		return nil
	}
	st := storetestenv.New(b, backend).Store
	return func(o *Options) { o.Store = st }
}

// BenchmarkContextCall measures the context call as the Pi extension makes
// it, on loopback (a real TCP connection to an httptest server, SQLite
// store). Each turn is a user prompt, two bash calls with 1 KiB outputs and
// a final answer: three context calls. It samples every call of turns
// 10–29, 500–519, 1,000–1,019 and 10,000–10,019 (those the session reaches,
// benchTurns) of one session and reports, per window, the
// p50 and p99 latency (ms) and the share of the time spent outside the
// context manager itself (HTTP and JSON: the total minus the
// ingest+assemble time the server reports in Server-Timing), plus the
// request size.
//
// The windows after turn 10 also run a paired reference: a new session
// in the same server and store, opened at the window's start, plays nine
// turns unsampled and then its turns 10–29 alternately with the long
// session's window, turn for turn. ms-p50-refN is its p50 and x-turnN the
// long session's p50 over it: the cost of the session's length alone, under
// the same load and in a store of the same size (the sequential ratio,
// ms-p50-turnN over ms-p50-turn10, also carries whatever the machine and the
// store's growth did in between).
//
// Sub-benchmarks: "delta" sends the log and gets the answer
// as deltas, as the extension does (the client encodes each message once);
// "full" sends the whole log and gets the whole context every call. One
// iteration takes minutes:
//
//	go test -run '^$' -bench ContextCall -benchtime 1x ./server/httpapi/
//	CTXSTORE_BENCH_BACKEND=xtdb go test -run '^$' -bench ContextCall/delta -benchtime 1x ./server/httpapi/
func BenchmarkContextCall(b *testing.B) {
	for _, mode := range []string{"delta", "full"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				benchContextCalls(b, mode == "delta")
			}
		})
	}
}

var serverTiming = regexp.MustCompile(`dur=([0-9.]+)`)

type sample struct {
	total, cm time.Duration
	reqBytes  int
}

// benchSession is one session the benchmark drives: its log and its client.
type benchSession struct {
	b      *testing.B
	sid    string
	dc     *deltaClient
	lg     piLogBuilder
	deltas bool
	turns  int
}

var benchOutput = strings.Repeat("some output of the build that takes a line of room\n", 20) // ~1 KiB

func newBenchSession(b *testing.B, e *env, sid string, deltas bool) *benchSession {
	e.open(sid)
	return &benchSession{b: b, sid: sid, dc: newDeltaClient(e.ts.URL, sid), deltas: deltas}
}

// call makes one context call and decodes what came, as the extension does.
func (s *benchSession) call() sample {
	start := time.Now()
	base := -1
	if !s.deltas {
		base, s.dc.heldCall = 0, 0
	}
	r := s.dc.call(s.lg.raws(), base, "")
	if r.status != 200 {
		s.b.Fatalf("context: %d %s", r.status, r.code)
	}
	for _, m := range r.resp.Messages {
		var pm PiOutMessage
		if err := json.Unmarshal(m, &pm); err != nil {
			s.b.Fatal(err)
		}
	}
	return sample{total: time.Since(start), cm: r.cm, reqBytes: r.reqBytes}
}

// turn plays the session's next turn (three calls), giving each call's
// sample to keep when keep is not nil.
func (s *benchSession) turn(keep *[]sample) {
	s.turns++
	t := s.turns
	s.lg.user(fmt.Sprintf("Turn %d: run the build twice.", t))
	for k := range 3 {
		if sm := s.call(); keep != nil {
			*keep = append(*keep, sm)
		}
		if k < 2 {
			id := fmt.Sprintf("%s_call_%d_%d", s.sid, t, k)
			s.lg.call(id, "bash", map[string]any{"command": fmt.Sprintf("make build-%d-%d", t, k)})
			s.lg.result(id, "bash", fmt.Sprintf("run %d %d\n%s", t, k, benchOutput), false)
		}
	}
	s.lg.say(fmt.Sprintf("Turn %d done.", t))
}

func benchContextCalls(b *testing.B, deltas bool) {
	e := newEnv(b, benchStore(b))
	e.check = false
	long := newBenchSession(b, e, "bench", deltas)
	windows, refs := map[string][]sample{}, map[string][]sample{}
	var names []string
	starts := []int{10, 500, 1000, 10000}
	for _, start := range starts {
		if start+19 <= benchTurns() {
			names = append(names, fmt.Sprintf("turn%d", start))
		}
	}
	var ref *benchSession
	for turn := 1; turn <= benchTurns(); turn++ {
		w := ""
		for _, start := range starts {
			if start+19 > benchTurns() {
				continue // a window the session does not complete is not sampled
			}
			if turn >= start && turn < start+20 {
				w = fmt.Sprintf("turn%d", start)
			}
			if turn == start && start > 10 {
				ref = newBenchSession(b, e, fmt.Sprintf("ref-%d", start), deltas)
				for range 9 {
					ref.turn(nil)
				}
			}
		}
		if w == "" {
			long.turn(nil)
			continue
		}
		kept := windows[w]
		long.turn(&kept)
		windows[w] = kept
		if w != "turn10" {
			kept := refs[w]
			ref.turn(&kept)
			refs[w] = kept
		}
	}
	p50 := func(ss []sample) float64 { return percentile(ss, 0.50) }
	for _, w := range names {
		ss := windows[w]
		var sumTotal, sumCM time.Duration
		for _, s := range ss {
			sumTotal += s.total
			sumCM += s.cm
		}
		b.ReportMetric(p50(ss), "ms-p50-"+w)
		b.ReportMetric(percentile(ss, 0.99), "ms-p99-"+w)
		b.ReportMetric(100*float64(sumTotal-sumCM)/float64(sumTotal), "%outside-"+w)
		b.ReportMetric(float64(ss[len(ss)-1].reqBytes)/1024, "KiB-request-"+w)
		if r := refs[w]; len(r) > 0 {
			n := strings.TrimPrefix(w, "turn")
			b.ReportMetric(p50(r), "ms-p50-ref"+n)
			b.ReportMetric(p50(ss)/p50(r), "x-"+w)
		}
	}
}

// percentile is the p-th percentile of the samples' latencies, in ms.
func percentile(ss []sample, p float64) float64 {
	totals := make([]time.Duration, len(ss))
	for i, s := range ss {
		totals[i] = s.total
	}
	slices.Sort(totals)
	i := min(len(totals)-1, int(p*float64(len(totals))))
	return float64(totals[i].Microseconds()) / 1000
}

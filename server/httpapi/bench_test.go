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
// tests start one), anything else on the SQLite file newEnv opens.
func benchStore(b *testing.B) func(*Options) {
	if os.Getenv("CTXSTORE_BENCH_BACKEND") != storetestenv.XTDB {
		return nil
	}
	st := storetestenv.New(b, storetestenv.XTDB).Store
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
// request size. Sub-benchmarks: "delta" sends the log and gets the answer
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

func benchContextCalls(b *testing.B, deltas bool) {
	e := newEnv(b, benchStore(b))
	e.check = false
	e.open("bench")
	dc := newDeltaClient(e.ts.URL, "bench")
	var lg piLogBuilder
	call := func() sample {
		start := time.Now()
		base := -1
		if !deltas {
			base, dc.heldCall = 0, 0
		}
		r := dc.call(lg.raws(), base, "")
		if r.status != 200 {
			b.Fatalf("context: %d %s", r.status, r.code)
		}
		for _, m := range r.resp.Messages { // decode what came, as the extension does
			var pm PiOutMessage
			if err := json.Unmarshal(m, &pm); err != nil {
				b.Fatal(err)
			}
		}
		return sample{total: time.Since(start), cm: r.cm, reqBytes: r.reqBytes}
	}
	out := strings.Repeat("some output of the build that takes a line of room\n", 20) // ~1 KiB
	windows := map[string][]sample{}
	var names []string
	for _, start := range []int{10, 500, 1000, 10000} {
		if start+19 <= benchTurns() {
			names = append(names, fmt.Sprintf("turn%d", start))
		}
	}
	for turn := 1; turn <= benchTurns(); turn++ {
		w := ""
		for _, start := range []int{10, 500, 1000, 10000} {
			if turn >= start && turn < start+20 {
				w = fmt.Sprintf("turn%d", start)
			}
		}
		lg.user(fmt.Sprintf("Turn %d: run the build twice.", turn))
		for k := range 3 {
			s := call()
			if w != "" {
				windows[w] = append(windows[w], s)
			}
			if k < 2 {
				id := fmt.Sprintf("call_%d_%d", turn, k)
				lg.call(id, "bash", map[string]any{"command": fmt.Sprintf("make build-%d-%d", turn, k)})
				lg.result(id, "bash", fmt.Sprintf("run %d %d\n%s", turn, k, out), false)
			}
		}
		lg.say(fmt.Sprintf("Turn %d done.", turn))
	}
	for _, w := range names {
		ss := windows[w]
		totals := make([]time.Duration, len(ss))
		var sumTotal, sumCM time.Duration
		for i, s := range ss {
			totals[i] = s.total
			sumTotal += s.total
			sumCM += s.cm
		}
		slices.Sort(totals)
		pct := func(p float64) float64 {
			i := min(len(totals)-1, int(p*float64(len(totals))))
			return float64(totals[i].Microseconds()) / 1000
		}
		b.ReportMetric(pct(0.50), "ms-p50-"+w)
		b.ReportMetric(pct(0.99), "ms-p99-"+w)
		b.ReportMetric(100*float64(sumTotal-sumCM)/float64(sumTotal), "%outside-"+w)
		b.ReportMetric(float64(ss[len(ss)-1].reqBytes)/1024, "KiB-request-"+w)
	}
}

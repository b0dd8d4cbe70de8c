package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkContextCall measures the context call as the Pi extension makes
// it, on loopback (a real TCP connection to an httptest server, SQLite
// store): the client encodes Pi's whole message log as JSON, POSTs it,
// reads and decodes the answer. Each turn is a user prompt, two bash calls
// with 1 KiB outputs and a final answer: three context calls. It samples
// every call of turns 10–29 and of turns 500–519 of one session and
// reports, per window, the p50 and p99 latency (ms) and the share of the
// time spent outside the context manager itself (HTTP and JSON: the total
// minus the ingest+assemble time the server reports in Server-Timing),
// plus the request size at turn 500. One iteration takes about a minute:
//
//	go test -run '^$' -bench ContextCall -benchtime 1x ./context/httpapi/
func BenchmarkContextCall(b *testing.B) {
	for range b.N {
		benchContextCalls(b)
	}
}

var serverTiming = regexp.MustCompile(`dur=([0-9.]+)`)

type sample struct {
	total, cm time.Duration
	reqBytes  int
}

func benchContextCalls(b *testing.B) {
	e := newEnv(b, nil)
	e.check = false
	e.open("bench")
	client := &http.Client{}
	var lg piLogBuilder
	call := func() sample {
		start := time.Now()
		body, err := json.Marshal(lg.body())
		if err != nil {
			b.Fatal(err)
		}
		resp, err := client.Post(e.ts.URL+"/v1/sessions/bench/context", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("context: %d %v %s", resp.StatusCode, err, truncate(raw))
		}
		var c ContextResponse
		if err := json.Unmarshal(raw, &c); err != nil {
			b.Fatal(err)
		}
		total := time.Since(start)
		m := serverTiming.FindStringSubmatch(resp.Header.Get("Server-Timing"))
		if m == nil {
			b.Fatal("no Server-Timing header")
		}
		ms, _ := strconv.ParseFloat(m[1], 64)
		return sample{total: total, cm: time.Duration(ms * float64(time.Millisecond)), reqBytes: len(body)}
	}
	out := strings.Repeat("some output of the build that takes a line of room\n", 20) // ~1 KiB
	windows := map[string][]sample{}
	for turn := 1; turn <= 519; turn++ {
		w := ""
		switch {
		case turn >= 10 && turn < 30:
			w = "turn10"
		case turn >= 500:
			w = "turn500"
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
	for _, w := range []string{"turn10", "turn500"} {
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

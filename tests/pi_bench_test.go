package tests

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// durRe reads the dur of a Server-Timing header.
var durRe = regexp.MustCompile(`dur=([0-9.]+)`)

// BenchmarkPiContextCall measures ctxstore's context hook through the real
// Pi (piVersion, RPC mode) with the scripted model, on a SQLite store
// behind `ctxstore serve`: the time from Pi's context event to the end of
// ctxstore's handler (tests/testdata/pi/timing-start.ts and timing-end.ts
// bracket it), so the extension's own work (stringifying Pi's log for the
// delta, HTTP, JSON) is in. Each turn is a prompt, a bash call with 1 KiB
// of output and an answer: two context calls. It reports the p50 and p99 of
// turns 10-29 and of turns 500-519 (40 calls each). It takes minutes:
//
//	go test -run '^$' -bench PiContextCall -benchtime 1x ./tests/
func BenchmarkPiContextCall(b *testing.B) {
	const turns = 520
	for b.Loop() {
		e := newPiEnv(b)
		e.pre = []string{"tests/testdata/pi/timing-start.ts"}
		e.exts = []string{"tests/testdata/pi/timing-end.ts"}
		timings := filepath.Join(b.TempDir(), "timings")
		e.env = []string{"PI_TIMING_LOG=" + timings}
		srv := startServe(b, "sqlite:"+filepath.Join(b.TempDir(), "store.db"))
		var script []piStep
		cmd := "head -c 1024 /dev/zero | tr '\\0' x; echo"
		for i := range turns {
			script = append(script, piStep{Tool: "bash", Args: map[string]any{"command": cmd}, ID: fmt.Sprintf("call_%d", i)},
				piStep{Text: fmt.Sprintf("Turn %d done.", i+1)})
		}
		// Through a plain reverse proxy (the OpenAPI-checking one would add
		// its validation to every call) that notes the time the server
		// spent in the context manager (Server-Timing) of each context call.
		var mu sync.Mutex
		var cm []float64
		target, _ := url.Parse(srv.url)
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.ModifyResponse = func(r *http.Response) error {
			if strings.HasSuffix(r.Request.URL.Path, "/context") {
				if m := durRe.FindStringSubmatch(r.Header.Get("Server-Timing")); m != nil {
					v, _ := strconv.ParseFloat(m[1], 64)
					mu.Lock()
					cm = append(cm, v)
					mu.Unlock()
				}
			}
			return nil
		}
		px := httptest.NewServer(rp)
		pi := startPi(b, e, px.URL, script)
		for i := range turns {
			pi.prompt(fmt.Sprintf("Turn %d: run it.", i+1))
		}
		pi.quit()
		px.Close()
		srv.stop(false) // nothing went through the checking proxy
		raw, err := os.ReadFile(timings)
		if err != nil {
			b.Fatal(err)
		}
		var ms []float64
		for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
			v, err := strconv.ParseFloat(string(l), 64)
			if err != nil {
				b.Fatal(err)
			}
			ms = append(ms, v)
		}
		if len(ms) != 2*turns || len(cm) != 2*turns {
			b.Fatalf("%d timings and %d server timings, want %d", len(ms), len(cm), 2*turns)
		}
		for _, w := range []struct {
			name string
			from int
		}{{"turn10", 10}, {"turn500", 500}} {
			s := slices.Clone(ms[2*(w.from-1) : 2*(w.from-1+20)])
			slices.Sort(s)
			b.ReportMetric(s[len(s)/2], w.name+"-p50-ms")
			b.ReportMetric(s[len(s)*99/100], w.name+"-p99-ms")
			c := slices.Clone(cm[2*(w.from-1) : 2*(w.from-1+20)])
			slices.Sort(c)
			b.ReportMetric(c[len(c)/2], w.name+"-cm-p50-ms")
		}
	}
}

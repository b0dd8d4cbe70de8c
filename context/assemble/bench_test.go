package assemble

import (
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// BenchmarkAssemblyTurns measures the assembler's work per turn (User,
// Assistant, ToolResult and Call, including the context commit it writes;
// not the tools' own work) on one session with 10,000 metadata entries and
// 50 active objects, over turns 10–29 and over turns 1,000–1,019 of the
// same session. Each measured turn runs one bash call whose output the
// auto-collapse policy later collapses, so rebases happen at their natural
// rate; the turns in between are filler turns (see filler). Metrics:
// ns/turn10 and ns/turn1000 (mean over each window, rebases included),
// x-turn10 (their ratio), x-turn10-median (ratio of the medians, which
// rebases and disk noise do not sway), ns/rebase-call (mean of the calls
// that rebased, included in the means) and rebases. One
// iteration takes tens of seconds; run it with -benchtime 1x:
//
//	go test -run '^$' -bench AssemblyTurns -benchtime 1x ./context/assemble/
func BenchmarkAssemblyTurns(b *testing.B) {
	for range b.N {
		benchSession(b)
	}
}

func benchSession(b *testing.B) {
	e := newEnv(b, LayoutStream, Policy{})
	seedPool(b, e, benchPool, 50)
	e.start(LayoutStream, Policy{})
	var rebaseNS time.Duration
	var rebases int
	turn := func(n int) time.Duration {
		e.seq++
		id := fmt.Sprintf("toolu_%06d", e.seq)
		args := map[string]any{"command": fmt.Sprintf("make step%d", n)}
		out := output(id, 10)
		t0 := time.Now()
		e.must(e.a.User(e.ctx, fmt.Sprintf("turn %d", n)))
		e.must(e.a.Assistant(e.ctx, "Running make.", []ToolCall{{ID: id, Name: "bash", Args: args}}))
		spent := time.Since(t0)
		r, err := e.tools.Record(e.ctx, toolsCall(id, args, out))
		e.must(err)
		t0 = time.Now()
		e.must(e.a.ToolResult(e.ctx, r))
		e.now = e.now.Add(30 * time.Second)
		t1 := time.Now()
		c := e.call()
		if c.Rebased {
			rebases++
			rebaseNS += time.Since(t1)
		}
		return spent + time.Since(t0)
	}
	window := func(from, to int) (mean, median float64) {
		var total time.Duration
		var ds []time.Duration
		for n := from; n < to; n++ {
			d := turn(n)
			total += d
			ds = append(ds, d)
		}
		slices.Sort(ds)
		return float64(total.Nanoseconds()) / float64(to-from), float64(ds[len(ds)/2].Nanoseconds())
	}
	for n := 1; n < 10; n++ {
		turn(n)
	}
	early, earlyMed := window(10, 10+benchWindow)
	for n := 10 + benchWindow; n < benchLate; n++ {
		filler(e, n)
	}
	late, lateMed := window(benchLate, benchLate+benchWindow)
	b.ReportMetric(early, "ns/turn10")
	b.ReportMetric(late, "ns/turn1000")
	b.ReportMetric(late/early, "x-turn10")
	b.ReportMetric(lateMed/earlyMed, "x-turn10-median")
	b.ReportMetric(float64(rebases), "rebases")
	if rebases > 0 {
		b.ReportMetric(float64(rebaseNS.Nanoseconds())/float64(rebases), "ns/rebase-call")
	}
}

// seedPool puts n user objects in the store and in the session's pool, the
// first active of them active.
func seedPool(b *testing.B, e *env, n, active int) {
	var ops []store.Op
	ids := make([]string, n)
	for i := range ids {
		id, err := objects.NewUUIDv7(e.now.Add(time.Duration(i)*time.Millisecond), rand.Reader)
		e.must(err)
		ids[i] = id
		ue, err := objects.NewEnvelope(objects.KindUser, ids[i])
		e.must(err)
		o, err := objects.New(ue, objects.Payload{Content: new(fmt.Sprintf("pasted text %d\n%s", i, output("p", 3)))})
		e.must(err)
		doc, err := o.Doc()
		e.must(err)
		ops = append(ops, store.Put(doc))
	}
	_, err := store.SubmitWait(e.ctx, e.st, ops)
	e.must(err)
	_, _, err = e.tools.Session().Update(e.ctx, nil, func(s *session.State) error {
		for i, id := range ids {
			s.AddToPool(id)
			if i < active {
				s.Activate(id)
			}
		}
		return nil
	})
	e.must(err)
}

// benchPool is the number of metadata entries the benchmark seeds.
var benchPool = 10000

// benchLate is the first measured late turn; benchWindow the turns per window.
var benchLate, benchWindow = 1000, 20

// filler plays a turn without tools: a user message, an assistant answer
// and a call (with its commit). Tool turns cost the session's own writes
// (session.Update rewrites the whole state, about a second per call at
// 10,000 pool entries on SQLite), which would make 1,000 of them take too
// long; filler turns grow the assembler's history (items, bytes, commit
// chain) just the same.
func filler(e *env, n int) {
	e.must(e.a.User(e.ctx, fmt.Sprintf("turn %d: any news?", n)))
	e.must(e.a.Assistant(e.ctx, fmt.Sprintf("Nothing new at turn %d.", n), nil))
	e.now = e.now.Add(30 * time.Second)
	e.call()
}

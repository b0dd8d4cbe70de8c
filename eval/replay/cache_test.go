package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/session"
)

// reqOf builds a cache request from block sizes (provider tokens): block 0
// is the head; hashes name each prefix by its sizes and labels, so two
// requests share a prefix exactly when they share these.
func reqOf(at time.Time, labels []string, sizes []int, bps ...int) *cacheRequest {
	q := &cacheRequest{at: at, breakpoints: bps}
	end := 0
	var h uint64
	for i, n := range sizes {
		end += n
		h = chain(h, []byte(fmt.Sprintf("%s:%d", labels[i], n)))
		q.blocks = append(q.blocks, cacheBlock{end: end, hash: h, user: true})
	}
	return q
}

func labels(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func TestAnthropicBreakpointsAndLookback(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newAnthropicSim(5*time.Minute, 1024, PlacementClaudeCode)
	names := labels("b", 60)
	sizes := []int{2000, 500, 500}
	// First call: nothing cached; everything up to the last breakpoint is
	// written.
	if u := s.call(reqOf(t0, names, sizes, 0, 2)); u != (cacheUse{read: 0, write: 3000, input: 0}) {
		t.Fatalf("call 1: %+v", u)
	}
	// Two blocks appended, the breakpoint moved to the end: the previous
	// breakpoint's prefix is found 2 blocks back.
	sizes = append(sizes, 300, 200)
	if u := s.call(reqOf(t0.Add(time.Minute), names, sizes, 0, 4)); u != (cacheUse{read: 3000, write: 500, input: 0}) {
		t.Fatalf("call 2: %+v", u)
	}
	// 25 blocks appended: the last cached prefix is 25 blocks before the
	// breakpoint, past the 20-block lookback; the head's breakpoint still
	// reads the head.
	for i := 0; i < 25; i++ {
		sizes = append(sizes, 10)
	}
	last := len(sizes) - 1
	if u := s.call(reqOf(t0.Add(2*time.Minute), names, sizes, 0, last)); u != (cacheUse{read: 2000, write: 1750, input: 0}) {
		t.Fatalf("call 3 (lookback): %+v", u)
	}
	// Exactly 20 blocks appended: found at the edge of the lookback.
	for i := 0; i < 20; i++ {
		sizes = append(sizes, 10)
	}
	q := reqOf(t0.Add(3*time.Minute), append(names, labels("c", 40)...), sizes, 0, len(sizes)-1)
	if u := s.call(q); u != (cacheUse{read: 3750, write: 200, input: 0}) {
		t.Fatalf("call 4 (20 back): %+v", u)
	}
	// A breakpoint before the end: the tail after it is uncached input.
	sizes2 := append(append([]int(nil), sizes...), 70)
	q = reqOf(t0.Add(4*time.Minute), append(names, labels("c", 40)...), sizes2, 0, len(sizes)-1)
	if u := s.call(q); u != (cacheUse{read: 3950, write: 0, input: 70}) {
		t.Fatalf("call 5 (tail after the breakpoint): %+v", u)
	}
}

func TestAnthropicMinimumLength(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newAnthropicSim(5*time.Minute, 1024, PlacementPi)
	names := labels("b", 10)
	// 500 + 400 tokens: shorter than the minimum, nothing is cached.
	for k := 0; k < 2; k++ {
		if u := s.call(reqOf(t0.Add(time.Duration(k)*time.Second), names, []int{500, 400}, 0, 1)); u != (cacheUse{input: 900}) {
			t.Fatalf("call %d: %+v", k+1, u)
		}
	}
	// Grown past the minimum at the last breakpoint: written from the start
	// (the head alone is still too short to be an entry).
	if u := s.call(reqOf(t0.Add(2*time.Second), names, []int{500, 400, 300}, 0, 2)); u != (cacheUse{write: 1200}) {
		t.Fatalf("call 3: %+v", u)
	}
	if u := s.call(reqOf(t0.Add(3*time.Second), names, []int{500, 400, 300, 100}, 0, 3)); u != (cacheUse{read: 1200, write: 100}) {
		t.Fatalf("call 4: %+v", u)
	}
	if AnthropicMinTokens("claude-opus-4-5") != 4096 || AnthropicMinTokens("claude-sonnet-4-20250514") != 1024 || AnthropicMinTokens("claude-3-5-haiku-20241022") != 2048 {
		t.Fatal("minimum lengths")
	}
}

func TestAnthropicTTL(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	names := labels("b", 10)
	sizes := []int{2000, 1000}
	s := newAnthropicSim(5*time.Minute, 1024, PlacementClaudeCode)
	s.call(reqOf(t0, names, sizes, 0, 1))
	// Read at 4 minutes refreshes the entry: still there at 8 minutes.
	if u := s.call(reqOf(t0.Add(4*time.Minute), names, sizes, 0, 1)); u.read != 3000 {
		t.Fatalf("at 4 min: %+v", u)
	}
	if u := s.call(reqOf(t0.Add(8*time.Minute), names, sizes, 0, 1)); u.read != 3000 {
		t.Fatalf("at 8 min (refreshed at 4): %+v", u)
	}
	// Six minutes idle: expired, written again.
	if u := s.call(reqOf(t0.Add(14*time.Minute), names, sizes, 0, 1)); u != (cacheUse{write: 3000}) {
		t.Fatalf("after 6 idle minutes: %+v", u)
	}
	if s.writePrice() != WritePrice {
		t.Fatal("5-minute write price")
	}
	// The one-hour TTL: still cached after 50 minutes, written at 2x.
	h := newAnthropicSim(time.Hour, 1024, PlacementClaudeCode)
	h.call(reqOf(t0, names, sizes, 0, 1))
	if u := h.call(reqOf(t0.Add(50*time.Minute), names, sizes, 0, 1)); u.read != 3000 {
		t.Fatalf("1h TTL after 50 min: %+v", u)
	}
	if u := h.call(reqOf(t0.Add(111*time.Minute), names, sizes, 0, 1)); u.read != 0 {
		t.Fatalf("1h TTL after 61 idle min: %+v", u)
	}
	if h.writePrice() != LongTTLWritePrice {
		t.Fatal("1-hour write price")
	}
}

// TestPrefixPriceFollowsTTL: the ideal prefix cache prices what it writes
// as Anthropic does for the TTL: 1.25x up to 5 minutes, 2x for an hour
// (a write for the hour costs 2x, not 1.25x).
func TestPrefixPriceFollowsTTL(t *testing.T) {
	r := raw{context: 1000, cached: 400}
	for _, tc := range []struct {
		ttl  time.Duration
		want float64
	}{{5 * time.Minute, 1.25*600 + 0.1*400}, {time.Hour, 2*600 + 0.1*400}} {
		c := priced(r, Calibration{Scale: 1}, 0, writePriceFor(tc.ttl))
		if math.Abs(c.Cost-tc.want) > 1e-9 {
			t.Errorf("TTL %v: cost %v, want %v", tc.ttl, c.Cost, tc.want)
		}
	}
}

func TestAnthropicMaxBreakpoints(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newAnthropicSim(5*time.Minute, 1024, PlacementClaudeCode)
	names := labels("b", 10)
	sizes := []int{2000, 100, 100, 100, 100, 100}
	// Six breakpoints: only the last four count, so the head (block 0) and
	// block 1 are not entries of their own.
	s.call(reqOf(t0, names, sizes, 0, 1, 2, 3, 4, 5))
	changed := append([]string(nil), names...)
	changed[2] = "other"
	// A request that differs from block 2 on, with its breakpoint at block
	// 5: the lookback finds block 1's prefix only if it was an entry.
	if u := s.call(reqOf(t0.Add(time.Second), changed, sizes, 5)); u.read != 0 {
		t.Fatalf("the dropped breakpoints made entries: %+v", u)
	}
	s2 := newAnthropicSim(5*time.Minute, 1024, PlacementClaudeCode)
	s2.call(reqOf(t0, names, sizes, 0, 1, 2, 3))
	if u := s2.call(reqOf(t0.Add(time.Second), changed, sizes, 5)); u.read != 2100 {
		t.Fatalf("four breakpoints: %+v", u)
	}
}

func TestOpenAIPrefix(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newOpenAISim(5 * time.Minute)
	names := labels("b", 10)
	// Below 1,024 tokens nothing is cached, even when repeated.
	for k := 0; k < 2; k++ {
		if u := s.call(reqOf(t0, names, []int{600, 300})); u != (cacheUse{input: 900}) {
			t.Fatalf("short prompt: %+v", u)
		}
	}
	if u := s.call(reqOf(t0.Add(time.Second), names, []int{1500, 1000, 500})); u != (cacheUse{input: 3000}) {
		t.Fatalf("first long prompt: %+v", u)
	}
	// Shares 2,500 tokens: read in 128-token steps, nothing written.
	changed := append([]string(nil), names...)
	changed[2] = "other"
	if u := s.call(reqOf(t0.Add(2*time.Second), changed, []int{1500, 1000, 700})); u != (cacheUse{read: 2432, input: 768}) {
		t.Fatalf("shared 2,500: %+v", u)
	}
	// After the TTL: nothing.
	if u := s.call(reqOf(t0.Add(10*time.Minute), names, []int{1500, 1000, 500})); u.read != 0 {
		t.Fatalf("after the TTL: %+v", u)
	}
	if s.writePrice() != InputPrice {
		t.Fatal("OpenAI writes are not billed extra")
	}
}

func TestBlocksAndPlacement(t *testing.T) {
	b := []byte(EmptyHead + "<<user>>\nhi\n<<assistant>>\nok\n<<tool_call id=a name=Read args={}>>\n<<tool_result id=a>>\nout\n<<tool_result id=b>>\n<<content id=f version=1>>\nx\n<</content>>\nmore\n")
	m := newMeter(NewCounter(assemble.BytesTokenizer{}))
	r := m.measure(b, len(EmptyHead), time.Unix(0, 0), time.Minute)
	type want struct {
		user, start bool
	}
	wants := []want{{false, true}, {true, true}, {false, true}, {false, false}, {true, true}, {true, false}, {true, false}}
	if len(r.blocks) != len(wants) {
		t.Fatalf("%d blocks: %+v", len(r.blocks), r.blocks)
	}
	for i, w := range wants {
		if r.blocks[i].user != w.user || r.blocks[i].msgStart != w.start {
			t.Fatalf("block %d: %+v, want %+v", i, r.blocks[i], w)
		}
	}
	if r.blocks[len(r.blocks)-1].end != r.context || r.blocks[len(r.blocks)-1].byteEnd != len(b) {
		t.Fatalf("last block %+v, context %d", r.blocks[len(r.blocks)-1], r.context)
	}
	blocks := []cacheBlock{{end: 10}, {end: 20, user: true}, {end: 30}}
	if got := placeBreakpoints(PlacementPi, blocks); fmt.Sprint(got) != "[0]" {
		t.Fatalf("pi, last message the assistant's: %v", got)
	}
	if got := placeBreakpoints(PlacementClaudeCode, blocks); fmt.Sprint(got) != "[0 2]" {
		t.Fatalf("claude code: %v", got)
	}
	blocks[2].user = true
	if got := placeBreakpoints(PlacementPi, blocks); fmt.Sprint(got) != "[0 2]" {
		t.Fatalf("pi: %v", got)
	}
}

// usageSession is a Claude Code session of n calls whose recorded usage is
// given by use(call, sent).
func usageSession(n int, use func(k int) conversation.Usage) *transcript.Session {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &transcript.Session{Format: transcript.FormatClaudeCode, ID: "usage"}
	s.Messages = append(s.Messages, conversation.Message{Role: conversation.RoleUser, Text: "go", Time: t0})
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("t%03d", i)
		u := use(i)
		s.Messages = append(s.Messages,
			conversation.Message{Role: conversation.RoleAssistant, Model: "claude-sonnet-4-20250514", Usage: &u, Time: t0.Add(time.Duration(2*i+1) * time.Second),
				ToolCalls: []conversation.ToolCall{{ID: id, Name: "Bash", Args: map[string]any{"command": fmt.Sprintf("echo %d", i)}}}},
			conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: "Bash", Time: t0.Add(time.Duration(2*i+2) * time.Second),
				Output: strings.Repeat(fmt.Sprintf("output line %03d\n", i), 40)})
	}
	return s
}

// TestCacheCheck: recorded usage that behaves as the model says gives a
// small error and the model is used; usage that misses the cache where the
// model hits gives a large one, and auto falls back to the prefix cache.
func TestCacheCheck(t *testing.T) {
	// The bytes tokenizer over the replay's own rendering: the recorded
	// sizes below are the rendering's, 2,000 tokens of overhead added.
	const overhead = 2000
	sizes := func() []int {
		s := usageSession(30, func(int) conversation.Usage { return conversation.Usage{Output: 1} })
		c := NewCounter(assemble.BytesTokenizer{})
		var out []int
		for _, in := range calls(s) {
			out = append(out, overhead+c.Count(newRenderer().render(in.Messages, nil)[len(EmptyHead):]))
		}
		return out
	}()
	good := usageSession(30, func(k int) conversation.Usage {
		if k == 0 {
			return conversation.Usage{CacheWrite: int64(sizes[0]), Output: 1}
		}
		return conversation.Usage{CacheRead: int64(sizes[k-1]), CacheWrite: int64(sizes[k] - sizes[k-1]), Output: 1}
	})
	rep, err := Run(context.Background(), good, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}}})
	if err != nil {
		t.Fatal(err)
	}
	ch := rep.CacheCheck
	if ch == nil || ch.Model != CacheAnthropic || ch.Calls != 30 || !ch.Small() || rep.CacheModel != CacheAnthropic {
		t.Fatalf("check %+v, model %s %s", ch, rep.CacheModel, rep.CacheNote)
	}
	if math.Abs(ch.CostError) > 0.005 || ch.ReadShareError > 0.005 || ch.HitAgreement != 1 {
		t.Fatalf("errors %+v", ch)
	}
	// The harness's head was warm at the first call (another session):
	// every strategy reads it there too.
	warm := usageSession(30, func(k int) conversation.Usage {
		if k == 0 {
			return conversation.Usage{CacheRead: overhead, CacheWrite: int64(sizes[0] - overhead), Output: 1}
		}
		return conversation.Usage{CacheRead: int64(sizes[k-1]), CacheWrite: int64(sizes[k] - sizes[k-1]), Output: 1}
	})
	rep, err = Run(context.Background(), warm, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}}})
	if err != nil {
		t.Fatal(err)
	}
	if ch := rep.CacheCheck; math.Abs(ch.CostError) > 0.005 || ch.HitAgreement != 1 || rep.CacheModel != CacheAnthropic {
		t.Fatalf("warm head: %+v", ch)
	}
	if c := rep.Results[0].Calls[0]; !c.WarmHead || c.Cached != overhead || !c.Cold {
		t.Fatalf("warm head, first call %+v", c)
	}
	// The harness missed the cache on every third call.
	bad := usageSession(30, func(k int) conversation.Usage {
		if k%3 == 0 {
			return conversation.Usage{CacheWrite: int64(sizes[k])}
		}
		return conversation.Usage{CacheRead: int64(sizes[k-1]), CacheWrite: int64(sizes[k] - sizes[k-1])}
	})
	rep, err = Run(context.Background(), bad, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}}})
	if err != nil {
		t.Fatal(err)
	}
	if ch := rep.CacheCheck; ch.Small() || ch.CostError > -0.2 || rep.CacheModel != CachePrefix || !strings.Contains(rep.CacheNote, "not small") {
		t.Fatalf("bad check %+v, model %s", ch, rep.CacheModel)
	}
	// Asked for explicitly, the model is used whatever the check says.
	rep, err = Run(context.Background(), bad, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}}, CacheModel: CacheAnthropic})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CacheModel != CacheAnthropic {
		t.Fatalf("explicit model: %s", rep.CacheModel)
	}
	// A harness's sum decides over the session's own check.
	rep, err = Run(context.Background(), good, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}},
		HarnessChecks: map[string]*CacheCheck{string(transcript.FormatClaudeCode): {Model: CacheAnthropic, Calls: 10, CostError: -0.3}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CacheModel != CachePrefix || !strings.Contains(rep.CacheNote, "harness") {
		t.Fatalf("harness decision: %s %s", rep.CacheModel, rep.CacheNote)
	}
	// Nothing recorded: nothing to check the model against.
	none := usageSession(5, func(int) conversation.Usage { return conversation.Usage{} })
	for i := range none.Messages {
		none.Messages[i].Usage = nil
	}
	rep, err = Run(context.Background(), none, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CacheModel != CachePrefix || !strings.Contains(rep.CacheNote, "no recorded usage") || rep.CacheCheck.Skipped != 5 {
		t.Fatalf("no usage: %s %s %+v", rep.CacheModel, rep.CacheNote, rep.CacheCheck)
	}
	if _, err := Run(context.Background(), good, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}}, CacheModel: "bogus"}); err == nil {
		t.Fatal("an unknown cache model was accepted")
	}
}

// TestCalibrateNegativeIntercept: a good fit whose intercept is slightly
// negative is kept (through the origin), not replaced by a flat overhead.
func TestCalibrateNegativeIntercept(t *testing.T) {
	var cs []*CallInput
	var naive []rawCall
	for i := 0; i < 20; i++ {
		h := 10000 + 5000*i
		cs = append(cs, &CallInput{Index: i, Usage: &conversation.Usage{CacheRead: int64(1.3*float64(h) - 300)}})
		naive = append(naive, rawCall{hist: h})
	}
	cal := calibrate(cs, naive, 1<<30, "fit")
	if cal.Method != "fit-origin" || cal.Overhead != 0 || math.Abs(cal.Scale-1.3) > 0.01 || cal.Error.Fitted.Max > 0.03 {
		t.Fatalf("calibration %+v", cal)
	}
	if cal.Error.Fitted.Mean >= cal.Error.Overhead.Mean {
		t.Fatalf("the fit is no better than the overhead: %+v", cal.Error)
	}
}

// TestNaiveCapped: the capped history never exceeds the window once a
// turn fits, and cuts at user messages.
func TestNaiveCapped(t *testing.T) {
	s := synth(30, 1700)
	// One user prompt per tool use, so there is somewhere to cut.
	var msgs []conversation.Message
	for i, m := range s.Messages {
		msgs = append(msgs, m)
		if m.Role == conversation.RoleToolResult {
			msgs = append(msgs, conversation.Message{Role: conversation.RoleUser, Text: fmt.Sprintf("next %d", i), Time: m.Time})
		}
	}
	s.Messages = msgs
	rep, err := Run(context.Background(), s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Window: 8000, Calibrate: "none",
		Strategies: []Strategy{&Naive{}, &NaiveCapped{}}})
	if err != nil {
		t.Fatal(err)
	}
	naive, capped := rep.Results[0], rep.Results[1]
	checkAccounting(t, capped, rep.TTLSeconds)
	if naive.Totals.OverWindow == 0 || capped.Totals.OverWindow != 0 || capped.Totals.MaxContext > 8000 {
		t.Fatalf("naive %+v, capped %+v", naive.Totals, capped.Totals)
	}
	cuts := 0
	for i, c := range capped.Calls {
		if c.Reason != "" {
			cuts++
			if !c.Rebased {
				t.Fatalf("call %d cut without a rebase", c.N)
			}
		} else if c.Context != naive.Calls[i].Context && cuts == 0 {
			t.Fatalf("call %d differs from naive before any cut", c.N)
		}
	}
	if cuts == 0 || !hasNote(capped, "cut") || capped.Totals.CostVsCapped != 1 || naive.Totals.CostVsCapped <= 0 {
		t.Fatalf("cuts %d, notes %v, totals %+v", cuts, capped.Notes, capped.Totals)
	}
}

// TestDeterministic replays a real session twice, ctxstore's layouts on
// SQLite included: every number is the same.
func TestDeterministic(t *testing.T) {
	path := filepath.Join(datasets(t), "claude-code", "raw", "claude-reliability__coverage-test-fix.jsonl")
	dir := t.TempDir() // the mirrored files' paths show in the contexts
	try := func() ([]byte, error) {
		s, err := transcripttest.ReadFile(path)
		if err != nil {
			return nil, err
		}
		// The BPE tokenizer: a digit more or less in an id changes its count.
		rep, err := Run(context.Background(), s, Options{Dir: dir, OpenStore: openSQLite})
		if err != nil {
			return nil, err
		}
		for _, r := range rep.Results {
			for i := range r.Calls {
				r.Calls[i].Time = time.Time{}
			}
		}
		return json.Marshal(rep)
	}
	run := func() []byte {
		t.Helper()
		b, err := try()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	same := func(what string, a, b []byte) {
		t.Helper()
		if string(a) != string(b) {
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			t.Fatalf("%s differ at byte %d: %.200s\nvs %.200s", what, i, a[max(i-100, 0):], b[max(i-100, 0):])
		}
	}
	a := run()
	same("two runs", a, run())
	// Two replays of the session at once: the second waits for the first's
	// directory instead of working in another (whose paths, and so ids and
	// token counts, would differ).
	type result struct {
		b   []byte
		err error
	}
	got := make(chan result, 2)
	for range 2 {
		go func() {
			b, err := try()
			got <- result{b, err}
		}()
	}
	for range 2 {
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		same("two concurrent runs", a, r.b)
	}
	// A strategy's numbers do not depend on the strategies beside it (its
	// session id, which shows in the contexts, is its name, not its place).
	s, err := transcripttest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stream := func(strategies ...Strategy) Totals {
		t.Helper()
		rep, err := Run(context.Background(), s, Options{Dir: dir, OpenStore: openSQLite, Strategies: strategies})
		if err != nil {
			t.Fatal(err)
		}
		tot := rep.Results[len(rep.Results)-1].Totals
		tot.CostVsCapped = 0 // a ratio to naive_capped, when it runs
		return tot
	}
	alone := stream(&Ctxstore{Layout: assemble.LayoutStream})
	after := stream(&Naive{}, &NaiveCapped{}, &Ctxstore{Layout: assemble.LayoutStream})
	if alone != after {
		t.Fatalf("ctxstore_stream alone %+v, after two other strategies %+v", alone, after)
	}
}

// TestCachePerModel: a provider's cache is per model: a call to another
// model reads nothing the first model's calls wrote, and each model's
// minimum length applies.
func TestCachePerModel(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	names := labels("b", 10)
	s := newAnthropicSim(5*time.Minute, 1024, PlacementClaudeCode)
	q := reqOf(t0, names, []int{2000, 1000}, 0, 1)
	q.model = "claude-opus-4-1-20250805"
	s.call(q)
	q = reqOf(t0.Add(time.Second), names, []int{2000, 1000, 100}, 0, 2)
	q.model = "claude-sonnet-4-20250514"
	if u := s.call(q); u != (cacheUse{write: 3100}) {
		t.Fatalf("another model: %+v", u)
	}
	q = reqOf(t0.Add(2*time.Second), names, []int{2000, 1000, 100}, 0, 2)
	q.model = "claude-opus-4-1-20250805"
	if u := s.call(q); u != (cacheUse{read: 3000, write: 100}) {
		t.Fatalf("back to the first model: %+v", u)
	}
	// Opus 4.5's minimum is 4,096: 3,100 tokens are not cached.
	q = reqOf(t0.Add(3*time.Second), names, []int{2000, 1000, 100}, 0, 2)
	q.model = "claude-opus-4-5"
	if u := s.call(q); u != (cacheUse{input: 3100}) {
		t.Fatalf("below Opus 4.5's minimum: %+v", u)
	}
}

// TestPiBreakpoints: ctxstore's Pi extension's placement: the head, the
// end of the stable messages, the end.
func TestPiBreakpoints(t *testing.T) {
	head := "<<system>>\nS\n<<tools>>\nactivate\n"
	b := []byte(head + "<<user>>\nhi\n<<assistant>>\nok\n<<tool_call id=a name=x args={}>>\n<<tool_result id=a>>\nr\n<<user>>\nnext\n")
	second := strings.Index(string(b), "<<assistant>>")
	third := strings.Index(string(b), "<<tool_result")
	if got := piBreakpoints(b, len(head), 1); fmt.Sprint(got) != fmt.Sprint([]int{len(head), second, len(b)}) {
		t.Fatalf("stable 1: %v", got)
	}
	if got := piBreakpoints(b, len(head), 2); fmt.Sprint(got) != fmt.Sprint([]int{len(head), third, len(b)}) {
		t.Fatalf("stable 2: %v", got)
	}
	if got := piBreakpoints(b, len(head), 0); fmt.Sprint(got) != fmt.Sprint([]int{len(head), len(b)}) {
		t.Fatalf("stable 0: %v", got)
	}
	// Mapped onto blocks: the head, the block before the stable end, the last.
	m := newMeter(NewCounter(assemble.BytesTokenizer{}))
	r := m.measure(b, len(head), time.Unix(0, 0), time.Minute)
	env := &Env{Calibration: identity}
	q := env.request(r, 0, time.Unix(0, 0), piBreakpoints(b, len(head), 1), 0, nil)
	if fmt.Sprint(q.breakpoints) != fmt.Sprint([]int{0, 1, len(r.blocks) - 1}) {
		t.Fatalf("blocks %v of %d", q.breakpoints, len(r.blocks))
	}
}

// TestCacheCheckDatasets checks the Anthropic model against what the
// dataset sessions recorded, summed per harness as `ctxstore replay` does:
// neither Claude Code's error (-5.5%) nor Pi's (the whole-cache misses of
// pi-mono__large-session) is small (docs/benchmarks.md), so both fall
// back to the prefix cache. A change to the model or the
// placements that moves either shows here.
func TestCacheCheckDatasets(t *testing.T) {
	dir := datasets(t)
	counter := NewCounter(tokens.Default()) // the command's default tokenizer
	sums := map[string]*CacheCheck{}
	var files []string
	for _, sub := range []string{"claude-code", "pi"} {
		fs, err := filepath.Glob(filepath.Join(dir, sub, "*.jsonl"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("%s: %v %d files", sub, err, len(fs))
		}
		files = append(files, fs...)
	}
	for _, f := range files {
		s, err := transcripttest.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), s, Options{Counter: counter, Dir: t.TempDir(), Strategies: []Strategy{}})
		if err != nil {
			t.Fatal(err)
		}
		ch := rep.CacheCheck
		if ch == nil || ch.Model != CacheAnthropic || ch.Calls == 0 {
			t.Fatalf("%s: check %+v", f, ch)
		}
		if sums[rep.Format] == nil {
			sums[rep.Format] = &CacheCheck{}
		}
		sums[rep.Format].Add(ch)
	}
	cc, pi := sums[string(transcript.FormatClaudeCode)], sums[string(transcript.FormatPi)]
	// Claude Code: close per call (read share within 2 points, 98% of
	// the hits agreed) but 5.5% under the recorded cost in total, past
	// the 5% that is small (misses the transcript does not explain).
	if cc.Small() || cc.CostError > -0.05 || cc.CostError < -0.07 || cc.ReadShareError > 0.03 || cc.HitAgreement < 0.97 || cc.Calls != 621 {
		t.Errorf("Claude Code: %+v", cc)
	}
	if pi.Small() || pi.CostError > -0.2 || pi.Calls != 610 {
		t.Errorf("Pi: %+v", pi)
	}
	t.Logf("Claude Code: cost %+.1f%%, read share %.1f points, agreement %.1f%%; Pi: cost %+.1f%%, read share %.1f points, agreement %.1f%%",
		100*cc.CostError, 100*cc.ReadShareError, 100*cc.HitAgreement, 100*pi.CostError, 100*pi.ReadShareError, 100*pi.HitAgreement)
}

// The replayed model reads the recorded machine's paths: relative to the
// recorded working directory, never the replay's mirror directory.
func TestReplayShowsRecordedPaths(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(datasets(t), "claude-code", "raw", "claude-reliability__coverage-test-fix.jsonl")
	s, err := transcripttest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := openSQLite(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := Run(ctx, s, Options{Dir: dir, Store: st, Strategies: []Strategy{&Ctxstore{Layout: assemble.LayoutStream}}})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := session.List(ctx, st)
	if err != nil || len(ids) != 1 {
		t.Fatalf("sessions %v %v", ids, err)
	}
	last, err := assemble.Rebuild(ctx, st, ids[0], rep.Results[0].Totals.Calls)
	if err != nil {
		t.Fatal(err)
	}
	got := string(last.Bytes)
	if !strings.Contains(got, " path=") {
		t.Fatalf("no metadata line with a path in the last context:\n%.2000s", got)
	}
	if strings.Contains(got, dir) || strings.Contains(got, "path="+s.Cwd) {
		t.Fatalf("the context shows the mirror directory %s or an absolute path under the cwd %s:\n%.3000s", dir, s.Cwd, got)
	}
}

// reqTTL is reqOf with a one-hour head breakpoint (block 0).
func reqTTL(at time.Time, labels []string, sizes []int, bps ...int) *cacheRequest {
	q := reqOf(at, labels, sizes, bps...)
	q.ttls = make([]time.Duration, len(bps))
	q.ttls[0] = time.Hour
	return q
}

// TestAnthropicHeadTTL: a one-hour breakpoint on the head before 5-minute
// ones (Anthropic's "Mixing different TTLs"): after a 20-minute gap the
// head is read from its hour-long entry and the rest written at the
// 5-minute price; more than an hour after its last use the head is
// written again, at the hour's price, reported apart from the 5-minute
// writes; a read renews the head for an hour.
func TestAnthropicHeadTTL(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	names := labels("b", 10)
	s := newAnthropicSim(5*time.Minute, 1024, PlacementPi)
	// First call: the head (B - A = 2,000) at the hour's price, the rest
	// (C - B = 1,000) at 5 minutes.
	if u := s.call(reqTTL(t0, names, []int{2000, 1000}, 0, 1)); u != (cacheUse{writeLong: 2000, write: 1000}) {
		t.Fatalf("call 1: %+v", u)
	}
	// Warm: everything up to the last entry is read (A past the head: B
	// is A, nothing written at the hour's price).
	if u := s.call(reqTTL(t0.Add(time.Minute), names, []int{2000, 1000, 500}, 0, 2)); u != (cacheUse{read: 3000, write: 500}) {
		t.Fatalf("call 2: %+v", u)
	}
	// 20 idle minutes: the 5-minute entries are gone, the head is read.
	at := t0.Add(21 * time.Minute)
	if u := s.call(reqTTL(at, names, []int{2000, 1000, 500, 300}, 0, 3)); u != (cacheUse{read: 2000, write: 1800}) {
		t.Fatalf("after 20 idle minutes: %+v", u)
	}
	// 50 more minutes (71 since the head was written, 50 since it was
	// read): the read renewed it.
	at = at.Add(50 * time.Minute)
	if u := s.call(reqTTL(at, names, []int{2000, 1000, 500, 300}, 0, 3)); u != (cacheUse{read: 2000, write: 1800}) {
		t.Fatalf("50 minutes after the head's last read: %+v", u)
	}
	// 61 idle minutes: the head is written again at the hour's price.
	at = at.Add(61 * time.Minute)
	if u := s.call(reqTTL(at, names, []int{2000, 1000, 500, 300}, 0, 3)); u != (cacheUse{writeLong: 2000, write: 1800}) {
		t.Fatalf("after 61 idle minutes: %+v", u)
	}
	// The same calls with a 5-minute head: the 20-minute gap writes all.
	f := newAnthropicSim(5*time.Minute, 1024, PlacementPi)
	f.call(reqOf(t0, names, []int{2000, 1000}, 0, 1))
	if u := f.call(reqOf(t0.Add(20*time.Minute), names, []int{2000, 1000, 500}, 0, 2)); u != (cacheUse{write: 3500}) {
		t.Fatalf("5-minute head after 20 minutes: %+v", u)
	}
	// A head too short to be an entry has no lifetime of its own: all at
	// 5 minutes.
	g := newAnthropicSim(5*time.Minute, 1024, PlacementPi)
	if u := g.call(reqTTL(t0, names, []int{500, 1000}, 0, 1)); u != (cacheUse{write: 1500}) {
		t.Fatalf("short head: %+v", u)
	}
	// Past four breakpoints the head's is dropped, its lifetime with it.
	h := newAnthropicSim(5*time.Minute, 1024, PlacementPi)
	if u := h.call(reqTTL(t0, names, []int{2000, 100, 100, 100, 100}, 0, 1, 2, 3, 4)); u != (cacheUse{write: 2400}) {
		t.Fatalf("five breakpoints: %+v", u)
	}
	// Priced as Anthropic bills the positions: 2x the hour, 1.25x the
	// 5 minutes, 0.1x the read, 1x the rest.
	if c := (cacheUse{read: 1000, writeLong: 100, write: 10, input: 1}).cost(s); math.Abs(c-(0.1*1000+2*100+1.25*10+1)) > 1e-9 {
		t.Fatalf("cost %v", c)
	}
}

// piToolSession is a Pi session of tool calls, each after a user prompt
// sent the given gap after the previous call's result (gaps[0] is
// ignored), recording usage that calibrates to `overhead` tokens of
// harness head over the replay's own rendering.
func piToolSession(gaps []time.Duration, overhead int) *transcript.Session {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &transcript.Session{Format: transcript.FormatPi, ID: "pi-gaps", Cwd: "/w"}
	at := t0
	for i := range gaps {
		if i > 0 {
			at = at.Add(gaps[i])
		}
		id := fmt.Sprintf("t%03d", i)
		s.Messages = append(s.Messages,
			conversation.Message{Role: conversation.RoleUser, Text: fmt.Sprintf("step %d", i), Time: at},
			conversation.Message{Role: conversation.RoleAssistant, Model: "claude-sonnet-4-20250514", Time: at.Add(time.Second),
				ToolCalls: []conversation.ToolCall{{ID: id, Name: "bash", Args: map[string]any{"command": fmt.Sprintf("echo %d", i)}}}},
			conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: "bash", Time: at.Add(2 * time.Second),
				Output: strings.Repeat(fmt.Sprintf("output line %03d\n", i), 40)})
		at = at.Add(2 * time.Second)
	}
	c := NewCounter(assemble.BytesTokenizer{})
	for _, in := range calls(s) {
		u := conversation.Usage{Input: int64(overhead + c.Count(newRenderer().render(in.Messages, nil)[len(EmptyHead):])), Output: 1}
		s.Messages[in.Index].Usage = &u
	}
	return s
}

// TestHeadTTLReplay: on a Pi session ctxstore's strategy places the
// breakpoints and, once the session has paused, its head lives
// Options.HeadTTL (assemble.Policy.HeadTTL): under the prefix cache and
// under Anthropic's model, the first call is priced as with a 5-minute
// head; the first call after 20 idle minutes writes the head at the
// hour's price; the call after the next 20 idle minutes reads it; the call
// after two idle hours writes it again at that price; the harness's
// strategies keep the harness's 5-minute breakpoints, their figures and the
// cache check.
func TestHeadTTLReplay(t *testing.T) {
	gaps := []time.Duration{0, time.Minute, 20 * time.Minute, time.Minute, 20 * time.Minute, time.Minute, 2 * time.Hour, time.Minute}
	s := piToolSession(gaps, 3000)
	ctx := context.Background()
	for _, model := range []string{CachePrefix, CacheAnthropic} {
		run := func(head time.Duration) *Report {
			t.Helper()
			rep, err := Run(ctx, s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite, CacheModel: model, HeadTTL: head,
				Strategies: []Strategy{&Naive{}, &Ctxstore{Layout: assemble.LayoutStream}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Results {
				checkAccounting(t, r, rep.TTLSeconds)
			}
			return rep
		}
		short, long := run(5*time.Minute), run(time.Hour)
		if short.HeadTTLSeconds != 300 || long.HeadTTLSeconds != 3600 || short.Calibration.Overhead != 3000 {
			t.Fatalf("%s: head TTL %v / %v s, calibration %+v", model, short.HeadTTLSeconds, long.HeadTTLSeconds, short.Calibration)
		}
		if fmt.Sprint(short.CacheCheck) != fmt.Sprint(long.CacheCheck) || fmt.Sprint(short.Results[0]) != fmt.Sprint(long.Results[0]) {
			t.Fatalf("%s: the harness's naive history or the check moved with the head's TTL:\n%+v\n%+v", model, short.Results[0].Totals, long.Results[0].Totals)
		}
		for _, c := range short.Results[1].Calls {
			if c.WrittenLong != 0 || c.LongHead {
				t.Fatalf("%s: 5-minute head, call %+v", model, c)
			}
		}
		sc, lc := short.Results[1].Calls, long.Results[1].Calls
		// No pause yet: the first call as with a 5-minute head.
		if lc[0].WrittenLong != 0 || lc[0].Cost != sc[0].Cost {
			t.Fatalf("%s: first call %+v against %+v", model, lc[0], sc[0])
		}
		// After the first 20 idle minutes: cold, the head (the calibrated
		// harness head and ctxstore's guide and tools) written at the
		// hour's price, the rest at 5 minutes.
		head := lc[2].WrittenLong
		if c := lc[2]; !c.Cold || c.LongHead || c.Cached != 0 || head <= 3000 || c.Written != c.Context ||
			math.Abs(c.Cost-sc[2].Cost-(LongTTLWritePrice-WritePrice)*float64(head)) > 1e-6 {
			t.Fatalf("%s: after the first pause %+v against %+v", model, c, sc[2])
		}
		// After the next 20 idle minutes: the head read.
		if c := lc[4]; !c.Cold || !c.LongHead || c.Cached != head || c.WrittenLong != 0 || c.Written != c.Context-head || sc[4].Cached != 0 {
			t.Fatalf("%s: after the second pause %+v (5-minute head: %+v)", model, c, sc[4])
		}
		if d := sc[4].Cost - lc[4].Cost; math.Abs(d-(WritePrice-ReadPrice)*float64(head)) > 1e-6 {
			t.Fatalf("%s: the head read after 20 minutes saves %v, want %v", model, d, (WritePrice-ReadPrice)*float64(head))
		}
		// After two idle hours: the head written again at the hour's price.
		if c := lc[6]; !c.Cold || c.LongHead || c.Cached != 0 || c.WrittenLong != head || c.Written != c.Context {
			t.Fatalf("%s: after two hours %+v", model, c)
		}
		// Warm calls are the same either way.
		for _, k := range []int{1, 3, 5, 7} {
			if lc[k].Cost != sc[k].Cost || lc[k].WrittenLong != 0 {
				t.Fatalf("%s: warm call %d: %+v against %+v", model, k+1, lc[k], sc[k])
			}
		}
		if lt := long.Results[1].Totals; lt.WrittenLong != 2*int64(head) || lt.Cached != short.Results[1].Totals.Cached+int64(head) {
			t.Fatalf("%s: totals %+v against %+v", model, lt, short.Results[1].Totals)
		}
		if sum := Sum([]*Report{long}); sum[1].Totals.WrittenLong != 2*int64(head) {
			t.Fatalf("%s: Sum %+v", model, sum[1].Totals)
		}
	}
	// On a Claude Code session the harness places the breakpoints
	// (ctxstore, an MCP server, cannot): the head's TTL changes nothing.
	cc := piToolSession(gaps, 3000)
	cc.Format = transcript.FormatClaudeCode
	var costs []float64
	for _, head := range []time.Duration{5 * time.Minute, time.Hour} {
		rep, err := Run(ctx, cc, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite, CacheModel: CachePrefix, HeadTTL: head,
			Strategies: []Strategy{&Ctxstore{Layout: assemble.LayoutStream}}})
		if err != nil {
			t.Fatal(err)
		}
		if tt := rep.Results[0].Totals; tt.WrittenLong != 0 {
			t.Fatalf("Claude Code, head %v: %+v", head, tt)
		}
		costs = append(costs, rep.Results[0].Totals.Cost)
	}
	if costs[0] != costs[1] {
		t.Fatalf("Claude Code: %v", costs)
	}
}

// TestHeadTTLOption: Options.HeadTTL, else DefaultHeadTTL; never shorter
// than the TTL (a negative one: the TTL, so never longer).
func TestHeadTTLOption(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want time.Duration
	}{
		{Options{TTL: 5 * time.Minute}, DefaultHeadTTL},
		{Options{TTL: 5 * time.Minute, HeadTTL: 5 * time.Minute}, 5 * time.Minute},
		{Options{TTL: 5 * time.Minute, HeadTTL: -1}, 5 * time.Minute},
		{Options{TTL: 5 * time.Minute, HeadTTL: 2 * time.Hour}, 2 * time.Hour},
		{Options{TTL: time.Hour, HeadTTL: 5 * time.Minute}, time.Hour},
	} {
		if got := tc.o.headTTL(); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.o, got, tc.want)
		}
	}
}

// TestCacheCheckIgnoresWarming: the recorded run sent no warm request, so
// the check of the cache model is the same with --warm as without: a
// pause past the cache's lifetime that the record shows as a miss is a
// miss in the check too, although the strategies are priced warmed.
func TestCacheCheckIgnoresWarming(t *testing.T) {
	const overhead = 2000
	sizes := func() []int {
		s := usageSession(30, func(int) conversation.Usage { return conversation.Usage{Output: 1} })
		c := NewCounter(assemble.BytesTokenizer{})
		var out []int
		for _, in := range calls(s) {
			out = append(out, overhead+c.Count(newRenderer().render(in.Messages, nil)[len(EmptyHead):]))
		}
		return out
	}()
	const pausedAt = 15
	s := usageSession(30, func(k int) conversation.Usage {
		if k == 0 || k == pausedAt {
			return conversation.Usage{CacheWrite: int64(sizes[k]), Output: 1}
		}
		return conversation.Usage{CacheRead: int64(sizes[k-1]), CacheWrite: int64(sizes[k] - sizes[k-1]), Output: 1}
	})
	for i := 1 + 2*pausedAt; i < len(s.Messages); i++ {
		s.Messages[i].Time = s.Messages[i].Time.Add(10 * time.Minute)
	}
	check := func(warm string) *CacheCheck {
		rep, err := Run(context.Background(), s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}}, CacheModel: CacheAnthropic, Warm: warm})
		if err != nil {
			t.Fatal(err)
		}
		return rep.CacheCheck
	}
	plain, warmed := check(WarmOff), check(WarmIdle)
	if plain.CostError != warmed.CostError || plain.PredictedRead != warmed.PredictedRead || plain.HitAgreement != warmed.HitAgreement {
		t.Fatalf("check without warming %+v, with %+v", plain, warmed)
	}
}

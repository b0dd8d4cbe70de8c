package replay

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/cachewarm"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

func TestWarmTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ks ...int) string {
		var b strings.Builder
		for _, k := range ks {
			fmt.Fprintf(&b, "%d ", k)
		}
		return b.String()
	}
	show := func(ts []time.Time) string {
		var b strings.Builder
		for _, x := range ts {
			fmt.Fprintf(&b, "%d ", int(x.Sub(t0)/(270*time.Second)))
		}
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		mode    string
		next    time.Duration // 0: no next call
		running bool
		budget  int
		want    string // multiples of 270 s
	}{
		{"off", WarmOff, 20 * time.Minute, true, 11, at()},
		{"a gap the cache survives", WarmIdle, 4 * time.Minute, true, 11, at()},
		{"a 20-minute tool run", WarmRunning, 20 * time.Minute, true, 11, at(1, 2, 3, 4)},
		{"idle, running mode", WarmRunning, 20 * time.Minute, false, 11, at()},
		{"idle, idle mode", WarmIdle, 20 * time.Minute, false, 11, at(1, 2, 3, 4)},
		{"a warm due when the call comes", WarmIdle, 9 * time.Minute, false, 11, at(1)},
		{"idle: 30 minutes at most", WarmIdle, 3 * time.Hour, false, 11, at(1, 2, 3, 4, 5, 6)},
		{"running: an hour, then the budget", WarmRunning, 3 * time.Hour, true, 11, at(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{"running: an hour at most", WarmRunning, 3 * time.Hour, true, 100, at(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)},
		{"the budget", WarmIdle, 3 * time.Hour, false, 2, at(1, 2)},
		{"after the last call", WarmIdle, 0, false, 11, at(1, 2, 3, 4, 5, 6)},
	} {
		var next time.Time
		if tc.next > 0 {
			next = t0.Add(tc.next)
		}
		if got := show(warmTimes(tc.mode, 5*time.Minute, t0, next, tc.running, tc.budget)); got != tc.want {
			t.Errorf("%s: warms at %q x 270 s, want %q", tc.name, got, tc.want)
		}
	}
}

// warmSession is a Pi session of five calls: a tool call whose bash runs
// 20 minutes (the agent runs), the answer after it, then a user who comes
// back after 12 minutes, after 40, and after two hours.
func warmSession() *transcript.Session {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &transcript.Session{Format: transcript.FormatPi, ID: "pi-warm", Cwd: "/w"}
	out := strings.Repeat("build output line\n", 400)
	add := func(m conversation.Message) { s.Messages = append(s.Messages, m) }
	// A prompt long enough to cache (Anthropic's minimum, 1,024 tokens) and
	// for warms to pay (a warm of a few tokens costs more than it saves).
	add(conversation.Message{Role: conversation.RoleUser, Text: "Build it.\n" + strings.Repeat("the spec says so\n", 400), Time: t0})
	add(conversation.Message{Role: conversation.RoleAssistant, Model: "claude-sonnet-4-20250514", Time: t0.Add(time.Second),
		ToolCalls: []conversation.ToolCall{{ID: "t1", Name: "bash", Args: map[string]any{"command": "make"}}}})
	add(conversation.Message{Role: conversation.RoleToolResult, ToolCallID: "t1", ToolName: "bash", Time: t0.Add(20 * time.Minute), Output: out})
	add(conversation.Message{Role: conversation.RoleAssistant, Model: "claude-sonnet-4-20250514", Time: t0.Add(20*time.Minute + time.Second), Text: "Built."})
	add(conversation.Message{Role: conversation.RoleUser, Text: "Note it.", Time: t0.Add(32 * time.Minute)})
	add(conversation.Message{Role: conversation.RoleAssistant, Model: "claude-sonnet-4-20250514", Time: t0.Add(32*time.Minute + time.Second), Text: "Noted."})
	add(conversation.Message{Role: conversation.RoleUser, Text: "Test it.", Time: t0.Add(72 * time.Minute)})
	add(conversation.Message{Role: conversation.RoleAssistant, Model: "claude-sonnet-4-20250514", Time: t0.Add(72*time.Minute + time.Second), Text: "Tested."})
	add(conversation.Message{Role: conversation.RoleUser, Text: "Ship it.", Time: t0.Add(4 * time.Hour)})
	add(conversation.Message{Role: conversation.RoleAssistant, Model: "claude-sonnet-4-20250514", Time: t0.Add(4*time.Hour + time.Second), Text: "Shipped."})
	return s
}

// renewals is the naive strategy, noting the warm requests each call is
// told of (CallInput.Renewed).
type renewals struct {
	Naive
	seen []time.Time
}

func (r *renewals) Name() string { return "renewals" }

func (r *renewals) Step(ctx context.Context, in *CallInput) (*Step, error) {
	r.seen = append(r.seen, in.Renewed)
	return r.Naive.Step(ctx, in)
}

// TestWarmReplay: under --warm the harness re-sends a call's request every
// 270 s (a 5-minute cache) while its rules allow. Running: through the
// 20-minute tool run, so the call after it is warm, and not while the
// harness waits for the user. Idle: also through the user's pauses (the
// 12-minute one is bridged by two warms), for 30 minutes at most (the
// 40-minute pause stays cold) and after the last call.
// Each warm reads the call's context and answers a token; every strategy
// but the recorded one warms, the naive baseline included; each strategy
// is told of the last warm before a call, and ctxstore's assembler acts on
// it: the bridged 12-minute pause is no cold start, so the head's hour is
// asked for only from the 40-minute one (written then, not read from an
// hour-long entry the 12-minute pause would have asked for).
func TestWarmReplay(t *testing.T) {
	ctx := context.Background()
	s := warmSession()
	for _, model := range []string{CachePrefix, CacheAnthropic} {
		run := func(warm string) *Report {
			t.Helper()
			told := &renewals{}
			rep, err := Run(ctx, s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite, CacheModel: model, Warm: warm,
				Calibrate: "none", Strategies: []Strategy{&Naive{}, &Ctxstore{Layout: assemble.LayoutStream}, told}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Warm != warm {
				t.Fatalf("%s: report says warm %q, want %q", model, rep.Warm, warm)
			}
			for _, r := range rep.Results {
				checkAccounting(t, r, rep.TTLSeconds)
			}
			// The strategies are told of the last warm before each call.
			c := rep.Results[0].Calls
			for i, got := range told.seen {
				var want time.Time
				if i > 0 && c[i-1].Warms > 0 {
					want = c[i-1].Time.Add(time.Duration(c[i-1].Warms) * 270 * time.Second)
				}
				if !got.Equal(want) {
					t.Errorf("%s, warm %s: call %d told of a renewal at %v, want %v", model, warm, i+1, got, want)
				}
			}
			return rep
		}
		off, running, idle := run(WarmOff), run(WarmRunning), run(WarmIdle)
		for k, want := range map[*Report][5]int{off: {0, 0, 0, 0, 0}, running: {4, 0, 0, 0, 0}, idle: {4, 2, 6, 6, 6}} {
			for _, r := range k.Results {
				for i, c := range r.Calls {
					if c.Warms != want[i] {
						t.Errorf("%s, warm %s, %s call %d: %d warms, want %d", model, k.Warm, r.Strategy, c.N, c.Warms, want[i])
					}
				}
			}
		}
		for _, k := range []*Report{running, idle} {
			for _, r := range k.Results {
				c := r.Calls
				if c[1].Cold || c[1].Cached == 0 {
					t.Errorf("%s, warm %s, %s: the call after the warmed tool run %+v", model, k.Warm, r.Strategy, c[1])
				}
				if c[2].Cold != (k.Warm == WarmRunning) {
					t.Errorf("%s, warm %s, %s: the call after 12 minutes %+v", model, k.Warm, r.Strategy, c[2])
				}
				if !c[3].Cold || !c[4].Cold {
					t.Errorf("%s, warm %s, %s: calls after 40 minutes and 2 hours are warm: %+v %+v", model, k.Warm, r.Strategy, c[3], c[4])
				}
				if model == CachePrefix {
					if w := c[0].WarmCost; math.Abs(w-4*(ReadPrice*float64(c[0].Context)+WarmOutputPrice)) > 1e-6 {
						t.Errorf("%s: 4 warms of call 1 cost %f", r.Strategy, w)
					}
				}
			}
			if k.Naive.Warms != k.Results[0].Totals.Warms || k.Naive.Cost != k.Results[0].Totals.Cost {
				t.Errorf("%s, warm %s: the baseline %+v is not the naive history warmed: %+v", model, k.Warm, k.Naive, k.Results[0].Totals)
			}
		}
		// ctxstore under idle warming: the first cold start is the
		// 40-minute pause; its head is written for the hour there.
		// (Under Anthropic's model the head here is below the minimum
		// cacheable length: nothing is written for the hour.)
		if c := idle.Results[1].Calls[3]; model == CachePrefix && (c.LongHead || c.WrittenLong == 0) {
			t.Errorf("%s: ctxstore's call after 40 minutes %+v: the warmed 12-minute pause was taken for a cold start", model, c)
		}
		// Off: every call after the first is cold.
		for _, r := range off.Results {
			for _, c := range r.Calls[1:] {
				if !c.Cold {
					t.Errorf("%s, warm off, %s: call %d warm after %v s", model, r.Strategy, c.N, c.Gap)
				}
			}
		}
		// Warming the tool run is cheaper than writing the context again.
		if n, w := off.Results[0].Calls, running.Results[0].Calls; w[0].Cost+w[1].Cost >= n[0].Cost+n[1].Cost {
			t.Errorf("%s: warming the 20-minute run costs %f, against %f cold", model, w[0].Cost+w[1].Cost, n[0].Cost+n[1].Cost)
		}
	}
}

func TestMissTokens(t *testing.T) {
	for _, tc := range []struct{ p, stale, long, want int }{
		{40000, 0, 0, 40000},     // all of it
		{40000, 10000, 0, 30000}, // stale content is dropped at expiry
		{40000, 0, 30000, 10000}, // the head cached for the hour is read
		{40000, 10000, 30000, 0}, // nothing left to save
		{40000, -5, 0, 40000},    // no negative staleness
		{40000, 20000, 30000, 0}, // never below zero
	} {
		if got := missTokens(tc.p, tc.stale, tc.long); got != tc.want {
			t.Errorf("missTokens(%d, %d, %d) = %d, want %d", tc.p, tc.stale, tc.long, got, tc.want)
		}
	}
}

// TestClaudeCodeProxyReplay: with ClaudeCodeProxy a Claude Code session is
// replayed as sent through ctxstore's proxy: from the first request that
// found the cache cold after the first, every strategy's head (Claude
// Code's breakpoints) asks for the hour, read after later pauses within
// it; the proxy's warming replaces Warm for it. A Pi session is not
// affected.
func TestClaudeCodeProxyReplay(t *testing.T) {
	ctx := context.Background()
	cc := warmSession()
	cc.Format, cc.ID = transcript.FormatClaudeCode, "cc-proxy"
	// Claude Code's head, its system prompt and tools, is not in the
	// transcript: the recorded usage says it is about 23,000 tokens more
	// than the counted context (the calibrated overhead), most of the
	// prompt, as Claude Code's is.
	sent := []int64{24700, 26530, 26540, 26550, 26560}
	for i, k := 0, 0; i < len(cc.Messages); i++ {
		if cc.Messages[i].Role == conversation.RoleAssistant {
			cc.Messages[i].Usage = &conversation.Usage{Input: sent[k]}
			k++
		}
	}
	run := func(s *transcript.Session, o Options) *Report {
		t.Helper()
		o.Tokenizer, o.Dir, o.OpenStore, o.Calibrate, o.CacheModel = assemble.BytesTokenizer{}, t.TempDir(), openSQLite, "overhead", CachePrefix
		o.Strategies = []Strategy{&Naive{}, &Ctxstore{Layout: assemble.LayoutStream}}
		rep, err := Run(ctx, s, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			checkAccounting(t, r, rep.TTLSeconds)
		}
		return rep
	}
	plain := run(cc, Options{})
	proxied := run(cc, Options{ClaudeCodeProxy: WarmOff})
	if plain.ClaudeCodeProxy || !proxied.ClaudeCodeProxy || proxied.Warm != WarmOff {
		t.Fatalf("reports: plain %v, proxied %v warm %q", plain.ClaudeCodeProxy, proxied.ClaudeCodeProxy, proxied.Warm)
	}
	for i, r := range proxied.Results {
		c, p := r.Calls, plain.Results[i].Calls
		for k := range p {
			if p[k].WrittenLong != 0 || p[k].LongHead {
				t.Errorf("%s without the proxy, call %d: %+v asks for the hour", r.Strategy, k+1, p[k])
			}
		}
		// Call 2 (after the 20-minute tool run) is the first cold one: the
		// hour from it on; read after 12 and 40 minutes; written again
		// after nearly three hours.
		if c[0].WrittenLong != 0 || c[1].WrittenLong == 0 || !c[2].LongHead || !c[3].LongHead || c[4].LongHead || c[4].WrittenLong == 0 {
			t.Errorf("%s through the proxy: %+v", r.Strategy, c)
		}
		if c[2].Cost >= p[2].Cost || c[3].Cost >= p[3].Cost {
			t.Errorf("%s: the head read after a pause costs %f and %f, written again %f and %f", r.Strategy, c[2].Cost, c[3].Cost, p[2].Cost, p[3].Cost)
		}
	}
	if proxied.Naive.Cost >= plain.Naive.Cost {
		t.Errorf("the naive baseline through the proxy costs %f, without %f: not priced through it", proxied.Naive.Cost, plain.Naive.Cost)
	}
	// The proxy's warming, whatever Warm says; once the head lives the
	// hour, a pause's warms are weighed against the rest of the prompt
	// (cachewarm.Budget with the head kept). Warming idle bridges the
	// tool run and the 12-minute pause (two warms); the 40-minute one
	// outlasts the 30-minute limit (six), so call 4 is the first cold one
	// and asks for the hour; after it, one warm, not six.
	warmed := run(cc, Options{ClaudeCodeProxy: WarmIdle, Warm: WarmOff})
	if warmed.Warm != WarmIdle || warmed.Results[0].Totals.Warms == 0 {
		t.Errorf("proxy warming idle: report warm %q, %d warms", warmed.Warm, warmed.Results[0].Totals.Warms)
	}
	for _, r := range warmed.Results {
		c := r.Calls
		head := c[3].WrittenLong
		want := cachewarm.Budget(c[3].Context, c[3].Context-head, head, WritePrice, ReadPrice)
		if head == 0 || c[3].Warms != want || want >= 6 || want == 0 || c[1].Warms != 2 || c[2].Warms != 6 {
			t.Errorf("%s: %d, %d and %d warms after calls 2, 3 and 4 (context %d, head %d), want 2, 6 and %d", r.Strategy, c[1].Warms, c[2].Warms, c[3].Warms, c[3].Context, head, want)
		}
	}
	// A Pi session: not through the proxy.
	pi := run(warmSession(), Options{ClaudeCodeProxy: WarmIdle, Warm: WarmOff})
	if pi.ClaudeCodeProxy || pi.Warm != WarmOff || pi.Results[0].Totals.Warms != 0 || pi.Results[0].Calls[1].WrittenLong != 0 {
		t.Errorf("a Pi session replayed as through the Claude Code proxy: %v %q %+v", pi.ClaudeCodeProxy, pi.Warm, pi.Results[0].Totals)
	}
	if _, err := Run(ctx, cc, Options{ClaudeCodeProxy: "always", Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite}); err == nil || !strings.Contains(err.Error(), "Claude Code proxy") {
		t.Errorf("an unknown proxy warming mode: %v", err)
	}
}

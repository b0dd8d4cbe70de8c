package replay

import (
	"context"
	"math"

	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// SmallCostError and SmallReadShareError define a cache model whose error
// is small (docs/replay.md, "Is the model good enough"): replaying the
// harness's own requests under it, the predicted cost of the calls is
// within 5% of the cost their recorded usage gives, and the share of each
// call's input read from the cache is off by at most 10 percentage points
// on average. A harness whose error is larger is priced with the ideal
// prefix cache (CachePrefix) instead, and the report says so.
const (
	SmallCostError      = 0.05
	SmallReadShareError = 0.10
)

// CacheCheck is the check of a provider cache model against the usage a
// harness recorded: the harness's own requests (the history as the harness
// sent it: everything since the last compaction) replayed under the model,
// each call's predicted cache reads and writes against the recorded ones.
type CacheCheck struct {
	// Model and Placement are the model checked and the breakpoints'
	// placement; Provider the provider the transcript records.
	Model     string `json:"model"`
	Placement string `json:"placement,omitempty"`
	Provider  string `json:"provider,omitempty"`
	// Calls are the calls compared; Skipped the calls left out (no usage,
	// another provider's model, or after a Pi compaction, whose kept
	// messages the transcript does not repeat).
	Calls   int `json:"calls"`
	Skipped int `json:"skipped"`
	// Recorded and predicted sums over the calls compared, in provider
	// tokens.
	RecordedRead   int64 `json:"recorded_read"`
	RecordedWrite  int64 `json:"recorded_write"`
	RecordedInput  int64 `json:"recorded_input"`
	PredictedRead  int64 `json:"predicted_read"`
	PredictedWrite int64 `json:"predicted_write"`
	PredictedInput int64 `json:"predicted_input"`
	// RecordedCost and PredictedCost price them alike (input 1, write at
	// the model's write price, read 0.1); CostError is (predicted -
	// recorded) / recorded.
	RecordedCost  float64 `json:"recorded_cost"`
	PredictedCost float64 `json:"predicted_cost"`
	CostError     float64 `json:"cost_error"`
	// ReadShareError is the mean over the calls of |predicted read /
	// predicted sent - recorded read / recorded sent|; HitAgreement the
	// share of calls where the model and the record agree on whether the
	// call read more than half its input from the cache.
	ReadShareError float64 `json:"read_share_error"`
	HitAgreement   float64 `json:"hit_agreement"`
	// Disagree lists the calls (numbers, at most 100 per session) where
	// they disagree.
	Disagree []int `json:"disagree,omitempty"`

	readShareSum float64
	agree        int
}

// Small tells whether the error is small enough to use the model.
func (c *CacheCheck) Small() bool {
	return c != nil && c.Calls > 0 && math.Abs(c.CostError) <= SmallCostError && c.ReadShareError <= SmallReadShareError
}

// Add adds another session's check (the same model) into c.
func (c *CacheCheck) Add(o *CacheCheck) {
	if o == nil {
		return
	}
	if c.Model == "" {
		c.Model, c.Placement, c.Provider = o.Model, o.Placement, o.Provider
	}
	c.Calls += o.Calls
	c.Skipped += o.Skipped
	c.RecordedRead += o.RecordedRead
	c.RecordedWrite += o.RecordedWrite
	c.RecordedInput += o.RecordedInput
	c.PredictedRead += o.PredictedRead
	c.PredictedWrite += o.PredictedWrite
	c.PredictedInput += o.PredictedInput
	c.RecordedCost += o.RecordedCost
	c.PredictedCost += o.PredictedCost
	c.readShareSum += o.readShareSum
	c.agree += o.agree
	c.finish()
}

func (c *CacheCheck) finish() {
	c.CostError = ratio(c.PredictedCost-c.RecordedCost, c.RecordedCost)
	if c.Calls > 0 {
		c.ReadShareError = c.readShareSum / float64(c.Calls)
		c.HitAgreement = float64(c.agree) / float64(c.Calls)
	}
}

// harnessView renders what the harness sent: the history since the last
// compaction summary before the call (the whole history before the first).
type harnessView struct {
	r      *renderer
	start  int
	starts []int
}

func (*harnessView) Name() string { return "harness" }

func (h *harnessView) Begin(_ context.Context, env *Env) error {
	h.r, h.start, h.starts = newRenderer(), 0, env.Session.CompactionAt
	return nil
}

func (h *harnessView) Step(_ context.Context, c *CallInput) (*Step, error) {
	start := 0
	for _, k := range h.starts {
		if k < c.Index {
			start = k
		}
	}
	if start != h.start {
		h.r, h.start = newRenderer(), start
	}
	return &Step{Bytes: h.r.render(c.Messages[start:], nil), HeadLen: len(EmptyHead)}, nil
}

func (h *harnessView) End(context.Context) ([]string, error) { h.r = nil; return nil, nil }

// sessionProvider returns the provider most of the session's calls went to
// and the model most used.
func sessionProvider(s *transcript.Session) (provider, model string) {
	byProvider, byModel := map[string]int{}, map[string]int{}
	for _, m := range s.Messages {
		if m.Role != conversation.RoleAssistant || m.Model == "" || m.Model == "<synthetic>" {
			continue
		}
		byProvider[ProviderOf(m.Model)]++
		byModel[m.Model]++
	}
	best := func(m map[string]int) string {
		k, n := "", 0
		for key, v := range m {
			if v > n || v == n && key < k {
				k, n = key, v
			}
		}
		return k
	}
	return best(byProvider), best(byModel)
}

// placementOf returns the breakpoint placement of a harness.
func placementOf(format string) string {
	if format == string(transcript.FormatPi) {
		return PlacementPi
	}
	return PlacementClaudeCode
}

// checkCache replays the harness's own requests under env's cache model
// (without the warming or proxy env prices the strategies with) and
// compares each call with its recorded usage.
func checkCache(ctx context.Context, env *Env, cs []*CallInput, provider string) (*CacheCheck, error) {
	// The recorded run sent neither ctxstore's warm requests nor went
	// through its proxy: the model is checked against what was sent, so
	// --warm and --claude-code-proxy price the strategies, not the check.
	e := *env
	e.Warm, e.Proxy = WarmOff, false
	res, err := runStrategy(ctx, &harnessView{}, &e, cs, nil)
	if err != nil {
		return nil, err
	}
	sim, _ := newCacheSim(e.cacheModel(), e.Placement, e.Model, e.TTL)
	wp := WritePrice
	if sim != nil {
		wp = sim.writePrice()
	}
	chk := &CacheCheck{Model: e.cacheModel(), Provider: provider}
	if chk.Model == CacheAnthropic {
		chk.Placement = e.Placement
	}
	firstCompaction := -1
	if len(env.Session.CompactionAt) > 0 {
		firstCompaction = env.Session.CompactionAt[0]
	}
	for i, in := range cs {
		u := in.Usage
		m := env.Session.Messages[in.Index]
		pi := env.Session.Format == transcript.FormatPi && firstCompaction >= 0 && in.Index > firstCompaction
		if u == nil || u.Sent() == 0 || ProviderOf(m.Model) != provider || pi {
			chk.Skipped++
			continue
		}
		c := res.Calls[i]
		chk.Calls++
		chk.RecordedRead += u.CacheRead
		chk.RecordedWrite += u.CacheWrite
		chk.RecordedInput += u.Input
		// The prediction is scaled to the tokens the harness recorded
		// sending, so that the check measures the cache behaviour, not the
		// calibration's error on the call's size (reported apart).
		f := ratio(float64(u.Sent()), float64(c.Context))
		read, write := math.Round(f*float64(c.Cached)), math.Round(f*float64(c.Written))
		input := max(float64(u.Sent())-read-write, 0)
		chk.PredictedRead += int64(read)
		chk.PredictedWrite += int64(write)
		chk.PredictedInput += int64(input)
		chk.RecordedCost += recordedCost(u, wp)
		chk.PredictedCost += InputPrice*input + wp*write + ReadPrice*read
		rs := float64(u.CacheRead) / float64(u.Sent())
		ps := ratio(float64(c.Cached), float64(c.Context))
		chk.readShareSum += math.Abs(ps - rs)
		if (rs > 0.5) == (ps > 0.5) {
			chk.agree++
		} else if len(chk.Disagree) < 100 {
			chk.Disagree = append(chk.Disagree, in.N)
		}
	}
	chk.finish()
	return chk, nil
}

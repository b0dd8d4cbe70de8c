package inspect

import (
	"context"
	"fmt"
	"sort"

	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/session/commits"
)

// LayoutRecorded is the Layout of a recorded session's call: a request
// the harness sent, derived from its transcript (harness/recorded).
const LayoutRecorded = "recorded"

// RecordedUsage is a recorded call's usage as the provider reported it:
// uncached input, cache reads, cache writes for 5 minutes and for an hour,
// and output.
type RecordedUsage struct {
	Input        int64 `json:"input"`
	CacheRead    int64 `json:"cache_read"`
	CacheWrite5m int64 `json:"cache_write_5m"`
	CacheWrite1h int64 `json:"cache_write_1h"`
	Output       int64 `json:"output"`
}

// recordedCalls returns calls of a recorded session: the stored ones
// (harness/recorded.Update, run by each import) when they are current,
// else derived from its commits now.
func (in *Inspector) recordedCalls(ctx context.Context, sid string, p Page) ([]Call, error) {
	rc, err := in.recordedPage(ctx, sid, p)
	if err != nil {
		return nil, err
	}
	out := make([]Call, 0, len(rc))
	for _, c := range rc {
		out = append(out, in.recordedCall(sid, c))
	}
	return out, nil
}

// recordedPage reads a page of recorded calls: stored, else derived.
func (in *Inspector) recordedPage(ctx context.Context, sid string, p Page) ([]recorded.Call, error) {
	if p.From < 1 {
		p.From = 1
	}
	c, err := in.chain(ctx, sid, fmt.Errorf("session %s: %w", sid, ErrNotFound))
	if err != nil {
		return nil, err
	}
	if _, ok, err := recorded.ReadState(ctx, in.st, sid, c.Commits); err != nil {
		return nil, err
	} else if ok {
		return recorded.Page(ctx, in.st, sid, p.From, p.Limit)
	}
	d, err := in.derive(ctx, sid)
	if err != nil {
		return nil, err
	}
	all := d.Calls
	if p.From > len(all) {
		return nil, nil
	}
	all = all[p.From-1:]
	if p.Limit > 0 && len(all) > p.Limit {
		all = all[:p.Limit]
	}
	return all, nil
}

// derive derives a recorded session's calls from its commits.
func (in *Inspector) derive(ctx context.Context, sid string) (*recorded.Derived, error) {
	if in.o.Formats == nil {
		return &recorded.Derived{Session: sid}, nil
	}
	return recorded.Derive(ctx, commits.New(in.st, commits.Options{Registry: in.o.Formats}), sid)
}

// recordedCall is a recorded call as a Call: its recorded usage priced
// with the price table for its model (Cost in base input tokens at the
// Inspector's input price, so that sums over a session add up), its
// cache break as harness/recorded attributed it.
func (in *Inspector) recordedCall(sid string, c recorded.Call) Call {
	x := Call{N: c.N, Time: c.Time, GapSeconds: c.GapSeconds, IdleSeconds: c.GapSeconds,
		Layout: LayoutRecorded, Tokens: c.Sent(), Bytes: c.Bytes, Items: c.Messages, RebaseFrom: -1,
		Recorded: true, Model: c.Model, Lane: c.Lane, MessageID: c.MessageID, RequestID: c.RequestID, Exact: c.Exact}
	price, priced := in.o.PriceTable.Lookup(c.Model)
	if u := c.Usage; u != nil {
		x.Usage = &RecordedUsage{Input: u.Input, CacheRead: u.CacheRead, CacheWrite5m: u.CacheWrite - min(u.CacheWrite1h, u.CacheWrite),
			CacheWrite1h: min(u.CacheWrite1h, u.CacheWrite), Output: u.Output}
		x.CachedTokens, x.WrittenTokens = int(u.CacheRead), int(u.CacheWrite)
		if priced {
			x.CostUSD = price.Cost(*u)
		}
	} else {
		x.Estimated = true
	}
	x.CostUnknown = !priced || c.Usage == nil
	if x.Tokens > 0 {
		x.CachedShare = float64(x.CachedTokens) / float64(x.Tokens)
	}
	x.Cost = in.units(x.CostUSD)
	b := &x.Break
	b.Cause, b.Reason, b.Detail, b.FirstItem = c.Cause, c.MissReason, c.Detail, -1
	b.PrefixBytes, b.PrefixTokens = c.PrefixBytes, -1
	if c.PrefixBytes >= 0 && c.Bytes > 0 {
		b.PrefixTokens = int(float64(x.Tokens) * float64(c.PrefixBytes) / float64(c.Bytes))
		b.Estimated = true
	}
	if c.Cause != recorded.CauseNone && c.Cause != recorded.CauseFirst && c.PrefixMessages >= 0 && c.PrefixMessages < c.Messages {
		b.FirstItem = c.PrefixMessages
	}
	b.RewrittenTokens = c.RewrittenTokens
	if priced && c.RewrittenTokens > 0 {
		write := price.CacheWrite5m
		if c.Usage != nil && c.Usage.CacheWrite1h > 0 {
			write = price.CacheWrite1h
		}
		b.LostUSD = float64(c.RewrittenTokens) * (write - price.CacheRead) / 1e6
		b.LostCost = in.units(b.LostUSD)
	}
	return x
}

// units converts dollars to base input tokens at the Inspector's price.
func (in *Inspector) units(usd float64) float64 {
	if in.o.Prices.InputPerMTok <= 0 {
		return 0
	}
	return usd * 1e6 / in.o.Prices.InputPerMTok
}

// recordedView rebuilds call n of a recorded session: the request the
// harness sent (harness/recorded.Request: recorded by Claude Code's
// api-request records, else rebuilt from the conversation), its parts
// labelled.
func (in *Inspector) recordedView(ctx context.Context, sid string, n int) (*CallView, error) {
	r, err := in.recordedRequest(ctx, sid, n)
	if err != nil {
		return nil, err
	}
	return in.requestView(sid, r), nil
}

// requestView labels a recorded call's request.
func (in *Inspector) requestView(sid string, r *recorded.Request) *CallView {
	c := in.recordedCall(sid, r.Call)
	v := &CallView{Call: c, Raw: r.Body}
	for i, sp := range r.Spans {
		b := Block{Index: i, Kind: sp.Kind, Role: sp.Role, Start: sp.Start, End: sp.End, Text: string(r.Body[sp.Start:sp.End])}
		// A rebuilt request lacks what the transcript does not hold (the
		// system prompt and tools), which the recorded tokens count: a
		// block's tokens are estimated from its bytes, 4 a token.
		b.Tokens = (sp.End - sp.Start) / 4
		b.Cached = c.Break.PrefixBytes >= 0 && sp.End <= c.Break.PrefixBytes
		b.Label = KindLabel(b.Kind)
		if c.Break.FirstItem >= 0 && b.Kind != "system" && b.Kind != "tools" && c.Break.FirstKind == "" && !b.Cached {
			c.Break.FirstKind = b.Kind
		}
		v.Blocks = append(v.Blocks, b)
	}
	v.Call.Break.FirstKind = c.Break.FirstKind
	return v
}

// recordedRequest rebuilds call n's request: from the stored call
// (harness/recorded.CallRequest: the commits up to it) when the session's
// calls are stored and current, else from the whole session derived now.
func (in *Inspector) recordedRequest(ctx context.Context, sid string, n int) (*recorded.Request, error) {
	if in.o.Formats == nil {
		return nil, fmt.Errorf("session %s has no call %d (its commits cannot be decoded): %w", sid, n, ErrNotFound)
	}
	svc := commits.New(in.st, commits.Options{Registry: in.o.Formats})
	c, err := in.chain(ctx, sid, fmt.Errorf("session %s: %w", sid, ErrNotFound))
	if err != nil {
		return nil, err
	}
	if st, ok, err := recorded.ReadState(ctx, in.st, sid, c.Commits); err != nil {
		return nil, err
	} else if ok {
		if n > st.Calls {
			return nil, fmt.Errorf("session %s has no call %d (it has %d): %w", sid, n, st.Calls, ErrNotFound)
		}
		rc, err := recorded.Page(ctx, in.st, sid, n, 1)
		if err != nil {
			return nil, err
		}
		if len(rc) == 1 {
			return recorded.CallRequest(ctx, svc, sid, rc[0])
		}
	}
	d, err := recorded.Derive(ctx, svc, sid)
	if err != nil {
		return nil, err
	}
	if n > len(d.Calls) {
		return nil, fmt.Errorf("session %s has no call %d (it has %d): %w", sid, n, len(d.Calls), ErrNotFound)
	}
	return d.Request(n)
}

// recordedSummary fills a recorded session's name, calls, tokens, cost
// and cache breaks from its recorded calls: the name is the harness's own
// title, else s.Name (the session index's), else the first prompt a
// person wrote; each call is priced for its model with the price table,
// and a call whose model the table does not know makes the session's cost
// unknown (UnpricedModels names the models).
func (in *Inspector) recordedSummary(ctx context.Context, s *Session) error {
	var title, prompt string
	var rc []recorded.Call
	st, ok, err := recorded.ReadState(ctx, in.st, s.ID, s.Commits)
	if err != nil {
		return err
	}
	if ok && st.Totals != nil {
		// The totals stored with the calls: no call is read.
		in.summaryFromTotals(s, st)
		return nil
	}
	if ok {
		title, prompt = st.Title, st.Prompt
		if rc, err = recorded.Page(ctx, in.st, s.ID, 1, 0); err != nil {
			return err
		}
	} else if in.o.Formats == nil {
		return nil // nothing stored, nothing to decode the commits with
	} else {
		d, err := in.derive(ctx, s.ID)
		if err != nil {
			return err
		}
		title, prompt, rc = d.Title, d.Prompt, d.Calls
	}
	in.summaryFromCalls(s, title, prompt, rc)
	return nil
}

// summaryFromCalls is recordedSummary from the session's calls.
func (in *Inspector) summaryFromCalls(s *Session, title, prompt string, rc []recorded.Call) {
	switch {
	case title != "":
		s.Name = firstLine(title, 80)
	case s.Name != "":
	case prompt != "":
		s.Name = firstLine(prompt, 80)
	}
	unpriced := map[string]bool{}
	unrecorded := 0
	lost := map[string]*CauseTotal{}
	for _, r := range rc {
		c := in.recordedCall(s.ID, r)
		s.Calls++
		s.Tokens = c.Tokens
		s.TokensSent += c.Tokens
		s.CachedTokens += c.CachedTokens
		if !c.Time.IsZero() {
			t := c.Time
			s.LastCall = &t
		}
		if _, ok := in.o.PriceTable.Lookup(r.Model); !ok {
			unpriced[r.Model] = true
		}
		if r.Usage == nil {
			unrecorded++
		}
		s.CostUSD += c.CostUSD
		if k := c.Break.Cause; k != CauseNone && k != CauseFirst {
			t := lost[k]
			if t == nil {
				t = &CauseTotal{Cause: k}
				lost[k] = t
			}
			t.Calls++
			t.RewrittenTokens += c.Break.RewrittenTokens
			t.LostUSD += c.Break.LostUSD
			t.LostCost += c.Break.LostCost
		}
	}
	if s.TokensSent > 0 {
		s.CachedShare = float64(s.CachedTokens) / float64(s.TokensSent)
	}
	for m := range unpriced {
		s.UnpricedModels = append(s.UnpricedModels, m)
	}
	sort.Strings(s.UnpricedModels)
	if len(unpriced) > 0 || unrecorded > 0 {
		s.CostUSD, s.CostUnknown = 0, true
	}
	s.Cost = in.units(s.CostUSD)
	for _, t := range lost {
		s.Lost = append(s.Lost, *t)
	}
	sort.Slice(s.Lost, func(i, j int) bool {
		if s.Lost[i].LostUSD != s.Lost[j].LostUSD {
			return s.Lost[i].LostUSD > s.Lost[j].LostUSD
		}
		return s.Lost[i].Cause < s.Lost[j].Cause
	})
}

// summaryFromTotals is recordedSummary from a state's totals: the same
// figures, priced per model with the price table, without reading a call.
func (in *Inspector) summaryFromTotals(s *Session, st recorded.State) {
	switch {
	case st.Title != "":
		s.Name = firstLine(st.Title, 80)
	case s.Name != "":
	case st.Prompt != "":
		s.Name = firstLine(st.Prompt, 80)
	}
	t := st.Totals
	s.Calls, s.Tokens, s.TokensSent, s.CachedTokens = st.Calls, t.LastTokens, int(t.TokensSent), int(t.CachedTokens)
	if !t.LastTime.IsZero() {
		last := t.LastTime
		s.LastCall = &last
	}
	unknown := false
	for model, m := range t.ByModel {
		if model == recorded.NoModel {
			model = ""
		}
		p, ok := in.o.PriceTable.Lookup(model)
		if !ok {
			s.UnpricedModels = append(s.UnpricedModels, model)
		}
		if !ok || m.Unrecorded > 0 {
			unknown = true
			continue
		}
		s.CostUSD += p.Cost(m.Usage)
	}
	sort.Strings(s.UnpricedModels)
	if unknown {
		s.CostUSD, s.CostUnknown = 0, true
	}
	s.Cost = in.units(s.CostUSD)
	if s.TokensSent > 0 {
		s.CachedShare = float64(s.CachedTokens) / float64(s.TokensSent)
	}
	for cause, byModel := range t.Lost {
		ct := CauseTotal{Cause: cause}
		for model, l := range byModel {
			if model == recorded.NoModel {
				model = ""
			}
			ct.Calls += l.Calls
			ct.RewrittenTokens += int(l.Rewritten + l.Rewritten1h)
			if p, ok := in.o.PriceTable.Lookup(model); ok {
				ct.LostUSD += (float64(l.Rewritten)*(p.CacheWrite5m-p.CacheRead) + float64(l.Rewritten1h)*(p.CacheWrite1h-p.CacheRead)) / 1e6
			}
		}
		ct.LostCost = in.units(ct.LostUSD)
		s.Lost = append(s.Lost, ct)
	}
	sort.Slice(s.Lost, func(i, j int) bool {
		if s.Lost[i].LostUSD != s.Lost[j].LostUSD {
			return s.Lost[i].LostUSD > s.Lost[j].LostUSD
		}
		return s.Lost[i].Cause < s.Lost[j].Cause
	})
}

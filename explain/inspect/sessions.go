package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// Session summarizes one session: who drove it, where, when, and what its
// calls cost.
type Session struct {
	ID string `json:"session_id"`
	// Name is the first line of the session's first user message (at most
	// 80 characters): the description a person recognizes it by.
	Name    string `json:"name,omitempty"`
	Harness string `json:"harness,omitempty"`
	// Cwd is the harness's working directory as the first call recorded it
	// ("" for sessions recorded before it was).
	Cwd      string     `json:"cwd,omitempty"`
	Started  time.Time  `json:"started"`
	LastCall *time.Time `json:"last_call,omitempty"`
	Calls    int        `json:"calls"`
	// Tokens is the last call's context size; TokensSent the sum over all
	// calls; CachedTokens the part of that read from the cache.
	Tokens       int     `json:"tokens"`
	TokensSent   int     `json:"tokens_sent"`
	CachedTokens int     `json:"cached_tokens"`
	CachedShare  float64 `json:"cached_share"`
	Cost         float64 `json:"cost"`
	CostUSD      float64 `json:"cost_usd"`
	Rebases      int     `json:"rebases"`
	// Commits counts the session's context commits (session/commits).
	Commits int `json:"commits"`
	// Recorded marks a session known only from its context commits: a
	// transcript imported or captured (ctxstore import, Claude Code hooks),
	// never served live. It has no calls; Started and LastCall are its
	// first and last commits' times, Harness, Cwd, Model and Source its
	// latest commit's provenance (session/commits.Chain).
	Recorded bool   `json:"recorded,omitempty"`
	Model    string `json:"model,omitempty"`
	Source   string `json:"source,omitempty"`
	// Lost sums the cache breaks by cause (Break.CauseKey), largest loss
	// first.
	Lost []CauseTotal `json:"lost,omitempty"`
	// CostUnknown: a recorded call's model is not in the price table
	// (UnpricedModels names them), so the session's cost is unknown, not
	// CostUSD.
	CostUnknown    bool     `json:"cost_unknown,omitempty"`
	UnpricedModels []string `json:"unpriced_models,omitempty"`
	// TotalsOmitted: the session has more than MaxTotalled calls, so a
	// list or page, which never reads them all, leaves its tokens sent,
	// cached share, cost, rebases and cache breaks out (Calls is its
	// count; a served session's Tokens its last context's).
	TotalsOmitted bool `json:"totals_omitted,omitempty"`
}

// Filter narrows Sessions: sessions whose last activity (last call, else
// start) is at or after Since, whose working directory contains Project,
// and whose harness is Harness (any version). Zero fields do not filter.
type Filter struct {
	Since   time.Time
	Project string
	Harness string
}

func (f Filter) keep(s Session) bool {
	last := s.Started
	if s.LastCall != nil && s.LastCall.After(last) {
		last = *s.LastCall
	}
	return (f.Since.IsZero() || !last.Before(f.Since)) &&
		(f.Project == "" || strings.Contains(s.Cwd, f.Project)) &&
		(f.Harness == "" || harnessIs(s.Harness, f.Harness))
}

// harnessIs tells whether a session's harness ("claude-code", or with its
// version, "claude-code/2.1.330") is the one named.
func harnessIs(harness, name string) bool {
	h := strings.ToLower(harness)
	n := strings.ToLower(name)
	return h == n || strings.HasPrefix(h, n+"/") || strings.HasPrefix(h, n+" ")
}

// newest is when a session was last active: its last call, else its start.
func newest(s Session) time.Time {
	if s.LastCall != nil && !s.LastCall.IsZero() {
		return *s.LastCall
	}
	return s.Started
}

// CauseTotal is what one cause of cache breaks cost a session.
type CauseTotal struct {
	Cause           string  `json:"cause"`
	Calls           int     `json:"calls"`
	RewrittenTokens int     `json:"rewritten_tokens"`
	LostCost        float64 `json:"lost_cost"`
	LostUSD         float64 `json:"lost_usd"`
}

// SessionDetail is Session with the session's current state.
type SessionDetail struct {
	Session
	Turn   int `json:"turn"`
	Index  int `json:"index"`
	Pool   int `json:"pool"`
	Active int `json:"active"`
	Pinned int `json:"pinned"`
	// Branches counts the commits with more than one child.
	Branches int `json:"branches"`
	// Paging is the session's demand paging (Inspector.Paging), when the
	// caller asked for it: it reads every call record's items, which
	// Session does not.
	Paging *Paging `json:"paging,omitempty"`
	// StateError says why the session's state (Turn to Pinned) could not
	// be read (a damaged session object); the rest is shown all the same.
	StateError string `json:"state_error,omitempty"`
}

// Sessions lists the sessions the grant allows, newest first (by last
// call, else start; then by id): the sessions ctxstore served, each
// summarized from its call records (read without their items), and the
// recorded ones, known from their context commits (Recorded), whose name,
// calls, tokens and cost come from their recorded calls (recordedSummary).
func (in *Inspector) Sessions(ctx context.Context) ([]Session, error) {
	return in.SessionsWhere(ctx, Filter{})
}

// SessionsWhere is Sessions narrowed by f.
func (in *Inspector) SessionsWhere(ctx context.Context, f Filter) ([]Session, error) {
	ids, err := session.List(ctx, in.st)
	if err != nil {
		return nil, err
	}
	// The sessions that have context commits, one index seek each, and
	// each one's chain (summarized from its ends when it is long): never
	// every commit of the store.
	withCommits, err := store.Values(ctx, in.st, store.Query{Where: []store.Pred{store.Where("type", commits.DocCommit)}}, "session", "", 0)
	if err != nil {
		return nil, err
	}
	var chains []commits.Chain
	for _, sid := range withCommits {
		if !in.allowed(sid) {
			continue
		}
		c, err := in.chain(ctx, sid, nil)
		if err != nil {
			return nil, err
		}
		if c.Session != "" {
			chains = append(chains, c)
		}
	}
	byID := make(map[string]commits.Chain, len(chains))
	for _, c := range chains {
		byID[c.Session] = c
	}
	var out []Session
	for _, id := range ids {
		if !in.allowed(id) {
			continue
		}
		s, err := in.summary(ctx, id)
		if err != nil {
			return nil, err
		}
		s.Commits = byID[id].Commits
		delete(byID, id)
		out = append(out, s)
	}
	for _, c := range chains {
		if _, ok := byID[c.Session]; ok && in.allowed(c.Session) {
			s := in.recorded(ctx, c)
			if !(Filter{Project: f.Project, Harness: f.Harness}).keep(s) {
				continue // its events are not read
			}
			if err := in.summarizeRecorded(ctx, &s); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	kept := out[:0]
	for _, s := range out {
		if f.keep(s) {
			kept = append(kept, s)
		}
	}
	out = kept
	sort.SliceStable(out, func(i, j int) bool {
		a, b := newest(out[i]), newest(out[j])
		if !a.Equal(b) {
			return a.After(b)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// recorded summarizes a recorded session from its chain, named by the
// session index (context/recall) when it has been indexed.
func (in *Inspector) recorded(ctx context.Context, c commits.Chain) Session {
	s := Session{ID: c.Session, Harness: c.Harness, Cwd: c.Cwd, Model: c.Model, Source: c.Source,
		Started: c.First, Commits: c.Commits, Recorded: true}
	if !c.Last.IsZero() {
		last := c.Last
		s.LastCall = &last
	}
	if m, err := recall.ReadMeta(ctx, in.st, c.Session, store.Basis{}); err == nil && m != nil {
		s.Name = m.Name
	}
	return s
}

// Session returns one session's summary and current state.
//
// A recorded session (no session object, only context commits) has its
// chain's summary and the commits' branches, and no state.
func (in *Inspector) Session(ctx context.Context, sid string) (*SessionDetail, error) {
	if err := in.exists(ctx, sid); errors.Is(err, store.ErrNotFound) {
		return in.recordedDetail(ctx, sid, err)
	} else if err != nil {
		return nil, err
	}
	s, err := in.summary(ctx, sid)
	if err != nil {
		return nil, err
	}
	d := &SessionDetail{Session: s}
	info, st, err := session.ReadState(ctx, in.st, sid, store.Basis{})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		d.StateError = err.Error()
	default:
		if d.Harness == "" {
			d.Harness = info.Harness
		}
		d.Turn, d.Index, d.Pool, d.Active, d.Pinned = st.Turn, len(st.Index), len(st.Pool), len(st.Active), len(st.Pinned)
	}
	n, err := in.countCommits(ctx, d)
	if err != nil {
		return nil, err
	}
	d.Commits = n
	return d, nil
}

// recordedDetail is Session for a session with no session object: its
// commit chain when it has one, else notFound.
func (in *Inspector) recordedDetail(ctx context.Context, sid string, notFound error) (*SessionDetail, error) {
	c, err := in.chain(ctx, sid, notFound)
	if err != nil {
		return nil, err
	}
	d := &SessionDetail{Session: in.recorded(ctx, c)} // Commits: the chain's count, not capped
	if err := in.summarizeRecorded(ctx, &d.Session); err != nil {
		return nil, err
	}
	if _, err := in.countCommits(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// chain returns the commit chain of sid, or notFound when it has none: a
// long one summarized from its ends (longChain), else read whole.
func (in *Inspector) chain(ctx context.Context, sid string, notFound error) (commits.Chain, error) {
	if c, ok, err := in.longChain(ctx, sid); err != nil || ok {
		return c, err
	}
	chains, err := commits.New(in.st, commits.Options{}).Chains(ctx, []string{sid})
	if err != nil {
		return commits.Chain{}, err
	}
	if len(chains) != 1 {
		return commits.Chain{}, notFound
	}
	return chains[0], nil
}

// countCommits sets d's Branches from its commit graph (the newest
// MaxCommits) and returns the graph's commits of the session.
func (in *Inspector) countCommits(ctx context.Context, d *SessionDetail) (int, error) {
	cm, err := in.Commits(ctx, d.ID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cm {
		if !c.External {
			n++
		}
		if c.Children > 1 {
			d.Branches++
		}
	}
	return n, nil
}

func (in *Inspector) summary(ctx context.Context, sid string) (Session, error) {
	if n, err := assemble.Calls(ctx, in.st, sid); err != nil {
		return Session{ID: sid}, err
	} else if n > maxTotalled {
		return in.longSummary(ctx, sid, n)
	}
	s := Session{ID: sid}
	h, err := in.st.History(ctx, objects.SessionObjectID(sid), store.HistoryOptions{Order: store.Asc})
	if err != nil {
		return s, fmt.Errorf("session %s: %w", sid, err)
	}
	if len(h) > 0 {
		s.Started = h[0].TxTime
	}
	if head, err := in.st.Entity(ctx, objects.SessionObjectID(sid), store.Basis{}); err == nil {
		s.Harness = asString(head["harness"])
	}
	calls, err := in.calls(ctx, sid, Page{}, false)
	if err != nil {
		return s, err
	}
	s.Calls = len(calls)
	lost := map[string]*CauseTotal{}
	for _, c := range calls {
		s.TokensSent += c.Tokens
		s.CachedTokens += c.CachedTokens
		s.Cost += c.Cost
		if c.Rebased {
			s.Rebases++
		}
		if c.Break.Cause != CauseNone {
			k := c.Break.CauseKey()
			t := lost[k]
			if t == nil {
				t = &CauseTotal{Cause: k}
				lost[k] = t
			}
			t.Calls++
			t.RewrittenTokens += c.Break.RewrittenTokens
			t.LostCost += c.Break.LostCost
		}
	}
	if n := len(calls); n > 0 {
		last := calls[n-1]
		s.Tokens, s.LastCall = last.Tokens, &last.Time
		if t := calls[0].Time; !t.IsZero() && t.Before(s.Started) {
			s.Started = t // a replay or an imported session: its calls are older than this store's copy
		}
		if err := in.firstCall(ctx, sid, &s); err != nil {
			return s, err
		}
	}
	if s.TokensSent > 0 {
		s.CachedShare = float64(s.CachedTokens) / float64(s.TokensSent)
	}
	s.CostUSD = in.o.Prices.Dollars(s.Cost)
	for _, t := range lost {
		t.LostUSD = in.o.Prices.Dollars(t.LostCost)
		s.Lost = append(s.Lost, *t)
	}
	sort.Slice(s.Lost, func(i, j int) bool {
		if s.Lost[i].LostCost != s.Lost[j].LostCost {
			return s.Lost[i].LostCost > s.Lost[j].LostCost
		}
		return s.Lost[i].Cause < s.Lost[j].Cause
	})
	return s, nil
}

// firstCall reads the name (first user message) and cwd from call 1.
func (in *Inspector) firstCall(ctx context.Context, sid string, s *Session) error {
	doc, err := in.st.Entity(ctx, assemble.CommitID(sid, 1), store.Basis{})
	if err != nil {
		return fmt.Errorf("session %s: %w", sid, err)
	}
	if h, ok := doc["harness"].(map[string]any); ok {
		s.Cwd = asString(h[ingest.CwdKey])
	}
	var items []assemble.ItemDoc
	if err := convert(doc["items"], &items); err != nil {
		return fmt.Errorf("%s: items: %w", assemble.CommitID(sid, 1), err)
	}
	for _, it := range items {
		if it.K == "user" && strings.TrimSpace(it.Text) != "" {
			s.Name = firstLine(it.Text, 80)
			break
		}
	}
	return nil
}

// firstLine returns the first non-blank line of s, cut to n runes.
func firstLine(s string, n int) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			r := []rune(l)
			if len(r) > n {
				return string(r[:n-1]) + "…"
			}
			return l
		}
	}
	return ""
}

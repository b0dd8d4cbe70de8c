package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
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
	// Lost sums the cache breaks by cause (Break.CauseKey), largest loss
	// first.
	Lost []CauseTotal `json:"lost,omitempty"`
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
	// Commits counts the session's context commits (session/commits);
	// Branches the commits with more than one child.
	Commits  int `json:"commits"`
	Branches int `json:"branches"`
}

// Sessions lists the sessions the grant allows, in id order, each
// summarized from its call records (read without their items).
func (in *Inspector) Sessions(ctx context.Context) ([]Session, error) {
	ids, err := session.List(ctx, in.st)
	if err != nil {
		return nil, err
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
		out = append(out, s)
	}
	return out, nil
}

// Session returns one session's summary and current state.
func (in *Inspector) Session(ctx context.Context, sid string) (*SessionDetail, error) {
	if err := in.exists(ctx, sid); err != nil {
		return nil, err
	}
	s, err := in.summary(ctx, sid)
	if err != nil {
		return nil, err
	}
	info, st, err := session.ReadState(ctx, in.st, sid, store.Basis{})
	if err != nil {
		return nil, err
	}
	if s.Harness == "" {
		s.Harness = info.Harness
	}
	d := &SessionDetail{Session: s, Turn: st.Turn, Index: len(st.Index), Pool: len(st.Pool), Active: len(st.Active), Pinned: len(st.Pinned)}
	cm, err := in.Commits(ctx, sid)
	if err != nil {
		return nil, err
	}
	for _, c := range cm {
		if !c.External {
			d.Commits++
		}
		if c.Children > 1 {
			d.Branches++
		}
	}
	return d, nil
}

func (in *Inspector) summary(ctx context.Context, sid string) (Session, error) {
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

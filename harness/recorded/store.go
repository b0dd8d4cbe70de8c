package recorded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// The documents Update writes (docs/inspector.md, "Recorded sessions").
const (
	// CallType is a recorded call's document, "recorded-call:{session}:{n}".
	CallType = "recorded_call"
	// StateType is a session's "recorded-calls:{session}": the commits
	// and derivation version its calls were derived from, and how many
	// calls and chat turns were written.
	StateType = "recorded_calls"
)

// CallID is the id of call n's document.
func CallID(sid string, n int) string { return "recorded-call:" + sid + ":" + strconv.Itoa(n) }

// StateID is the id of a session's state document.
func StateID(sid string) string { return "recorded-calls:" + sid }

func callDoc(sid string, c Call) store.Doc {
	d := store.Doc{store.IDKey: CallID(sid, c.N), "type": CallType, "session_id": sid, "call": int64(c.N),
		"lane": c.Lane, "message_id": c.MessageID, "request_id": c.RequestID, "model": c.Model,
		"messages": int64(c.Messages), "bytes": int64(c.Bytes), "exact": c.Exact,
		"prefix_messages": int64(c.PrefixMessages), "prefix_bytes": int64(c.PrefixBytes), "prev": int64(c.Prev),
		"gap_ms": int64(c.GapSeconds * 1000), "cause": c.Cause, "miss_reason": c.MissReason, "detail": c.Detail,
		"rewritten_tokens": int64(c.RewrittenTokens), "shape": c.Shape}
	if c.Depth >= 0 {
		d["depth"] = c.Depth
	}
	if !c.Time.IsZero() {
		d["time"] = store.FormatTime(c.Time)
	}
	if u := c.Usage; u != nil {
		d["usage"] = map[string]any{"input": u.Input, "output": u.Output, "cache_read": u.CacheRead,
			"cache_write": u.CacheWrite, "cache_write_1h": u.CacheWrite1h}
	}
	return d
}

func callFromDoc(d store.Doc) (Call, error) {
	c := Call{N: asInt(d["call"]), Lane: asString(d["lane"]), MessageID: asString(d["message_id"]),
		RequestID: asString(d["request_id"]), Model: asString(d["model"]), Messages: asInt(d["messages"]),
		Bytes: asInt(d["bytes"]), PrefixMessages: asInt(d["prefix_messages"]), PrefixBytes: asInt(d["prefix_bytes"]),
		Prev: asInt(d["prev"]), GapSeconds: float64(asInt(d["gap_ms"])) / 1000, Cause: asString(d["cause"]),
		MissReason: asString(d["miss_reason"]), Detail: asString(d["detail"]), RewrittenTokens: asInt(d["rewritten_tokens"]),
		Shape: asString(d["shape"])}
	c.Exact, _ = d["exact"].(bool)
	c.Depth = -1
	if v, ok := store.Num(d["depth"]); ok {
		c.Depth = int64(v)
	}
	if t := asString(d["time"]); t != "" {
		tm, err := store.ParseTime(t)
		if err != nil {
			return c, fmt.Errorf("%v: time %q: %w", d[store.IDKey], t, err)
		}
		c.Time = tm
	}
	if u, ok := d["usage"].(map[string]any); ok {
		c.Usage = &conversation.Usage{Input: int64(asInt(u["input"])), Output: int64(asInt(u["output"])),
			CacheRead: int64(asInt(u["cache_read"])), CacheWrite: int64(asInt(u["cache_write"])),
			CacheWrite1h: int64(asInt(u["cache_write_1h"]))}
	}
	return c, nil
}

// State is what a session's state document says.
type State struct {
	Commits int
	Calls   int
	Turns   int
	Title   string
	Prompt  string
	// Totals sum the calls (nil in a state written without them).
	Totals *Totals
}

// Totals sum a session's calls, so that a list of sessions prices them
// without reading every call: per model the recorded usage, and per
// cause of a cache break and model the tokens written again (at the
// 5-minute and at the 1-hour write price apart). Calls without a model
// count under NoModel.
type Totals struct {
	ByModel map[string]*ModelTotals           `json:"by_model"`
	Lost    map[string]map[string]*LostTotals `json:"lost"`
	// LastTime and LastTokens are the last call's; TokensSent sums every
	// call's input tokens (estimated without usage), CachedTokens the
	// cache reads.
	LastTime     time.Time `json:"last_time"`
	LastTokens   int       `json:"last_tokens"`
	TokensSent   int64     `json:"tokens_sent"`
	CachedTokens int64     `json:"cached_tokens"`
}

// ModelTotals is one model's calls and usage; Unrecorded counts its
// calls without usage.
type ModelTotals struct {
	Calls      int                `json:"calls"`
	Unrecorded int                `json:"unrecorded"`
	Usage      conversation.Usage `json:"usage"`
}

// LostTotals is one cause's breaks of one model's calls.
type LostTotals struct {
	Calls       int   `json:"calls"`
	Rewritten   int64 `json:"rewritten"`
	Rewritten1h int64 `json:"rewritten_1h"`
}

// NoModel is the key of the calls that name no model in Totals (a store
// refuses empty keys).
const NoModel = "-"

func newTotals() *Totals {
	return &Totals{ByModel: map[string]*ModelTotals{}, Lost: map[string]map[string]*LostTotals{}}
}

// add counts call c in t (calls are added in order: the last one added
// gives LastTime and LastTokens).
func (t *Totals) add(c Call) {
	key := c.Model
	if key == "" {
		key = NoModel
	}
	m := t.ByModel[key]
	if m == nil {
		m = &ModelTotals{}
		t.ByModel[key] = m
	}
	m.Calls++
	if u := c.Usage; u != nil {
		m.Usage.Input += u.Input
		m.Usage.Output += u.Output
		m.Usage.CacheRead += u.CacheRead
		m.Usage.CacheWrite += u.CacheWrite
		m.Usage.CacheWrite1h += u.CacheWrite1h
		t.CachedTokens += u.CacheRead
	} else {
		m.Unrecorded++
	}
	t.TokensSent += int64(c.Sent())
	t.LastTokens = c.Sent()
	if !c.Time.IsZero() {
		t.LastTime = c.Time
	}
	if c.Cause != CauseNone && c.Cause != CauseFirst {
		byModel := t.Lost[c.Cause]
		if byModel == nil {
			byModel = map[string]*LostTotals{}
			t.Lost[c.Cause] = byModel
		}
		l := byModel[key]
		if l == nil {
			l = &LostTotals{}
			byModel[key] = l
		}
		l.Calls++
		if c.Usage != nil && c.Usage.CacheWrite1h > 0 {
			l.Rewritten1h += int64(c.RewrittenTokens)
		} else {
			l.Rewritten += int64(c.RewrittenTokens)
		}
	}
}

func (t *Totals) doc() map[string]any {
	b, _ := json.Marshal(t)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// ReadState reads session sid's state document; ok is false when its
// calls were never derived, or were derived by another version or from
// another number of commits than commits (the chain's, when it is known;
// -1 not to compare).
func ReadState(ctx context.Context, st store.Store, sid string, commits int) (s State, ok bool, err error) {
	d, err := st.Entity(ctx, StateID(sid), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	s = State{Commits: asInt(d["commits"]), Calls: asInt(d["calls"]), Turns: asInt(d["turns"]), Title: asString(d["title"]), Prompt: asString(d["prompt"])}
	if m, ok := d["totals"].(map[string]any); ok {
		b, err := json.Marshal(m)
		if err == nil {
			var t Totals
			if json.Unmarshal(b, &t) == nil {
				s.Totals = &t
			}
		}
	}
	return s, asInt(d["version"]) == Version && (commits < 0 || s.Commits == commits), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Page reads calls from..from+limit-1 (limit 0: all from from on) of
// session sid from the store, in order. A page names its calls' numbers
// (a store's field index then gives the page's documents, not the
// session's from the first on).
func Page(ctx context.Context, st store.Store, sid string, from, limit int) ([]Call, error) {
	where := []store.Pred{store.Where("type", CallType), store.Where("session_id", sid)}
	if limit > 0 {
		ns := make([]any, limit)
		for i := range ns {
			ns[i] = int64(from + i)
		}
		where = append(where, store.Pred{Field: "call", Op: store.In, Values: ns})
	} else {
		where = append(where, store.Pred{Field: "call", Op: store.Gte, Value: int64(from)})
	}
	docs, err := st.Query(ctx, store.Query{Where: where, OrderBy: []store.Order{{Field: "call"}}})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading recorded calls: %w", sid, err)
	}
	out := make([]Call, 0, len(docs))
	for _, d := range docs {
		c, err := callFromDoc(d)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func asInt(v any) int {
	f, _ := store.Num(v)
	return int(f)
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// Calls returns session sid's calls: the stored ones when they are
// current (derived by this version from the chain as it is now), else
// derived from its commits now (svc's registry decodes them).
func Calls(ctx context.Context, svc *commits.Service, sid string) ([]Call, error) {
	chains, err := svc.Chains(ctx, []string{sid})
	if err != nil {
		return nil, err
	}
	if len(chains) != 1 {
		return nil, nil
	}
	if _, ok, err := ReadState(ctx, svc.Store(), sid, chains[0].Commits); err != nil {
		return nil, err
	} else if ok {
		return Page(ctx, svc.Store(), sid, 1, 0)
	}
	d, err := Derive(ctx, svc, sid)
	if err != nil {
		return nil, err
	}
	return d.Calls, nil
}

package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Call is one model call of a session as its call record says, with its
// cache accounting and cache-break attribution.
type Call struct {
	N        int       `json:"call"`
	CommitID string    `json:"commit_id"`
	Parent   string    `json:"parent,omitempty"`
	Time     time.Time `json:"time"`
	// GapSeconds is the time since the previous call (0 for the first).
	// CacheRenewed, when set, is when the harness renewed the cache after
	// the previous call (a warm request; the record's "cache_renewed"),
	// and IdleSeconds the time since the cache was last sent, which decides
	// whether it expired: since the renewal, else since the previous call.
	GapSeconds   float64    `json:"gap_seconds"`
	CacheRenewed *time.Time `json:"cache_renewed,omitempty"`
	IdleSeconds  float64    `json:"idle_seconds"`
	Layout       string     `json:"layout"`
	// Tokens is the context's size; StaleTokens the collapsed content it
	// still renders (kept for the cache until a rebase drops it).
	Tokens      int `json:"tokens"`
	StaleTokens int `json:"stale_tokens"`
	Bytes       int `json:"bytes"`
	Items       int `json:"items"`
	// CachedTokens were read from the prompt cache (the prefix shared with
	// the previous call, when it came within the cache's lifetime);
	// WrittenTokens were written to it (the rest).
	CachedTokens  int     `json:"cached_tokens"`
	WrittenTokens int     `json:"written_tokens"`
	CachedShare   float64 `json:"cached_share"`
	// Cost is in base input tokens; CostUSD in dollars (Prices).
	Cost    float64 `json:"cost"`
	CostUSD float64 `json:"cost_usd"`
	// Rebased says whether the call rewrote the tail of the context to drop
	// collapsed content, why (Reason: stale, expired, window) and from
	// which item (RebaseFrom, -1 without a rebase).
	Rebased    bool   `json:"rebased"`
	Reason     string `json:"reason,omitempty"`
	RebaseFrom int    `json:"rebase_from"`
	// Collapsed lists the objects whose content the call shows as a
	// "collapsed:" reference for the first time (a rebase's work); only
	// filled for rebased calls.
	Collapsed []Collapsed `json:"collapsed,omitempty"`
	// Break is the cache-break attribution against the previous call.
	Break Break `json:"break"`

	// A recorded session's call (Layout "recorded", harness/recorded): a
	// request the harness sent, with the model, the conversation (Lane:
	// "" for the main thread), the API's message and request ids, the
	// usage the provider reported (Usage; Estimated when none was
	// recorded and Tokens is estimated from the bytes), and whether the
	// request is the one recorded (Exact) or rebuilt from the
	// conversation. CostUnknown: the model has no price, or no usage was
	// recorded.
	Recorded    bool           `json:"recorded,omitempty"`
	Model       string         `json:"model,omitempty"`
	Lane        string         `json:"lane,omitempty"`
	MessageID   string         `json:"message_id,omitempty"`
	RequestID   string         `json:"request_id,omitempty"`
	Usage       *RecordedUsage `json:"usage,omitempty"`
	Exact       bool           `json:"exact,omitempty"`
	Estimated   bool           `json:"estimated,omitempty"`
	CostUnknown bool           `json:"cost_unknown,omitempty"`

	systemRef  string
	systemCall int // the call whose record holds systemRef (0: this one)
}

// Collapsed is one object a rebase turned into a "collapsed:" reference.
type Collapsed struct {
	ObjectID string `json:"object_id"`
	Version  int64  `json:"version"`
}

// The causes of a cache break, from the most to the least sweeping.
const (
	// CauseNone: the context extends the previous one and the cache was
	// warm; only new tokens were written.
	CauseNone = "none"
	// CauseFirst: the first call of a session; nothing was cached.
	CauseFirst = "first"
	// CauseExpired: more than the cache's lifetime passed since the
	// previous call; the whole context was written again.
	CauseExpired = "expired"
	// CauseSystem: the system prompt changed.
	CauseSystem = "system_prompt"
	// CauseTools: the tool list changed (a session's tool list is fixed at
	// creation, so the assembler never does this; listed for completeness).
	CauseTools = "tools"
	// CauseRebase: a rebase rewrote the tail to drop collapsed content;
	// Break.Reason says why (stale, expired, window).
	CauseRebase = "rebase"
	// CauseChanged: the literal layout re-rendered a block before the chat
	// (the metadata pool or an active object changed); Break.FirstKind says
	// which.
	CauseChanged = "changed"
	// CauseUnknown: the call record predates prefix recording and the
	// layout does not allow deriving it.
	CauseUnknown = "unknown"
)

// Break attributes a call's cache writes: how much of its context it
// shared with the previous call, where they first differ, why, and what
// rewriting the rest cost.
type Break struct {
	Cause  string `json:"cause"`
	Reason string `json:"reason,omitempty"`
	// PrefixBytes and PrefixTokens: the part shared byte for byte with the
	// previous call's context. Estimated is set when the record did not
	// hold them and they were derived.
	PrefixBytes  int  `json:"prefix_bytes"`
	PrefixTokens int  `json:"prefix_tokens"`
	Estimated    bool `json:"estimated,omitempty"`
	// FirstItem is the index of the first item of the stream that differs
	// from the previous call's (-1: the context only appended to it).
	// FirstKind, FirstObject and Detail describe it when known (the call
	// view fills them; lists leave them empty).
	FirstItem   int    `json:"first_item"`
	FirstKind   string `json:"first_kind,omitempty"`
	FirstObject string `json:"first_object,omitempty"`
	Detail      string `json:"detail,omitempty"`
	// RewrittenTokens are tokens the previous call had in the cache that
	// this call wrote again; LostCost (and LostUSD) is what that cost over
	// reading them from the cache.
	RewrittenTokens int     `json:"rewritten_tokens"`
	LostCost        float64 `json:"lost_cost"`
	LostUSD         float64 `json:"lost_usd"`
}

// commitFields are the call-record fields a calls list reads: never the
// items, so a page costs the same however long the contexts are.
var commitFields = []string{"call", "parent", "time", "layout", "tokens", "stale_tokens", "byte_len", "item_count",
	"base", "rebase_from", "rebase_reason", "system_ref", "system_ref_call", "prefix_bytes", "prefix_tokens", "cache_renewed"}

// Page selects calls From..From+Limit-1 (From from 1; Limit 0: all).
type Page struct {
	From, Limit int
}

// Calls returns a page of a session's calls, in order, with their cache
// accounting and attribution. It reads the call records of the page (and
// the one before it) without their items, plus the items of rebased calls
// (to list what collapsed); a page of a 2,000-call session reads the
// same as a page of a 20-call one.
func (in *Inspector) Calls(ctx context.Context, sid string, p Page) ([]Call, error) {
	return in.calls(ctx, sid, p, true)
}

func (in *Inspector) calls(ctx context.Context, sid string, p Page, withCollapsed bool) ([]Call, error) {
	if err := in.check(sid); err != nil {
		return nil, err
	}
	if p.From < 1 {
		p.From = 1
	}
	if p.Limit < 0 {
		return nil, fmt.Errorf("page size %d: %w", p.Limit, ErrInvalid)
	}
	where := []store.Pred{store.Where("type", assemble.CommitType), store.Where("session_id", sid)}
	if p.Limit > 0 {
		// The page's call numbers, listed: the field index then gives
		// the page's records alone, wherever the page is in the session
		// (a range bounds the call numbers of every session).
		ns := make([]any, 0, p.Limit+1)
		for n := p.From - 1; n <= p.From+p.Limit-1; n++ {
			ns = append(ns, int64(n))
		}
		where = append(where, store.Pred{Field: "call", Op: store.In, Values: ns})
	} else {
		where = append(where, store.Pred{Field: "call", Op: store.Gte, Value: int64(p.From - 1)})
	}
	docs, err := in.st.Query(ctx, store.Query{Where: where, Find: commitFields, OrderBy: []store.Order{{Field: "call"}}})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading call records: %w", sid, err)
	}
	decoded := make([]Call, 0, len(docs))
	for _, d := range docs {
		c, err := decodeCall(sid, d)
		if err != nil {
			return nil, err
		}
		decoded = append(decoded, c)
	}
	if err := in.systemRefs(ctx, sid, decoded); err != nil {
		return nil, err
	}
	var out []Call
	var prev *Call
	var rebased []any
	for _, c := range decoded {
		if c.N >= p.From {
			in.account(&c, prev)
			if c.Rebased {
				rebased = append(rebased, int64(c.N))
			}
			out = append(out, c)
			prev = &out[len(out)-1]
		} else {
			cc := c
			prev = &cc
		}
	}
	if len(rebased) > 0 && withCollapsed {
		if err := in.collapsed(ctx, sid, out, rebased); err != nil {
			return nil, err
		}
	}
	if len(docs) == 0 {
		if err := in.exists(ctx, sid); errors.Is(err, store.ErrNotFound) {
			// A recorded session (commits only): the requests its
			// harness recorded.
			return in.recordedCalls(ctx, sid, p)
		} else if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// systemRefs fills the system prompt reference of the calls whose record
// names the call that records it (system_ref_call): from the
// page, else read from those records (one query).
func (in *Inspector) systemRefs(ctx context.Context, sid string, calls []Call) error {
	byN := map[int]string{}
	var missing []any
	for _, c := range calls {
		if c.systemCall == 0 {
			byN[c.N] = c.systemRef
		}
	}
	for _, c := range calls {
		if _, ok := byN[c.systemCall]; c.systemCall > 0 && !ok {
			byN[c.systemCall] = ""
			missing = append(missing, assemble.CommitID(sid, c.systemCall))
		}
	}
	if len(missing) > 0 {
		docs, err := in.st.Query(ctx, store.Query{Where: []store.Pred{{Field: store.IDKey, Op: store.In, Values: missing}},
			Find: []string{"call", "system_ref"}})
		if err != nil {
			return fmt.Errorf("session %s: reading system prompt references: %w", sid, err)
		}
		for _, d := range docs {
			byN[asInt(d["call"])] = asString(d["system_ref"])
		}
	}
	for i := range calls {
		if n := calls[i].systemCall; n > 0 {
			if calls[i].systemRef = byN[n]; calls[i].systemRef == "" {
				return fmt.Errorf("%s: call %d records no system_ref", calls[i].CommitID, n)
			}
		}
	}
	return nil
}

// exists fails with ErrNotFound when sid is not a session of the store.
func (in *Inspector) exists(ctx context.Context, sid string) error {
	if err := in.check(sid); err != nil {
		return err
	}
	if _, err := in.st.EntityTx(ctx, objects.SessionObjectID(sid), store.Basis{}); err != nil {
		return fmt.Errorf("session %s: %w", sid, err)
	}
	return nil
}

// collapsed fills Collapsed for rebased calls from their items: the
// "stub" items a rebase wrote, and the blocks it left out ("dropped").
func (in *Inspector) collapsed(ctx context.Context, sid string, calls []Call, ns []any) error {
	docs, err := in.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", assemble.CommitType),
		store.Where("session_id", sid), {Field: "call", Op: store.In, Values: ns}}, Find: []string{"call", "items", "dropped"}})
	if err != nil {
		return fmt.Errorf("session %s: reading rebased call records: %w", sid, err)
	}
	byN := map[int]*Call{}
	for i := range calls {
		byN[calls[i].N] = &calls[i]
	}
	for _, d := range docs {
		c := byN[asInt(d["call"])]
		if c == nil {
			continue
		}
		var items []assemble.ItemDoc
		if err := convert(d["items"], &items); err != nil {
			return fmt.Errorf("%s: items: %w", c.CommitID, err)
		}
		for _, it := range items {
			if it.K != "stub" && (it.K != "toolref" || it.Out != "collapsed") { // rendering 3 rewrites a collapsed output's result
				continue
			}
			r, err := objects.ParseRef(it.Ref)
			if err != nil {
				return fmt.Errorf("%s: item ref %q: %w", c.CommitID, it.Ref, err)
			}
			c.Collapsed = append(c.Collapsed, Collapsed{ObjectID: r.ID, Version: r.Tx})
		}
		// Rendering 4: collapsed files the stream names are left out, and
		// the commit lists them.
		var dropped []string
		if err := convert(d["dropped"], &dropped); err != nil {
			return fmt.Errorf("%s: dropped: %w", c.CommitID, err)
		}
		for _, ref := range dropped {
			r, err := objects.ParseRef(ref)
			if err != nil {
				return fmt.Errorf("%s: dropped ref %q: %w", c.CommitID, ref, err)
			}
			c.Collapsed = append(c.Collapsed, Collapsed{ObjectID: r.ID, Version: r.Tx})
		}
	}
	return nil
}

func decodeCall(sid string, d store.Doc) (Call, error) {
	n := asInt(d["call"])
	c := Call{N: n, CommitID: assemble.CommitID(sid, n), Layout: asString(d["layout"]), Parent: asString(d["parent"]),
		Tokens: asInt(d["tokens"]), StaleTokens: asInt(d["stale_tokens"]), Bytes: asInt(d["byte_len"]),
		Items: asInt(d["item_count"]), RebaseFrom: -1, Reason: asString(d["rebase_reason"]), systemRef: asString(d["system_ref"])}
	if c.systemRef == "" {
		c.systemCall = asInt(d["system_ref_call"])
	}
	if v, ok := d["rebase_from"]; ok && v != nil {
		c.Rebased, c.RebaseFrom = true, asInt(v)
	}
	if t := asString(d["time"]); t != "" {
		tm, err := store.ParseTime(t)
		if err != nil {
			return c, fmt.Errorf("%s: time %q: %w", c.CommitID, t, err)
		}
		c.Time = tm
	}
	if t := asString(d["cache_renewed"]); t != "" {
		tm, err := store.ParseTime(t)
		if err != nil {
			return c, fmt.Errorf("%s: cache_renewed %q: %w", c.CommitID, t, err)
		}
		c.CacheRenewed = &tm
	}
	c.Break.PrefixBytes, c.Break.PrefixTokens = -1, -1
	if v, ok := d["prefix_bytes"]; ok && v != nil {
		c.Break.PrefixBytes, c.Break.PrefixTokens = asInt(v), asInt(d["prefix_tokens"])
	}
	return c, nil
}

// account computes c's cache accounting and attribution from its record
// and its predecessor's (nil for the first call).
func (in *Inspector) account(c *Call, prev *Call) {
	pr := in.o.Prices
	b := &c.Break
	b.FirstItem = -1
	if prev != nil && !prev.Time.IsZero() && !c.Time.IsZero() {
		c.GapSeconds = c.Time.Sub(prev.Time).Seconds()
		c.IdleSeconds = c.GapSeconds
		if r := c.CacheRenewed; r != nil && r.After(prev.Time) && !r.After(c.Time) {
			c.IdleSeconds = c.Time.Sub(*r).Seconds()
		}
	}
	switch {
	case c.N == 1 || prev == nil:
		b.Cause, b.PrefixBytes, b.PrefixTokens = CauseFirst, 0, 0
	default:
		if b.PrefixBytes < 0 { // an older record: derive what the layout allows
			switch {
			case c.systemRef != prev.systemRef:
				b.PrefixBytes, b.PrefixTokens = 0, 0
			case c.Layout == string(assemble.LayoutStream) && !c.Rebased:
				b.PrefixBytes, b.PrefixTokens = prev.Bytes, prev.Tokens
			case c.Layout == string(assemble.LayoutStream):
				// a rebase of an old record: the items before RebaseFrom are
				// shared; their size is not recorded, so estimate it by the
				// share of items.
				share := float64(c.RebaseFrom) / math.Max(float64(prev.Items), 1)
				b.PrefixBytes, b.PrefixTokens = int(share*float64(prev.Bytes)), int(share*float64(prev.Tokens))
				b.Estimated = true
			default:
				b.PrefixBytes, b.PrefixTokens = 0, 0
				b.Estimated = true
			}
		}
		expired := time.Duration(c.IdleSeconds*float64(time.Second)) >= in.o.TTL
		switch {
		case c.systemRef != prev.systemRef:
			b.Cause = CauseSystem
		case expired:
			b.Cause = CauseExpired
		case c.Rebased:
			b.Cause, b.Reason, b.FirstItem = CauseRebase, c.Reason, c.RebaseFrom
		case b.Estimated && c.Layout != string(assemble.LayoutStream):
			b.Cause = CauseUnknown
		case b.PrefixBytes < prev.Bytes:
			b.Cause = CauseChanged
		default:
			b.Cause = CauseNone
		}
		if c.Rebased && b.Cause != CauseRebase {
			b.Reason = c.Reason
		}
	}
	cached := b.PrefixTokens
	if b.Cause == CauseFirst || b.Cause == CauseExpired || cached < 0 {
		cached = 0
	}
	cached = min(cached, c.Tokens)
	c.CachedTokens, c.WrittenTokens = cached, c.Tokens-cached
	if c.Tokens > 0 {
		c.CachedShare = float64(cached) / float64(c.Tokens)
	}
	c.Cost = float64(cached)*pr.Read + float64(c.WrittenTokens)*pr.Write
	c.CostUSD = pr.Dollars(c.Cost)
	if prev != nil && b.Cause != CauseNone && b.Cause != CauseFirst {
		// What the previous call had cached and this one wrote again: its
		// tokens after the shared prefix, less the stale content a rebase
		// dropped (that is a saving, not a rewrite).
		rewritten := prev.Tokens - cached
		if c.Rebased {
			rewritten -= max(0, prev.StaleTokens-c.StaleTokens)
		}
		b.RewrittenTokens = max(0, min(rewritten, c.WrittenTokens))
		b.LostCost = float64(b.RewrittenTokens) * (pr.Write - pr.Read)
		b.LostUSD = pr.Dollars(b.LostCost)
	}
}

// CauseKey is the key a cause is summed under: the cause, and for a rebase
// its reason ("rebase:stale").
func (b Break) CauseKey() string {
	if b.Cause == CauseRebase && b.Reason != "" {
		return b.Cause + ":" + b.Reason
	}
	return b.Cause
}

func asInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	case json.Number:
		n, _ := x.Int64()
		return int(n)
	}
	return 0
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

func convert(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// shortID shortens a 64-hex object id for display.
func shortID(id string) string { return objects.DisplayID(id) }

var _ = strings.TrimSpace

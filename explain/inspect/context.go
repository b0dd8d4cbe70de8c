package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/objects"
)

// Block is one labelled piece of a call's context.
type Block struct {
	// Index is the block's position in the context (0: the system prompt,
	// 1: the tool list, then the items of the stream).
	Index int `json:"index"`
	// Kind is "system", "tools", "user", "assistant", "toolref" (a tool
	// result line), "meta" (a metadata line), "content" (an object's
	// content), "stub" (a collapsed reference) or "note" (a context note);
	// Label says it in words.
	Kind  string `json:"kind"`
	Label string `json:"label"`
	Role  string `json:"role,omitempty"`
	// ObjectID, ObjectKind, Nickname and Version name the object of an
	// object block (Version: the transaction of the version shown).
	ObjectID   string `json:"object_id,omitempty"`
	ObjectKind string `json:"object_kind,omitempty"`
	Nickname   string `json:"nickname,omitempty"`
	Version    int64  `json:"version,omitempty"`
	// Start and End are byte offsets in the context; Tokens is the block's
	// share of the call's tokens, in proportion to its bytes.
	Start  int `json:"start"`
	End    int `json:"end"`
	Tokens int `json:"tokens"`
	// Cached is set when the whole block lies in the prefix shared with the
	// previous call (served by the cache if it was warm).
	Cached bool `json:"cached"`
	// Text is the block's bytes as sent (omitted by the summary views).
	Text string `json:"text,omitempty"`
}

// CallView is one call's exact context: its record, its attribution with
// the first differing item named, and its bytes labelled block by block.
type CallView struct {
	Call   Call    `json:"call"`
	Blocks []Block `json:"blocks"`
	// Raw is the exact bytes of the context (the text rendering prefix
	// caching is judged on); not in JSON unless asked for.
	Raw []byte `json:"-"`
}

// Call rebuilds call n of a session from the store (assemble.Rebuild:
// checked against the SHA-256 its record holds) and labels its blocks.
// It reads the session's records up to n.
func (in *Inspector) Call(ctx context.Context, sid string, n int) (*CallView, error) {
	if err := in.check(sid); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("call %d: call numbers start at 1: %w", n, ErrInvalid)
	}
	cs, err := in.Calls(ctx, sid, Page{From: n, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(cs) == 1 && cs[0].Recorded {
		return in.recordedView(ctx, sid, n)
	}
	if len(cs) == 0 {
		if err := in.exists(ctx, sid); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("session %s has no call %d: %w", sid, n, ErrNotFound)
	}
	a, err := assemble.Rebuild(ctx, in.st, sid, n)
	if err != nil {
		return nil, fmt.Errorf("session %s call %d: %w", sid, n, err)
	}
	v := &CallView{Call: cs[0], Raw: a.Bytes, Blocks: blocks(a, cs[0].Break.PrefixBytes)}
	if err := in.explain(ctx, sid, &v.Call, v.Blocks); err != nil {
		return nil, err
	}
	return v, nil
}

// blocks labels a rebuilt context.
func blocks(a *assemble.Assembled, prefix int) []Block {
	sp := a.Spans()
	out := make([]Block, len(sp))
	for i, s := range sp {
		b := Block{Index: i, Kind: string(s.Kind), Role: string(s.Role), ObjectID: s.ObjectID, ObjectKind: s.ObjectKind,
			Nickname: s.Nickname, Version: s.Version, Start: s.Start, End: s.End, Text: string(a.Bytes[s.Start:s.End])}
		if len(a.Bytes) > 0 {
			b.Tokens = int(float64(a.Tokens) * float64(s.End-s.Start) / float64(len(a.Bytes)))
		}
		b.Cached = prefix >= 0 && s.End <= prefix
		b.Label = label(b)
		out[i] = b
	}
	return out
}

// KindLabel names a block kind in words.
func KindLabel(kind string) string {
	switch kind {
	case "system":
		return "system prompt"
	case "tools":
		return "tool list"
	case "user":
		return "user message"
	case "assistant":
		return "assistant message"
	case "toolref":
		return "tool result"
	case "meta":
		return "metadata line"
	case "content":
		return "content"
	case "stub":
		return "collapsed"
	case "note":
		return "context note"
	}
	return kind
}

func label(b Block) string {
	l := KindLabel(b.Kind)
	if b.ObjectID == "" {
		return l
	}
	name := b.Nickname
	if name == "" {
		name = shortID(b.ObjectID)
	}
	if b.ObjectKind != "" {
		l += " · " + b.ObjectKind
	}
	return fmt.Sprintf("%s %s @%d", l, name, b.Version)
}

// explain names the first item where call c's context departs from the
// previous call's and says why, for the call view.
func (in *Inspector) explain(ctx context.Context, sid string, c *Call, bl []Block) error {
	b := &c.Break
	switch b.Cause {
	case CauseFirst:
		b.Detail = "first call of the session: the whole context was written to the cache"
		return nil
	case CauseExpired:
		b.Detail = fmt.Sprintf("%s since the previous call, longer than the cache's %s lifetime: the whole context was written again",
			time.Duration(c.GapSeconds*float64(time.Second)).Round(time.Second), in.o.TTL)
		if c.CacheRenewed != nil {
			b.Detail = fmt.Sprintf("%s since the harness last renewed the cache (%s since the previous call), longer than the cache's %s lifetime: the whole context was written again",
				time.Duration(c.IdleSeconds*float64(time.Second)).Round(time.Second), time.Duration(c.GapSeconds*float64(time.Second)).Round(time.Second), in.o.TTL)
		}
	case CauseSystem:
		b.Detail = "the system prompt changed: everything after it was written again"
	case CauseNone:
		b.Detail = "the context extends the previous call's: only the new part was written"
	}
	// the block at the first differing byte
	for _, x := range bl {
		if b.PrefixBytes >= 0 && x.End > b.PrefixBytes {
			if b.Cause == CauseNone && x.Start >= b.PrefixBytes {
				break // nothing differs: the tail is new
			}
			b.FirstKind, b.FirstObject = x.Kind, x.ObjectID
			if b.FirstItem < 0 && x.Index >= 2 {
				b.FirstItem = x.Index - 2
			}
			if b.Detail == "" {
				b.Detail = fmt.Sprintf("first difference in %s", x.Label)
			}
			break
		}
	}
	if b.Cause != CauseRebase || c.N < 2 {
		return nil
	}
	prev, cur, err := lists(ctx, in, sid, c.N)
	if err != nil {
		return err
	}
	i := c.RebaseFrom
	if i < 0 || i >= len(prev) || i >= len(cur) {
		b.Detail = fmt.Sprintf("rebase (%s) from item %d", c.Reason, i)
		return nil
	}
	was, now := prev[i], cur[i]
	b.FirstItem = i
	b.FirstKind = string(now.K)
	r, _ := objects.ParseRef(was.Ref)
	b.FirstObject = r.ID
	why := "deactivated (the collapse policy or the agent)"
	for _, it := range cur[i:] {
		if it.K == "content" {
			if nr, err := objects.ParseRef(it.Ref); err == nil && nr.ID == r.ID && nr.Tx > r.Tx {
				why = fmt.Sprintf("superseded by a new version (@%d)", nr.Tx)
				break
			}
		}
	}
	name := shortID(r.ID)
	for _, x := range bl {
		if x.ObjectID == r.ID && x.Nickname != "" {
			name = x.Nickname
			break
		}
	}
	b.Detail = fmt.Sprintf("rebase (%s): %s @%d became a %s item: %s; %d items from there on were written again",
		c.Reason, name, r.Tx, KindLabel(string(now.K)), why, len(cur)-i)
	if was.K != "content" {
		b.Detail = fmt.Sprintf("rebase (%s) from item %d (%s → %s); %d items from there on were written again",
			c.Reason, i, KindLabel(string(was.K)), KindLabel(string(now.K)), len(cur)-i)
	}
	return nil
}

// lists replays the item lists of calls n-1 and n from their records.
func lists(ctx context.Context, in *Inspector, sid string, n int) (prev, cur []assemble.ItemDoc, err error) {
	var list []assemble.ItemDoc
	for k := 1; k <= n; k++ {
		c, err := assemble.ReadCommit(ctx, in.st, sid, k)
		if err != nil {
			return nil, nil, err
		}
		if c.Base > len(list) {
			return nil, nil, fmt.Errorf("%s keeps %d items, its parent has %d", c.ID, c.Base, len(list))
		}
		if k == n {
			prev = list
		}
		list = append(list[:c.Base:c.Base], c.Items...)
	}
	return prev, list, nil
}

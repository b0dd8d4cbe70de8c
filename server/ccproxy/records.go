package ccproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/internal/jsontext"
	"github.com/ctxstore/ctxstore/store"
)

// The documents managed mode keeps in a store (docs/claude-code.md,
// "Managed mode"): a conversation's decisions, each managed call, and the
// messages and heads (a request without its messages) the calls name by
// SHA-256, each stored once.
const (
	ConversationType = "ccproxy_conversation"
	CallType         = "ccproxy_call"
	MessageType      = "ccproxy_message"
	HeadType         = "ccproxy_head"
)

// RecordTypes are the types of every document managed mode writes.
var RecordTypes = []string{ConversationType, CallType, MessageType, HeadType}

// RecordedCall is a managed call as the store holds it: what the model
// saw, with what managed mode did and the size and SHA-256 of what Claude
// Code asked to send.
type RecordedCall struct {
	// N numbers the session's managed calls from 1, in the order sent.
	N            int       `json:"n"`
	Session      string    `json:"session_id"`
	Conversation string    `json:"conversation"`
	Call         int       `json:"call"` // the conversation's call, from 1
	Time         time.Time `json:"time"`
	Collapsed    int       `json:"collapsed"`
	New          int       `json:"new_collapses"`
	Previews     int       `json:"previews"`
	Rebase       string    `json:"rebase,omitempty"`
	Breakpoints  int       `json:"breakpoints"`
	SentBytes    int       `json:"sent_bytes"`
	AskedBytes   int       `json:"asked_bytes"`
	Asked        string    `json:"asked_sha256,omitempty"`

	head     string
	messages []string
}

// Messages returns the SHA-256 (hex) of each message the call sent, in
// order: two calls share a cached prefix as far as these agree.
func (c RecordedCall) Messages() []string { return c.messages }

// ReadCalls returns session sid's recorded managed calls in the order they
// were sent, numbered from 1 (none: nil).
func ReadCalls(ctx context.Context, st store.Store, sid string) ([]RecordedCall, error) {
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", CallType), store.Where("session_id", sid)}})
	if err != nil {
		return nil, err
	}
	var out []RecordedCall
	for _, d := range docs {
		c := RecordedCall{Session: str(d["session_id"]), Conversation: str(d["conversation"]), Call: num(d["call"]),
			Collapsed: num(d["collapsed"]), New: num(d["new_collapses"]), Previews: num(d["previews"]), Rebase: str(d["rebase"]),
			Breakpoints: num(d["breakpoints"]), SentBytes: num(d["sent_bytes"]), AskedBytes: num(d["asked_bytes"]),
			Asked: str(d["asked_sha256"]), head: str(d["head"])}
		c.Time, _ = time.Parse(time.RFC3339Nano, str(d["time"]))
		hs, _ := d["messages"].([]any)
		for _, h := range hs {
			c.messages = append(c.messages, str(h))
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b RecordedCall) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Conversation, b.Conversation); c != 0 {
			return c
		}
		return a.Call - b.Call
	})
	for i := range out {
		out[i].N = i + 1
	}
	return out, nil
}

// ResolveSession returns the session whose managed calls the store holds
// named by sid, its id or a unique prefix of it.
func ResolveSession(ctx context.Context, st store.Store, sid string) (string, error) {
	ids, err := store.Values(ctx, st, store.Query{Where: []store.Pred{store.Where("type", ConversationType)}}, "session_id", "", 0)
	if err != nil {
		return "", err
	}
	var match []string
	for _, id := range ids {
		if id == sid {
			return id, nil
		}
		if strings.HasPrefix(id, sid) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("no managed calls recorded for session %q (managed mode records them in the store run or proxy --managed used)", sid)
	case 1:
		return match[0], nil
	}
	return "", fmt.Errorf("session prefix %q names %d sessions: %s", sid, len(match), strings.Join(match, ", "))
}

// Bodies rebuilds the requests recorded calls sent (what the model saw):
// each one's head with its messages, from the documents that hold them.
// A message shared by several calls is read once.
func Bodies(ctx context.Context, st store.Store, calls []RecordedCall) ([][]byte, error) {
	seen := map[string][]byte{}
	blob := func(typ, h string) ([]byte, error) {
		id := typ + ":" + h
		if b, ok := seen[id]; ok {
			return b, nil
		}
		d, err := st.Entity(ctx, id, store.Basis{})
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", typ, h, err)
		}
		b := []byte(str(d["body"]))
		seen[id] = b
		return b, nil
	}
	out := make([][]byte, 0, len(calls))
	for _, c := range calls {
		head, err := blob(HeadType, c.head)
		if err != nil {
			return nil, err
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(head, &top); err != nil {
			return nil, fmt.Errorf("managed call %d: its head: %w", c.N, err)
		}
		msgs := make([]json.RawMessage, 0, len(c.messages))
		for _, h := range c.messages {
			b, err := blob(MessageType, h)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, b)
		}
		list, err := json.Marshal(msgs)
		if err != nil {
			return nil, err
		}
		top["messages"] = list
		b, err := jsontext.Marshal(top)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Asked is a request Claude Code asked to send, as its transcript
// recorded it (harness/recorded): the call's number, its conversation
// (Lane: "" for the main thread, else the subagent's), the time of the
// answer and the request's body (recorded, or rebuilt from the
// conversation).
type Asked struct {
	N    int
	Lane string
	Time time.Time
	Body []byte
}

// Match pairs each asked request with the managed call that sent the
// model its managed form: out[i] is the index in calls of asked[i]'s
// managed call, -1 for none (a request passed on unchanged, or sent
// without managed mode). sent holds the calls' bodies (Bodies).
//
// Managed mode changes only tool_result contents and breakpoints, so a
// managed request and the request it was made from hold the same tool
// uses: two requests are candidates when they agree on how many tool uses
// their messages hold and on the last one's id (tool use ids are unique
// to a session). A request recorded exactly (Claude Code's api-request
// records) is paired by its SHA-256 first. Requests with no tool use yet
// (a conversation's first) are paired within the conversation the other
// pairs tie to the same lane. Within candidates, each asked request takes
// the latest managed call sent no later than its answer, so a request
// retried leaves its failed attempt unpaired.
func Match(calls []RecordedCall, sent [][]byte, asked []Asked) []int {
	out := make([]int, len(asked))
	for i := range out {
		out[i] = -1
	}
	taken := make([]bool, len(calls))
	// Exact recordings first.
	bySum := map[string]int{}
	for j, c := range calls {
		if c.Asked != "" {
			bySum[c.Asked] = j
		}
	}
	for i, a := range asked {
		sum := sha256.Sum256(a.Body)
		if j, ok := bySum[hex.EncodeToString(sum[:])]; ok && !taken[j] {
			out[i], taken[j] = j, true
		}
	}
	ck := make([]toolKey, len(calls))
	for j := range calls {
		if j < len(sent) {
			ck[j] = keyOf(sent[j])
		}
	}
	ak := make([]toolKey, len(asked))
	for i, a := range asked {
		ak[i] = keyOf(a.Body)
	}
	// Requests past their first tool use: by key alone; the pairs tie
	// conversations to lanes.
	pair(calls, asked, out, taken, func(i, j int) bool { return ak[i].n > 0 && ak[i] == ck[j] })
	lane := map[string]string{}
	claimed := map[string]bool{}
	for i, j := range out {
		if j >= 0 {
			if _, ok := lane[calls[j].Conversation]; !ok {
				lane[calls[j].Conversation] = asked[i].Lane
			}
			claimed[asked[i].Lane] = true
		}
	}
	// The rest within tied conversations, or a conversation no pair tied
	// with a lane no pair claimed.
	pair(calls, asked, out, taken, func(i, j int) bool {
		if ak[i] != ck[j] {
			return false
		}
		if l, ok := lane[calls[j].Conversation]; ok {
			return l == asked[i].Lane
		}
		return !claimed[asked[i].Lane]
	})
	return out
}

// pair pairs, in the order of their answers, each unpaired asked request
// with the latest untaken managed call ok accepts sent no later than it.
func pair(calls []RecordedCall, asked []Asked, out []int, taken []bool, ok func(i, j int) bool) {
	order := make([]int, len(asked))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return asked[x].Time.Compare(asked[y].Time) })
	for _, i := range order {
		if out[i] >= 0 {
			continue
		}
		best := -1
		for j, c := range calls {
			if taken[j] || c.Time.After(asked[i].Time) || !ok(i, j) {
				continue
			}
			if best < 0 || !c.Time.Before(calls[best].Time) {
				best = j
			}
		}
		if best >= 0 {
			out[i], taken[best] = best, true
		}
	}
}

// toolKey is what of a request's tool uses pairs it: how many its
// messages hold and the last one's id.
type toolKey struct {
	n    int
	last string
}

// apiBody is what a Messages request body is read for here.
type apiBody struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type apiBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

func blocksOf(content json.RawMessage) []apiBlock {
	var bs []apiBlock
	if json.Unmarshal(content, &bs) != nil {
		return nil
	}
	return bs
}

func keyOf(body []byte) toolKey {
	var b apiBody
	if json.Unmarshal(body, &b) != nil {
		return toolKey{n: -1}
	}
	var k toolKey
	for _, m := range b.Messages {
		for _, bl := range blocksOf(m.Content) {
			if bl.Type == "tool_use" && bl.ID != "" {
				k.n++
				k.last = bl.ID
			}
		}
	}
	return k
}

// Change is a tool result the model saw otherwise than Claude Code asked:
// its tool use, its size in each (characters of its text) and the start
// of what the model saw.
type Change struct {
	ToolUseID string `json:"tool_use_id"`
	Asked     int    `json:"asked_chars"`
	Sent      int    `json:"sent_chars"`
	// Missing: Claude Code's request as recorded does not hold this
	// result (a rebuilt request may lack what the transcript lacks).
	Missing bool   `json:"missing,omitempty"`
	Text    string `json:"text"`
}

// Changes returns the tool results whose content differs between what
// Claude Code asked to send and what the model saw, in the order the
// model saw them: managed mode changes nothing else but breakpoints.
func Changes(asked, sent []byte) []Change {
	results := func(body []byte) ([]string, map[string]string) {
		var b apiBody
		json.Unmarshal(body, &b)
		var ids []string
		m := map[string]string{}
		for _, msg := range b.Messages {
			for _, bl := range blocksOf(msg.Content) {
				if bl.Type == "tool_result" && bl.ToolUseID != "" {
					ids = append(ids, bl.ToolUseID)
					m[bl.ToolUseID] = resultText(bl.Content)
				}
			}
		}
		return ids, m
	}
	_, a := results(asked)
	ids, s := results(sent)
	var out []Change
	for _, id := range ids {
		at, ok := a[id]
		if ok && at == s[id] {
			continue
		}
		t := s[id]
		if i := strings.IndexByte(t, '\n'); i >= 0 {
			t = t[:i]
		}
		if r := []rune(t); len(r) > 200 {
			t = string(r[:200]) + "…"
		}
		out = append(out, Change{ToolUseID: id, Asked: len([]rune(at)), Sent: len([]rune(s[id])), Missing: !ok, Text: t})
	}
	return out
}

// resultText is a tool result's text: a string, or its text blocks
// joined (other blocks, an image, count as their JSON).
func resultText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var bs []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c, &bs) != nil {
		return string(c)
	}
	var sb strings.Builder
	for i, b := range bs {
		if i > 0 {
			sb.WriteByte('\n')
		}
		if b.Type == "text" {
			sb.WriteString(b.Text)
		} else {
			sb.Write(c)
			break
		}
	}
	return sb.String()
}

// SharedMessages is how many leading messages two recorded calls share:
// the prefix the second could read from the cache the first wrote.
func SharedMessages(a, b RecordedCall) int {
	n := 0
	for n < len(a.messages) && n < len(b.messages) && a.messages[n] == b.messages[n] {
		n++
	}
	return n
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int64:
		return int(x)
	case int:
		return x
	case json.Number:
		n, _ := x.Int64()
		return int(n)
	}
	return 0
}

// Conversations returns the conversations of session sid that managed
// mode kept decisions for (none: the session did not go through it).
func Conversations(ctx context.Context, st store.Store, sid string) ([]string, error) {
	return store.Values(ctx, st, store.Query{Where: []store.Pred{store.Where("type", ConversationType), store.Where("session_id", sid)}}, "conversation", "", 0)
}

package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/ccmanaged"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/internal/jsontext"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// ClaudeCodeManaged replays a Claude Code session as sent through ctxstore's
// Claude Code proxy in managed mode (docs/claude-code.md, "Managed mode"),
// through the code the proxy runs (package ccmanaged): each call is
// rendered as the Messages API request Claude Code sends (the whole
// history, tool results in the user message after their calls, a
// breakpoint on the system prompt and on the last block), managed by
// ccmanaged.Config.Apply and checked by ccmanaged.Checked as the proxy
// does (the conversation's State carried from call to call, the call's
// recorded time, the run's TTL), and the managed request is priced as
// every strategy is: its messages in the replay's text form with each tool
// output as the model was shown it (whole, a preview or the line naming
// its spill file), the harness's system prompt and tools as the calibrated
// overhead, the breakpoints where managed mode put them. A request managed
// mode would pass through unchanged is priced as sent unchanged.
//
// Its name is "claude_code_managed"; it declines the sessions of other
// harnesses. With Options.ClaudeCodeProxy the proxy's warming and head
// lifetime apply to it as to the other strategies; without, the run's
// warming (Options.Warm) and the harness's head lifetime.
type ClaudeCodeManaged struct {
	// Config is managed mode's (zero fields: the proxy's defaults). A nil
	// Spill names the spill files as the proxy does under ManagedSpillRoot
	// and writes none: the replay prices what the model is sent.
	Config ccmanaged.Config

	env    *Env
	cfg    ccmanaged.Config
	st     ccmanaged.State
	sid    string
	r      *renderer                  // its argument memo
	wire   []wireMsg                  // the request's messages, as Claude Code sends them
	wired  int                        // the session's messages in wire
	orig   map[string]json.RawMessage // each tool output's content as sent
	text   map[string]string          // and as text
	buf    []byte
	pieces []managedPiece
	// asked and sent are the last call's request as Claude Code sent it
	// and as managed mode sent it on (tests).
	asked, sent []byte
	managed     int
	passed      int
	firstPass   string
	reasons     map[string]int
	hidden      int
}

// ManagedSpillRoot stands for the proxy's default spill directory
// (~/.ctxstore/spill) on the recorded machine, whose home the transcript
// does not give: the collapsed lines and previews name files under it, so
// only its length matters.
const ManagedSpillRoot = "/home/user/.ctxstore/spill"

// managedMaxTokens is the max_tokens of the rebuilt requests (Claude
// Code's; nothing is priced by it).
const managedMaxTokens = 32000

// wireMsg is one message of a rebuilt request: its role, its blocks
// (encoded once) and the index of the last session message it holds.
type wireMsg struct {
	role   string
	blocks []json.RawMessage
	last   int
}

// managedPiece is one session message's rendering: shown is the text its
// output was shown as ("" whole), end its end in buf.
type managedPiece struct {
	shown string
	end   int
}

// Name returns "claude_code_managed".
func (*ClaudeCodeManaged) Name() string { return "claude_code_managed" }

// Harness tells that the strategy replays Claude Code's sessions only.
func (*ClaudeCodeManaged) Harness() transcript.Format { return transcript.FormatClaudeCode }

// Begin starts a replay.
func (m *ClaudeCodeManaged) Begin(_ context.Context, env *Env) error {
	m.env, m.cfg, m.st = env, m.Config, ccmanaged.State{}
	if m.cfg.Spill == nil {
		m.cfg.Spill = spillStandIn{root: ManagedSpillRoot}
	}
	m.sid = env.Session.ID
	if m.sid == "" {
		m.sid = "replay"
	}
	m.r, m.wire, m.wired, m.orig, m.text = newRenderer(), nil, 0, map[string]json.RawMessage{}, map[string]string{}
	m.buf, m.pieces = []byte(EmptyHead), nil
	m.asked, m.sent = nil, nil
	m.managed, m.passed, m.firstPass, m.reasons, m.hidden = 0, 0, "", map[string]int{}, 0
	return nil
}

// Step manages the call's request and renders what it sends.
func (m *ClaudeCodeManaged) Step(_ context.Context, in *CallInput) (*Step, error) {
	msgs := in.Messages
	body, err := m.request(msgs, in.Index)
	if err != nil {
		return nil, fmt.Errorf("%s: call %d: %w", m.Name(), in.N, err)
	}
	step := &Step{HeadLen: len(EmptyHead), proxied: true}
	st := m.st
	st.Shown = cloneShown(m.st.Shown)
	if !in.Renewed.IsZero() {
		st.Renewed = in.Renewed // the warming kept the previous request's entry (the proxy's warm requests)
	}
	out, ap, err := m.cfg.Apply(m.sid, &st, body, in.Time, m.env.TTL)
	if err == nil {
		err = ccmanaged.Checked(body, out)
	}
	if err != nil {
		// The proxy sends the request on unchanged.
		m.passed++
		if m.firstPass == "" {
			m.firstPass = fmt.Sprintf("call %d: %v", in.N, err)
		}
		step.Reason = "passed through unchanged: " + err.Error()
		out = body
	} else {
		m.st = st
		m.managed++
		// What a cold call would not send again: the collapses left
		// waiting (managed mode's estimate, four bytes a token).
		step.Stale = ap.Pending
		if ap.Rebase != "" {
			m.reasons[ap.Rebase]++
			step.Reason = "rebase: " + ap.Rebase
		}
	}
	m.asked, m.sent = body, out
	shown, marks, err := m.shown(out)
	if err != nil {
		return nil, fmt.Errorf("%s: call %d: reading the managed request: %w", m.Name(), in.N, err)
	}
	m.hidden = len(shown)
	step.Bytes = m.render(msgs, shown)
	// The breakpoints: the system prompt's (the head), then those managed
	// mode placed, at the end of their messages.
	step.Breakpoints = []int{len(EmptyHead)}
	for _, w := range marks {
		if k := m.wire[w].last; k < len(m.pieces) {
			step.Breakpoints = append(step.Breakpoints, m.pieces[k].end)
		}
	}
	step.Hidden = func(id string) bool { _, ok := shown[id]; return ok }
	step.Reachable = step.Hidden // a spill file, read back with Claude Code's Read
	return step, nil
}

func cloneShown(s map[string]string) map[string]string {
	if s == nil {
		return nil
	}
	out := make(map[string]string, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

// request returns the request Claude Code sends for a call with messages
// msgs: the wire messages of the session so far, the last block with
// Claude Code's breakpoint. call is the call's message index (its model).
func (m *ClaudeCodeManaged) request(msgs []conversation.Message, call int) ([]byte, error) {
	if len(msgs) < m.wired {
		m.wire, m.wired = nil, 0 // not a continuation: start again
	}
	for ; m.wired < len(msgs); m.wired++ {
		if err := m.addMessage(msgs[m.wired], m.wired); err != nil {
			return nil, err
		}
	}
	cc := []byte(`{"type":"ephemeral"}`)
	if m.env.TTL >= time.Hour {
		cc = []byte(`{"type":"ephemeral","ttl":"1h"}`)
	}
	model := m.env.Session.Messages[call].Model
	if model == "" {
		model = m.env.Model
	}
	var b bytes.Buffer
	b.WriteString(`{"max_tokens":`)
	fmt.Fprint(&b, managedMaxTokens)
	b.WriteString(`,"messages":[`)
	for i, w := range m.wire {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"content":[`)
		for j, blk := range w.blocks {
			if j > 0 {
				b.WriteByte(',')
			}
			if i == len(m.wire)-1 && j == len(w.blocks)-1 {
				// Claude Code's breakpoint on the last block.
				b.Write(blk[:len(blk)-1])
				b.WriteString(`,"cache_control":`)
				b.Write(cc)
				b.WriteByte('}')
				continue
			}
			b.Write(blk)
		}
		b.WriteString(`],"role":"`)
		b.WriteString(w.role)
		b.WriteString(`"}`)
	}
	mod, err := jsontext.Marshal(model)
	if err != nil {
		return nil, err
	}
	b.WriteString(`],"model":`)
	b.Write(mod)
	// The system prompt the transcript does not hold, standing for Claude
	// Code's with its breakpoint (priced as the calibrated overhead).
	b.WriteString(`,"system":[{"type":"text","text":"Claude Code's system prompt","cache_control":`)
	b.Write(cc)
	b.WriteString(`}]}`)
	return b.Bytes(), nil
}

// addMessage appends session message msg (index i) to the wire messages,
// in the message of its role at the end or a new one.
func (m *ClaudeCodeManaged) addMessage(msg conversation.Message, i int) error {
	role := "user"
	var blocks []any
	switch msg.Role {
	case conversation.RoleUser:
		if strings.TrimSpace(msg.Text) != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": msg.Text})
		}
	case conversation.RoleToolResult:
		b := map[string]any{"type": "tool_result", "tool_use_id": msg.ToolCallID, "content": msg.Output}
		if msg.IsError {
			b["is_error"] = true
		}
		blocks = append(blocks, b)
	case conversation.RoleAssistant:
		role = "assistant"
		if strings.TrimSpace(msg.Text) != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": msg.Text})
		}
		for _, tc := range msg.ToolCalls {
			args := tc.Args
			if args == nil {
				args = map[string]any{}
			}
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": args})
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	if n := len(m.wire); n == 0 || m.wire[n-1].role != role {
		m.wire = append(m.wire, wireMsg{role: role})
	}
	w := &m.wire[len(m.wire)-1]
	for _, b := range blocks {
		raw, err := jsontext.Marshal(b)
		if err != nil {
			return err
		}
		w.blocks = append(w.blocks, raw)
	}
	w.last = i
	if msg.Role == conversation.RoleToolResult {
		c, err := jsontext.Marshal(msg.Output)
		if err != nil {
			return err
		}
		m.orig[msg.ToolCallID], m.text[msg.ToolCallID] = c, msg.Output
	}
	return nil
}

// shown reads a managed request: the text each tool output is shown as
// when not whole (by tool call id), and the wire messages holding a
// breakpoint.
func (m *ClaudeCodeManaged) shown(body []byte) (map[string]string, []int, error) {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, err
	}
	if len(req.Messages) != len(m.wire) {
		return nil, nil, fmt.Errorf("%d messages for %d sent", len(req.Messages), len(m.wire))
	}
	shown := map[string]string{}
	var marks []int
	for i, msg := range req.Messages {
		var blocks []struct {
			Type         string          `json:"type"`
			ToolUseID    string          `json:"tool_use_id"`
			Content      json.RawMessage `json:"content"`
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if len(msg.Content) == 0 || msg.Content[0] != '[' {
			continue
		}
		if err := json.Unmarshal(msg.Content, &blocks); err != nil {
			return nil, nil, err
		}
		mark := false
		for _, b := range blocks {
			if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
				mark = true
			}
			if b.Type != "tool_result" || bytes.Equal(b.Content, m.orig[b.ToolUseID]) {
				continue
			}
			var s string
			if err := json.Unmarshal(b.Content, &s); err != nil {
				return nil, nil, fmt.Errorf("tool result %s: content not a string", b.ToolUseID)
			}
			if t, ok := m.text[b.ToolUseID]; !ok || s != t {
				shown[b.ToolUseID] = s
			}
		}
		if mark {
			marks = append(marks, i)
		}
	}
	return shown, marks, nil
}

// render renders msgs in the replay's text form, each tool output as
// shown says, reusing the previous rendering up to the first message that
// renders otherwise. The returned slice keeps its bytes.
func (m *ClaudeCodeManaged) render(msgs []conversation.Message, shown map[string]string) []byte {
	showOf := func(msg conversation.Message) string {
		if msg.Role != conversation.RoleToolResult {
			return ""
		}
		return shown[msg.ToolCallID]
	}
	keep := 0
	for keep < len(m.pieces) && keep < len(msgs) && m.pieces[keep].shown == showOf(msgs[keep]) {
		keep++
	}
	end := len(EmptyHead)
	if keep > 0 {
		end = m.pieces[keep-1].end
	}
	if keep < len(m.pieces) {
		// Something before the end changed: copy, so that earlier
		// returned slices keep their bytes.
		m.buf = append(make([]byte, 0, len(m.buf)+4096), m.buf[:end]...)
		m.pieces = m.pieces[:keep]
	} else {
		m.buf = m.buf[:end]
	}
	for i := keep; i < len(msgs); i++ {
		msg := msgs[i]
		s := showOf(msg)
		if s != "" {
			msg.Output = s
		}
		m.buf = m.r.appendMessage(m.buf, msg, false)
		m.pieces = append(m.pieces, managedPiece{shown: s, end: len(m.buf)})
	}
	return m.buf[:len(m.buf):len(m.buf)]
}

// End ends a replay.
func (m *ClaudeCodeManaged) End(context.Context) ([]string, error) {
	var notes []string
	notes = append(notes, fmt.Sprintf("managed mode: %d requests managed, %d passed through unchanged; %d outputs shown collapsed or as a preview at the last call", m.managed, m.passed, m.hidden))
	if m.firstPass != "" {
		notes = append(notes, "first request passed through: "+m.firstPass)
	}
	if len(m.reasons) > 0 {
		var rs []string
		for r, n := range m.reasons {
			rs = append(rs, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(rs)
		notes = append(notes, "rebases by reason: "+strings.Join(rs, ", "))
	}
	m.r, m.wire, m.orig, m.text, m.buf, m.pieces = nil, nil, nil, nil, nil, nil
	return notes, nil
}

// spillStandIn names the spill files as the proxy's spill directory does
// (hooks.Spill: root/<session>/tools.SpillName(<tool call id>)) and writes
// nothing.
type spillStandIn struct{ root string }

// File returns the file's name.
func (s spillStandIn) File(session, toolUseID string) (string, bool) {
	if session == "" || toolUseID == "" || strings.ContainsAny(session, `/\`) {
		return "", false
	}
	return s.root + "/" + session + "/" + tools.SpillName(toolUseID), true
}

// Keep returns the file's name; nothing is written.
func (s spillStandIn) Keep(session, toolUseID, _ string) (string, error) {
	f, ok := s.File(session, toolUseID)
	if !ok {
		return "", errors.New("no spill file for these ids")
	}
	return f, nil
}

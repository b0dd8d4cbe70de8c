// Package ccmanaged is managed mode's core: it decides, for one
// conversation of a Claude Code session, what a Messages API request sends
// the model, and rewrites the request's body so (docs/claude-code.md,
// "Managed mode"). It is a function of the body, the conversation's State
// and the time, with the spill files reached through Spill: the Claude Code
// proxy (server/ccproxy) runs it on every request, and the replay
// (eval/replay, claude_code_managed) on every recorded call, so that both
// run one code path.
package ccmanaged

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/internal/jsontext"
)

// Managed mode: the proxy sends the model a managed context for each
// conversation instead of the whole history Claude Code sends:
//
//   - a tool output past the preview size enters as a preview
//     (assemble.PreviewText) naming the spill file that holds it whole,
//     unless ctxstore's hook already made it one;
//   - an output the auto-collapse policy (package collapse, its defaults:
//     the 5 most recent outputs of each of the last 3 turns, 16,000 tokens)
//     no longer keeps, and a whole read of a file a later whole read of the
//     same file superseded, becomes one line naming its spill file, which
//     the model reads back with Claude Code's own Read;
//   - what the model was shown of each output is sticky: an output shown
//     whole stays whole until a rebase collapses it, and the collapses
//     waiting are applied together only when assemble.Decide (the rebase
//     cost model Pi's bare head uses, priced with breakpoints at the end
//     of each request as Claude Code places them) says their saving pays
//     for the prefix they make the provider write again, or the cache is
//     cold anyway;
//   - the breakpoints of the messages are ctxstore's: one at the end of
//     the request, with the lifetime Claude Code asked for, and, when the
//     limit of four allows and no rebase happened, one where the previous
//     request ended (its cache entry is read whatever Claude Code appended
//     since); none when Claude Code placed none (its caching is off).
//
// Claude Code's system prompt, its tools, every parameter and every block
// other than a tool_result's content are sent as they came.

// MinCollapseChars is the size from which an output the policy no longer
// keeps collapses: a shorter one costs less than the collapsed line and
// the read it may call for.
const MinCollapseChars = 1000

// The forms an output is shown in.
const (
	formWhole     = "whole"
	formPreview   = "preview"
	formCollapsed = "collapsed"
	formStale     = "stale" // a file read superseded by a later read of the file
)

// DefaultPreviewChars is the preview size when Config.PreviewChars is 0:
// the size from which ctxstore's Claude Code hooks make an output a preview
// (hooks.DefaultPreviewChars, the same 4,000 tokens at four characters a
// token).
const DefaultPreviewChars = 16000

// Spill names and writes the spill files, where outputs are whole:
// hooks.Spill for the proxy (one directory per session, the hooks'), a
// stand-in that writes nothing for the replay.
type Spill interface {
	// File returns the spill file of tool call toolUseID's output in
	// session's spill directory; false when the ids cannot name one.
	File(session, toolUseID string) (string, bool)
	// Keep makes sure the output is whole in its spill file (File), and
	// returns the file.
	Keep(session, toolUseID, whole string) (string, error)
}

// Config configures managed mode.
type Config struct {
	// Spill is where outputs are whole.
	Spill Spill
	// PreviewChars is the preview size (0: DefaultPreviewChars).
	PreviewChars int
	// Collapse is the auto-collapse window (zero: collapse.Default()).
	Collapse collapse.Config
	// Policy is the rebase cost model's (zero fields: its defaults; the
	// cache lifetime is the conversation's, breakpoints at the end).
	Policy assemble.Policy
	// MinChars is the smallest output that collapses (0:
	// MinCollapseChars).
	MinChars int
}

// State is what managed mode decided for one conversation: the proxy keeps
// it in its store, so that a restarted proxy or a resumed session
// continues the same managed stream.
type State struct {
	// Shown is the form each tool call's output was sent in, by
	// tool_use id.
	Shown map[string]string `json:"shown"`
	// Len is how many messages the last managed request held.
	Len int `json:"len"`
	// Last is when it was sent; Calls how many managed requests so far.
	Last  time.Time `json:"last"`
	Calls int       `json:"calls"`
	// Shape is the conversation's rhythm, for the cost model's horizon.
	Shape assemble.Shape `json:"shape"`
	// Renewed is when a warm request last renewed the cache entry of the
	// last managed request (the caller sets it: the proxy when a warm is
	// answered, the replay from its warming). The cache is cold only past
	// the lifetime since the later of Last and Renewed: a pause the proxy
	// kept warm is no reason to rebase for free.
	Renewed time.Time `json:"renewed,omitzero"`
}

// touched is when the conversation's cache entry was last written or
// read: its last managed request, or a warm request after it.
func (st *State) touched() time.Time {
	if st.Renewed.After(st.Last) {
		return st.Renewed
	}
	return st.Last
}

// Unknown marks a request managed mode does not understand: it passes
// through unchanged. Why says what was not understood.
type Unknown struct{ Why string }

func (e Unknown) Error() string { return e.Why }

func unknown(format string, args ...any) error { return Unknown{fmt.Sprintf(format, args...)} }

// block is one content block, its fields as they came.
type block map[string]json.RawMessage

func (b block) str(k string) string {
	var s string
	json.Unmarshal(b[k], &s)
	return s
}

// message is one message of the request.
type message struct {
	raw     json.RawMessage
	fields  map[string]json.RawMessage
	role    string
	str     *string // a string content
	blocks  []block
	changed bool
}

// result is one tool_result block and what managed mode knows of it.
type result struct {
	id       string
	msg, blk int
	turn     int
	seq      int64
	tool     string
	readPath string // a whole Read's file_path
	text     string // its text, when its content is text only
	textOK   bool
	preview  string // the spill file a hook's preview names
	spillOf  string // a Read of a spill file: that file
}

// Applied is what managed mode did to one request, for the log and the
// record.
type Applied struct {
	Collapsed   int    `json:"collapsed"`             // outputs shown collapsed (or superseded)
	New         int    `json:"new,omitempty"`         // of them, collapsed by this request's rebase
	Previews    int    `json:"previews,omitempty"`    // outputs shown as the proxy's preview
	Rebase      string `json:"rebase,omitempty"`      // why this request rebased ("" none)
	Breakpoints int    `json:"breakpoints,omitempty"` // message breakpoints placed
	Pending     int    `json:"pending,omitempty"`     // tokens of collapses left waiting
}

// Apply returns the managed body for a request of conversation st of
// session sid, sent at now with the cache lifetime ttl, and updates st. An
// Unknown error says the request was not understood. The body is not
// checked against the Messages API's rules (Manage checks it).
func (mc *Config) Apply(sid string, st *State, body []byte, now time.Time, ttl time.Duration) ([]byte, Applied, error) {
	var ap Applied
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, ap, unknown("the body is not a JSON object")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(top["messages"], &raws); err != nil || len(raws) == 0 {
		return nil, ap, unknown("no messages list")
	}
	msgs := make([]*message, len(raws))
	for i, raw := range raws {
		m, err := parseMessage(raw)
		if err != nil {
			return nil, ap, unknown("messages[%d]: %v", i, err)
		}
		msgs[i] = m
	}
	if st.Shown == nil {
		st.Shown = map[string]string{}
	}
	if st.Len > len(msgs) {
		// Fewer messages than last time: Claude Code rewound (an edited
		// prompt, a rewind). The outputs keep their forms; the stream's end
		// is where this request ends.
		st.Len = len(msgs)
	}

	// The tool calls and their results, turn by turn.
	type use struct {
		name, path string
		whole      bool
	}
	uses := map[string]use{}
	var results []*result
	turn := 0
	for i, m := range msgs {
		if m.role == "user" && !hasResult(m) {
			turn++
		}
		for j, b := range m.blocks {
			switch b.str("type") {
			case "tool_use":
				var in struct {
					Path   string          `json:"file_path"`
					Offset json.RawMessage `json:"offset"`
					Limit  json.RawMessage `json:"limit"`
				}
				json.Unmarshal(b["input"], &in)
				uses[b.str("id")] = use{name: b.str("name"), path: in.Path, whole: isNullRaw(in.Offset) && isNullRaw(in.Limit)}
			case "tool_result":
				r := &result{id: b.str("tool_use_id"), msg: i, blk: j, turn: turn, seq: int64(len(results))}
				u := uses[r.id]
				r.tool = u.name
				if u.name == "Read" && u.whole {
					r.readPath = u.path
				}
				r.text, r.textOK = resultText(b["content"])
				if r.textOK {
					r.preview = hookPreview(r.text, sid, r.id) // the hook's preview: the whole is in its file
				}
				if u.name == "Read" && u.path != "" {
					if f, ok := mc.Spill.File(sid, "x"); ok && strings.HasPrefix(u.path, strings.TrimSuffix(f, "x.txt")) {
						r.spillOf = u.path // the model read an output back
					}
				}
				results = append(results, r)
			}
		}
	}

	// What the policy would show now.
	minChars := mc.MinChars
	if minChars <= 0 {
		minChars = MinCollapseChars
	}
	cfg := mc.Collapse
	if cfg == (collapse.Config{}) {
		cfg = collapse.Default()
	}
	var calls []collapse.Call
	for _, r := range results {
		calls = append(calls, collapse.Call{ID: r.id, Turn: r.turn, Seq: r.seq, File: r.tool == "Read", Tokens: (len(r.text) + 3) / 4})
	}
	want := map[string]string{}
	for _, id := range collapse.Decide(calls, turn, cfg).Collapse {
		want[id] = formCollapsed
	}
	// A whole read superseded by a later whole read of the same file
	// that holds the file (not Claude Code's short "unchanged" stub).
	lastRead := map[string]*result{}
	for _, r := range results {
		if r.readPath == "" || !r.textOK {
			continue
		}
		if prev := lastRead[r.readPath]; prev != nil && len(r.text) >= min(len(prev.text), minChars) {
			want[prev.id] = formStale
		}
		lastRead[r.readPath] = r
	}

	// The forms: sticky for the outputs sent before; a new output enters
	// whole or as a preview.
	previewChars := mc.PreviewChars
	if previewChars <= 0 {
		previewChars = DefaultPreviewChars
	}
	form := map[string]string{}
	lines := map[string]string{} // the text each output is shown as, when not whole
	for _, r := range results {
		f, known := st.Shown[r.id]
		if !known {
			f = formWhole
			if r.textOK && r.preview == "" && r.spillOf == "" && utf8.RuneCountInString(r.text) > previewChars {
				if file, err := mc.Spill.Keep(sid, r.id, r.text); err == nil {
					f = formPreview
					lines[r.id] = assemble.PreviewText(r.text, "Read "+file+" for the output whole")
				}
			}
		} else if f == formPreview {
			file, _ := mc.Spill.File(sid, r.id)
			lines[r.id] = assemble.PreviewText(r.text, "Read "+file+" for the output whole")
		}
		form[r.id] = f
	}
	// collapseLine is the line an output collapses to, its spill file
	// made sure of; "" when it cannot collapse.
	collapseLine := func(r *result, f string) string {
		if !r.textOK || len(r.text) < minChars && r.preview == "" {
			return ""
		}
		file := r.spillOf
		if file == "" {
			file = r.preview
		}
		if file == "" {
			var err error
			if file, err = mc.Spill.Keep(sid, r.id, r.text); err != nil {
				return ""
			}
		}
		if f == formStale {
			return fmt.Sprintf("[ctxstore] this read of %s was superseded by a later read of the file; Read %s for it whole", r.readPath, file)
		}
		lines := strings.Count(r.text, "\n")
		if !strings.HasSuffix(r.text, "\n") {
			lines++
		}
		return fmt.Sprintf("[ctxstore] output collapsed (%d chars, %d lines); Read %s for it whole",
			utf8.RuneCountInString(r.text), lines, file)
	}

	// Collapses: those decided before stay; new ones are applied now for
	// outputs new to this request, and for the others together when the
	// cost model says the rebase pays.
	type wait struct {
		r     *result
		f     string
		line  string
		saved int
	}
	var waiting []wait
	for _, r := range results {
		f := form[r.id]
		if f == formCollapsed || f == formStale {
			if l := collapseLine(r, f); l != "" {
				lines[r.id] = l
			} else {
				form[r.id] = formWhole
			}
			continue
		}
		wf, ok := want[r.id]
		if !ok {
			continue
		}
		l := collapseLine(r, wf)
		if l == "" {
			continue
		}
		shown := r.text
		if f == formPreview {
			shown = lines[r.id]
		}
		saved := (len(shown) - len(l)) / 4
		if saved <= 0 {
			continue
		}
		if _, known := st.Shown[r.id]; !known {
			form[r.id], lines[r.id] = wf, l // new: nothing cached holds it
			continue
		}
		waiting = append(waiting, wait{r, wf, l, saved})
	}
	if len(waiting) > 0 {
		sort.Slice(waiting, func(i, j int) bool { return waiting[i].r.seq < waiting[j].r.seq })
		msgTokens := 0
		tail := make([]int, len(msgs)+1) // tokens from message i to the end
		for i := len(msgs) - 1; i >= 0; i-- {
			tail[i] = tail[i+1] + (len(msgs[i].raw)+3)/4
		}
		msgTokens = tail[0]
		stale := 0
		cands := make([]assemble.Candidate, len(waiting))
		for k := len(waiting) - 1; k >= 0; k-- {
			stale += waiting[k].saved
			cands[k] = assemble.Candidate{Tail: tail[waiting[k].r.msg], Stale: stale, Rewrite: msgTokens}
		}
		pol := mc.Policy
		pol.CacheTTL = ttl
		pol.Breakpoints = assemble.BreakpointsEnd
		in := assemble.Inputs{
			StaleTokens: stale, ContextTokens: (len(body) + 3) / 4, Idle: now.Sub(st.touched()),
			HasPrevious: st.Calls > 0 && !st.Last.IsZero(), Calls: st.Calls, Shape: st.Shape, Candidates: cands,
		}
		d := assemble.Decide(in, pol)
		if d.Rebase {
			ap.Rebase = d.Reason
			st.Shape.Rebases++
			for _, w := range waiting[d.From:] {
				form[w.r.id], lines[w.r.id] = w.f, w.line
				ap.New++
			}
			for _, w := range waiting[:d.From] {
				ap.Pending += w.saved
			}
		} else {
			ap.Pending = stale
		}
	}

	// The tool results as shown.
	for _, r := range results {
		f := form[r.id]
		st.Shown[r.id] = f
		switch f {
		case formWhole:
			continue
		case formPreview:
			ap.Previews++
		default:
			ap.Collapsed++
		}
		b := msgs[r.msg].blocks[r.blk]
		nb := block{}
		for k, v := range b {
			nb[k] = v
		}
		nb["content"], _ = jsontext.Marshal(lines[r.id])
		msgs[r.msg].blocks[r.blk] = nb
		msgs[r.msg].changed = true
	}

	// The breakpoints: Claude Code's in the messages come out, ctxstore's
	// go in, within the API's limit.
	used := countBreakpoints(top["tools"]) + countBreakpoints(top["system"])
	ttlAsked, asked := "", false
	for _, m := range msgs {
		if m.role == "system" {
			for _, b := range m.blocks {
				if !isNullRaw(b["cache_control"]) {
					used++
				}
			}
			continue
		}
		for j, b := range m.blocks {
			if _, ok := b["cache_control"]; ok {
				if !isNullRaw(b["cache_control"]) {
					asked = true
					var cc cacheControl
					json.Unmarshal(b["cache_control"], &cc)
					ttlAsked = cc.TTL
				}
				nb := block{}
				for k, v := range b {
					if k != "cache_control" {
						nb[k] = v
					}
				}
				m.blocks[j] = nb
				m.changed = true
			}
		}
	}
	if asked {
		cc, _ := jsontext.Marshal(cacheControl{Type: "ephemeral", TTL: ttlAsked})
		free := apicheck.MaxBreakpoints - used
		if free >= 1 && placeBreakpoint(msgs[len(msgs)-1], cc) {
			ap.Breakpoints++
			free--
		}
		if free >= 1 && ap.Rebase == "" && st.Len > 0 && st.Len < len(msgs) && placeBreakpoint(msgs[st.Len-1], cc) {
			ap.Breakpoints++
		}
	}

	// The body.
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		if !m.changed {
			out[i] = m.raw
			continue
		}
		f := map[string]json.RawMessage{}
		for k, v := range m.fields {
			f[k] = v
		}
		var err error
		if m.str != nil && m.blocks == nil {
			f["content"], err = jsontext.Marshal(*m.str)
		} else {
			f["content"], err = jsontext.Marshal(m.blocks)
		}
		if err != nil {
			return nil, ap, err
		}
		if out[i], err = jsontext.Marshal(f); err != nil {
			return nil, ap, err
		}
	}
	list, err := jsontext.Marshal(out)
	if err != nil {
		return nil, ap, err
	}
	nb, err := setField(body, "messages", list)
	if err != nil {
		return nil, ap, err
	}

	// The conversation's rhythm.
	if last := msgs[len(msgs)-1]; last.role == "user" && !hasResult(last) {
		if st.Calls > 0 {
			if st.Shape.Current > 0 {
				st.Shape.Turns++
				st.Shape.TurnCalls += st.Shape.Current
			}
			if now.Sub(st.touched()) >= ttl {
				st.Shape.ColdStarts++
			} else {
				st.Shape.WarmStarts++
			}
		}
		st.Shape.Current = 0
	}
	st.Shape.Current++
	st.Len, st.Last = len(msgs), now
	st.Calls++
	return nb, ap, nil
}

// hookPreview returns the spill file a hook's preview of output id names
// ("[ctxstore] ... left out here; Read FILE for the output whole"), when
// the file is that output's in a directory of session sid and exists; ""
// for any other text.
func hookPreview(text, sid, id string) string {
	i := strings.Index(text, "[ctxstore] ")
	if i < 0 {
		return ""
	}
	rest := text[i:]
	j := strings.Index(rest, "left out here; Read ")
	if j < 0 {
		return ""
	}
	rest = rest[j+len("left out here; Read "):]
	k := strings.Index(rest, " for the output whole")
	if k < 0 {
		return ""
	}
	file := rest[:k]
	if !filepath.IsAbs(file) || filepath.Base(file) != tools.SpillName(id) || filepath.Base(filepath.Dir(file)) != sid {
		return ""
	}
	if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return file
}

// parseMessage reads one message; a role, content or block type not known
// here is an Unknown error.
func parseMessage(raw json.RawMessage) (*message, error) {
	m := &message{raw: raw}
	if err := json.Unmarshal(raw, &m.fields); err != nil || m.fields == nil {
		return nil, errors.New("not an object")
	}
	json.Unmarshal(m.fields["role"], &m.role)
	switch m.role {
	case "user", "assistant", "system":
	default:
		return nil, fmt.Errorf("role %q", m.role)
	}
	c := m.fields["content"]
	if len(c) > 0 && c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, err
		}
		m.str = &s
		return m, nil
	}
	if err := json.Unmarshal(c, &m.blocks); err != nil {
		return nil, errors.New("content neither a string nor a list of blocks")
	}
	for j, b := range m.blocks {
		if t := b.str("type"); !apicheck.Known(t) {
			return nil, fmt.Errorf("content[%d]: a block of type %q", j, t)
		}
	}
	return m, nil
}

// hasResult tells whether a message holds a tool_result.
func hasResult(m *message) bool {
	for _, b := range m.blocks {
		if b.str("type") == "tool_result" {
			return true
		}
	}
	return false
}

// resultText returns a tool_result's content as text, and false when it
// holds anything but text (an image, a document).
func resultText(raw json.RawMessage) (string, bool) {
	if isNullRaw(raw) {
		return "", true
	}
	if raw[0] == '"' {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var b strings.Builder
	for i, x := range blocks {
		if x.Type != "text" || x.Text == nil {
			return "", false
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(*x.Text)
	}
	return b.String(), true
}

// countBreakpoints counts the cache_control fields of a list of blocks or
// tools (a string system prompt holds none).
func countBreakpoints(raw json.RawMessage) int {
	var list []map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return 0
	}
	n := 0
	for _, b := range list {
		if !isNullRaw(b["cache_control"]) {
			n++
		}
	}
	return n
}

// placeBreakpoint puts cc on the last block of m that may carry one (not
// thinking, not an empty text), a string content becoming one text block;
// false when none may.
func placeBreakpoint(m *message, cc json.RawMessage) bool {
	if m.role == "system" {
		return false
	}
	if m.str != nil && m.blocks == nil {
		if strings.TrimSpace(*m.str) == "" {
			return false
		}
		t, _ := jsontext.Marshal(*m.str)
		m.blocks = []block{{"type": json.RawMessage(`"text"`), "text": t}}
	}
	for j := len(m.blocks) - 1; j >= 0; j-- {
		b := m.blocks[j]
		switch b.str("type") {
		case "thinking", "redacted_thinking":
			continue
		case "text":
			if strings.TrimSpace(b.str("text")) == "" {
				continue
			}
		}
		nb := block{}
		for k, v := range b {
			nb[k] = v
		}
		nb["cache_control"] = cc
		m.blocks[j] = nb
		m.changed = true
		return true
	}
	return false
}

// isNullRaw tells whether a field is absent or null.
func isNullRaw(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

// cacheControl is a block's cache_control.
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// setField returns body with its top-level field name set to raw; every
// other field is kept as it came.
func setField(body []byte, name string, raw json.RawMessage) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("the body is null, not a JSON object")
	}
	top[name] = raw
	return jsontext.Marshal(top)
}

// Manage is managed mode as a function, for a caller that runs a
// session's requests through the code the proxy runs (the replay, and the
// proxy's own Manage): it returns the body sent for a request of
// conversation state (what the previous call returned; nil for a
// conversation's first request) of session sid, sent at now with cache
// lifetime ttl, and the state after it. An error says the request passes
// through unchanged: not understood (Unknown), or a managed body the
// Messages API's rules refuse where the request kept them (apicheck).
// Spill files are written through Spill; nothing is recorded.
func (mc *Config) Manage(sid string, state, body []byte, now time.Time, ttl time.Duration) ([]byte, []byte, error) {
	var st State
	if len(state) > 0 {
		if err := json.Unmarshal(state, &st); err != nil {
			return nil, nil, fmt.Errorf("ccmanaged: managed state: %w", err)
		}
	}
	out, _, err := mc.Apply(sid, &st, body, now, ttl)
	if err != nil {
		return nil, nil, err
	}
	if err := Checked(body, out); err != nil {
		return nil, nil, err
	}
	ns, err := json.Marshal(st)
	return out, ns, err
}

// Checked returns an error when managed body out breaks a Messages API
// rule that request body kept (apicheck.Check): such a request passes
// through unchanged.
func Checked(body, out []byte) error {
	if errs := apicheck.Check(out); len(errs) > 0 && len(apicheck.Check(body)) == 0 {
		return fmt.Errorf("a managed request broke a Messages API rule: %w", errs[0])
	}
	return nil
}

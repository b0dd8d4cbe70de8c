package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/google/uuid"

	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// uuidSpace is the namespace of the record and session uuids the encoder
// derives (UUID version 5): the same events give the same file.
var uuidSpace = uuid.MustParse("6f3c1d52-8a4e-5b7f-9c20-3e1d7a6b4c10")

// NoResult is the content of the error result the encoder gives a tool
// call that has none.
const NoResult = "[no result was recorded for this tool call]"

// epoch stands in for unknown times when no event has one.
var epoch = time.Unix(0, 0).UTC()

// Lost counts what an encoding left out because Claude Code cannot hold it,
// or made up because Claude Code needs it (docs/crossharness.md).
type Lost struct {
	// Thinking blocks without a signature (the Messages API refuses an
	// unsigned thinking block) or signed for a model that is not Claude.
	Thinking int `json:"thinking,omitempty"`
	// Events with no Claude Code message: system events other than
	// compaction summaries and narratives, metrics, errors, outputs.
	Events int `json:"events,omitempty"`
	// Tool results whose call is not earlier in the file (the API refuses
	// them).
	Orphans int `json:"orphans,omitempty"`
	// Result blocks Claude Code has no form for (not text or image).
	Blocks int `json:"blocks,omitempty"`
	// Events of a sub-agent (metadata "sidechain": its own branch, not the
	// main thread) or that the harness kept out of the model's context
	// (metadata "exclude_from_context").
	Excluded int `json:"excluded,omitempty"`
	// Unanswered counts tool calls with no result before the conversation
	// went on: they get an error result saying so (the Messages API
	// refuses a tool_use without a tool_result right after it, and Claude
	// Code would drop the call).
	Unanswered int `json:"unanswered,omitempty"`
}

// SessionFile writes events as a Claude Code session file
// (docs/crossharness.md): one JSON record per line, each with uuid,
// parentUuid (the harness's tree when the events recorded it, else the
// record before; null for the first, see link), isSidechain false, type,
// message, timestamp, userType "external", sessionId, and cwd and version
// when the events recorded them (metadata "cwd", "version").
//
//   - A prompt becomes a "user" record whose content is its text (isMeta
//     when the harness made it); a compaction summary a user record marked
//     isCompactSummary; a narrative (translation tier 3) a plain user
//     record, so a person resuming sees it too.
//   - The thinking, response and tool-call events of one model message
//     (one message_id) become one "assistant" record: thinking blocks
//     (only signed ones), text, tool_use blocks with the call's id, name and
//     input as recorded; stop_reason tool_use or end_turn; the usage when
//     recorded.
//   - Consecutive tool results become one "user" record of tool_result
//     blocks (content: the text, plus image blocks when recorded;
//     is_error). A call the conversation went on from without a result
//     gets an error result (NoResult).
//
// The session id is derived from the content until ForSession names the
// session; record uuids are derived from the session id and the record's
// position.
func SessionFile(evs []events.Event) ([]byte, error) {
	out, _, err := Encode(evs)
	return out, err
}

// ccRec is one record the encoder writes.
type ccRec struct {
	typ     string // user, assistant
	msgID   string
	model   string
	meta    bool
	compact bool
	t       time.Time
	text    string // user text content
	blocks  []any  // content blocks
	calls   int    // tool_use blocks
	hasText bool
	usage   map[string]any
	// The harness's tree, when the events recorded it: the ids of the
	// events in this record and the parent of its first.
	ids       []string
	parentRef string
	synthetic bool // results the encoder wrote for calls without one
}

// Encode is SessionFile that also says what was left out or made up.
func Encode(evs []events.Event) ([]byte, Lost, error) {
	e := &encoder{called: map[string]bool{}, dropped: map[string]string{}}
	// Claude Code has no context edits: the file holds what they leave.
	for _, ev := range events.ApplyContextEdits(evs) {
		e.event(ev)
	}
	e.answer()
	e.dropEmpty()
	parents := link(e.recs, e.dropped)
	fillTimes(e.recs)
	body, err := json.Marshal(evs)
	if err != nil {
		return nil, e.lost, err
	}
	session := uuid.NewSHA1(uuidSpace, []byte(commits.ContentHash(body))).String()
	out, err := e.write(session, parents)
	return out, e.lost, err
}

// encoder turns events into Claude Code records, in order. It owns what
// an encoding builds: the records, the open one (an assistant message or
// a run of tool results), the tool calls still without a result, the
// events that get no record (so that records can name their parents
// through them), the cwd and version last recorded, and what was lost.
type encoder struct {
	lost    Lost
	recs    []*ccRec
	cur     *ccRec          // the open assistant or tool-result record
	called  map[string]bool // tool calls without a result yet
	open    []string        // tool calls of the latest assistant records still without a result
	dropped map[string]string
	cwd     string
	version string
}

// event adds one event: a record of its own (prompts, summaries,
// narratives), a part of the open record (a model message's thinking,
// text and tool calls; consecutive tool results), or nothing (counted in
// Lost, remembered for linking).
func (e *encoder) event(ev events.Event) {
	if s, ok := ev.Metadata["cwd"].(string); ok && s != "" {
		e.cwd = s
	}
	if s, ok := ev.Metadata["version"].(string); ok && s != "" {
		e.version = s
	}
	if ev.Metadata["sidechain"] == true || ev.Metadata["exclude_from_context"] == true {
		e.lost.Excluded++
		e.drop(ev)
		return
	}
	switch ev.Type {
	case events.Prompt:
		e.user(ev, &ccRec{typ: "user", t: ev.Time, text: ev.Text, meta: ev.Meta || (ev.Source != "" && ev.Source != "user")})
	case events.System:
		switch ev.Subtype {
		case events.SubtypeCompactionSummary:
			e.user(ev, &ccRec{typ: "user", t: ev.Time, text: ev.Text, compact: true})
		case events.SubtypeNarrative:
			e.user(ev, &ccRec{typ: "user", t: ev.Time, text: ev.Text})
		default:
			e.lost.Events++
			e.drop(ev)
		}
	case events.Thinking, events.Response, events.ToolCall:
		e.model(ev)
	case events.ToolResult:
		e.toolResult(ev)
	default:
		e.lost.Events++
		e.drop(ev)
	}
}

// user adds a user record of text, after answering open tool calls.
func (e *encoder) user(ev events.Event, r *ccRec) {
	e.answer()
	e.cur = nil
	e.recs = append(e.recs, r)
	e.into(r, ev)
}

// model adds a thinking, response or tool-call event to the assistant
// record of its message, opening one when it does not join the open one.
func (e *encoder) model(ev events.Event) {
	if !joins(e.cur, ev) {
		e.answer()
		e.cur = &ccRec{typ: "assistant", msgID: ev.MessageID, model: ev.Model, t: ev.Time}
		e.recs = append(e.recs, e.cur)
	}
	cur := e.cur
	e.into(cur, ev)
	if cur.model == "" {
		cur.model = ev.Model
	}
	if cur.t.IsZero() {
		cur.t = ev.Time
	}
	if ev.Usage != nil && cur.usage == nil {
		cur.usage = map[string]any{"input_tokens": ev.Usage.Input, "output_tokens": ev.Usage.Output,
			"cache_read_input_tokens": ev.Usage.CacheRead, "cache_creation_input_tokens": ev.Usage.CacheWrite}
		if long := min(max(ev.Usage.CacheWrite1h, 0), ev.Usage.CacheWrite); long > 0 {
			// The lifetimes apart, as the API reports them.
			cur.usage["cache_creation"] = map[string]any{"ephemeral_5m_input_tokens": ev.Usage.CacheWrite - long, "ephemeral_1h_input_tokens": long}
		}
	}
	switch ev.Type {
	case events.Thinking:
		if ev.Signature == "" || !claudeModel(firstNonEmpty(ev.Model, cur.model)) {
			e.lost.Thinking++
			return
		}
		cur.blocks = append(cur.blocks, map[string]any{"type": "thinking", "thinking": ev.Text, "signature": ev.Signature})
	case events.Response:
		if ev.Text == "" {
			return
		}
		cur.blocks = append(cur.blocks, map[string]any{"type": "text", "text": ev.Text})
		cur.hasText = true
	case events.ToolCall:
		in := ev.Tool.Input
		if in == nil {
			in = map[string]any{}
		}
		cur.blocks = append(cur.blocks, map[string]any{"type": "tool_use", "id": ev.Tool.ID, "name": ev.Tool.Name, "input": in})
		cur.calls++
		e.called[ev.Tool.ID] = true
		e.open = append(e.open, ev.Tool.ID)
	}
}

// toolResult adds a result to the open tool-result record (or a new one);
// a result whose call is not earlier is dropped.
func (e *encoder) toolResult(ev events.Event) {
	if !e.called[ev.Tool.ID] {
		e.lost.Orphans++
		e.drop(ev)
		return
	}
	delete(e.called, ev.Tool.ID)
	for i, id := range e.open {
		if id == ev.Tool.ID {
			e.open = append(e.open[:i:i], e.open[i+1:]...)
			break
		}
	}
	if e.cur == nil || e.cur.typ != "user" || e.cur.calls == 0 {
		e.cur = &ccRec{typ: "user", t: ev.Time, calls: 1}
		e.recs = append(e.recs, e.cur)
	}
	e.into(e.cur, ev)
	e.cur.blocks = append(e.cur.blocks, toolResult(ev, &e.lost))
}

// answer gives the open tool calls an error result (NoResult) before the
// conversation goes on without one.
func (e *encoder) answer() {
	if len(e.open) == 0 {
		return
	}
	if e.cur == nil || e.cur.typ != "user" || e.cur.calls == 0 {
		e.cur = &ccRec{typ: "user", calls: 1, synthetic: true}
		e.recs = append(e.recs, e.cur)
	}
	for _, id := range e.open {
		e.cur.blocks = append(e.cur.blocks, map[string]any{"type": "tool_result", "tool_use_id": id,
			"content": NoResult, "is_error": true})
		e.lost.Unanswered++
		delete(e.called, id)
	}
	e.open = nil
}

// into records that event ev is in record r (for the harness's tree).
func (e *encoder) into(r *ccRec, ev events.Event) {
	if ev.ID == "" {
		return
	}
	if len(r.ids) == 0 {
		r.parentRef = parentRef(ev)
	}
	if len(r.ids) == 0 || r.ids[len(r.ids)-1] != ev.ID {
		r.ids = append(r.ids, ev.ID)
	}
}

// drop remembers an event that gets no record, with its parent.
func (e *encoder) drop(ev events.Event) {
	if _, seen := e.dropped[ev.ID]; ev.ID != "" && !seen {
		e.dropped[ev.ID] = parentRef(ev)
	}
}

// dropEmpty drops the assistant records left empty (unsigned thinking
// only); their events are remembered as dropped.
func (e *encoder) dropEmpty() {
	kept := e.recs[:0]
	for _, r := range e.recs {
		if r.typ == "assistant" && len(r.blocks) == 0 {
			for _, id := range r.ids {
				if _, seen := e.dropped[id]; !seen {
					e.dropped[id] = r.parentRef
				}
			}
			continue
		}
		kept = append(kept, r)
	}
	e.recs = kept
}

// fillTimes gives each record without a time (or with one before the
// record above) the time of the record above (the first known time for
// the first; the epoch when none is known).
func fillTimes(recs []*ccRec) {
	var first time.Time
	for _, r := range recs {
		if !r.t.IsZero() {
			first = r.t
			break
		}
	}
	if first.IsZero() {
		first = epoch
	}
	last := first
	for _, r := range recs {
		if r.t.IsZero() || r.t.Before(last) {
			r.t = last
		}
		last = r.t
	}
}

// write writes the records as JSON lines of session, each naming its
// parent (parents, from link).
func (e *encoder) write(session string, parents []int) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i, r := range e.recs {
		id := recordUUID(session, i)
		parent := any(nil)
		if parents[i] >= 0 {
			parent = recordUUID(session, parents[i])
		}
		rec := map[string]any{"parentUuid": parent, "isSidechain": false, "type": r.typ, "uuid": id,
			"timestamp": r.t.UTC().Format("2006-01-02T15:04:05.000Z"), "userType": "external", "sessionId": session}
		if e.cwd != "" {
			rec["cwd"] = e.cwd
		}
		if e.version != "" {
			rec["version"] = e.version
		}
		switch r.typ {
		case "user":
			r.writeUser(rec)
		case "assistant":
			r.writeAssistant(rec, id)
		}
		if err := enc.Encode(rec); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// writeUser sets a user record's message and flags.
func (r *ccRec) writeUser(rec map[string]any) {
	if len(r.blocks) > 0 {
		rec["message"] = map[string]any{"role": "user", "content": r.blocks}
	} else {
		rec["message"] = map[string]any{"role": "user", "content": r.text}
	}
	if r.meta {
		rec["isMeta"] = true
	}
	if r.compact {
		rec["isCompactSummary"] = true
	}
}

// writeAssistant sets an assistant record's message: an Anthropic
// message id (derived from the record's uuid when the events have none),
// the stop reason its blocks imply, the usage (zero when not recorded)
// and the model ("unknown" when not recorded).
func (r *ccRec) writeAssistant(rec map[string]any, id string) {
	msgID := r.msgID
	if msgID == "" || !strings.HasPrefix(msgID, "msg_") {
		msgID = "msg_ctx" + strings.ReplaceAll(id, "-", "")[:24]
	}
	stop := "end_turn"
	if r.calls > 0 {
		stop = "tool_use"
	}
	usage := r.usage
	if usage == nil {
		usage = map[string]any{"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
	}
	model := r.model
	if model == "" {
		model = "unknown"
	}
	rec["message"] = map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": r.blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
}

// parentRef is the parent an event's record names in the harness's tree:
// its parent id, or (a compaction's root) its logical parent.
func parentRef(e events.Event) string {
	if e.ParentID != "" {
		return e.ParentID
	}
	s, _ := e.Metadata["logical_parent"].(string)
	return s
}

// link gives each record its parent (an index; -1 for none). Where the
// events recorded the harness's tree (ids and parent ids, as imported
// Claude Code and Pi files do), a record's parent is the record holding
// its first event's parent (through events that have no record: a
// parent that is an attachment or a hook notice stands for its own
// parent), so the file keeps the original's branches and Claude Code
// resumes the branch the original ended on, not an abandoned one. A record
// that continues a source record split in two (tool results and text of
// one user record) follows the record before it, as does every record
// whose events name no parent, or a parent that is not earlier in the file.
func link(recs []*ccRec, dropped map[string]string) []int {
	last := map[string]int{}  // event id -> the last record holding it
	first := map[string]int{} // event id -> the first record holding it
	for i, r := range recs {
		for _, id := range r.ids {
			if _, ok := first[id]; !ok {
				first[id] = i
			}
			last[id] = i
		}
	}
	resolve := func(id string) int {
		for steps := 0; id != "" && steps <= len(dropped); steps++ {
			if i, ok := last[id]; ok {
				return i
			}
			p, ok := dropped[id]
			if !ok {
				return -1
			}
			id = p
		}
		return -1
	}
	parents := make([]int, len(recs))
	for i, r := range recs {
		parents[i] = i - 1
		if len(r.ids) == 0 || first[r.ids[0]] < i || r.parentRef == "" {
			continue
		}
		if p := resolve(r.parentRef); p >= 0 && p < i {
			for p+1 < i && recs[p+1].synthetic {
				p++ // the results the encoder gave the parent's calls
			}
			parents[i] = p
		}
	}
	return parents
}

// joins tells whether event e belongs to the open assistant record cur: the
// same message id, or (an id missing) a tool call, or text or thinking
// while cur holds only thinking.
func joins(cur *ccRec, e events.Event) bool {
	if cur == nil || cur.typ != "assistant" {
		return false
	}
	if e.MessageID != "" && cur.msgID != "" {
		return e.MessageID == cur.msgID
	}
	if e.Type == events.ToolCall {
		return true
	}
	return !cur.hasText && cur.calls == 0
}

// claudeModel tells whether a thinking signature can be Anthropic's: the
// model is unnamed or a Claude model.
func claudeModel(m string) bool {
	return m == "" || strings.HasPrefix(m, "claude") || strings.HasPrefix(m, "anthropic")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// toolResult is the tool_result block of a ToolResult event: the content
// as a string, or as blocks when the result recorded images. Recorded
// blocks that include text blocks (Claude Code's own list) are written as
// they were; otherwise the text comes first, then the images.
func toolResult(e events.Event, lost *Lost) map[string]any {
	b := map[string]any{"type": "tool_result", "tool_use_id": e.Tool.ID}
	text, isErr := "", false
	var blocks []any
	withText := false
	if e.Result != nil {
		text, isErr = e.Result.Content, e.Result.IsError
		for _, x := range e.Result.Blocks {
			if m, ok := x.(map[string]any); ok && m["type"] == "text" {
				if s, ok := m["text"].(string); ok {
					blocks = append(blocks, map[string]any{"type": "text", "text": s})
					withText = true
					continue
				}
			}
			if img := imageBlock(x); img != nil {
				blocks = append(blocks, img)
			} else {
				lost.Blocks++
			}
		}
	}
	switch {
	case len(blocks) == 0:
		b["content"] = text
	case withText:
		b["content"] = blocks
	default:
		content := []any{}
		if text != "" {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		b["content"] = append(content, blocks...)
	}
	b["is_error"] = isErr
	return b
}

// imageBlock turns a recorded image block into the Messages API's form:
// Claude Code's own ({type: image, source: {...}}) as is, Pi's ({type:
// image, data, mimeType}) as a base64 source; nil for anything else.
func imageBlock(x any) map[string]any {
	m, ok := x.(map[string]any)
	if !ok || m["type"] != "image" {
		return nil
	}
	if src, ok := m["source"].(map[string]any); ok && src["type"] != nil {
		return map[string]any{"type": "image", "source": src}
	}
	data, _ := m["data"].(string)
	mt, _ := m["mimeType"].(string)
	if data == "" || mt == "" {
		return nil
	}
	return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mt, "data": data}}
}

func recordUUID(session string, i int) string {
	return uuid.NewSHA1(uuidSpace, []byte(session+"\x00"+strconv.Itoa(i))).String()
}

// SetSessionID returns a Claude Code session file whose records all name
// session (which must be a UUID: `claude --resume` takes one). Record
// uuids are derived anew from session and the old uuid, and every string
// in the file equal to a record's uuid (parentUuid, logicalParentUuid,
// leafUuid, sourceToolAssistantUUID, ...) follows, so two sessions made
// from one materialization share no record uuid and every link holds.
func SetSessionID(file []byte, session string) ([]byte, error) {
	if _, err := uuid.Parse(session); err != nil {
		return nil, fmt.Errorf("claudecode: session id %q is not a UUID (Claude Code names sessions by UUID)", session)
	}
	recs, err := parseRecords(file)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, r := range recs {
		if s, ok := r.v["uuid"].(string); ok && s != "" {
			ids[s] = uuid.NewSHA1(uuidSpace, []byte(session+"\x00"+s)).String()
		}
	}
	var remap func(v any) any
	remap = func(v any) any {
		switch x := v.(type) {
		case string:
			if n, ok := ids[x]; ok {
				return n
			}
		case map[string]any:
			for k, e := range x {
				x[k] = remap(e)
			}
		case []any:
			for i, e := range x {
				x[i] = remap(e)
			}
		}
		return v
	}
	for _, r := range recs {
		remap(r.v)
		if _, ok := r.v["sessionId"]; ok {
			r.v["sessionId"] = session
		}
	}
	return encodeRecords(recs)
}

// SetCwd returns a Claude Code session file whose records name cwd as
// their working directory (Claude Code tells the model when a resumed
// session's directory changed). Records without a cwd field (titles,
// queue operations) are left as they are.
func SetCwd(file []byte, cwd string) ([]byte, error) {
	recs, err := parseRecords(file)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if _, ok := r.v["uuid"]; ok {
			r.v["cwd"] = cwd
		}
	}
	return encodeRecords(recs)
}

// record is one line of a session file.
type record struct{ v map[string]any }

// parseRecords reads a session file's lines. A line that is not a JSON
// object is an error naming it: a materialization holds only whole records.
func parseRecords(file []byte) ([]record, error) {
	var out []record
	line := 0
	for len(file) > 0 {
		line++
		l := file
		if i := bytes.IndexByte(file, '\n'); i >= 0 {
			l, file = file[:i], file[i+1:]
		} else {
			file = nil
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var v map[string]any
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil || v == nil {
			return nil, fmt.Errorf("claudecode: line %d: not a JSON record: %v", line, err)
		}
		out = append(out, record{v: v})
	}
	return out, nil
}

func encodeRecords(recs []record) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r.v); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}

// MaxProjectDirLen is where Claude Code truncates a project folder's name
// (and appends a hash of the whole path).
const MaxProjectDirLen = 200

// ProjectDir is the folder under ~/.claude/projects where Claude Code keeps
// the sessions of working directory cwd (an absolute path), as Claude Code
// 2.1 names it (seen by running it, docs/crossharness.md): every UTF-16
// code unit that is not an ASCII letter or digit becomes "-"; a name longer
// than 200 units is cut to 200 and gets "-" and a hash of the path (the
// 32-bit string hash s[0]*31^(n-1)+... of its UTF-16 units, absolute value,
// base 36).
func ProjectDir(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	name := make([]byte, len(units))
	for i, u := range units {
		if u < 128 && (u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9') {
			name[i] = byte(u)
		} else {
			name[i] = '-'
		}
	}
	if len(name) <= MaxProjectDirLen {
		return string(name)
	}
	var h int32
	for _, u := range units {
		h = h*31 + int32(u)
	}
	a := int64(h)
	if a < 0 {
		a = -a
	}
	return string(name[:MaxProjectDirLen]) + "-" + strconv.FormatInt(a, 36)
}

// ConfigDir is Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, or
// ~/.claude.
func ConfigDir() (string, error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("claudecode: no home folder for ~/.claude: %w", err)
	}
	return filepath.Join(home, ".claude"), nil
}

// SessionPath is where Claude Code looks for session id of working
// directory cwd: <config>/projects/<ProjectDir(cwd)>/<id>.jsonl.
func SessionPath(cwd, id string) (string, error) {
	d, err := ConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "projects", ProjectDir(cwd), id+".jsonl"), nil
}

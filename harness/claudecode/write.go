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

// The claude-code-v1 codec this package gives context commits
// (docs/commits.md, docs/crossharness.md): Encode writes neutral events as a
// Claude Code session file that the real `claude --resume <id>` loads;
// ForSession names the session in every record. Decoding Claude Code files
// into events (import, byte fidelity) is the importer's.
func init() {
	if err := commits.DefaultRegistry.Extend(commits.FormatClaudeCode, func(f *commits.Format) {
		f.Encode = SessionFile
		f.ForSession = SetSessionID
	}); err != nil {
		panic(err)
	}
}

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
	var lost Lost
	var recs []*ccRec
	var cur *ccRec // the open assistant or tool-result record
	called := map[string]bool{}
	cwd, version := "", ""
	var open []string // tool calls of the latest assistant records still without a result
	answer := func() {
		if len(open) == 0 {
			return
		}
		if cur == nil || cur.typ != "user" || cur.calls == 0 {
			cur = &ccRec{typ: "user", calls: 1, synthetic: true}
			recs = append(recs, cur)
		}
		for _, id := range open {
			cur.blocks = append(cur.blocks, map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": NoResult, "is_error": true})
			lost.Unanswered++
			delete(called, id)
		}
		open = nil
	}
	dropped := map[string]string{} // event id -> its parent, for events without a record
	into := func(r *ccRec, e events.Event) {
		if e.ID == "" {
			return
		}
		if len(r.ids) == 0 {
			r.parentRef = parentRef(e)
		}
		if len(r.ids) == 0 || r.ids[len(r.ids)-1] != e.ID {
			r.ids = append(r.ids, e.ID)
		}
	}
	drop := func(e events.Event) {
		if _, seen := dropped[e.ID]; e.ID != "" && !seen {
			dropped[e.ID] = parentRef(e)
		}
	}
	for _, e := range evs {
		if e.Metadata != nil {
			if s, ok := e.Metadata["cwd"].(string); ok && s != "" {
				cwd = s
			}
			if s, ok := e.Metadata["version"].(string); ok && s != "" {
				version = s
			}
		}
		if e.Metadata["sidechain"] == true || e.Metadata["exclude_from_context"] == true {
			lost.Excluded++
			drop(e)
			continue
		}
		switch e.Type {
		case events.Prompt:
			answer()
			cur = nil
			recs = append(recs, &ccRec{typ: "user", t: e.Time, text: e.Text, meta: e.Meta || (e.Source != "" && e.Source != "user")})
			into(recs[len(recs)-1], e)
		case events.System:
			switch e.Subtype {
			case events.SubtypeCompactionSummary:
				answer()
				cur = nil
				recs = append(recs, &ccRec{typ: "user", t: e.Time, text: e.Text, compact: true})
				into(recs[len(recs)-1], e)
			case events.SubtypeNarrative:
				answer()
				cur = nil
				recs = append(recs, &ccRec{typ: "user", t: e.Time, text: e.Text})
				into(recs[len(recs)-1], e)
			default:
				lost.Events++
				drop(e)
			}
		case events.Thinking, events.Response, events.ToolCall:
			if !joins(cur, e) {
				answer()
				cur = &ccRec{typ: "assistant", msgID: e.MessageID, model: e.Model, t: e.Time}
				recs = append(recs, cur)
			}
			into(cur, e)
			if cur.model == "" {
				cur.model = e.Model
			}
			if cur.t.IsZero() {
				cur.t = e.Time
			}
			if e.Usage != nil && cur.usage == nil {
				cur.usage = map[string]any{"input_tokens": e.Usage.Input, "output_tokens": e.Usage.Output,
					"cache_read_input_tokens": e.Usage.CacheRead, "cache_creation_input_tokens": e.Usage.CacheWrite}
			}
			switch e.Type {
			case events.Thinking:
				if e.Signature == "" || !claudeModel(firstNonEmpty(e.Model, cur.model)) {
					lost.Thinking++
					continue
				}
				cur.blocks = append(cur.blocks, map[string]any{"type": "thinking", "thinking": e.Text, "signature": e.Signature})
			case events.Response:
				if e.Text == "" {
					continue
				}
				cur.blocks = append(cur.blocks, map[string]any{"type": "text", "text": e.Text})
				cur.hasText = true
			case events.ToolCall:
				in := e.Tool.Input
				if in == nil {
					in = map[string]any{}
				}
				cur.blocks = append(cur.blocks, map[string]any{"type": "tool_use", "id": e.Tool.ID, "name": e.Tool.Name, "input": in})
				cur.calls++
				called[e.Tool.ID] = true
				open = append(open, e.Tool.ID)
			}
		case events.ToolResult:
			if !called[e.Tool.ID] {
				lost.Orphans++
				drop(e)
				continue
			}
			delete(called, e.Tool.ID)
			for i, id := range open {
				if id == e.Tool.ID {
					open = append(open[:i:i], open[i+1:]...)
					break
				}
			}
			if cur == nil || cur.typ != "user" || cur.calls == 0 {
				cur = &ccRec{typ: "user", t: e.Time, calls: 1}
				recs = append(recs, cur)
			}
			into(cur, e)
			cur.blocks = append(cur.blocks, toolResult(e, &lost))
		default:
			lost.Events++
			drop(e)
		}
	}

	answer()

	// Drop assistant records left empty (unsigned thinking only).
	kept := recs[:0]
	for _, r := range recs {
		if r.typ == "assistant" && len(r.blocks) == 0 {
			for _, id := range r.ids {
				if _, seen := dropped[id]; !seen {
					dropped[id] = r.parentRef
				}
			}
			continue
		}
		kept = append(kept, r)
	}
	recs = kept
	parents := link(recs, dropped)

	// Times: each unknown time is the one before it (or the first known).
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

	body, err := json.Marshal(evs)
	if err != nil {
		return nil, lost, err
	}
	session := uuid.NewSHA1(uuidSpace, []byte(commits.ContentHash(body))).String()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i, r := range recs {
		id := recordUUID(session, i)
		parent := any(nil)
		if parents[i] >= 0 {
			parent = recordUUID(session, parents[i])
		}
		rec := map[string]any{"parentUuid": parent, "isSidechain": false, "type": r.typ, "uuid": id,
			"timestamp": r.t.UTC().Format("2006-01-02T15:04:05.000Z"), "userType": "external", "sessionId": session}
		if cwd != "" {
			rec["cwd"] = cwd
		}
		if version != "" {
			rec["version"] = version
		}
		switch r.typ {
		case "user":
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
		case "assistant":
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
		if err := enc.Encode(rec); err != nil {
			return nil, lost, err
		}
	}
	return b.Bytes(), lost, nil
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

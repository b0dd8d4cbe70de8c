package opencode

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// Provider is the providerID Encode writes on messages it makes: opencode
// reads the model of a resumed session from its configuration or flags,
// not from these (seen with 1.18.33).
const Provider = "ctxstore"

// Lost counts what Encode left out, restated or made up.
type Lost struct {
	// Thinking blocks (opencode sends reasoning back only with its own
	// provider's metadata; the text stays in the store).
	Thinking int `json:"thinking,omitempty"`
	// Events with no row: system events other than compaction summaries
	// and narratives, metrics, errors, outputs.
	Events int `json:"events,omitempty"`
	// Excluded: a sub-agent's events and events kept out of context.
	Excluded int `json:"excluded,omitempty"`
	// AsText: tool calls with no opencode counterpart, written as text
	// (with their results).
	AsText int `json:"as_text,omitempty"`
	// Unanswered: tool calls given an error saying no result was recorded.
	Unanswered int `json:"unanswered,omitempty"`
}

// Encode writes events as opencode rows (EncodeLost).
func Encode(evs []events.Event) ([]byte, error) {
	b, _, err := EncodeLost(evs)
	return b, err
}

// encoder builds the rows of one session.
type encoder struct {
	last     int64 // the last message time written (ms): times only grow
	rows     []*Row
	user     string         // the last user message's id
	asst     *Row           // the open assistant message
	asstData map[string]any // its data
	asstKey  string         // the event message id it holds
	parts    map[string]int // message id -> parts written
	tools    map[string]map[string]any
	names    map[string]string
	asText   map[string]bool
	model    string
	lost     Lost
	seq      int
	atts     []map[string]any // tool attachments (their sessionID is set once the session is named)
}

// EncodeLost writes events as the rows of one opencode session: a
// session row (its id derived from the content until ForSession names
// it, no directory until SetCwd), then messages, each followed by its
// parts. Prompts (compaction summaries, narratives, a person's and
// injected prompts: synthetic) are user messages with a text part; a
// model message's responses and tool calls are one assistant message's
// text and tool parts, a tool's result filling its part (completed, or
// error); tool calls map to opencode's tools (MapTool), and one with no
// counterpart crosses as text (an assistant text part naming the call and
// its input, its result a user message). A call that got no result is
// given an error saying so. A result's images and files (its recorded
// blocks: Messages API, Pi or Codex images, opencode's own file parts)
// are the completed part's attachments, which opencode sends with the
// result; an error part's, and blocks of other kinds, are notes in its
// text; a call written as text has its images as file
// parts of its result's user message. A prompt that stands for an
// opencode file part (MetaFile) is that part again. Thinking, metrics,
// errors and system events have no row (counted in Lost), nor have a
// sub-agent's events and those kept out of context.
func EncodeLost(evs []events.Event) ([]byte, Lost, error) {
	e := &encoder{parts: map[string]int{}, tools: map[string]map[string]any{}, names: map[string]string{}, asText: map[string]bool{}}
	// opencode has no context edits: the rows hold what they leave.
	for _, ev := range events.ApplyContextEdits(evs) {
		if ev.Metadata["sidechain"] == true || ev.Metadata["exclude_from_context"] == true {
			e.lost.Excluded++
			continue
		}
		switch ev.Type {
		case events.Prompt:
			if f, ok := ev.Metadata[MetaFile].(map[string]any); ok && f["url"] != nil {
				e.userFile(ev.Time, f, ev.Meta)
				continue
			}
			e.userText(ev.Time, ev.Text, ev.Meta)
		case events.System:
			switch ev.Subtype {
			case events.SubtypeCompactionSummary:
				e.userText(ev.Time, "Summary of the earlier conversation:\n\n"+ev.Text, true)
			case events.SubtypeNarrative:
				e.userText(ev.Time, ev.Text, false)
			default:
				e.lost.Events++
			}
		case events.Metric, events.Error, events.Output:
			e.lost.Events++
		case events.Thinking:
			e.lost.Thinking++
		case events.Response:
			if ev.Model != "" {
				e.model = ev.Model
			}
			if ev.Text == "" {
				continue
			}
			e.assistant(ev)
			e.part(e.asst.ID(), ev.Time, map[string]any{"type": "text", "text": ev.Text, "time": map[string]any{"start": ms(ev.Time), "end": ms(ev.Time)}})
		case events.ToolCall:
			if ev.Model != "" {
				e.model = ev.Model
			}
			e.assistant(ev)
			e.names[ev.Tool.ID] = ev.Tool.Name
			name, in, ok := MapTool(ev.Tool.Name, ev.Tool.Input)
			if !ok {
				e.lost.AsText++
				e.asText[ev.Tool.ID] = true
				raw, _ := json.Marshal(ev.Tool.Input)
				e.part(e.asst.ID(), ev.Time, map[string]any{"type": "text", "text": fmt.Sprintf("[I called the tool %s (call %s), which this opencode session does not have, with input: %s]", ev.Tool.Name, ev.Tool.ID, raw)})
				continue
			}
			if in == nil {
				in = map[string]any{}
			}
			state := map[string]any{"status": "pending", "input": in}
			e.tools[ev.Tool.ID] = state
			e.part(e.asst.ID(), ev.Time, map[string]any{"type": "tool", "tool": name, "callID": ev.Tool.ID, "state": state})
		case events.ToolResult:
			content, isErr := "", false
			if ev.Result != nil {
				content, isErr = ev.Result.Content, ev.Result.IsError
			}
			text, hasText, files, notes := resultFiles(ev.Result)
			if hasText {
				content = text
			}
			if state, ok := e.tools[ev.Tool.ID]; ok && state["status"] == "pending" {
				t := map[string]any{"start": ms(ev.Time), "end": ms(ev.Time)}
				if isErr {
					// An error part has no attachments: its files as notes.
					for _, f := range files {
						notes = append(notes, fileNote(fmt.Sprint(f["mime"]), fmt.Sprint(f["url"]), fmt.Sprint(f["filename"])))
					}
					state["status"], state["error"], state["time"] = "error", withNotes(content, notes), t
				} else {
					state["status"], state["output"], state["title"], state["metadata"], state["time"] = "completed", withNotes(content, notes), "", map[string]any{}, t
					if len(files) > 0 {
						state["attachments"] = e.attachments(files, state)
					}
				}
				continue
			}
			if e.asText[ev.Tool.ID] {
				name := e.names[ev.Tool.ID]
				if name == "" {
					name = ev.Tool.Name
				}
				status := ""
				if isErr {
					status = ", an error"
				}
				e.userText(ev.Time, fmt.Sprintf("[Result of the tool call %s (call %s)%s:]\n%s", name, ev.Tool.ID, status, withNotes(content, notes)), true)
				for _, f := range files {
					e.part(e.user, ev.Time, filePart(f, true))
				}
				delete(e.asText, ev.Tool.ID)
				continue
			}
			e.lost.Events++ // a result without its call
		}
	}
	for _, state := range e.tools {
		if state["status"] == "pending" {
			e.lost.Unanswered++
			state["status"], state["error"] = "error", "[no result was recorded for this tool call]"
			state["time"] = map[string]any{"start": int64(0), "end": int64(0)}
		}
	}
	e.closeAssistant()
	b, err := e.bytes()
	return b, e.lost, err
}

// message opens a message row of role at t.
func (e *encoder) message(t time.Time, data map[string]any) *Row {
	at := ms(t)
	if at <= e.last {
		at = e.last + 1
	}
	e.last = at
	e.seq++
	id := ascendingID("msg", at, e.seq, fmt.Sprint(e.seq, data["role"]))
	tm, _ := data["time"].(map[string]any)
	if tm == nil {
		tm = map[string]any{}
		data["time"] = tm
	}
	tm["created"] = at
	r := &Row{Table: TableMessage, Row: map[string]any{"id": id, "session_id": "", "time_created": at, "time_updated": at}}
	r.Row["data"] = data
	e.rows = append(e.rows, r)
	return r
}

func (e *encoder) userText(t time.Time, text string, synthetic bool) {
	p := map[string]any{"type": "text", "text": text}
	if synthetic {
		p["synthetic"] = true
	}
	e.part(e.userMessage(t), t, p)
}

// userMessage opens a user message at t and returns its id.
func (e *encoder) userMessage(t time.Time) string {
	e.closeAssistant()
	model := e.model
	if model == "" {
		model = "unknown"
	}
	r := e.message(t, map[string]any{"role": "user", "agent": "build", "model": map[string]any{"providerID": Provider, "modelID": model}})
	e.user = r.ID()
	return e.user
}

// filePart is a file part of f (mime, url, filename).
func filePart(f map[string]any, synthetic bool) map[string]any {
	p := map[string]any{"type": "file", "mime": f["mime"], "url": f["url"]}
	if n := fileName(f); n != "" {
		p["filename"] = n
	}
	if synthetic {
		p["synthetic"] = true
	}
	return p
}

// userFile writes a user message holding one file part, as opencode
// writes a person's attachment.
func (e *encoder) userFile(t time.Time, f map[string]any, synthetic bool) {
	e.part(e.userMessage(t), t, filePart(f, synthetic))
}

// attachments are files as a completed tool state's attachments: file
// parts with an id, the message id and (once named) the session id.
func (e *encoder) attachments(files []map[string]any, state map[string]any) []any {
	var out []any
	for _, f := range files {
		e.seq++
		a := map[string]any{"type": "file", "mime": f["mime"], "url": f["url"],
			"id": ascendingID("prt", e.last, e.seq, fmt.Sprint(e.seq, f["url"])), "sessionID": "", "messageID": e.asst.ID()}
		if n := fileName(f); n != "" {
			a["filename"] = n
		}
		e.atts = append(e.atts, a)
		out = append(out, a)
	}
	return out
}

func fileName(f map[string]any) string { s, _ := f["filename"].(string); return s }

// withNotes is text followed by notes, one a line.
func withNotes(text string, notes []string) string {
	if len(notes) == 0 {
		return text
	}
	return strings.Join(append([]string{text}, notes...), "\n")
}

// assistant opens an assistant message for ev unless the open one holds
// ev's model message.
func (e *encoder) assistant(ev events.Event) {
	if e.asst != nil && (ev.MessageID == "" || ev.MessageID == e.asstKey) {
		return
	}
	e.closeAssistant()
	model := ev.Model
	if model == "" {
		model = e.model
	}
	if model == "" {
		model = "unknown"
	}
	d := map[string]any{"role": "assistant", "mode": "build", "agent": "build", "path": map[string]any{"cwd": "", "root": "/"},
		"cost": 0, "tokens": map[string]any{"input": 0, "output": 0, "reasoning": 0, "cache": map[string]any{"read": 0, "write": 0}},
		"modelID": model, "providerID": Provider}
	if e.user != "" {
		d["parentID"] = e.user
	}
	if u := ev.Usage; u != nil {
		d["tokens"] = map[string]any{"input": u.Input, "output": u.Output, "reasoning": 0, "cache": map[string]any{"read": u.CacheRead, "write": u.CacheWrite}}
	}
	e.asst, e.asstData, e.asstKey = e.message(ev.Time, d), d, ev.MessageID
}

func (e *encoder) closeAssistant() {
	if e.asst == nil {
		return
	}
	finish := "stop"
	if last := e.rows[len(e.rows)-1]; last != e.asst {
		if d, _ := last.Row["data"].(map[string]any); d["type"] == "tool" {
			finish = "tool-calls"
		}
	}
	tm := e.asstData["time"].(map[string]any)
	tm["completed"] = tm["created"]
	e.asstData["finish"] = finish
	e.asst, e.asstData, e.asstKey = nil, nil, ""
}

func (e *encoder) part(msg string, t time.Time, data map[string]any) {
	e.parts[msg]++
	at := ms(t)
	id := ascendingID("prt", e.last, e.parts[msg], msg+fmt.Sprint(e.parts[msg]))
	e.rows = append(e.rows, &Row{Table: TablePart, Row: map[string]any{"id": id, "message_id": msg, "session_id": "",
		"time_created": at, "time_updated": at, "data": data}})
}

// bytes writes the rows: the session row first, its id derived from the
// content, every data column as opencode stores it (JSON text).
func (e *encoder) bytes() ([]byte, error) {
	data := make([]map[string]any, len(e.rows)) // each row's data, kept to name the session in attachments
	setData := func() error {
		for i, r := range e.rows {
			if d, ok := r.Row["data"].(map[string]any); ok {
				data[i] = d
			}
			if data[i] != nil {
				s, err := marshal(data[i])
				if err != nil {
					return err
				}
				r.Row["data"] = s
			}
		}
		return nil
	}
	if err := setData(); err != nil {
		return nil, err
	}
	var body bytes.Buffer
	for _, r := range e.rows {
		l, err := r.line()
		if err != nil {
			return nil, err
		}
		body.Write(l)
	}
	first := int64(0)
	if len(e.rows) > 0 {
		first = e.rows[0].num("time_created")
	}
	sid := sessionID(first, commits.ContentHash(body.Bytes()))
	if len(e.atts) > 0 {
		for _, a := range e.atts {
			a["sessionID"] = sid
		}
		if err := setData(); err != nil {
			return nil, err
		}
	}
	title := "ctxstore session"
	for _, r := range e.rows {
		if r.Table == TablePart {
			if d, err := r.data(); err == nil && d["type"] == "text" {
				if s, _ := d["text"].(string); s != "" {
					title = clip(s, 80)
					break
				}
			}
		}
	}
	s := &Row{Table: TableSession, Row: map[string]any{"id": sid, "project_id": "global", "workspace_id": nil, "parent_id": nil,
		"slug": "ctxstore", "directory": "", "path": nil, "title": title, "version": Version, "share_url": nil,
		"summary_additions": 0, "summary_deletions": 0, "summary_files": 0, "summary_diffs": nil, "metadata": nil, "cost": 0,
		"tokens_input": 0, "tokens_output": 0, "tokens_reasoning": 0, "tokens_cache_read": 0, "tokens_cache_write": 0,
		"revert": nil, "permission": nil, "agent": nil, "model": nil, "time_created": first, "time_updated": max(first, e.last),
		"time_compacting": nil, "time_archived": nil}}
	out, err := s.line()
	if err != nil {
		return nil, err
	}
	for _, r := range e.rows {
		r.Row["session_id"] = sid
		l, err := r.line()
		if err != nil {
			return nil, err
		}
		out = append(out, l...)
	}
	return out, nil
}

func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// MapTool maps a tool call of any harness to an opencode tool: opencode's
// own calls stay as they are; shell commands (Claude Code's Bash, Pi's
// bash, Codex's exec_command, shell and shell_command) become bash
// {command}; file reads (Read, Pi's read) read {filePath, offset, limit}
// (opencode's offset is 1-based as theirs); edits with one old and new
// string (Edit, Pi's edit) edit {filePath, oldString, newString,
// replaceAll}; writes (Write, Pi's write) write {filePath, content};
// Claude Code's Glob and Grep glob and grep. ok is false when opencode
// has no counterpart (the call then crosses as text).
func MapTool(name string, in map[string]any) (string, map[string]any, bool) {
	str := func(k string) (string, bool) { s, ok := in[k].(string); return s, ok }
	copyKeys := func(out map[string]any, pairs ...string) map[string]any {
		for i := 0; i+1 < len(pairs); i += 2 {
			if v, ok := in[pairs[i]]; ok && v != nil {
				out[pairs[i+1]] = v
			}
		}
		return out
	}
	switch name {
	case "bash", "Bash":
		if _, ok := str("command"); !ok {
			return "", nil, false
		}
		return "bash", copyKeys(map[string]any{}, "command", "command", "description", "description", "timeout", "timeout", "workdir", "workdir"), true
	case "exec_command", "shell_command":
		cmd, ok := str("cmd")
		if !ok {
			cmd, ok = str("command")
		}
		if !ok {
			return "", nil, false
		}
		return "bash", copyKeys(map[string]any{"command": cmd}, "workdir", "workdir"), true
	case "shell":
		argv, ok := in["command"].([]any)
		if !ok {
			return "", nil, false
		}
		var parts []string
		for _, a := range argv {
			s, _ := a.(string)
			parts = append(parts, s)
		}
		cmd := strings.Join(parts, " ")
		if len(parts) == 3 && (parts[0] == "bash" || parts[0] == "sh") && (parts[1] == "-lc" || parts[1] == "-c") {
			cmd = parts[2]
		}
		return "bash", copyKeys(map[string]any{"command": cmd}, "workdir", "workdir"), true
	case "read", "Read":
		if _, ok := str("filePath"); ok && name == "read" {
			return name, in, true
		}
		p, ok := str("file_path")
		if !ok {
			p, ok = str("path")
		}
		if !ok {
			return "", nil, false
		}
		return "read", copyKeys(map[string]any{"filePath": p}, "offset", "offset", "limit", "limit"), true
	case "edit", "Edit":
		if _, ok := str("filePath"); ok && name == "edit" {
			return name, in, true
		}
		p, ok := str("file_path")
		if !ok {
			p, ok = str("path")
		}
		oldS, ok1 := str("old_string")
		newS, ok2 := str("new_string")
		if !ok1 || !ok2 {
			oldS, ok1 = str("oldText")
			newS, ok2 = str("newText")
		}
		if !ok || !ok1 || !ok2 {
			return "", nil, false
		}
		return "edit", copyKeys(map[string]any{"filePath": p, "oldString": oldS, "newString": newS}, "replace_all", "replaceAll"), true
	case "write", "Write":
		if _, ok := str("filePath"); ok && name == "write" {
			return name, in, true
		}
		p, ok := str("file_path")
		if !ok {
			p, ok = str("path")
		}
		c, okc := str("content")
		if !ok || !okc {
			return "", nil, false
		}
		return "write", map[string]any{"filePath": p, "content": c}, true
	case "Glob", "glob":
		if _, ok := str("pattern"); !ok {
			return "", nil, false
		}
		return "glob", copyKeys(map[string]any{}, "pattern", "pattern", "path", "path"), true
	case "Grep", "grep":
		if _, ok := str("pattern"); !ok {
			return "", nil, false
		}
		return "grep", copyKeys(map[string]any{}, "pattern", "pattern", "path", "path", "glob", "include", "include", "include"), true
	case "webfetch", "todowrite", "task", "skill":
		return name, in, true
	}
	return "", nil, false
}

// The characters of opencode's ids after their time prefix.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// tail is n base62 characters derived from seed.
func tail(seed string, n int) string {
	h := sha256.Sum256([]byte(seed))
	x := new(big.Int).SetBytes(h[:])
	b := make([]byte, n)
	m := big.NewInt(62)
	r := new(big.Int)
	for i := range b {
		x.DivMod(x, m, r)
		b[i] = base62[r.Int64()]
	}
	return string(b)
}

// ascendingID is an id in the shape opencode gives messages and parts
// (prefix_, 12 hex digits of the time in ms times 4096 plus a counter,
// 14 base62 characters), which sort in creation order.
func ascendingID(prefix string, at int64, n int, seed string) string {
	v := (uint64(at)*0x1000 + uint64(n&0xfff)) & (1<<48 - 1)
	return fmt.Sprintf("%s_%012x%s", prefix, v, tail(seed, 14))
}

// sessionID is a session id in opencode's shape (its time prefix
// inverted, so newer sessions sort first).
func sessionID(at int64, seed string) string {
	v := ^(uint64(at) * 0x1000) & (1<<48 - 1)
	return fmt.Sprintf("ses_%012x%s", v, tail(seed, 14))
}

// NewSessionID is a new session id in opencode's shape, for now.
func NewSessionID(now time.Time, seed string) string { return sessionID(now.UnixMilli(), seed) }

// SetSessionID names the rows' session: the session row's id, every
// row's session_id, and, so that the copy shares no row with the
// original in one database, every message and part id (its time prefix
// kept, its last characters derived from the session and the old id),
// in columns and inside data (a message's parentID).
func SetSessionID(content []byte, session string) ([]byte, error) {
	ren := map[string]string{}
	var rows []*Row
	var bad error
	readRows(content, func(n int, r *Row) {
		rows = append(rows, r)
		switch r.Table {
		case TableSession:
			ren[r.ID()] = session
		case TableMessage, TablePart:
			id := r.ID()
			if len(id) > 20 {
				ren[id] = id[:20] + tail(session+"\x00"+id, len(id)-20)
			}
		}
	}, func(n int, msg string, _ []byte) {
		if bad == nil {
			bad = fmt.Errorf("opencode rows: line %d: %s", n, msg)
		}
	})
	if bad != nil {
		return nil, bad
	}
	var out []byte
	for _, r := range rows {
		for _, col := range []string{"id", "session_id", "message_id", "parent_id"} {
			if s, ok := r.Row[col].(string); ok {
				if n, ok := ren[s]; ok {
					r.Row[col] = n
				}
			}
		}
		if r.Table == TableSession {
			r.Row["id"] = session
		} else {
			r.Row["session_id"] = session
		}
		if s, ok := r.Row["data"].(string); ok {
			r.Row["data"] = renameInJSON(s, ren)
		}
		l, err := r.line()
		if err != nil {
			return nil, err
		}
		out = append(out, l...)
	}
	return out, nil
}

// renameInJSON replaces every string value of a JSON text equal to a
// renamed id (a text that does not decode is kept as it is).
func renameInJSON(s string, ren map[string]string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return s
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if n, ok := ren[x]; ok {
				changed = true
				return n
			}
		case map[string]any:
			for k, y := range x {
				x[k] = walk(y)
			}
		case []any:
			for i, y := range x {
				x[i] = walk(y)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return s
	}
	out, err := marshal(v)
	if err != nil {
		return s
	}
	return out
}

// SetCwd sets the working directory the rows record: the session's
// directory and path (relative to the root, as opencode writes for a
// folder outside a git repository), and each assistant message's
// path.cwd.
func SetCwd(content []byte, cwd string) ([]byte, error) {
	var out []byte
	var bad error
	readRows(content, func(n int, r *Row) {
		switch r.Table {
		case TableSession:
			r.Row["directory"] = cwd
			r.Row["path"] = strings.TrimPrefix(cwd, "/")
		case TableMessage:
			if d, err := r.data(); err == nil && d["role"] == "assistant" {
				p, _ := d["path"].(map[string]any)
				if p == nil {
					p = map[string]any{"root": "/"}
				}
				p["cwd"] = cwd
				d["path"] = p
				if s, err := marshal(d); err == nil {
					r.Row["data"] = s
				}
			}
		}
		l, err := r.line()
		if err != nil && bad == nil {
			bad = err
		}
		out = append(out, l...)
	}, func(n int, msg string, _ []byte) {
		if bad == nil {
			bad = fmt.Errorf("opencode rows: line %d: %s", n, msg)
		}
	})
	return out, bad
}

// SessionOf returns the id of the rows' session (the first session row).
func SessionOf(content []byte) string {
	id := ""
	readRows(content, func(_ int, r *Row) {
		if id == "" && r.Table == TableSession {
			id = r.ID()
		}
	}, func(int, string, []byte) {})
	return id
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Package claudecode reads Claude Code's session JSONL
// (~/.claude/projects/<dir>/<session>.jsonl) into ctxstore's
// harness-neutral conversation: the one converter of that format, used by
// the transcript reader and replay (issue 11 item 2).
package claudecode

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Types are the Claude Code record types the reader knows.
var Types = map[string]harness.Kind{
	"user":      harness.KindMessage,
	"assistant": harness.KindMessage,
	"system":    harness.KindSpecial, // compact_boundary; hook notices, api errors, durations: skipped
	"summary":   harness.KindSkip,    // a title for a leaf ({summary, leafUuid}), not a compaction
	// Records that carry nothing the model is sent. Claude Code turns some
	// attachments into context; none of the datasets has one (docs/replay.md).
	"file-history-snapshot": harness.KindSkip,
	"queue-operation":       harness.KindSkip,
	"progress":              harness.KindSkip,
	"attachment":            harness.KindSkip,
	"permission-mode":       harness.KindSkip,
	"last-prompt":           harness.KindSkip,
	"ai-title":              harness.KindSkip,
	"custom-title":          harness.KindSkip,
	"agent-name":            harness.KindSkip,
	"agent-setting":         harness.KindSkip,
	"mode":                  harness.KindSkip,
	"bridge-session":        harness.KindSkip,
}

// ContinuedPrefix starts the user message that opens a session continued
// from a compacted one (Claude Code 1.0.x marks it isCompactSummary only
// sometimes).
const ContinuedPrefix = "This session is being continued from a previous conversation"

// envelope is what every Claude Code record says about itself, whatever
// its message: the reader's records and the importer's heads
// (codec.go) embed it.
type envelope struct {
	Type              harness.Str    `json:"type"`
	Subtype           harness.Str    `json:"subtype"`
	UUID              harness.Str    `json:"uuid"`
	ParentUUID        harness.OptStr `json:"parentUuid"`
	LogicalParentUUID harness.Str    `json:"logicalParentUuid"`
	IsSidechain       harness.Flag   `json:"isSidechain"`
	IsMeta            harness.Flag   `json:"isMeta"`
	IsCompactSummary  harness.Flag   `json:"isCompactSummary"`
	SessionID         harness.Str    `json:"sessionId"`
	Timestamp         harness.Str    `json:"timestamp"`
	Cwd               harness.Str    `json:"cwd"`
	Version           harness.Str    `json:"version"`
}

type ccRecord struct {
	envelope
	Message json.RawMessage `json:"message"`

	msg    *ccMessage
	blocks []ccBlock
	text   string // a string content
}

type ccMessage struct {
	Role    harness.Str     `json:"role"`
	ID      harness.Str     `json:"id"`
	Model   harness.Str     `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   json.RawMessage `json:"usage"`
}

type ccUsage struct {
	Input      harness.Num `json:"input_tokens"`
	Output     harness.Num `json:"output_tokens"`
	CacheRead  harness.Num `json:"cache_read_input_tokens"`
	CacheWrite harness.Num `json:"cache_creation_input_tokens"`
}

type ccBlock struct {
	Type      harness.Str     `json:"type"`
	Text      harness.Str     `json:"text"`
	ID        harness.Str     `json:"id"`
	Name      harness.Str     `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID harness.Str     `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   harness.Flag    `json:"is_error"`
	Source    struct {
		MediaType harness.Str `json:"media_type"`
		Data      harness.Str `json:"data"`
	} `json:"source"`
}

// decodeContent reads a content field: a string, a list of blocks, or
// nothing. Blocks that are not objects are reported and left out.
func decodeContent(raw json.RawMessage, line int, rep *harness.Report) (text string, blocks []ccBlock, isString bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, false
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, nil, true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		rep.Problem(line, "message content is neither a string nor a list of blocks; left out")
		return "", nil, false
	}
	for _, it := range items {
		var b ccBlock
		if json.Unmarshal(it, &b) != nil {
			rep.Problem(line, "a content block that is not an object; left out")
			continue
		}
		blocks = append(blocks, b)
	}
	return "", blocks, false
}

// toolResultText flattens a tool_result's content: a string, or blocks
// (text joined with newlines, images as a note).
func toolResultText(raw json.RawMessage, line int, rep *harness.Report) string {
	text, blocks, isString := decodeContent(raw, line, rep)
	if isString {
		return text
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, string(b.Text))
		case "image":
			rep.Images++
			parts = append(parts, harness.ImageNote(string(b.Source.MediaType), len(b.Source.Data)))
		default:
			parts = append(parts, "["+string(b.Type)+" block]")
		}
	}
	return strings.Join(parts, "\n")
}

func (r *ccRecord) isCompaction() bool {
	return bool(r.IsCompactSummary) || r.Subtype == "compact_boundary" ||
		(r.Type == "user" && strings.HasPrefix(strings.TrimSpace(r.firstText()), ContinuedPrefix))
}

func (r *ccRecord) firstText() string {
	if r.text != "" {
		return r.text
	}
	for _, b := range r.blocks {
		if b.Type == "text" {
			return string(b.Text)
		}
	}
	return ""
}

// Read builds the main thread of a Claude Code file.
//
// The thread is the parent chain (parentUuid) of the last non-sidechain
// record of the file. At a root that opens a compacted continuation (a
// compact_boundary record, an isCompactSummary user record, or a user record
// starting "This session is being continued ..."), the chain goes on at its
// logicalParentUuid, or else at the previous non-sidechain record of the
// file, so one thread spans every compaction. A parent that is not in the
// file is reported and the chain goes on at the previous record too. Other
// roots (a /clear, an unrelated session) end the thread; records of other
// branches are counted as OffBranch. Records hanging off the thread that
// Claude Code writes as siblings (the results of parallel tool calls,
// streamed parts of one response) are taken in. Records are then emitted in
// file order.
func Read(s *harness.Session, recs []harness.Record) { read(s, recs, -1, nil) }

// ReadAll reads every conversation of a file, oldest first: the thread Read
// follows, then, as long as records are on no thread, the thread ending at
// the last of them. A thread that runs into a record of a thread already
// read is a branch of it (an abandoned continuation), not a conversation:
// its records are counted as OffBranch of every conversation. new makes an
// empty session to fill.
func ReadAll(recs []harness.Record, new func() *harness.Session) []*harness.Session {
	taken := map[int]bool{}
	var out []*harness.Session
	s := new()
	sel, main := read(s, recs, -1, nil)
	if len(sel) == 0 {
		return []*harness.Session{s}
	}
	out = append(out, s)
	onThreads := len(sel)
	for i := range sel {
		taken[i] = true
	}
	for {
		p := len(main) - 1
		for p >= 0 && taken[main[p]] {
			p--
		}
		if p < 0 {
			break
		}
		c := new()
		sel, _ := read(c, recs, p, taken)
		branch := sel == nil
		for i := range sel {
			taken[i] = true
		}
		if branch {
			taken[main[p]] = true
			continue
		}
		onThreads += len(sel)
		out = append([]*harness.Session{c}, out...)
	}
	for _, c := range out {
		c.Report.OffBranch = len(main) - onThreads
	}
	return out
}

// read builds the thread ending at main record leaf (-1: the last) and
// returns the records selected and the file's main records. With taken
// (the records of threads read before), a thread that reaches one of them
// is a branch: read returns nil for it.
func read(s *harness.Session, recs []harness.Record, leaf int, taken map[int]bool) (map[int]bool, []int) {
	rep := &s.Report
	parsed := make([]*ccRecord, len(recs))
	byUUID := map[string]int{}
	var main []int // non-sidechain records with a uuid, in file order
	for i, rc := range recs {
		r := &ccRecord{}
		if err := json.Unmarshal(rc.Data, r); err != nil {
			rep.Problem(rc.Line, "record does not decode: %v; skipped", err)
			continue
		}
		t := string(r.Type)
		rep.Types[t]++
		switch Types[t] {
		case harness.KindUnknown:
			harness.Count(&rep.Unknown, t)
		case harness.KindSkip:
			harness.Count(&rep.Skipped, t)
		}
		if r.IsSidechain {
			rep.Sidechain++
			continue
		}
		if len(r.Message) > 0 && string(r.Message) != "null" {
			m := &ccMessage{}
			if err := json.Unmarshal(r.Message, m); err != nil {
				rep.Problem(rc.Line, "message field does not decode: %v; record skipped", err)
				continue
			}
			r.msg = m
			r.text, r.blocks, _ = decodeContent(m.Content, rc.Line, rep)
		}
		if t == "system" && r.Subtype != "compact_boundary" {
			harness.Count(&rep.Skipped, "system")
		}
		parsed[i] = r
		if r.UUID == "" {
			continue
		}
		if _, dup := byUUID[string(r.UUID)]; dup {
			rep.Problem(rc.Line, "uuid %s appears again; the first record is kept", r.UUID)
			continue
		}
		byUUID[string(r.UUID)] = i
		main = append(main, i)
	}
	if len(main) == 0 {
		return nil, nil
	}
	if leaf < 0 || leaf >= len(main) {
		leaf = len(main) - 1
	}

	// The chain from the last record.
	pos := make(map[int]int, len(main)) // record index -> position in main
	for p, i := range main {
		pos[i] = p
	}
	selected := map[int]bool{}
	prev := func(i int) int { // the previous unselected main record
		for p := pos[i] - 1; p >= 0; p-- {
			if !selected[main[p]] {
				return main[p]
			}
		}
		return -1
	}
	for cur := main[leaf]; cur >= 0; {
		if taken[cur] {
			for i := range selected {
				taken[i] = true
			}
			return nil, main
		}
		selected[cur] = true
		r := parsed[cur]
		next := -1
		if r.ParentUUID.Value != "" {
			j, ok := byUUID[r.ParentUUID.Value]
			switch {
			case !ok:
				rep.Problem(recs[cur].Line, "parent %s is not in the file; going on with the previous record", r.ParentUUID.Value)
				next = prev(cur)
			case selected[j]:
				rep.Problem(recs[cur].Line, "parent chain loops at %s; stopped", r.ParentUUID.Value)
			default:
				next = j
			}
		} else if r.isCompaction() {
			if j, ok := byUUID[string(r.LogicalParentUUID)]; ok && !selected[j] {
				next = j
			} else {
				next = prev(cur)
			}
		}
		cur = next
	}

	// Siblings hanging off the thread: parallel tool results, streamed parts.
	msgIDs := map[string]bool{}
	uses := map[string]bool{}
	answered := map[string]bool{}
	note := func(r *ccRecord) {
		if r.Type == "assistant" && r.msg != nil && r.msg.ID != "" {
			msgIDs[string(r.msg.ID)] = true
		}
		for _, b := range r.blocks {
			switch b.Type {
			case "tool_use":
				uses[string(b.ID)] = true
			case "tool_result":
				answered[string(b.ToolUseID)] = true
			}
		}
	}
	for i := range selected {
		note(parsed[i])
	}
	for changed := true; changed; {
		changed = false
		for _, i := range main {
			r := parsed[i]
			if selected[i] || r.ParentUUID.Value == "" {
				continue
			}
			if j, ok := byUUID[r.ParentUUID.Value]; !ok || !selected[j] {
				continue
			}
			if !siblingPart(r, msgIDs, uses, answered) {
				continue
			}
			selected[i] = true
			rep.Attached++
			note(r)
			changed = true
		}
	}
	rep.OffBranch = len(main) - len(selected)

	order := make([]int, 0, len(selected))
	for i := range selected {
		order = append(order, i)
	}
	sort.Ints(order)
	e := ccEmitter{s: s, byMsgID: map[string]int{}}
	seenSession := map[string]bool{}
	for _, i := range order {
		r := parsed[i]
		if sid := string(r.SessionID); sid != "" {
			if !seenSession[sid] {
				seenSession[sid] = true
				rep.SessionIDs = append(rep.SessionIDs, sid)
			}
			s.ID = sid
		}
		if r.Cwd != "" {
			s.Cwd = string(r.Cwd)
		}
		if r.Version != "" {
			s.Version = string(r.Version)
		}
		switch r.Type {
		case "user":
			e.user(r, recs[i].Line)
		case "assistant":
			e.assistant(r, recs[i].Line)
		}
	}
	e.finish()
	return selected, main
}

// siblingPart reports whether an off-thread record is part of the thread's
// last exchange: an assistant record of a response on the thread, or a user
// record holding only results of calls made on the thread and not answered
// there.
func siblingPart(r *ccRecord, msgIDs, uses, answered map[string]bool) bool {
	switch r.Type {
	case "assistant":
		return r.msg != nil && r.msg.ID != "" && msgIDs[string(r.msg.ID)]
	case "user":
		if len(r.blocks) == 0 {
			return false
		}
		for _, b := range r.blocks {
			if b.Type != "tool_result" || !uses[string(b.ToolUseID)] || answered[string(b.ToolUseID)] {
				return false
			}
		}
		return true
	}
	return false
}

// ccEmitter turns thread records into messages, merging streamed assistant
// records.
type ccEmitter struct {
	s       *harness.Session
	byMsgID map[string]int // message id -> index in s.Messages
	texts   map[int][]string
}

func (e *ccEmitter) add(m conversation.Message, line int) int {
	e.s.Messages = append(e.s.Messages, m)
	e.s.MessageLines = append(e.s.MessageLines, line)
	return len(e.s.Messages) - 1
}

func (e *ccEmitter) user(r *ccRecord, line int) {
	rep := &e.s.Report
	if r.msg == nil {
		return
	}
	t := harness.ParseTime(string(r.Timestamp))
	var parts []string
	if r.text != "" {
		parts = append(parts, r.text)
	}
	for _, b := range r.blocks {
		switch b.Type {
		case "tool_result":
			e.add(conversation.Message{
				Role: conversation.RoleToolResult, ID: string(r.UUID), ToolCallID: string(b.ToolUseID),
				Output: toolResultText(b.Content, line, rep), IsError: bool(b.IsError), Time: t,
			}, line)
		case "text":
			parts = append(parts, string(b.Text))
		case "image":
			rep.Images++
			parts = append(parts, harness.ImageNote(string(b.Source.MediaType), len(b.Source.Data)))
		default:
			parts = append(parts, "["+string(b.Type)+" block]")
		}
	}
	text := harness.JoinNonEmpty(parts, "\n\n")
	if strings.TrimSpace(text) == "" {
		return
	}
	compaction := r.isCompaction()
	if compaction {
		rep.Compactions++
	}
	trimmed := strings.TrimSpace(text)
	meta := bool(r.IsMeta) || compaction ||
		strings.HasPrefix(trimmed, "<command-") || strings.HasPrefix(trimmed, "<local-command-")
	e.add(conversation.Message{Role: conversation.RoleUser, ID: string(r.UUID), Text: text, Time: t, Meta: meta}, line)
	if compaction {
		e.s.MarkCompaction()
	}
}

func (e *ccEmitter) assistant(r *ccRecord, line int) {
	rep := &e.s.Report
	if r.msg == nil {
		return
	}
	id := string(r.msg.ID)
	idx, merged := -1, false
	if id != "" {
		idx, merged = e.byMsgID[id]
	}
	if !merged {
		m := conversation.Message{Role: conversation.RoleAssistant, ID: id, Time: harness.ParseTime(string(r.Timestamp)), Model: string(r.msg.Model)}
		if m.ID == "" {
			m.ID = string(r.UUID)
		}
		idx = e.add(m, line)
		if id != "" {
			e.byMsgID[id] = idx
		}
	} else {
		rep.Merged++
	}
	m := &e.s.Messages[idx]
	if u := r.usage(); u != nil && m.Model != "<synthetic>" {
		if m.Usage == nil {
			m.Usage = u
		} else if u.Output > m.Usage.Output { // streamed parts repeat the usage; output grows
			m.Usage.Output = u.Output
		}
	}
	if e.texts == nil {
		e.texts = map[int][]string{}
	}
	if r.text != "" {
		e.texts[idx] = append(e.texts[idx], r.text)
	}
	for _, b := range r.blocks {
		switch b.Type {
		case "text":
			e.texts[idx] = append(e.texts[idx], string(b.Text))
		case "thinking", "redacted_thinking":
			rep.Thinking++
		case "tool_use":
			m.ToolCalls = append(m.ToolCalls, conversation.ToolCall{ID: string(b.ID), Name: string(b.Name), Args: harness.Args(b.Input)})
		case "image":
			rep.Images++
			e.texts[idx] = append(e.texts[idx], harness.ImageNote(string(b.Source.MediaType), len(b.Source.Data)))
		default:
			e.texts[idx] = append(e.texts[idx], "["+string(b.Type)+" block]")
		}
	}
}

func (r *ccRecord) usage() *conversation.Usage {
	if r.msg == nil || len(r.msg.Usage) == 0 || r.msg.Usage[0] != '{' {
		return nil
	}
	var u ccUsage
	if json.Unmarshal(r.msg.Usage, &u) != nil {
		return nil
	}
	return &conversation.Usage{Input: int64(u.Input), Output: int64(u.Output), CacheRead: int64(u.CacheRead), CacheWrite: int64(u.CacheWrite)}
}

func (e *ccEmitter) finish() {
	for idx, parts := range e.texts {
		e.s.Messages[idx].Text = harness.JoinNonEmpty(parts, "\n\n")
	}
}

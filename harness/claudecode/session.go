// Package claudecode is the Claude Code format: its session JSONL
// (~/.claude/projects/<dir>/<session>.jsonl).
//
// [Record] is the one decoding of a line's JSON object. From Records the
// package makes the replay view ([Read], [ReadAll]: the main thread as
// the model saw it, as harness-neutral messages), the import view
// ([Decode]: every record as neutral events, the claude-code-v1 commit
// codec) and the importer's heads ([ReadHead]). [Encode] writes events as
// a session file Claude Code resumes. [Codec] gives all of it to a
// harness.Registry.
package claudecode

import (
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
	// Claude Code 2.1.330 and later: the exact request of each model call
	// (api-request, its message blobs and its system-and-tools shape,
	// decoded into Record.Request), and bookkeeping records (atis-latch,
	// cost-state, tools-used). None of them is context: the request says
	// what was sent, it adds nothing to it.
	"api-request":       harness.KindSkip,
	"api-request-blob":  harness.KindSkip,
	"api-request-shape": harness.KindSkip,
	"atis-latch":        harness.KindSkip,
	"cost-state":        harness.KindSkip,
	"tools-used":        harness.KindSkip,
}

// ContinuedPrefix starts the user message that opens a session continued
// from a compacted one (Claude Code 1.0.x marks it isCompactSummary only
// sometimes).
const ContinuedPrefix = "This session is being continued from a previous conversation"

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
	parsed := make([]*Record, len(recs))
	byUUID := map[string]int{}
	var main []int // non-sidechain records with a uuid, in file order
	for i, rc := range recs {
		r, err := DecodeRecord(rc)
		if err != nil {
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
		if r.MsgErr != nil {
			rep.Problem(rc.Line, "message field does not decode: %v; record skipped", r.MsgErr)
			continue
		}
		r.report(rep)
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
	note := func(r *Record) {
		if r.Type == "assistant" && r.Msg != nil && r.Msg.ID != "" {
			msgIDs[string(r.Msg.ID)] = true
		}
		for _, b := range r.Blocks {
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
			e.user(r)
		case "assistant":
			e.assistant(r)
		}
	}
	e.finish()
	return selected, main
}

// siblingPart reports whether an off-thread record is part of the thread's
// last exchange: an assistant record of a response on the thread, or a user
// record holding only results of calls made on the thread and not answered
// there.
func siblingPart(r *Record, msgIDs, uses, answered map[string]bool) bool {
	switch r.Type {
	case "assistant":
		return r.Msg != nil && r.Msg.ID != "" && msgIDs[string(r.Msg.ID)]
	case "user":
		if len(r.Blocks) == 0 {
			return false
		}
		for _, b := range r.Blocks {
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

// user emits a user record's tool results, then its text, if any: a
// Meta message unless a person wrote it (UserClass).
func (e *ccEmitter) user(r *Record) {
	rep := &e.s.Report
	if r.Msg == nil {
		return
	}
	line := r.Line
	t := harness.ParseTime(string(r.Timestamp))
	for _, b := range r.Blocks {
		if b.Type != "tool_result" {
			continue
		}
		out, problems := toolResultText(b, &rep.Images)
		for _, p := range problems {
			rep.Problem(line, "%s", p)
		}
		e.add(conversation.Message{
			Role: conversation.RoleToolResult, ID: string(r.UUID), ToolCallID: string(b.ToolUseID),
			Output: out, IsError: bool(b.IsError), Time: t,
		}, line)
	}
	text := harness.JoinNonEmpty(append([]string{r.Text}, blockTexts(r.Blocks, &rep.Images)...), "\n\n")
	if strings.TrimSpace(text) == "" {
		return
	}
	class, _ := r.UserClass()
	compaction := r.isCompaction()
	if compaction {
		rep.Compactions++
	}
	meta := class != ClassHuman && class != ClassToolResult
	e.add(conversation.Message{Role: conversation.RoleUser, ID: string(r.UUID), Text: text, Time: t, Meta: meta}, line)
	if compaction {
		e.s.MarkCompaction()
	}
}

// assistant emits an assistant record, or merges it into the message of
// the same message id (a streamed part).
func (e *ccEmitter) assistant(r *Record) {
	rep := &e.s.Report
	if r.Msg == nil {
		return
	}
	line := r.Line
	id := string(r.Msg.ID)
	idx, merged := -1, false
	if id != "" {
		idx, merged = e.byMsgID[id]
	}
	if !merged {
		m := conversation.Message{Role: conversation.RoleAssistant, ID: id, Time: harness.ParseTime(string(r.Timestamp)), Model: string(r.Msg.Model)}
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
	if r.Text != "" {
		e.texts[idx] = append(e.texts[idx], r.Text)
	}
	for _, b := range r.Blocks {
		switch b.Type {
		case "thinking", "redacted_thinking":
			rep.Thinking++
		case "tool_use":
			m.ToolCalls = append(m.ToolCalls, conversation.ToolCall{ID: string(b.ID), Name: string(b.Name), Args: harness.Args(b.Input)})
		case "text":
			e.texts[idx] = append(e.texts[idx], string(b.Text))
		default:
			e.texts[idx] = append(e.texts[idx], blockTexts([]Block{b}, &rep.Images)...)
		}
	}
}

func (e *ccEmitter) finish() {
	for idx, parts := range e.texts {
		e.s.Messages[idx].Text = harness.JoinNonEmpty(parts, "\n\n")
	}
}

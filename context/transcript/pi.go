package transcript

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// piTypes are the Pi entry types this reader knows.
var piTypes = map[string]kind{
	"session":               kindSpecial, // the header
	"message":               kindMessage,
	"compaction":            kindSpecial,
	"branch_summary":        kindSpecial,
	"custom_message":        kindMessage, // extension messages the model sees
	"model_change":          kindSkip,
	"thinking_level_change": kindSkip,
	"custom":                kindSkip, // extension state, not in context
	"label":                 kindSkip,
	"session_info":          kindSkip,
}

type piEntry struct {
	Type      str             `json:"type"`
	ID        str             `json:"id"`
	ParentID  optStr          `json:"parentId"`
	Timestamp str             `json:"timestamp"`
	Version   num             `json:"version"`
	Cwd       str             `json:"cwd"`
	Message   json.RawMessage `json:"message"`
	Summary   str             `json:"summary"`
	Content   json.RawMessage `json:"content"`

	hasID bool
}

type piMessage struct {
	Role               str             `json:"role"`
	Content            json.RawMessage `json:"content"`
	ToolCallID         str             `json:"toolCallId"`
	ToolName           str             `json:"toolName"`
	IsError            flag            `json:"isError"`
	Model              str             `json:"model"`
	Usage              json.RawMessage `json:"usage"`
	Timestamp          num             `json:"timestamp"`
	Command            str             `json:"command"`
	Output             str             `json:"output"`
	ExitCode           json.RawMessage `json:"exitCode"`
	Cancelled          flag            `json:"cancelled"`
	ExcludeFromContext flag            `json:"excludeFromContext"`
	Summary            str             `json:"summary"`
	StopReason         str             `json:"stopReason"`
}

type piBlock struct {
	Type      str             `json:"type"`
	Text      str             `json:"text"`
	ID        str             `json:"id"`
	Name      str             `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Data      str             `json:"data"`
	MimeType  str             `json:"mimeType"`
}

type piUsage struct {
	Input      num `json:"input"`
	Output     num `json:"output"`
	CacheRead  num `json:"cacheRead"`
	CacheWrite num `json:"cacheWrite"`
}

// readPi builds the thread of a Pi session. Version 1 files have no ids:
// the thread is file order. Versions 2 and 3 (entries with id/parentId) are
// a tree: the thread is the path from the root to the last entry of the
// file, Pi's leaf when it loads a session; entries off that path are
// counted as OffBranch. A parent missing from the file is reported and the
// path goes on at the previous entry of the file.
func readPi(s *Session, recs []record) {
	rep := &s.Report
	entries := make([]*piEntry, len(recs))
	tree := false
	header := false
	for i, rc := range recs {
		e := &piEntry{}
		if err := json.Unmarshal(rc.data, e); err != nil {
			rep.problem(rc.line, "entry does not decode: %v; skipped", err)
			continue
		}
		t := string(e.Type)
		rep.Types[t]++
		switch piTypes[t] {
		case kindUnknown:
			count(&rep.Unknown, t) // kept in the tree, emits nothing
		case kindSkip:
			count(&rep.Skipped, t)
		}
		if t == "session" {
			if !header {
				header = true
				s.ID, s.Cwd = string(e.ID), string(e.Cwd)
				v := int64(e.Version)
				if v == 0 {
					v = 1
				}
				s.Version = fmt.Sprint(v)
				tree = v >= 2
			}
			continue
		}
		e.hasID = e.ID != ""
		if e.hasID || e.ParentID.set {
			tree = true
		}
		entries[i] = e
	}

	order := make([]int, 0, len(recs))
	if !tree {
		for i, e := range entries {
			if e != nil {
				order = append(order, i)
			}
		}
	} else {
		order = piPath(recs, entries, rep)
	}
	for _, i := range order {
		piEmit(s, entries[i], recs[i].line)
	}
}

// piPath returns the record indexes on the path from the root to the last
// entry with an id, in path order.
func piPath(recs []record, entries []*piEntry, rep *Report) []int {
	byID := map[string]int{}
	var withID []int
	for i, e := range entries {
		if e == nil {
			continue
		}
		if !e.hasID {
			rep.problem(recs[i].line, "entry without an id in a tree session; skipped")
			rep.OffBranch++
			continue
		}
		if _, dup := byID[string(e.ID)]; dup {
			rep.problem(recs[i].line, "id %s appears again; the first entry is kept", e.ID)
			continue
		}
		byID[string(e.ID)] = i
		withID = append(withID, i)
	}
	if len(withID) == 0 {
		return nil
	}
	pos := make(map[int]int, len(withID))
	for p, i := range withID {
		pos[i] = p
	}
	selected := map[int]bool{}
	var path []int
	for cur := withID[len(withID)-1]; cur >= 0; {
		selected[cur] = true
		path = append(path, cur)
		e := entries[cur]
		next := -1
		if p := e.ParentID.value; p != "" {
			j, ok := byID[p]
			switch {
			case !ok:
				rep.problem(recs[cur].line, "parent %s is not in the file; going on with the previous entry", p)
				for q := pos[cur] - 1; q >= 0; q-- {
					if !selected[withID[q]] {
						next = withID[q]
						break
					}
				}
			case selected[j]:
				rep.problem(recs[cur].line, "parent chain loops at %s; stopped", p)
			default:
				next = j
			}
		}
		cur = next
	}
	rep.OffBranch += len(withID) - len(path)
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

func piAdd(s *Session, m conversation.Message, line int) {
	s.Messages = append(s.Messages, m)
	s.MessageLines = append(s.MessageLines, line)
}

// piContent flattens text and image blocks (or a string).
func piContent(raw json.RawMessage, line int, rep *Report, sep string) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		rep.problem(line, "message content is neither a string nor a list of blocks; left out")
		return ""
	}
	var parts []string
	for _, it := range items {
		var b piBlock
		if json.Unmarshal(it, &b) != nil {
			rep.problem(line, "a content block that is not an object; left out")
			continue
		}
		switch b.Type {
		case "text":
			parts = append(parts, string(b.Text))
		case "image":
			rep.Images++
			parts = append(parts, imageNote(string(b.MimeType), len(b.Data)))
		case "thinking":
			rep.Thinking++
		default:
			parts = append(parts, "["+string(b.Type)+" block]")
		}
	}
	return joinNonEmpty(parts, sep)
}

func piEmit(s *Session, e *piEntry, line int) {
	rep := &s.Report
	t := parseTime(string(e.Timestamp))
	meta := func(text string) bool {
		if strings.TrimSpace(text) == "" {
			return false
		}
		piAdd(s, conversation.Message{Role: conversation.RoleUser, ID: string(e.ID), Text: text, Time: t, Meta: true}, line)
		return true
	}
	switch e.Type {
	case "compaction":
		rep.Compactions++
		if meta(string(e.Summary)) {
			s.markCompaction()
		}
	case "branch_summary":
		meta(string(e.Summary))
	case "custom_message":
		meta(piContent(e.Content, line, rep, "\n\n"))
	case "message":
		if len(e.Message) == 0 || e.Message[0] != '{' {
			rep.problem(line, "message entry without a message object; skipped")
			return
		}
		var m piMessage
		if err := json.Unmarshal(e.Message, &m); err != nil {
			rep.problem(line, "message does not decode: %v; skipped", err)
			return
		}
		if t.IsZero() && m.Timestamp > 0 {
			t = time.UnixMilli(int64(m.Timestamp)).UTC()
		}
		piMessageEmit(s, e, &m, t, line)
	}
}

func piMessageEmit(s *Session, e *piEntry, m *piMessage, t time.Time, line int) {
	rep := &s.Report
	id := string(e.ID)
	switch m.Role {
	case "user":
		if text := piContent(m.Content, line, rep, "\n\n"); strings.TrimSpace(text) != "" {
			piAdd(s, conversation.Message{Role: conversation.RoleUser, ID: id, Text: text, Time: t}, line)
		}
	case "assistant":
		out := conversation.Message{Role: conversation.RoleAssistant, ID: id, Time: t, Model: string(m.Model)}
		var parts []string
		var items []json.RawMessage
		if len(m.Content) > 0 && m.Content[0] == '"' {
			var text string
			_ = json.Unmarshal(m.Content, &text)
			parts = append(parts, text)
		} else if len(m.Content) > 0 && string(m.Content) != "null" && json.Unmarshal(m.Content, &items) != nil {
			rep.problem(line, "assistant content is not a list of blocks; left out")
		}
		for _, it := range items {
			var b piBlock
			if json.Unmarshal(it, &b) != nil {
				rep.problem(line, "a content block that is not an object; left out")
				continue
			}
			switch b.Type {
			case "text":
				parts = append(parts, string(b.Text))
			case "thinking":
				rep.Thinking++
			case "toolCall":
				out.ToolCalls = append(out.ToolCalls, conversation.ToolCall{ID: string(b.ID), Name: string(b.Name), Args: args(b.Arguments)})
			case "image":
				rep.Images++
				parts = append(parts, imageNote(string(b.MimeType), len(b.Data)))
			default:
				parts = append(parts, "["+string(b.Type)+" block]")
			}
		}
		out.Text = joinNonEmpty(parts, "\n\n")
		if m.StopReason == "aborted" || m.StopReason == "error" {
			// The request was made and paid, but Pi leaves errored and
			// aborted responses out of every later context: keep the call,
			// drop what it said.
			rep.Aborted++
			out.Text, out.ToolCalls = "", nil
		}
		if len(m.Usage) > 0 && m.Usage[0] == '{' {
			var u piUsage
			if json.Unmarshal(m.Usage, &u) == nil {
				out.Usage = &conversation.Usage{Input: int64(u.Input), Output: int64(u.Output), CacheRead: int64(u.CacheRead), CacheWrite: int64(u.CacheWrite)}
			}
		}
		piAdd(s, out, line)
	case "toolResult":
		piAdd(s, conversation.Message{
			Role: conversation.RoleToolResult, ID: id, ToolCallID: string(m.ToolCallID), ToolName: string(m.ToolName),
			Output: piContent(m.Content, line, rep, "\n"), IsError: bool(m.IsError), Time: t,
		}, line)
	case "bashExecution":
		// A "!" command the person ran; Pi sends it to the model as a user
		// message ("!!" commands are excluded from the context).
		if m.ExcludeFromContext {
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Ran `%s`\n", m.Command)
		if m.Output != "" {
			fmt.Fprintf(&b, "```\n%s\n```", strings.TrimRight(string(m.Output), "\n"))
		} else {
			b.WriteString("(no output)")
		}
		if m.Cancelled {
			b.WriteString("\n(command cancelled)")
		} else if code := strings.TrimSpace(string(m.ExitCode)); code != "" && code != "0" && code != "null" {
			fmt.Fprintf(&b, "\nCommand exited with code %s", code)
		}
		piAdd(s, conversation.Message{Role: conversation.RoleUser, ID: id, Text: b.String(), Time: t, Meta: true}, line)
	case "custom", "hookMessage":
		if text := piContent(m.Content, line, rep, "\n\n"); strings.TrimSpace(text) != "" {
			piAdd(s, conversation.Message{Role: conversation.RoleUser, ID: id, Text: text, Time: t, Meta: true}, line)
		}
	case "branchSummary", "compactionSummary":
		if m.Role == "compactionSummary" {
			rep.Compactions++
		}
		if strings.TrimSpace(string(m.Summary)) != "" {
			piAdd(s, conversation.Message{Role: conversation.RoleUser, ID: id, Text: string(m.Summary), Time: t, Meta: true}, line)
			if m.Role == "compactionSummary" {
				s.markCompaction()
			}
		}
	default:
		count(&rep.Unknown, "message/"+string(m.Role))
		rep.problem(line, "message role %q unknown; skipped", m.Role)
	}
}

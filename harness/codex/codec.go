package codex

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// Codec is the Codex rollout format (harness.Codec): its commit format
// codex-v1 holds complete lines of a rollout file; Decode reads them as
// neutral events, line by line; Encode writes events as a rollout the
// real Codex resumes (`codex exec resume ID`); ForSession names the
// session in its session_meta line.
type Codec struct{}

var _ harness.LineReader = Codec{}

// Format is harness.FormatCodex.
func (Codec) Format() harness.Format { return harness.FormatCodex }

// CommitFormat is codex-v1.
func (Codec) CommitFormat() string { return commits.FormatCodex }

// Commit gives codex-v1 Decode, Encode and ForSession.
func (Codec) Commit(f *commits.Format) {
	f.Decode, f.Encode, f.ForSession = Decode, Encode, SetSessionID
}

// Known reports whether t is a rollout line type.
func (Codec) Known(t string) bool { return known(t) }

// Claim: a line with a known rollout type and a payload object is surely
// Codex's (no other format nests its records under "payload").
func (Codec) Claim(rc harness.Record) harness.Claim {
	var h struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(rc.Data, &h) != nil || !known(h.Type) {
		return harness.ClaimNone
	}
	if len(h.Payload) > 0 && h.Payload[0] == '{' {
		return harness.ClaimSure
	}
	return harness.ClaimMaybe
}

// Read is the package's Read.
func (Codec) Read(s *harness.Session, recs []harness.Record) { Read(s, recs) }

// ReadAll reads the file's one conversation (a rollout is one session).
func (Codec) ReadAll(recs []harness.Record, new func() *harness.Session) []*harness.Session {
	s := new()
	Read(s, recs)
	return []*harness.Session{s}
}

// Read reads a rollout's records into s: the conversation Codex resumes.
// Person's prompts are user messages; the user messages Codex writes
// itself (environment context, AGENTS.md) are user messages marked Meta;
// developer messages (Codex's instructions) are skipped; the model's
// consecutive items (text, function calls) form one assistant message;
// function and custom tool outputs are tool results; reasoning is left
// out (counted); a compacted line is a compaction summary.
func Read(s *harness.Session, recs []harness.Record) {
	s.Format = harness.FormatCodex
	rep := &s.Report
	if rep.Types == nil {
		rep.Types = map[string]int{}
	}
	var cur *conversation.Message // the open assistant message
	curLine := 0
	flush := func() {
		if cur != nil {
			s.Messages = append(s.Messages, *cur)
			s.MessageLines = append(s.MessageLines, curLine)
			cur = nil
		}
	}
	add := func(m conversation.Message, line int) {
		flush()
		s.Messages = append(s.Messages, m)
		s.MessageLines = append(s.MessageLines, line)
	}
	for _, rc := range recs {
		l, err := DecodeLine(rc)
		if err != nil {
			rep.Problem(rc.Line, "rollout line does not decode: %v", err)
			continue
		}
		t := string(l.Type)
		rep.Types[t]++
		p := &l.P
		at := harness.ParseTime(string(l.Timestamp))
		switch t {
		case "session_meta":
			if s.ID == "" {
				s.ID, s.Cwd, s.Version = string(p.ID), string(p.Cwd), string(p.CLIVersion)
				if s.ID != "" {
					rep.SessionIDs = append(rep.SessionIDs, s.ID)
				}
			}
		case "turn_context":
			if p.Cwd != "" {
				s.Cwd = string(p.Cwd)
			}
			harness.Count(&rep.Skipped, t)
		case "compacted":
			rep.Compactions++
			add(conversation.Message{Role: conversation.RoleUser, Text: string(p.Message), Time: at, Meta: true}, rc.Line)
			s.MarkCompaction()
		case "response_item":
			if !assistantSide(p) {
				flush()
			}
			switch p.Type {
			case "message":
				body := text(p.Content, &rep.Images)
				switch p.Role {
				case "user":
					add(conversation.Message{Role: conversation.RoleUser, Text: body, Time: at, Meta: Injected(body)}, rc.Line)
				case "assistant":
					if cur == nil {
						cur, curLine = &conversation.Message{Role: conversation.RoleAssistant, ID: string(p.ID), Time: at}, rc.Line
					}
					cur.Text = harness.JoinNonEmpty([]string{cur.Text, body}, "\n\n")
				default:
					harness.Count(&rep.Skipped, "message/"+string(p.Role))
				}
			case "reasoning":
				rep.Thinking++
			case "function_call", "custom_tool_call", "local_shell_call":
				if cur == nil {
					cur, curLine = &conversation.Message{Role: conversation.RoleAssistant, ID: string(p.ID), Time: at}, rc.Line
				}
				tool := toolOf(p)
				cur.ToolCalls = append(cur.ToolCalls, conversation.ToolCall{ID: tool.ID, Name: tool.Name, Args: tool.Input})
			case "function_call_output", "custom_tool_call_output":
				add(conversation.Message{Role: conversation.RoleToolResult, ToolCallID: string(p.CallID), Output: text(p.Output, &rep.Images), Time: at}, rc.Line)
			default:
				harness.Count(&rep.Skipped, "response_item/"+string(p.Type))
			}
		default:
			if known(t) {
				harness.Count(&rep.Skipped, t)
			} else {
				harness.Count(&rep.Unknown, t)
			}
		}
	}
	flush()
	harness.CheckToolResults(s)
}

// toolOf is the tool call a function_call, custom_tool_call or
// local_shell_call item makes.
func toolOf(p *Payload) *events.Tool {
	id := string(p.CallID)
	if id == "" {
		id = string(p.ID)
	}
	switch p.Type {
	case "custom_tool_call":
		return &events.Tool{ID: id, Name: string(p.Name), Input: map[string]any{"input": string(p.Input)}}
	case "local_shell_call":
		return &events.Tool{ID: id, Name: "local_shell", Input: harness.Args(p.Action)}
	}
	return &events.Tool{ID: id, Name: string(p.Name), Input: arguments(p.Arguments)}
}

// Decode reads a codex-v1 artifact as neutral events (docs/import.md
// "Events"): session_meta is system/init (a sub-agent's parent thread
// in its metadata, parent_thread); a person's message a prompt
// (Source "user"), a user message Codex wrote a prompt with Source
// "system" marked Meta, a developer message system/developer; the model's
// consecutive items share one message id (the first item's): text is a
// response, reasoning thinking (its summary as text, the encrypted
// content in metadata), function, custom and local shell calls tool calls
// (custom calls say so in metadata); their outputs tool results;
// compacted a compaction summary; turn_context system/turn_context with
// its model; token_usage_record a metric with the usage; an event_msg
// error an error event; other known lines output events; unknown lines
// output events with the line in Raw. Damaged lines give output/damaged
// events.
func Decode(b []byte) ([]events.Event, error) {
	var out []events.Event
	d := decoder{}
	harness.EachRecord(b, known, func(rc harness.Record) {
		l, err := DecodeLine(rc)
		if err != nil {
			out = append(out, events.Event{Type: events.Output, Subtype: "damaged", Text: "rollout line does not decode: " + err.Error(), Raw: rc.Data})
			return
		}
		out = d.line(out, l)
	}, func(p harness.Problem) {
		out = append(out, events.Event{Type: events.Output, Subtype: "damaged", Text: p.String()})
	})
	if out == nil {
		out = []events.Event{}
	}
	return sanitize(out), nil
}

// decoder is the state Decode keeps across the lines of one artifact.
type decoder struct {
	msgID string // the open model turn's message id
	model string
	names map[string]string // call id -> tool name
}

func (d *decoder) line(out []events.Event, l *Line) []events.Event {
	p := &l.P
	base := events.Event{Time: harness.ParseTime(string(l.Timestamp))}
	ev := func(x events.Event) events.Event {
		x.Time = base.Time
		return x
	}
	t := string(l.Type)
	if t != "response_item" || !assistantSide(p) {
		if t == "response_item" || t == "compacted" {
			d.msgID = ""
		}
	}
	switch t {
	case "session_meta":
		md := map[string]any{}
		for k, v := range map[string]string{"session": string(p.ID), "cwd": string(p.Cwd), "cli_version": string(p.CLIVersion),
			"originator": string(p.Originator), "model_provider": string(p.ModelProvider), "parent_thread": parentThread(p)} {
			if v != "" {
				md[k] = v
			}
		}
		return append(out, ev(events.Event{Type: events.System, Subtype: "init", ID: string(p.ID), Metadata: md}))
	case "turn_context":
		if p.Model != "" {
			d.model = string(p.Model)
		}
		var md map[string]any
		if p.Cwd != "" {
			md = map[string]any{"cwd": string(p.Cwd)}
		}
		return append(out, ev(events.Event{Type: events.System, Subtype: "turn_context", Model: string(p.Model), Metadata: md}))
	case "compacted":
		return d.compacted(out, ev, l)
	case "token_usage_record":
		x := events.Event{Type: events.Metric, Subtype: "usage", Model: d.model}
		if u := p.Usage; u != nil {
			x.Usage = &conversation.Usage{Input: int64(u.Input) - int64(u.Cached), Output: int64(u.Output), CacheRead: int64(u.Cached), CacheWrite: int64(u.CacheWrite)}
			if x.Usage.Input < 0 {
				x.Usage.Input = 0
			}
		}
		return append(out, ev(x))
	case "event_msg":
		if p.Type == "error" || p.Type == "stream_error" {
			return append(out, ev(events.Event{Type: events.Error, Subtype: string(p.Type), Text: string(p.Message)}))
		}
		return append(out, ev(events.Event{Type: events.Output, Subtype: "event_msg/" + string(p.Type)}))
	case "response_item":
		return d.item(out, ev, l)
	}
	if known(t) {
		return append(out, ev(events.Event{Type: events.Output, Subtype: t}))
	}
	return append(out, ev(events.Event{Type: events.Output, Subtype: "unknown/" + t, Raw: l.Data}))
}

// compacted decodes a compacted line: its summary as a compaction
// summary; with a replacement history (Codex's local compaction: the
// items it resumes with instead of what came before), those items as
// events marked "codex_replacement_history", the user message holding
// the summary read as the summary itself (Codex puts it there).
func (d *decoder) compacted(out []events.Event, ev func(events.Event) events.Event, l *Line) []events.Event {
	p := &l.P
	summary := events.Event{Type: events.System, Subtype: events.SubtypeCompactionSummary, Text: string(p.Message), Meta: true}
	items := p.Replacement()
	if len(items) == 0 {
		return append(out, ev(summary))
	}
	inHistory := false
	for i := range items {
		if items[i].Type == "message" && items[i].Role == "user" && p.Message != "" && strings.Contains(text(items[i].Content, nil), string(p.Message)) {
			inHistory = true
		}
	}
	if !inHistory {
		out = append(out, ev(summary))
	}
	mark := func(x events.Event) events.Event {
		if x.Metadata == nil {
			x.Metadata = map[string]any{}
		}
		x.Metadata["codex_replacement_history"] = true
		return ev(x)
	}
	for i := range items {
		it := &items[i]
		if it.Type == "message" && it.Role == "user" && p.Message != "" && strings.Contains(text(it.Content, nil), string(p.Message)) {
			s := summary
			s.Text = text(it.Content, nil)
			out = append(out, mark(s))
			continue
		}
		raw, _ := json.Marshal(it)
		if !assistantSide(it) {
			d.msgID = ""
		}
		out = d.item(out, mark, &Line{Timestamp: l.Timestamp, Type: "response_item", P: *it, Data: raw})
	}
	d.msgID = ""
	return out
}

func (d *decoder) item(out []events.Event, ev func(events.Event) events.Event, l *Line) []events.Event {
	p := &l.P
	if assistantSide(p) && d.msgID == "" {
		d.msgID = string(p.ID)
		if d.msgID == "" {
			d.msgID = string(p.CallID)
		}
		if d.msgID == "" {
			d.msgID = "codex-" + commits.ContentHash(l.Data)[:16]
		}
	}
	model := func(x events.Event) events.Event {
		x.Source, x.Model, x.MessageID = "assistant", d.model, d.msgID
		return ev(x)
	}
	switch p.Type {
	case "message":
		body := text(p.Content, nil)
		switch p.Role {
		case "user":
			if Injected(body) {
				return append(out, ev(events.Event{Type: events.Prompt, Source: "system", Text: body, Meta: true}))
			}
			return append(out, ev(events.Event{Type: events.Prompt, Source: "user", Text: body}))
		case "assistant":
			return append(out, model(events.Event{Type: events.Response, Text: body}))
		case "developer", "system":
			return append(out, ev(events.Event{Type: events.System, Subtype: string(p.Role), Text: body}))
		}
	case "reasoning":
		var parts []contentPart
		_ = json.Unmarshal(p.Summary, &parts)
		var texts []string
		for _, x := range parts {
			texts = append(texts, string(x.Text))
		}
		x := events.Event{Type: events.Thinking, Text: strings.Join(texts, "\n\n")}
		if p.EncryptedContent != "" {
			x.Metadata = map[string]any{"codex_encrypted_content": string(p.EncryptedContent)}
		}
		return append(out, model(x))
	case "function_call", "custom_tool_call", "local_shell_call":
		tool := toolOf(p)
		if d.names == nil {
			d.names = map[string]string{}
		}
		d.names[tool.ID] = tool.Name
		x := events.Event{Type: events.ToolCall, Tool: tool}
		if p.Type != "function_call" {
			x.Metadata = map[string]any{"codex_item": string(p.Type)}
		}
		return append(out, model(x))
	case "function_call_output", "custom_tool_call_output":
		var res struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		body := text(p.Output, nil)
		isErr := false
		if json.Unmarshal(p.Output, &res) == nil && len(res.Content) > 0 {
			body = text(res.Content, nil)
			isErr = res.Success != nil && !*res.Success
		}
		x := events.Event{Type: events.ToolResult, Tool: &events.Tool{ID: string(p.CallID), Name: d.names[string(p.CallID)]}, Result: &events.Result{Content: body, IsError: isErr, Blocks: imageBlocks(p.Output)}}
		if p.Type != "function_call_output" {
			x.Metadata = map[string]any{"codex_item": string(p.Type)}
		}
		return append(out, ev(x))
	}
	return append(out, ev(events.Event{Type: events.Output, Subtype: "response_item/" + string(p.Type), Raw: l.Data}))
}

// imageBlocks is a tool output's content list as Messages API blocks when
// it holds an image (nil otherwise): text parts as text blocks, data-URL
// images as base64 image blocks, other images as recorded.
func imageBlocks(raw json.RawMessage) []any {
	var parts []map[string]any
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	images := false
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p["type"] {
		case "input_text", "output_text", "text":
			out = append(out, map[string]any{"type": "text", "text": p["text"]})
		case "input_image":
			images = true
			u, _ := p["image_url"].(string)
			if rest, ok := strings.CutPrefix(u, "data:"); ok {
				if i := strings.Index(rest, ";base64,"); i >= 0 {
					out = append(out, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": rest[:i], "data": rest[i+len(";base64,"):]}})
					continue
				}
			}
			out = append(out, p)
		default:
			out = append(out, p)
		}
	}
	if !images {
		return nil
	}
	return out
}

// sanitize turns events that would not validate (a tool call or result
// without its id) into output events that keep what they said, so that a
// decoded artifact always encodes.
func sanitize(evs []events.Event) []events.Event {
	for i, e := range evs {
		if err := e.Validate(); err != nil {
			md := map[string]any{"invalid": err.Error(), "type": string(e.Type)}
			if e.Tool != nil && e.Tool.Name != "" {
				md["tool"] = e.Tool.Name
			}
			t := e.Text
			if e.Result != nil {
				t = e.Result.Content
			}
			evs[i] = events.Event{Type: events.Output, Subtype: "invalid", Time: e.Time, Text: t, Metadata: md}
		}
	}
	return evs
}

// Head is what the importer needs of a rollout line to cut a file into
// commits.
type Head struct {
	Type string
	// ItemType is a response item's or event message's type.
	ItemType  string
	Role      string
	Timestamp string
	// Session, Cwd and Version are session_meta's.
	Session, Cwd, Version string
	// Model is a turn_context's.
	Model string
	// Text is a person's prompt (a user message Codex did not write) or a
	// compaction's summary.
	Text string
	// Prompt: the line is a person's prompt; Injected: a user message
	// Codex wrote.
	Prompt, Injected bool
	// Parent is a sub-agent's parent thread (session_meta).
	Parent string
	// Spawn is the call id of a spawn_agent call; Agent, with it, the
	// sub-agent a call's output names ({"agent_id": ...}).
	Spawn, Agent string
}

// ReadHead reads a line's head.
func ReadHead(data []byte) (Head, bool) {
	l, err := DecodeLine(harness.Record{Data: data})
	if err != nil {
		return Head{}, false
	}
	p := &l.P
	h := Head{Type: string(l.Type), ItemType: string(p.Type), Role: string(p.Role), Timestamp: string(l.Timestamp)}
	switch h.Type {
	case "session_meta":
		h.Session, h.Cwd, h.Version = string(p.ID), string(p.Cwd), string(p.CLIVersion)
		h.Parent = parentThread(p)
	case "turn_context":
		h.Model, h.Cwd = string(p.Model), string(p.Cwd)
	case "compacted":
		h.Text = string(p.Message)
	case "response_item":
		switch {
		case p.Type == "message" && p.Role == "user":
			h.Text = text(p.Content, nil)
			h.Injected = Injected(h.Text)
			h.Prompt = !h.Injected
		case p.Type == "function_call" && p.Name == "spawn_agent":
			h.Spawn = string(p.CallID)
		case p.Type == "function_call_output":
			var out struct {
				AgentID string `json:"agent_id"`
			}
			var s string
			if json.Unmarshal(p.Output, &s) == nil && json.Unmarshal([]byte(s), &out) == nil && out.AgentID != "" {
				h.Spawn, h.Agent = string(p.CallID), out.AgentID
			}
		}
	}
	return h, true
}

// parentThread is the thread that spawned a sub-agent's session: Codex
// 0.171.0 writes it as parent_thread_id and in its source,
// {"subagent": {"thread_spawn": {"parent_thread_id": ...}}}.
func parentThread(p *Payload) string {
	if p.ParentThreadID != "" {
		return string(p.ParentThreadID)
	}
	var src struct {
		Subagent struct {
			ThreadSpawn struct {
				Parent string `json:"parent_thread_id"`
			} `json:"thread_spawn"`
		} `json:"subagent"`
	}
	if len(p.Source) > 0 && p.Source[0] == '{' && json.Unmarshal(p.Source, &src) == nil {
		return src.Subagent.ThreadSpawn.Parent
	}
	return ""
}

// FindRollout is the rollout of thread near the rollout at path: in its
// folder, or in any day folder of the sessions tree it is in
// (sessions/YYYY/MM/DD); "" when none is there.
func FindRollout(path, thread string) string {
	for _, r := range thread {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return "" // not a thread id: nothing to look for
		}
	}
	if thread == "" {
		return ""
	}
	dir := filepath.Dir(path)
	name := "rollout-*-" + thread + ".jsonl"
	for _, pat := range []string{filepath.Join(dir, name), filepath.Join(dir, "..", "..", "..", "*", "*", "*", name)} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return filepath.Clean(m[0])
		}
	}
	return ""
}

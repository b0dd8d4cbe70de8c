// Package sweagent reads SWE-agent trajectories (`.traj` files) into the
// harness-neutral transcript (harness.Session), as harness/claudecode and
// harness/pi read their harnesses' session logs.
//
// A `.traj` file is one JSON document, not JSON Lines:
//
//	{"environment": ..., "trajectory": [step...], "history": [message...],
//	 "info": {"exit_status", "submission", "model_stats", ...},
//	 "replay_config": ... (a JSON string or object, newer versions)}
//
// `history` is the exact message list SWE-agent sent to the model, and it is
// what the reader turns into messages:
//
//   - the system message becomes Session.SystemPrompt (the neutral
//     conversation has no system role; later system messages become Meta
//     user messages);
//   - a user message marked is_demo (the demonstration SWE-agent puts in
//     the prompt) is a Meta user message; the first other user message (the
//     task: the issue text in SWE-agent's instance template) is the one
//     human prompt; a user message that follows an action is that action's
//     observation, its tool result; any other user message is Meta (the
//     harness made it);
//   - an assistant message is its thought as text and its action as one
//     tool call. Function-calling trajectories carry the call (tool_calls,
//     with the provider's id, name and JSON arguments) and answer it with
//     a "tool" message (tool_call_ids); older ones carry only the action, a
//     command line: the call is named after its first word when the system
//     prompt documents that word as a SWE-agent command (open, edit,
//     create, submit, ...), "bash" otherwise, with the whole action as
//     {"command": action} and the id "action-N" (N counts actions from 1).
//
// The last observation of an older trajectory (the output of `submit`) is
// not in history, since it was never sent to the model; it is taken from the
// last trajectory step when that step's action is the last action
// (Report.Attached). A file without history gets its messages from
// `trajectory` (a thought and action per step, then its observation), with
// a problem saying so.
//
// Model: replay_config's agent.model.name, on every assistant message.
// Version: info.swe_agent_version when present. Cwd: the working_dir of the
// last step's state. No trajectory in the datasets records times, so
// messages have none. Usage is recorded only as totals (info.model_stats):
// Info returns it, with the outcome (exit_status, submission).
//
// Damage: the document is read with a streaming decoder, element by element,
// so a truncated or damaged document gives every message before the damage
// and a problem naming its line and column; an element that is not a
// message, or a field of the wrong type, is reported with its line and read
// past. The reader never panics.
package sweagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// MaxBytes bounds a trajectory: a larger document is refused (reported)
// without being read into memory.
const MaxBytes = 256 << 20

// Info is what a trajectory records about its run besides the messages.
type Info struct {
	// ExitStatus is info.exit_status ("submitted", "exit_cost",
	// "exit_format", "early_exit", "submitted (exit_cost)", ...).
	ExitStatus string `json:"exit_status,omitempty"`
	// Submission is the patch or flag submitted.
	Submission string `json:"submission,omitempty"`
	// Model is replay_config's agent.model.name.
	Model string `json:"model,omitempty"`
	// TokensSent, TokensReceived, APICalls and Cost are info.model_stats:
	// totals for the run (zero in the curated demonstrations).
	TokensSent     int64   `json:"tokens_sent,omitempty"`
	TokensReceived int64   `json:"tokens_received,omitempty"`
	APICalls       int64   `json:"api_calls,omitempty"`
	Cost           float64 `json:"cost,omitempty"`
	// Environment is the "environment" field (the container's name).
	Environment string `json:"environment,omitempty"`
	// Steps is the number of trajectory steps.
	Steps int `json:"steps"`
}

// Looks tells whether head (the first bytes of a file) is the start of a
// SWE-agent trajectory rather than a JSON Lines log: one JSON object whose
// first line holds only its opening brace (SWE-agent writes it indented), or
// whose first key is one of a trajectory's.
func Looks(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return false
	}
	j := i + 1
	for j < len(head) && isSpace(head[j]) {
		if head[j] == '\n' {
			return true // "{" alone on its line: an indented document
		}
		j++
	}
	for _, k := range []string{"environment", "trajectory", "history", "info", "replay_config"} {
		if bytes.HasPrefix(head[j:], []byte(`"`+k+`"`)) {
			return true
		}
	}
	return false
}

// ReadAll reads a trajectory from r into s (s.Report's counts and
// problems included) and returns its Info. The error is an I/O error only.
func ReadAll(s *harness.Session, r io.Reader) (Info, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return Info{}, fmt.Errorf("sweagent: reading: %w", err)
	}
	if len(data) > MaxBytes {
		s.Report.Problem(1, "the trajectory is over %d bytes, the limit; not read", MaxBytes)
		return Info{}, nil
	}
	return Read(s, data), nil
}

// lineIndex maps byte offsets to 1-based lines and columns.
type lineIndex struct {
	nl    []int // offsets of the newlines
	lines int   // lines in the input (a last line without a newline counts)
}

func newLineIndex(data []byte) lineIndex {
	var li lineIndex
	for i, c := range data {
		if c == '\n' {
			li.nl = append(li.nl, i)
		}
	}
	li.lines = len(li.nl)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		li.lines++
	}
	return li
}

// line is the line of the byte at off (the last line for the end of the
// input).
func (li lineIndex) line(off int64) int {
	l := sort.Search(len(li.nl), func(i int) bool { return int64(li.nl[i]) >= off }) + 1
	return max(min(l, li.lines), 1)
}

func (li lineIndex) col(off int64) int {
	l := li.line(off)
	if l == 1 {
		return int(off) + 1
	}
	return int(off) - li.nl[l-2]
}

// element is one value of an array, with its line.
type element struct {
	line int
	data json.RawMessage
}

// doc is the top level of a trajectory, as far as it could be read.
type doc struct {
	history, steps     []element
	hasHistory         bool
	info, replayConfig json.RawMessage
	environment        json.RawMessage
	infoLine           int
}

// Read turns a trajectory's bytes into s and returns its Info. Damage is
// reported in s.Report.Problems with its line.
func Read(s *harness.Session, data []byte) Info {
	rep := &s.Report
	if rep.Types == nil {
		rep.Types = map[string]int{}
	}
	s.Format = harness.FormatSWEAgent
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	li := newLineIndex(data)
	rep.Lines = li.lines
	d := parse(data, li, rep)
	var info Info
	info.Steps = len(d.steps)
	decodeInfo(d, &info, s)
	r := reader{s: s, model: info.Model, commands: map[string]bool{}}
	if d.hasHistory && len(d.history) > 0 {
		for _, el := range d.history {
			r.history(el)
		}
		r.finalSteps(d.steps)
	} else if len(d.steps) > 0 {
		rep.Problem(1, "no history in the trajectory; messages rebuilt from its %d steps (no system prompt, no task)", len(d.steps))
		for _, el := range d.steps {
			r.step(el)
		}
	}
	if len(d.steps) > 0 {
		s.Cwd = workingDir(d.steps[len(d.steps)-1].data)
	}
	if len(r.agents) > 1 {
		rep.Problem(1, "history holds %d agents (%s); the messages of %q are read, the others set aside (Sidechain)",
			len(r.agents), strings.Join(r.agents, ", "), r.agents[0])
	}
	rep.Records = len(d.history) + len(d.steps)
	return info
}

// parse reads the top-level object element by element. It stops at the
// first syntax error, reporting it; what was read before stays.
func parse(data []byte, li lineIndex, rep *harness.Report) doc {
	var d doc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// fail reports err; base is where the value being decoded began (a
	// SyntaxError's offset counts from there), -1 for a token.
	fail := func(err error, what string, base int64) {
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) && base >= 0 {
			// The decoder's offsets count from its buffer: scan the value
			// again on its own to find the byte at fault.
			b := skipSpaceComma(data, base)
			var v any
			if err := json.Unmarshal(data[b:], &v); errors.As(err, &se) {
				off = b + se.Offset - 1
			}
		}
		off = min(max(off, 0), int64(len(data)))
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			rep.Problem(li.line(int64(len(data))), "the document ends early, in %s (the file is one JSON document, truncated); what was read before is kept", what)
			return
		}
		rep.Problem(li.line(off), "invalid JSON at line %d column %d, in %s: %v; the rest of the document (%d bytes) is not read",
			li.line(off), li.col(off), what, err, len(data)-int(off))
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return d // empty
		}
		fail(err, "the document", -1)
		return d
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		rep.Problem(1, "not a SWE-agent trajectory: the document is not a JSON object (it starts with %.40v)", tok)
		return d
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			fail(err, "the top-level object", -1)
			return d
		}
		key, _ := tok.(string)
		keyLine := li.line(dec.InputOffset())
		switch key {
		case "history", "trajectory":
			els, ok := readArray(dec, data, li, rep, key, fail)
			if key == "history" {
				d.history, d.hasHistory = append(d.history, els...), true
			} else {
				d.steps = append(d.steps, els...)
			}
			if !ok {
				return d
			}
		default:
			var v json.RawMessage
			base := dec.InputOffset()
			if err := dec.Decode(&v); err != nil {
				fail(err, fmt.Sprintf("%q", key), base)
				return d
			}
			switch key {
			case "info":
				d.info, d.infoLine = v, keyLine
			case "replay_config":
				d.replayConfig = v
			case "environment":
				d.environment = v
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		fail(err, "the top-level object", -1)
		return d
	}
	if off := skipSpace(data, int(dec.InputOffset())); off < len(data) {
		rep.Problem(li.line(int64(off)), "more data after the trajectory's object, at line %d column %d (the file is one JSON document, not JSON Lines); not read", li.line(int64(off)), li.col(int64(off)))
	}
	return d
}

// readArray reads the array value of key element by element; ok is false
// when the document is damaged inside it (reading stops).
func readArray(dec *json.Decoder, data []byte, li lineIndex, rep *harness.Report, key string, fail func(error, string, int64)) (els []element, ok bool) {
	tok, err := dec.Token()
	if err != nil {
		fail(err, fmt.Sprintf("%q", key), -1)
		return nil, false
	}
	if delim, isDelim := tok.(json.Delim); !isDelim || delim != '[' {
		if isDelim { // an object: skip it whole
			depth := 1
			for depth > 0 {
				t, err := dec.Token()
				if err != nil {
					fail(err, fmt.Sprintf("%q", key), -1)
					return nil, false
				}
				if d, isD := t.(json.Delim); isD {
					if d == '{' || d == '[' {
						depth++
					} else {
						depth--
					}
				}
			}
		}
		rep.Problem(li.line(dec.InputOffset()), "%q is not an array; ignored", key)
		return nil, true
	}
	for dec.More() {
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			fail(err, fmt.Sprintf("%q element %d", key, len(els)), start)
			return els, false
		}
		// The element starts after the comma and spaces that precede it.
		els = append(els, element{line: li.line(skipSpaceComma(data, start)), data: v})
	}
	if _, err := dec.Token(); err != nil {
		fail(err, fmt.Sprintf("%q", key), -1)
		return els, false
	}
	return els, true
}

func decodeInfo(d doc, info *Info, s *harness.Session) {
	rep := &s.Report
	var env harness.Str
	_ = json.Unmarshal(d.environment, &env)
	info.Environment = string(env)
	if len(d.info) > 0 {
		var in struct {
			ExitStatus harness.Str `json:"exit_status"`
			Submission harness.Str `json:"submission"`
			Version    harness.Str `json:"swe_agent_version"`
			Stats      struct {
				TokensSent     harness.Num     `json:"tokens_sent"`
				TokensReceived harness.Num     `json:"tokens_received"`
				APICalls       harness.Num     `json:"api_calls"`
				Cost           json.RawMessage `json:"instance_cost"`
			} `json:"model_stats"`
		}
		if err := json.Unmarshal(d.info, &in); err != nil {
			rep.Problem(d.infoLine, "\"info\" does not decode: %v; ignored", err)
		} else {
			info.ExitStatus, info.Submission = string(in.ExitStatus), string(in.Submission)
			info.TokensSent, info.TokensReceived, info.APICalls = int64(in.Stats.TokensSent), int64(in.Stats.TokensReceived), int64(in.Stats.APICalls)
			var c float64
			if json.Unmarshal(in.Stats.Cost, &c) == nil && c > 0 {
				info.Cost = c
			}
			s.Version = string(in.Version)
		}
	}
	rc := d.replayConfig
	var str string
	if json.Unmarshal(rc, &str) == nil {
		rc = json.RawMessage(str) // older versions write the config as a JSON string
	}
	var cfg struct {
		Agent struct {
			Model struct {
				Name harness.Str `json:"name"`
			} `json:"model"`
		} `json:"agent"`
	}
	if len(rc) > 0 && json.Unmarshal(rc, &cfg) == nil {
		info.Model = string(cfg.Agent.Model.Name)
	}
}

func workingDir(step json.RawMessage) string {
	var st struct {
		State json.RawMessage `json:"state"`
	}
	if json.Unmarshal(step, &st) != nil {
		return ""
	}
	state := st.State
	var str string
	if json.Unmarshal(state, &str) == nil {
		state = json.RawMessage(str) // older versions write the state as a JSON string
	}
	var s struct {
		WorkingDir harness.Str `json:"working_dir"`
	}
	if json.Unmarshal(state, &s) != nil {
		return ""
	}
	return string(s.WorkingDir)
}

// histMsg is one message of history.
type histMsg struct {
	Role        harness.Str     `json:"role"`
	Content     json.RawMessage `json:"content"`
	Thought     harness.Str     `json:"thought"`
	Action      harness.Str     `json:"action"`
	Agent       harness.Str     `json:"agent"`
	IsDemo      json.RawMessage `json:"is_demo"`
	ToolCalls   json.RawMessage `json:"tool_calls"`
	ToolCallIDs json.RawMessage `json:"tool_call_ids"`
}

type reader struct {
	s        *harness.Session
	model    string
	commands map[string]bool // SWE-agent commands the system prompt documents
	agents   []string
	actions  int
	pending  []string // tool-call ids of the last assistant message, not answered yet
	pendName map[string]string
	task     bool // the task prompt was seen
	lastAct  string
	seen     map[string]int    // tool-call ids used, with the line of their first use
	renamed  map[string]string // the pending calls' ids as the file writes them -> as read
}

func (r *reader) add(m conversation.Message, line int) {
	r.s.Messages = append(r.s.Messages, m)
	r.s.MessageLines = append(r.s.MessageLines, line)
}

var commandDoc = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_\-]*):\n  (?:docstring|signature):`)

func (r *reader) history(el element) {
	rep := &r.s.Report
	if err := jsonlimit.Depth(el.data, jsonlimit.MaxDepth); err != nil {
		rep.Problem(el.line, "history message: %v; skipped", err)
		return
	}
	var m histMsg
	if err := json.Unmarshal(el.data, &m); err != nil {
		rep.Problem(el.line, "history message does not decode (%v); skipped", err)
		return
	}
	role := string(m.Role)
	rep.Types[role]++
	agent := string(m.Agent)
	if !contains(r.agents, agent) {
		r.agents = append(r.agents, agent)
	}
	if agent != r.agents[0] {
		rep.Sidechain++
		return
	}
	text := contentText(m.Content, rep)
	switch role {
	case "system":
		if r.s.SystemPrompt == "" {
			r.s.SystemPrompt = text
			for _, c := range commandDoc.FindAllStringSubmatch(text, -1) {
				r.commands[c[1]] = true
			}
			return
		}
		r.add(conversation.Message{Role: conversation.RoleUser, Text: text, Meta: true}, el.line)
	case "user":
		demo := isTrue(m.IsDemo)
		switch {
		case demo:
			r.add(conversation.Message{Role: conversation.RoleUser, Text: text, Meta: true}, el.line)
		case len(r.pending) > 0:
			id := r.pending[0]
			r.pending = r.pending[1:]
			r.add(conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: r.pendName[id], Output: text}, el.line)
		default:
			r.add(conversation.Message{Role: conversation.RoleUser, Text: text, Meta: r.task}, el.line)
			r.task = true
		}
	case "tool":
		var ids []string
		if len(m.ToolCallIDs) > 0 && json.Unmarshal(m.ToolCallIDs, &ids) != nil {
			var one string
			if json.Unmarshal(m.ToolCallIDs, &one) == nil {
				ids = []string{one}
			} else {
				rep.Problem(el.line, "tool message: tool_call_ids is not a list of ids")
			}
		}
		if len(ids) == 0 && len(r.pending) > 0 {
			ids = r.pending[:1]
		}
		if len(ids) == 0 {
			rep.Problem(el.line, "tool message without tool_call_ids and no call to answer; kept as a Meta user message")
			r.add(conversation.Message{Role: conversation.RoleUser, Text: text, Meta: true}, el.line)
			return
		}
		for _, id := range ids {
			if nid, ok := r.renamed[id]; ok {
				id = nid
			}
			r.add(conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: r.pendName[id], Output: text}, el.line)
			r.pending = remove(r.pending, id)
		}
	case "assistant":
		r.assistant(m, text, el.line)
	default:
		harness.Count(&rep.Unknown, role)
		rep.Problem(el.line, "history message with role %q; skipped", role)
	}
}

func (r *reader) assistant(m histMsg, content string, line int) {
	rep := &r.s.Report
	text := string(m.Thought)
	if text == "" && m.Thought == "" && len(m.ToolCalls) == 0 && m.Action == "" {
		text = content
	}
	out := conversation.Message{Role: conversation.RoleAssistant, Text: strings.TrimRight(text, "\n"), Model: r.model}
	r.pending, r.pendName, r.renamed = nil, map[string]string{}, map[string]string{}
	if r.seen == nil {
		r.seen = map[string]int{}
	}
	if raw := bytes.TrimSpace(m.ToolCalls); len(raw) > 0 && string(raw) != "null" {
		var calls []struct {
			ID       harness.Str `json:"id"`
			Function struct {
				Name      harness.Str     `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &calls); err != nil {
			rep.Problem(line, "assistant message: tool_calls does not decode (%v); the action is read instead", err)
		}
		for i, c := range calls {
			r.actions++
			id := string(c.ID)
			if id == "" {
				id = fmt.Sprintf("action-%d", r.actions)
				rep.Problem(line, "assistant message: tool call %d has no id; named %s", i, id)
			}
			if first, dup := r.seen[id]; dup {
				// SWE-agent's replayed demonstrations reuse call ids: each
				// use is its own call, given its own id.
				n := 2
				for r.seen[fmt.Sprintf("%s-%d", id, n)] != 0 {
					n++
				}
				nid := fmt.Sprintf("%s-%d", id, n)
				rep.Problem(line, "tool call id %q used again (first at line %d); read as %q", id, first, nid)
				r.renamed[id] = nid
				id = nid
			}
			r.seen[id] = line
			args := c.Function.Arguments
			var s string
			if json.Unmarshal(args, &s) == nil {
				args = json.RawMessage(s) // OpenAI's arguments: a JSON string
			}
			a := harness.Args(args)
			if a == nil && len(bytes.TrimSpace(args)) > 0 {
				a = map[string]any{"input": string(args)}
			}
			out.ToolCalls = append(out.ToolCalls, conversation.ToolCall{ID: id, Name: string(c.Function.Name), Args: a})
		}
	}
	if len(out.ToolCalls) == 0 && strings.TrimSpace(string(m.Action)) != "" {
		r.actions++
		action := string(m.Action)
		out.ToolCalls = []conversation.ToolCall{{ID: fmt.Sprintf("action-%d", r.actions), Name: r.toolName(action),
			Args: map[string]any{"command": action}}}
	}
	for _, c := range out.ToolCalls {
		r.pending = append(r.pending, c.ID)
		r.pendName[c.ID] = c.Name
	}
	r.lastAct = string(m.Action)
	r.add(out, line)
}

// toolName names an action: its first word when the system prompt
// documents it as a command, "bash" otherwise.
func (r *reader) toolName(action string) string {
	f := strings.Fields(action)
	if len(f) > 0 && r.commands[f[0]] {
		return f[0]
	}
	return "bash"
}

// finalSteps completes history from the trajectory: history ends before
// the last observation (never sent to the model), and some versions leave
// the last step (the model's `submit`) out of it. The step of history's
// last action is the last step with that action (curated demonstrations
// hold steps that history does not, so steps are not counted); the
// observation of that step answers the action when history does not, and
// the steps after it are added as an assistant message and its
// observation. Each counts in Report.Attached.
func (r *reader) finalSteps(steps []element) {
	if r.actions == 0 {
		return
	}
	at := -1
	for j := len(steps) - 1; j >= 0; j-- {
		if strings.TrimSpace(stepOf(steps[j].data).Action) == strings.TrimSpace(r.lastAct) {
			at = j
			break
		}
	}
	if at < 0 {
		return
	}
	if len(r.pending) > 0 {
		id := r.pending[0]
		r.pending = r.pending[1:]
		r.s.Report.Attached++
		r.add(conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: r.pendName[id],
			Output: stepOf(steps[at].data).Observation}, steps[at].line)
	}
	if len(r.pending) > 0 {
		return
	}
	for _, el := range steps[at+1:] {
		r.s.Report.Attached++
		r.step(el)
	}
}

type stepFields struct {
	Thought     harness.Str `json:"thought"`
	Response    harness.Str `json:"response"`
	Action      harness.Str `json:"action"`
	Observation harness.Str `json:"observation"`
}

type step struct{ Thought, Response, Action, Observation string }

func stepOf(data json.RawMessage) step {
	var f stepFields
	_ = json.Unmarshal(data, &f)
	return step{string(f.Thought), string(f.Response), string(f.Action), string(f.Observation)}
}

// step turns one trajectory step into an assistant message and its
// observation (files without history).
func (r *reader) step(el element) {
	rep := &r.s.Report
	if err := jsonlimit.Depth(el.data, jsonlimit.MaxDepth); err != nil {
		rep.Problem(el.line, "trajectory step: %v; skipped", err)
		return
	}
	var f stepFields
	if err := json.Unmarshal(el.data, &f); err != nil {
		rep.Problem(el.line, "trajectory step does not decode (%v); skipped", err)
		return
	}
	st := stepOf(el.data)
	rep.Types["step"]++
	r.assistant(histMsg{Thought: harness.Str(st.Thought), Action: harness.Str(st.Action)}, st.Response, el.line)
	if len(r.pending) > 0 {
		id := r.pending[0]
		r.pending = r.pending[1:]
		r.add(conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: r.pendName[id], Output: st.Observation}, el.line)
	}
}

// contentText is a message's content: a string, or a list of content
// blocks (newer versions) whose text blocks are joined with a blank line;
// images become a note.
func contentText(raw json.RawMessage, rep *harness.Report) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type     harness.Str `json:"type"`
		Text     harness.Str `json:"text"`
		ImageURL struct {
			URL harness.Str `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "image_url", "image":
			rep.Images++
			parts = append(parts, harness.ImageNote("", len(b.ImageURL.URL)))
		default:
			parts = append(parts, string(b.Text))
		}
	}
	return harness.JoinNonEmpty(parts, "\n\n")
}

func isTrue(raw json.RawMessage) bool {
	s := strings.ToLower(strings.Trim(string(bytes.TrimSpace(raw)), `"`))
	return s == "true" || s == "1"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func remove(list []string, s string) []string {
	for i, x := range list {
		if x == s {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipSpaceComma skips the spaces and commas at off.
func skipSpaceComma(data []byte, off int64) int64 {
	for off < int64(len(data)) && (isSpace(data[off]) || data[off] == ',' || data[off] == ':') {
		off++
	}
	return off
}

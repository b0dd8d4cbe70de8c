package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// CLIVersion is the Codex version whose rollouts Encode writes (the
// session_meta's cli_version); the end-to-end test resumes them with it.
const CLIVersion = "0.171.0"

// epoch stands in for unknown times.
var epoch = time.Unix(0, 0).UTC()

// Encode writes events as a Codex rollout: a session_meta line (the id
// derived from the content until ForSession names the session, no cwd
// until SetCwd gives one) and one response_item line per item. Prompts
// (compaction summaries and narratives included) become user messages;
// Codex's own injected context and developer messages are left out (the
// resuming Codex writes its own); responses become assistant messages;
// tool calls map to Codex's tools where one exists (MapTool): a shell
// command or a file read becomes an exec_command function call, Codex's
// own calls stay as they were; a call with no Codex counterpart, and its
// result, become text the model reads (an assistant message naming the
// call and its input, a user message with its result). A call that never
// got a result gets one saying so (the Responses API refuses a call
// without its output). Images a result recorded (Claude Code's or Pi's
// image blocks) follow its text as input_image parts, which Codex sends. Thinking crosses only when it is Codex's own
// (its encrypted content kept); metrics, errors and other system events
// have no rollout item and are left out, as are a sub-agent's events
// (metadata "sidechain") and those the harness kept out of the model's
// context ("exclude_from_context") (docs/crossharness.md).
func Encode(evs []events.Event) ([]byte, error) {
	b, _, err := EncodeLost(evs)
	return b, err
}

// Lost counts what Encode left out, restated or made up.
type Lost struct {
	// Thinking blocks of other providers (no Codex encrypted content).
	Thinking int `json:"thinking,omitempty"`
	// Events with no rollout item: system events other than compaction
	// summaries and narratives, metrics, errors, outputs.
	Events int `json:"events,omitempty"`
	// Excluded: a sub-agent's events and events kept out of context.
	Excluded int `json:"excluded,omitempty"`
	// AsText: tool calls with no Codex counterpart, written as text (with
	// their results).
	AsText int `json:"as_text,omitempty"`
	// Unanswered: tool calls given an output saying none was recorded.
	Unanswered int `json:"unanswered,omitempty"`
}

// EncodeLost is Encode, and what it left out or restated.
func EncodeLost(evs []events.Event) ([]byte, Lost, error) {
	var lost Lost
	var items []item
	calls := map[string]string{} // call id -> how it was written: "function", "custom", "text"
	names := map[string]string{}
	// Codex has no context edits: the rollout holds what they leave.
	for _, e := range events.ApplyContextEdits(evs) {
		at := e.Time
		if e.Metadata["sidechain"] == true || e.Metadata["exclude_from_context"] == true {
			lost.Excluded++
			continue
		}
		switch e.Type {
		case events.Prompt:
			if e.Source == "system" && e.Meta && Injected(e.Text) {
				continue // Codex's own context: the resuming Codex adds it again
			}
			items = append(items, message(at, "user", "input_text", e.Text))
		case events.System:
			switch e.Subtype {
			case events.SubtypeCompactionSummary:
				items = append(items, message(at, "user", "input_text", "Summary of the earlier conversation:\n\n"+e.Text))
			case events.SubtypeNarrative:
				items = append(items, message(at, "user", "input_text", e.Text))
			default:
				lost.Events++
			}
		case events.Metric, events.Error, events.Output:
			lost.Events++
		case events.Response:
			if e.Text != "" {
				items = append(items, message(at, "assistant", "output_text", e.Text))
			}
		case events.Thinking:
			enc, _ := e.Metadata["codex_encrypted_content"].(string)
			if enc == "" {
				lost.Thinking++
				continue
			}
			summary := []map[string]any{}
			if e.Text != "" {
				summary = append(summary, map[string]any{"type": "summary_text", "text": e.Text})
			}
			items = append(items, item{at, map[string]any{"type": "reasoning", "summary": summary, "content": nil, "encrypted_content": enc}})
		case events.ToolCall:
			names[e.Tool.ID] = e.Tool.Name
			kind, _ := e.Metadata["codex_item"].(string)
			if kind == "custom_tool_call" {
				in, _ := e.Tool.Input["input"].(string)
				calls[e.Tool.ID] = "custom"
				items = append(items, item{at, map[string]any{"type": "custom_tool_call", "status": "completed", "call_id": e.Tool.ID, "name": e.Tool.Name, "input": in}})
				continue
			}
			name, args, ok := MapTool(e.Tool.Name, e.Tool.Input)
			if !ok {
				lost.AsText++
				calls[e.Tool.ID] = "text"
				in, _ := json.Marshal(e.Tool.Input)
				items = append(items, message(at, "assistant", "output_text",
					fmt.Sprintf("[I called the tool %s (call %s), which this Codex session does not have, with input: %s]", e.Tool.Name, e.Tool.ID, in)))
				continue
			}
			a, err := json.Marshal(args)
			if err != nil {
				return nil, lost, fmt.Errorf("tool call %s: %w", e.Tool.ID, err)
			}
			calls[e.Tool.ID] = "function"
			items = append(items, item{at, map[string]any{"type": "function_call", "name": name, "arguments": string(a), "call_id": e.Tool.ID}})
		case events.ToolResult:
			content, isErr := "", false
			if e.Result != nil {
				content, isErr = e.Result.Content, e.Result.IsError
			}
			images := imageURLs(e.Result)
			var output any = resultText(content, isErr)
			if len(images) > 0 {
				output = withImages(resultText(content, isErr), images)
			}
			switch calls[e.Tool.ID] {
			case "function":
				items = append(items, item{at, map[string]any{"type": "function_call_output", "call_id": e.Tool.ID, "output": output}})
			case "custom":
				items = append(items, item{at, map[string]any{"type": "custom_tool_call_output", "call_id": e.Tool.ID, "output": output}})
			default:
				name := names[e.Tool.ID]
				if name == "" {
					name = e.Tool.Name
				}
				status := ""
				if isErr {
					status = ", an error"
				}
				it := message(at, "user", "input_text", fmt.Sprintf("[Result of the tool call %s (call %s)%s:]\n%s", name, e.Tool.ID, status, content))
				if len(images) > 0 {
					it.payload["content"] = withImages(fmt.Sprintf("[Result of the tool call %s (call %s)%s:]\n%s", name, e.Tool.ID, status, content), images)
				}
				items = append(items, it)
			}
			delete(calls, e.Tool.ID)
		}
	}
	for _, kind := range calls {
		if kind != "text" {
			lost.Unanswered++
		}
	}
	items = answerAll(items, calls)

	var b bytes.Buffer
	line := func(at time.Time, typ string, payload any) error {
		if at.IsZero() {
			at = epoch
		}
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		return enc.Encode(map[string]any{"timestamp": stamp(at), "type": typ, "payload": payload})
	}
	body, err := json.Marshal(items)
	if err != nil {
		return nil, lost, err
	}
	h := commits.ContentHash(body)
	id := fmt.Sprintf("%s-%s-4%s-8%s-%s", h[0:8], h[8:12], h[13:16], h[17:20], h[20:32])
	first := epoch
	if len(items) > 0 && !items[0].at.IsZero() {
		first = items[0].at
	}
	if err := line(first, "session_meta", meta(id, first)); err != nil {
		return nil, lost, err
	}
	for _, it := range items {
		if err := line(it.at, "response_item", it.payload); err != nil {
			return nil, lost, err
		}
	}
	return b.Bytes(), lost, nil
}

// meta is the payload of the session_meta line Encode writes.
func meta(id string, at time.Time) map[string]any {
	return map[string]any{"id": id, "timestamp": stamp(at), "cwd": "", "originator": "ctxstore", "cli_version": CLIVersion, "source": "exec"}
}

type item struct {
	at      time.Time
	payload map[string]any
}

func message(at time.Time, role, partType, text string) item {
	return item{at, map[string]any{"type": "message", "role": role, "content": []map[string]any{{"type": partType, "text": text}}}}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func resultText(content string, isErr bool) string {
	if isErr {
		return "[the tool reported an error]\n" + content
	}
	return content
}

// imageURLs are the images of a tool result's recorded blocks, as data
// URLs: Messages API base64 sources, Pi's {data, mimeType}, or Codex's
// own input_image URLs.
func imageURLs(r *events.Result) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, b := range r.Blocks {
		m, ok := b.(map[string]any)
		if !ok {
			continue
		}
		switch m["type"] {
		case "image":
			data, _ := m["data"].(string)
			mime, _ := m["mimeType"].(string)
			if src, ok := m["source"].(map[string]any); ok && src["type"] == "base64" {
				data, _ = src["data"].(string)
				mime, _ = src["media_type"].(string)
			}
			if data != "" && mime != "" {
				out = append(out, "data:"+mime+";base64,"+data)
			}
		case "input_image":
			if u, _ := m["image_url"].(string); u != "" {
				out = append(out, u)
			}
		}
	}
	return out
}

// withImages is a content list: the text, then the images.
func withImages(text string, images []string) []map[string]any {
	out := []map[string]any{{"type": "input_text", "text": text}}
	for _, u := range images {
		out = append(out, map[string]any{"type": "input_image", "image_url": u})
	}
	return out
}

// answerAll gives every function or custom call still open an output
// right after it.
func answerAll(items []item, open map[string]string) []item {
	if len(open) == 0 {
		return items
	}
	var out []item
	for _, it := range items {
		out = append(out, it)
		id, _ := it.payload["call_id"].(string)
		t, _ := it.payload["type"].(string)
		kind, ok := open[id]
		if !ok || (t != "function_call" && t != "custom_tool_call") || kind == "text" {
			continue
		}
		ot := "function_call_output"
		if t == "custom_tool_call" {
			ot = "custom_tool_call_output"
		}
		out = append(out, item{it.at, map[string]any{"type": ot, "call_id": id, "output": "[no result was recorded for this call]"}})
	}
	return out
}

// MapTool maps a tool call of any harness to a Codex tool: Codex's own
// shell tools stay as they are; Claude Code's Bash and Pi's and opencode's
// bash become exec_command with the command; Claude Code's Read and Pi's
// and opencode's read become
// exec_command reading the file (cat, or sed -n for a range of lines).
// ok is false when Codex has no counterpart (the call then crosses as
// text).
func MapTool(name string, in map[string]any) (string, map[string]any, bool) {
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch name {
	case "exec_command", "shell", "shell_command", "local_shell", "write_stdin", "view_image", "update_plan":
		if in == nil {
			in = map[string]any{}
		}
		return name, in, true
	case "Bash", "bash":
		cmd := str("command")
		if cmd == "" {
			return "", nil, false
		}
		return "exec_command", map[string]any{"cmd": cmd}, true
	case "Read", "read":
		path := str("file_path")
		if path == "" {
			path = str("path")
		}
		if path == "" {
			path = str("filePath") // opencode's read
		}
		if path == "" {
			return "", nil, false
		}
		off, lim := num(in["offset"]), num(in["limit"])
		cmd := "cat " + quote(path)
		if off > 0 || lim > 0 {
			from := max(off, 1)
			to := "$"
			if lim > 0 {
				to = strconv.FormatInt(from+lim-1, 10)
			}
			cmd = fmt.Sprintf("sed -n '%d,%sp' %s", from, to, quote(path))
		}
		return "exec_command", map[string]any{"cmd": cmd}, true
	}
	return "", nil, false
}

func num(v any) int64 {
	switch x := v.(type) {
	case json.Number:
		n, _ := x.Int64()
		return n
	case float64:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return 0
}

// quote quotes s for a POSIX shell.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SetSessionID names the rollout's session: the id (and session_id, when
// present) of its session_meta lines. A rollout without one (a chain
// materialized from a compaction on) gets one first: Codex resumes no
// rollout without it.
func SetSessionID(content []byte, session string) ([]byte, error) {
	if !hasMeta(content) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		at := epoch
		if rc := firstTime(content); !rc.IsZero() {
			at = rc
		}
		if err := enc.Encode(map[string]any{"timestamp": stamp(at), "type": "session_meta", "payload": meta(session, at)}); err != nil {
			return nil, err
		}
		content = append(b.Bytes(), content...)
	}
	return editMeta(content, func(p map[string]any) {
		p["id"] = session
		if _, ok := p["session_id"]; ok {
			p["session_id"] = session
		}
	})
}

// hasMeta reports whether content has a session_meta line.
func hasMeta(content []byte) bool {
	for _, ln := range bytes.Split(content, []byte("\n")) {
		var rec struct {
			Type string `json:"type"`
		}
		if bytes.Contains(ln, []byte(`"session_meta"`)) && json.Unmarshal(ln, &rec) == nil && rec.Type == "session_meta" {
			return true
		}
	}
	return false
}

// firstTime is the time of content's first line that has one.
func firstTime(content []byte) time.Time {
	for _, ln := range bytes.Split(content, []byte("\n")) {
		var rec struct {
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal(ln, &rec) == nil {
			if t, err := time.Parse(time.RFC3339Nano, rec.Timestamp); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

// SetCwd sets the working directory of the rollout's session_meta lines.
func SetCwd(content []byte, cwd string) ([]byte, error) {
	return editMeta(content, func(p map[string]any) { p["cwd"] = cwd })
}

// editMeta rewrites the payload of session_meta lines with set; other
// lines stay byte for byte.
func editMeta(content []byte, set func(map[string]any)) ([]byte, error) {
	var out bytes.Buffer
	for n, ln := range bytes.SplitAfter(content, []byte("\n")) {
		if !bytes.Contains(ln, []byte(`"session_meta"`)) {
			out.Write(ln)
			continue
		}
		var rec map[string]json.RawMessage
		if json.Unmarshal(ln, &rec) != nil || string(rec["type"]) != `"session_meta"` {
			out.Write(ln)
			continue
		}
		var p map[string]any
		dec := json.NewDecoder(bytes.NewReader(rec["payload"]))
		dec.UseNumber()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("line %d: session_meta payload: %w", n+1, err)
		}
		set(p)
		pb, err := marshal(p)
		if err != nil {
			return nil, err
		}
		rec["payload"] = pb
		keys := make([]string, 0, len(rec))
		for k := range rec {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				out.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			out.Write(kb)
			out.WriteByte(':')
			out.Write(rec[k])
		}
		out.WriteString("}\n")
	}
	return out.Bytes(), nil
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Home is Codex's home folder: $CODEX_HOME, or ~/.codex.
func Home() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home folder for ~/.codex: %w", err)
	}
	return filepath.Join(home, ".codex"), nil
}

// SessionPath is where Codex keeps a rollout of session started at t:
// <home>/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<session>.jsonl
// (local time, as Codex names them); `codex exec resume SESSION` finds it.
func SessionPath(home, session string, t time.Time) string {
	t = t.Local()
	return filepath.Join(home, "sessions", t.Format("2006"), t.Format("01"), t.Format("02"),
		"rollout-"+t.Format("2006-01-02T15-04-05")+"-"+session+".jsonl")
}

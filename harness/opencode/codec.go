// Package opencode is opencode's session store (opencode-ai, its SQLite
// opencode.db): the import reads its session, message and part rows
// read-only, as JSON lines of the commit format opencode-v1 (one row a
// line, every column as stored, so the rows can be restored); Decode
// reads them as neutral events; Encode writes events as rows opencode
// resumes (`opencode run --session ID`), tool calls mapped to opencode's
// own tools; Place inserts rows into a database (docs/opencode.md).
package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// FormatName is the commit format: rows of opencode's database as JSON
// lines.
const FormatName = "opencode-v1"

// Codec is opencode's format (a harness.DatabaseReader).
type Codec struct{}

var _ harness.DatabaseReader = Codec{}

// Format is harness.FormatOpencode.
func (Codec) Format() harness.Format { return harness.FormatOpencode }

// CommitFormat is opencode-v1.
func (Codec) CommitFormat() string { return FormatName }

// Commit gives opencode-v1 its functions: lines are joined as they are
// (the native tier), Decode, Encode and ForSession.
func (Codec) Commit(f *commits.Format) {
	f.Doc = "rows of opencode's database (session, message, part), one JSON object a line"
	f.Concat = func(parts [][]byte) ([]byte, error) { return bytes.Join(parts, nil), nil }
	f.Validate = validate
	f.Decode, f.Encode, f.ForSession = Decode, Encode, SetSessionID
	f.Count = func(b []byte) int64 {
		evs, _ := Decode(b)
		n := int64(0)
		for _, e := range evs {
			if e.IsMessage() {
				n++
			}
		}
		return n
	}
	f.Text = Text
}

// LooksDB reports whether path is an opencode database.
func (Codec) LooksDB(path string, head []byte) bool { return looksDB(path, head) }

// ReadDB reads every session of the database read-only.
func (Codec) ReadDB(path string) ([]harness.DBSession, error) { return readDB(path) }

// validate accepts complete lines only.
func validate(b []byte) error {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return fmt.Errorf("opencode-v1: the last row is not a complete line")
	}
	return nil
}

// Decode reads rows as neutral events, in order: the session row is a
// system/init event (session id, cwd, version, title); a user message's
// text parts are prompts (synthetic ones, which opencode adds itself,
// meta); an assistant message's text parts are responses, its reasoning
// parts thinking (an Anthropic signature kept), its tool parts a tool
// call and, once the tool completed or failed, its result (a completed
// tool's attachments, images, as blocks: attachmentResult); a user
// message's file parts that opencode sends to the model (images, other
// non-text files) prompts holding the part (filePartEvents); an assistant
// message opencode marked as a summary is a compaction summary, and the
// user message's compaction part a compact boundary; step, snapshot,
// patch and other parts are output events; a later version of a row
// ("update") is an output event; a row that does not decode an
// output/damaged event holding it.
func Decode(b []byte) ([]events.Event, error) {
	out := []events.Event{}
	roles := map[string]map[string]any{} // message id -> its data
	readRows(b, func(n int, r *Row) {
		at := time.UnixMilli(r.num("time_created")).UTC()
		if r.Op == "update" {
			out = append(out, events.Event{Type: events.Output, Subtype: "opencode/update/" + r.Table, ID: r.ID(), Time: at})
			return
		}
		switch r.Table {
		case TableSession:
			md := map[string]any{"session": r.ID()}
			for k, col := range map[string]string{"cwd": "directory", "version": "version", "title": "title", "parent_session": "parent_id"} {
				if v := r.str(col); v != "" {
					md[k] = v
				}
			}
			out = append(out, events.Event{Type: events.System, Subtype: "init", ID: r.ID(), Time: at, Metadata: md})
			return
		case TableMessage:
			d, err := r.data()
			if err != nil {
				out = append(out, damaged(r, err))
				return
			}
			roles[r.ID()] = d
			return
		case TablePart:
			d, err := r.data()
			if err != nil {
				out = append(out, damaged(r, err))
				return
			}
			out = append(out, partEvents(r, d, roles[r.str("message_id")], at)...)
			return
		}
		out = append(out, events.Event{Type: events.Output, Subtype: "opencode/" + r.Table, ID: r.ID(), Time: at})
	}, func(n int, msg string, raw []byte) {
		out = append(out, events.Event{Type: events.Output, Subtype: "damaged", Text: fmt.Sprintf("line %d: %s", n, msg), Raw: append(json.RawMessage(nil), raw...)})
	})
	return sanitize(out), nil
}

func damaged(r *Row, err error) events.Event {
	raw, _ := json.Marshal(r)
	return events.Event{Type: events.Output, Subtype: "damaged", ID: r.ID(), Text: fmt.Sprintf("%s %s: %v", r.Table, r.ID(), err), Raw: raw}
}

func partEvents(r *Row, d, msg map[string]any, at time.Time) []events.Event {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	role := str(msg, "role")
	mid := r.str("message_id")
	model := str(msg, "modelID")
	asModel := func(x events.Event) events.Event {
		x.Source, x.Model, x.MessageID, x.Time = "assistant", model, mid, at
		if x.ID == "" {
			x.ID = r.ID()
		}
		return x
	}
	typ := str(d, "type")
	switch typ {
	case "text":
		text := str(d, "text")
		switch {
		case role == "user" && d["synthetic"] == true:
			return []events.Event{{Type: events.Prompt, Source: "system", Meta: true, Text: text, ID: r.ID(), Time: at}}
		case role == "user":
			return []events.Event{{Type: events.Prompt, Source: "user", Text: text, ID: r.ID(), Time: at}}
		case msg["summary"] == true:
			return []events.Event{{Type: events.System, Subtype: events.SubtypeCompactionSummary, Text: text, Meta: true, ID: r.ID(), Time: at}}
		case role == "assistant":
			return []events.Event{asModel(events.Event{Type: events.Response, Text: text})}
		}
	case "reasoning":
		x := asModel(events.Event{Type: events.Thinking, Text: str(d, "text")})
		if md, ok := d["metadata"].(map[string]any); ok {
			if a, ok := md["anthropic"].(map[string]any); ok {
				x.Signature, _ = a["signature"].(string)
			}
		}
		return []events.Event{x}
	case "tool":
		state, _ := d["state"].(map[string]any)
		in, _ := state["input"].(map[string]any)
		tool := &events.Tool{ID: str(d, "callID"), Name: str(d, "tool"), Input: in}
		evs := []events.Event{asModel(events.Event{Type: events.ToolCall, Tool: tool})}
		switch str(state, "status") {
		case "completed":
			atts, _ := state["attachments"].([]any)
			evs = append(evs, events.Event{Type: events.ToolResult, Time: at, Tool: &events.Tool{ID: tool.ID, Name: tool.Name},
				Result: attachmentResult(str(state, "output"), atts)})
		case "error":
			evs = append(evs, events.Event{Type: events.ToolResult, Time: at, Tool: &events.Tool{ID: tool.ID, Name: tool.Name},
				Result: &events.Result{Content: str(state, "error"), IsError: true}})
		}
		return evs
	case "file":
		return filePartEvents(r, d, role, at)
	case "compaction":
		return []events.Event{{Type: events.System, Subtype: events.SubtypeCompactBoundary, ID: r.ID(), Time: at}}
	case "step-finish":
		x := events.Event{Type: events.Metric, Subtype: "usage", Model: model, ID: r.ID(), Time: at}
		if tk, ok := d["tokens"].(map[string]any); ok {
			cache, _ := tk["cache"].(map[string]any)
			x.Usage = &conversation.Usage{Input: jnum(tk["input"]), Output: jnum(tk["output"]), CacheRead: jnum(cache["read"]), CacheWrite: jnum(cache["write"])}
		}
		return []events.Event{x}
	}
	if typ == "" {
		typ = "unknown"
	}
	return []events.Event{{Type: events.Output, Subtype: "opencode/part/" + typ, ID: r.ID(), Time: at}}
}

func jnum(v any) int64 {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			f, _ := x.Float64()
			n = int64(f)
		}
		return n
	case float64:
		return int64(x)
	}
	return 0
}

// sanitize turns events that would not validate (a tool call without an
// id) into output events keeping what they said.
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

// Text is a row file's human-readable text: the text of its parts.
func Text(b []byte) string {
	var out []string
	readRows(b, func(_ int, r *Row) {
		if r.Table != TablePart {
			return
		}
		if d, err := r.data(); err == nil {
			if s, _ := d["text"].(string); s != "" {
				out = append(out, s)
			}
		}
	}, func(int, string, []byte) {})
	return strings.Join(out, "\n")
}

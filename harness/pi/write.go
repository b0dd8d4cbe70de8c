package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// epoch stands in for unknown times (Pi shows them; nothing depends on them).
var epoch = time.Unix(0, 0).UTC()

// SessionFile writes events as a Pi v3 session file: a header (version 3,
// no cwd: Pi then uses its working directory; the id is derived from the
// content until ForSession names the session) and one "message" entry per
// message, each the child of the one before. Prompts (summaries and
// narratives included) become Pi user messages; a model message (a
// Response, its Thinking and its ToolCalls, grouped by MessageID as
// events.ToMessages groups them) becomes one assistant message whose
// content keeps the recorded order of thinking (with its signature), text
// and tool-call blocks (api and provider "ctxstore", stopReason toolUse or
// stop, zero usage unless recorded); tool results become toolResult
// messages with their image blocks (Claude Code's base64 sources or Pi's own
// shape) after the text. Metrics, errors and other system events have no
// Pi message and are left out (docs/crossharness.md). Context edits
// (system/context_edit) are applied, not written.
func SessionFile(evs []events.Event) ([]byte, error) {
	// Context edits are applied: the file holds the messages they leave.
	msgs, err := piMessages(events.ApplyContextEdits(evs))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	line := func(v any) error {
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	body, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	id := commits.ContentHash(body)
	first := epoch
	if len(msgs) > 0 && !msgs[0].time.IsZero() {
		first = msgs[0].time
	}
	if err := line(map[string]any{"type": "session", "version": 3,
		"id":        fmt.Sprintf("%s-%s-%s-%s-%s", id[0:8], id[8:12], id[12:16], id[16:20], id[20:32]),
		"timestamp": first.UTC().Format("2006-01-02T15:04:05.000Z")}); err != nil {
		return nil, err
	}
	parents := map[string]string{} // event id -> its harness parent
	for _, e := range evs {
		if e.ID != "" && e.ParentID != "" {
			parents[e.ID] = e.ParentID
		}
	}
	written := map[string]string{} // event id -> the entry holding it
	prev := ""
	for i, m := range msgs {
		entry := fmt.Sprintf("%08x", i+1)
		parent := any(nil)
		if prev != "" {
			parent = prev
		}
		if p := ancestor(m.parent, parents, written); p != "" {
			parent = p
		}
		rec := map[string]any{"type": "message", "id": entry, "parentId": parent,
			"timestamp": m.time.UTC().Format("2006-01-02T15:04:05.000Z"), "message": m.Message}
		if e := m.summary; e != nil {
			if e.Subtype == events.SubtypeCompactionSummary {
				if kept := written[str(e.Metadata["first_kept_entry"])]; kept != "" {
					rec = map[string]any{"type": "compaction", "id": entry, "parentId": parent, "timestamp": rec["timestamp"],
						"summary": e.Text, "firstKeptEntryId": kept, "tokensBefore": e.Metadata["tokens_before"]}
				}
			} else if from := written[str(e.Metadata["from"])]; from != "" {
				rec = map[string]any{"type": "branch_summary", "id": entry, "parentId": parent, "timestamp": rec["timestamp"],
					"fromId": from, "summary": e.Text}
			}
		}
		if err := line(rec); err != nil {
			return nil, err
		}
		for _, id := range m.ids {
			written[id] = entry
		}
		prev = entry
	}
	return b.Bytes(), nil
}

// ancestor is the entry that holds id or, through events that have no
// entry (a Claude Code attachment, a Pi model change), its nearest
// ancestor that has one; "" when none was written. Where the events
// recorded the harness's tree (imported Claude Code and Pi files), entries
// keep it, so the file keeps the original's branches and Pi, which resumes
// at the last entry, continues the branch the conversation ended on.
func ancestor(id string, parents, written map[string]string) string {
	for steps := 0; id != "" && steps <= len(parents); steps++ {
		if e, ok := written[id]; ok {
			return e
		}
		id = parents[id]
	}
	return ""
}

// piMsg is one Pi agent message, its time, the harness ids of the events
// it holds and the harness parent of its first event.
type piMsg struct {
	Message map[string]any
	time    time.Time
	ids     []string
	parent  string
	// summary is set for a Pi compaction or branch summary (entry type
	// "compaction" or "branch_summary", from the event's subtype) whose
	// link (first kept entry, branch left) names a harness id; if that id
	// has no entry, the summary is written as the user message above.
	summary *events.Event
}

// MarshalJSON lets the content hash cover the messages.
func (m piMsg) MarshalJSON() ([]byte, error) { return json.Marshal(m.Message) }

// piMessages groups events into Pi agent messages.
func piMessages(evs []events.Event) ([]piMsg, error) {
	var out []piMsg
	var cur map[string]any // the open assistant message
	var curTime time.Time
	var curIDs []string // the harness ids of its events
	curID, curParent := "", ""
	calls := 0
	flush := func() {
		if cur == nil {
			return
		}
		if calls > 0 && cur["stopReason"] == "stop" {
			cur["stopReason"] = "toolUse"
		}
		out = append(out, piMsg{Message: cur, time: curTime, ids: curIDs, parent: curParent})
		cur, curID, calls, curIDs, curParent = nil, "", 0, nil, ""
	}
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			return epoch
		}
		return t
	}
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	user := func(e events.Event) {
		flush()
		t := at(e.Time)
		out = append(out, piMsg{Message: map[string]any{"role": "user", "content": text(e.Text), "timestamp": t.UnixMilli()}, time: t, ids: ids(e), parent: e.ParentID})
	}
	// open starts a new assistant message for e unless e belongs to the
	// open one: the same MessageID, or (without ids) a ToolCall after its
	// message or a Response after thinking alone, as events.ToMessages
	// groups them.
	open := func(e events.Event) {
		if cur != nil {
			same := e.MessageID != "" && e.MessageID == curID
			loose := e.MessageID == "" || curID == ""
			switch {
			case same:
				return
			case loose && e.Type == events.ToolCall:
				return
			case loose && e.Type == events.Response && !hasText(cur) && calls == 0:
				return
			}
		}
		flush()
		curTime = at(e.Time)
		curID, curParent = e.MessageID, e.ParentID
		model := e.Model
		if model == "" {
			model = "unknown"
		}
		stop := "stop"
		if r := piStop[str(e.Metadata["stop_reason"])]; r != "" {
			stop = r // as recorded: Pi shows an aborted or failed message as such
		}
		cur = map[string]any{"role": "assistant", "content": []any{}, "api": "ctxstore", "provider": "ctxstore", "model": model,
			"usage": piUsage(nil), "stopReason": stop, "timestamp": curTime.UnixMilli()}
	}
	add := func(block map[string]any, e events.Event) {
		cur["content"] = append(cur["content"].([]any), block)
		curIDs = append(curIDs, ids(e)...)
		if e.Usage != nil {
			cur["usage"] = piUsage(e.Usage)
		}
		if e.Model != "" && cur["model"] == "unknown" {
			cur["model"] = e.Model
		}
	}
	for _, e := range evs {
		switch e.Type {
		case events.Prompt:
			user(e)
		case events.System:
			switch e.Subtype {
			case events.SubtypeCompactionSummary, events.SubtypeNarrative:
				user(e)
			case "branch_summary":
				if str(e.Metadata["from"]) == "" {
					continue
				}
				user(e)
			default:
				continue
			}
			if e.Subtype != events.SubtypeNarrative {
				// Pi's own summary messages: the model reads them with Pi's
				// framing (convertToLlm's prefix and suffix).
				m := out[len(out)-1].Message
				delete(m, "content")
				m["summary"] = e.Text
				if e.Subtype == events.SubtypeCompactionSummary {
					m["role"] = "compactionSummary"
					m["tokensBefore"] = e.Metadata["tokens_before"]
				} else {
					m["role"] = "branchSummary"
					m["fromId"] = str(e.Metadata["from"])
				}
				ev := e
				out[len(out)-1].summary = &ev
			}
		case events.Thinking:
			open(e)
			block := map[string]any{"type": "thinking", "thinking": e.Text}
			if e.Signature != "" {
				block["thinkingSignature"] = e.Signature
			}
			add(block, e)
		case events.Response:
			open(e)
			if e.Text != "" {
				add(map[string]any{"type": "text", "text": e.Text}, e)
			} else if e.Usage != nil {
				cur["usage"] = piUsage(e.Usage)
			}
		case events.ToolCall:
			if e.Tool == nil {
				continue
			}
			open(e)
			args := e.Tool.Input
			if args == nil {
				args = map[string]any{}
			}
			add(map[string]any{"type": "toolCall", "id": e.Tool.ID, "name": e.Tool.Name, "arguments": args}, e)
			calls++
		case events.Error:
			// An aborted or failed model message (Pi's stopReason and
			// errorMessage) closes the message it ends.
			if cur != nil && (e.Subtype == "aborted" || e.Subtype == "error") {
				cur["stopReason"] = e.Subtype
				if e.Text != "" {
					cur["errorMessage"] = e.Text
				}
				flush()
			}
		case events.ToolResult:
			flush()
			if e.Tool == nil {
				continue
			}
			t := at(e.Time)
			content, isErr := []any{}, false
			if e.Result != nil {
				content, isErr = resultBlocks(e.Result), e.Result.IsError
			}
			out = append(out, piMsg{Message: map[string]any{"role": "toolResult", "toolCallId": e.Tool.ID, "toolName": e.Tool.Name,
				"content": content, "isError": isErr, "timestamp": t.UnixMilli()}, time: t, ids: ids(e), parent: e.ParentID})
		}
	}
	flush()
	return out, nil
}

func str(v any) string { s, _ := v.(string); return s }

// piStop maps a recorded stop reason (Pi's own, or the Messages API's) to
// Pi's; others are left to the content (stop, or toolUse with calls).
var piStop = map[string]string{
	"stop": "stop", "length": "length", "toolUse": "toolUse", "error": "error", "aborted": "aborted",
	"end_turn": "stop", "stop_sequence": "stop", "tool_use": "toolUse", "max_tokens": "length", "refusal": "error",
}

// ids are the harness ids an event answers to: its own and its message's.
func ids(e events.Event) []string {
	var out []string
	for _, id := range []string{e.ID, e.MessageID} {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}

func hasText(m map[string]any) bool {
	for _, b := range m["content"].([]any) {
		if bm, ok := b.(map[string]any); ok && bm["type"] == "text" {
			return true
		}
	}
	return false
}

func piUsage(u *conversation.Usage) map[string]any {
	if u == nil {
		u = &conversation.Usage{}
	}
	return map[string]any{"input": u.Input, "output": u.Output, "cacheRead": u.CacheRead, "cacheWrite": u.CacheWrite,
		"totalTokens": u.Input + u.Output + u.CacheRead + u.CacheWrite,
		"cost":        map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
}

// resultBlocks is a tool result's Pi content: its text, then the image
// blocks it recorded, in Pi's shape ({type, data, mimeType}) whether the
// harness wrote Pi's or the Messages API's ({type, source: {type: base64,
// media_type, data}}). Other recorded blocks are carried by the text.
func resultBlocks(r *events.Result) []any {
	out := []any{}
	if r.Content != "" || len(r.Blocks) == 0 {
		out = append(out, map[string]any{"type": "text", "text": r.Content})
	}
	for _, b := range r.Blocks {
		m, ok := b.(map[string]any)
		if !ok || m["type"] != "image" {
			continue
		}
		data, _ := m["data"].(string)
		mime, _ := m["mimeType"].(string)
		if src, ok := m["source"].(map[string]any); ok && src["type"] == "base64" {
			data, _ = src["data"].(string)
			mime, _ = src["media_type"].(string)
		}
		if data != "" && mime != "" {
			out = append(out, map[string]any{"type": "image", "data": data, "mimeType": mime})
		}
	}
	return out
}

// SetSessionID returns a Pi session file whose header names session.
func SetSessionID(file []byte, session string) ([]byte, error) {
	i := bytes.IndexByte(file, '\n')
	if i < 0 {
		i = len(file)
	}
	var h map[string]any
	if err := json.Unmarshal(file[:i], &h); err != nil || h["type"] != "session" {
		return nil, fmt.Errorf("pi: the first line is not a session header")
	}
	h["id"] = session
	nb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return append(nb, file[i:]...), nil
}

package importer

import (
	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/codex"
)

// codexLine classifies a Codex rollout line: session_meta gives the
// session, cwd and Codex version; turn_context the model; a turn starts at
// Codex's task_started event, or at a person's message when none came
// before it (so that a turn's commit holds its turn_context, and its
// events their model); a compacted line is a compaction (complete in one
// line).
func (w *walk) codexLine(recs []harness.Record, n int) lineInfo {
	var info lineInfo
	var heads []codex.Head
	for _, r := range recs {
		h, ok := codex.ReadHead(r.Data)
		if !ok {
			w.problem(n, "rollout line does not decode; kept as read")
			continue
		}
		heads = append(heads, h)
		if t := harness.ParseTime(h.Timestamp); !t.IsZero() && info.time.IsZero() {
			info.time = t
		}
		switch h.Type {
		case "session_meta":
			if w.cur.Session == "" {
				w.cur.Session, w.cur.Cwd = h.Session, h.Cwd
				if h.Version != "" {
					w.cur.Version = h.Version
				}
			}
		case "turn_context":
			if h.Model != "" {
				w.cur.Model, info.model = h.Model, h.Model
			}
			if h.Cwd != "" {
				w.cur.Cwd = h.Cwd
			}
		case "compacted":
			info.compaction = "summary"
			info.summary = h.Text
		case "event_msg":
			if h.ItemType == "task_started" {
				info.human = true
				w.codexTurn = true
			}
		case "response_item":
			info.content = true
			if h.Prompt {
				info.human = !w.codexTurn
				w.codexTurn = false
				info.summary = h.Text
			}
		}
	}
	info.session = w.cur.Session
	info.count = func(s *SessionSummary) {
		for _, h := range heads {
			s.Records++
			switch h.Type {
			case "response_item":
				switch h.ItemType {
				case "message":
					switch {
					case h.Prompt:
						s.Prompts++
					case h.Role == "assistant":
						s.Responses++
					default:
						s.Injected++
					}
				case "function_call", "custom_tool_call", "local_shell_call":
					s.ToolCalls++
				case "function_call_output", "custom_tool_call_output":
					s.ToolResults++
				default:
					count(&s.Skipped, "response_item/"+h.ItemType)
				}
			case "session_meta", "compacted":
			default:
				if _, known := codex.Types[h.Type]; known {
					count(&s.Skipped, h.Type)
				} else {
					count(&s.Unknown, h.Type)
					w.problem(n, "unknown rollout line type %q; kept raw", h.Type)
				}
			}
		}
	}
	return info
}

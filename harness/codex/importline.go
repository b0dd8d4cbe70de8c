package codex

import (
	"github.com/ctxstore/ctxstore/harness"
)

var _ harness.LineImporter = Codec{}

// ImportLine classifies a Codex rollout line: session_meta gives the
// session, cwd and Codex version; turn_context the model; a turn starts at
// Codex's task_started event, or at a person's message when none came
// before it (so that a turn's commit holds its turn_context, and its
// events their model); a compacted line is a compaction (complete in one
// line). A sub-agent's session_meta names its parent thread (SpawnedBy),
// and a spawn_agent call and its output ({"agent_id"}) the sub-agents a
// session started (Tasks, Results): the importer forks a sub-agent's
// chain from the commit holding its spawn.
func (Codec) ImportLine(st *harness.ImportState, recs []harness.Record, n int) harness.LineInfo {
	var info harness.LineInfo
	var heads []Head
	for _, r := range recs {
		h, ok := ReadHead(r.Data)
		if !ok {
			st.Problem(n, "rollout line does not decode; kept as read")
			continue
		}
		heads = append(heads, h)
		if t := harness.ParseTime(h.Timestamp); !t.IsZero() && info.Time.IsZero() {
			info.Time = t
		}
		switch h.Type {
		case "session_meta":
			if st.Session == "" {
				st.Session, st.Cwd = h.Session, h.Cwd
				if h.Version != "" {
					st.Version = h.Version
				}
				if h.Parent != "" {
					parent := h.Parent
					st.SpawnedBy = &harness.Spawn{Parent: parent, Agent: h.Session, File: func(path string) string { return FindRollout(path, parent) }}
				}
			}
		case "turn_context":
			if h.Model != "" {
				st.Model, info.Model = h.Model, h.Model
			}
			if h.Cwd != "" {
				st.Cwd = h.Cwd
			}
		case "compacted":
			info.Compaction = "summary"
			info.Summary = h.Text
		case "event_msg":
			if h.ItemType == "task_started" {
				info.Human = true
				st.Turn = true
			}
		case "response_item":
			info.Content = true
			switch {
			case h.Agent != "":
				info.Results = append(info.Results, [2]string{h.Spawn, h.Agent})
			case h.Spawn != "":
				info.Tasks = append(info.Tasks, h.Spawn)
			}
			if h.Prompt {
				info.Human = !st.Turn
				st.Turn = false
				info.Summary = h.Text
			}
		}
	}
	info.Session = st.Session
	info.Count = func(s *harness.ImportCounts) {
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
					harness.Count(&s.Skipped, "response_item/"+h.ItemType)
				}
			case "session_meta", "compacted":
			default:
				if _, known := Types[h.Type]; known {
					harness.Count(&s.Skipped, h.Type)
				} else {
					harness.Count(&s.Unknown, h.Type)
					st.Problem(n, "unknown rollout line type %q; kept raw", h.Type)
				}
			}
		}
	}
	return info
}

package claudecode

import (
	"github.com/ctxstore/ctxstore/harness"
)

var _ harness.LineImporter = Codec{}

// ImportLine classifies a Claude Code transcript line (docs/import.md):
// a person's prompt starts a turn; a compact_boundary, an isCompactSummary
// (or "This session is being continued ...") user record, or a summary
// record that names no leaf is a compaction; sidechain records go to
// their sub-agent's lane (the agentId, or the uuid of the lane's first
// record, found through parentUuid).
func (Codec) ImportLine(st *harness.ImportState, recs []harness.Record, n int) harness.LineInfo {
	var info harness.LineInfo
	var heads []Head
	for _, r := range recs {
		h, ok := ReadHead(r.Data)
		if !ok {
			st.Problem(n, "record does not decode; kept as read")
			continue
		}
		heads = append(heads, h)
		if t := harness.ParseTime(h.Timestamp); !t.IsZero() && info.Time.IsZero() {
			info.Time = t
		}
		if h.Cwd != "" {
			st.Cwd = h.Cwd
		}
		if h.Version != "" {
			st.Version = h.Version
		}
		if h.Model != "" && h.Model != "<synthetic>" {
			st.Model, info.Model = h.Model, h.Model
		}
		if h.Sidechain {
			lane := h.AgentID
			if lane == "" {
				lane = st.LaneOf[h.ParentUUID]
			}
			if lane == "" {
				lane = "agent-" + short(h.UUID)
			}
			if h.UUID != "" {
				st.LaneOf[h.UUID] = lane
			}
			info.Lane = lane
		}
		if h.SessionID != "" && !h.Sidechain {
			if info.Session == "" || h.Type == "user" || h.Type == "assistant" {
				info.Session = h.SessionID
			}
			if st.Session == "" {
				st.Session = h.SessionID
			}
		}
		switch h.Type {
		case "user":
			switch h.Class {
			case ClassHuman:
				if !h.Sidechain {
					info.Human = true
					info.Summary = h.Text
				}
			case ClassCompaction:
				if !h.Sidechain {
					info.Compaction = "summary"
					info.Summary = h.Text
				}
			}
			info.Content = true
			if h.ResultAgentID != "" && !h.Sidechain {
				for _, id := range h.Results {
					info.Results = append(info.Results, [2]string{id, h.ResultAgentID})
				}
			}
		case "assistant":
			info.Content = true
			if !h.Sidechain {
				for i, name := range h.ToolNames {
					if name == "Task" || name == "Agent" {
						info.Tasks = append(info.Tasks, h.ToolUses[i])
					}
				}
			}
		case "system":
			if (h.Subtype == "compact_boundary" || h.Subtype == "microcompact_boundary") && !h.Sidechain {
				info.Compaction = "boundary"
			}
		case "summary":
			if h.LeafUUID == "" && !h.Sidechain {
				info.Compaction = "summary"
			}
		}
	}
	if info.Lane != "" {
		info.Human = false
	}
	session := info.Session
	info.Count = func(s *harness.ImportCounts) {
		for _, h := range heads {
			s.Records++
			if h.Sidechain {
				harness.Count(&s.SetAside, "sidechain")
			} else if h.SessionID != "" && session != "" && h.SessionID != session && h.SessionID != st.Session {
				harness.Count(&s.SetAside, "copied")
			}
			switch h.Type {
			case "user":
				switch h.Class {
				case ClassHuman:
					if !h.Sidechain {
						s.Prompts++
					}
				case ClassToolResult:
					s.ToolResults++
				case ClassCompaction, ClassEmpty:
				default:
					s.Injected++
				}
			case "assistant":
				s.ToolCalls += len(h.ToolUses)
			case "system", "summary", "result":
			default:
				if _, known := Types[h.Type]; known {
					harness.Count(&s.Skipped, h.Type)
				} else {
					// Kept raw and counted, not damage: harnesses
					// keep adding record types.
					harness.Count(&s.Unknown, h.Type)
				}
			}
		}
	}
	return info
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

package importer

import (
	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/claudecode"
)

// claudeLine classifies a Claude Code transcript line (docs/import.md):
// a person's prompt starts a turn; a compact_boundary, an isCompactSummary
// (or "This session is being continued ...") user record, or a summary
// record that names no leaf is a compaction; sidechain records go to
// their sub-agent's lane (the agentId, or the uuid of the lane's first
// record, found through parentUuid).
func (w *walk) claudeLine(recs []harness.Record, n int) lineInfo {
	var info lineInfo
	var heads []claudecode.Head
	for _, r := range recs {
		h, ok := claudecode.ReadHead(r.Data)
		if !ok {
			w.problem(n, "record does not decode; kept as read")
			continue
		}
		heads = append(heads, h)
		if t := harness.ParseTime(h.Timestamp); !t.IsZero() && info.time.IsZero() {
			info.time = t
		}
		if h.Cwd != "" {
			w.cur.Cwd = h.Cwd
		}
		if h.Version != "" {
			w.cur.Version = h.Version
		}
		if h.Model != "" && h.Model != "<synthetic>" {
			w.cur.Model, info.model = h.Model, h.Model
		}
		if h.Sidechain {
			lane := h.AgentID
			if lane == "" {
				lane = w.cur.LaneOf[h.ParentUUID]
			}
			if lane == "" {
				lane = "agent-" + short(h.UUID)
			}
			if h.UUID != "" {
				w.cur.LaneOf[h.UUID] = lane
			}
			info.lane = lane
		}
		if h.SessionID != "" && !h.Sidechain {
			if info.session == "" || h.Type == "user" || h.Type == "assistant" {
				info.session = h.SessionID
			}
			if w.cur.Session == "" {
				w.cur.Session = h.SessionID
			}
		}
		switch h.Type {
		case "user":
			switch h.Class {
			case claudecode.ClassHuman:
				if !h.Sidechain {
					info.human = true
					info.summary = h.Text
				}
			case claudecode.ClassCompaction:
				if !h.Sidechain {
					info.compaction = "summary"
					info.summary = h.Text
				}
			}
			info.content = true
			if h.ResultAgentID != "" && !h.Sidechain {
				for _, id := range h.Results {
					info.results = append(info.results, [2]string{id, h.ResultAgentID})
				}
			}
		case "assistant":
			info.content = true
			if !h.Sidechain {
				for i, name := range h.ToolNames {
					if name == "Task" || name == "Agent" {
						info.tasks = append(info.tasks, h.ToolUses[i])
					}
				}
			}
		case "system":
			if (h.Subtype == "compact_boundary" || h.Subtype == "microcompact_boundary") && !h.Sidechain {
				info.compaction = "boundary"
			}
		case "summary":
			if h.LeafUUID == "" && !h.Sidechain {
				info.compaction = "summary"
			}
		}
	}
	if info.lane != "" {
		info.human = false
	}
	session := info.session
	info.count = func(s *SessionSummary) {
		for _, h := range heads {
			s.Records++
			if h.Sidechain {
				count(&s.SetAside, "sidechain")
			} else if h.SessionID != "" && session != "" && h.SessionID != session && h.SessionID != w.cur.Session {
				count(&s.SetAside, "copied")
			}
			switch h.Type {
			case "user":
				switch h.Class {
				case claudecode.ClassHuman:
					if !h.Sidechain {
						s.Prompts++
					}
				case claudecode.ClassToolResult:
					s.ToolResults++
				case claudecode.ClassCompaction, claudecode.ClassEmpty:
				default:
					s.Injected++
				}
			case "assistant":
				s.ToolCalls += len(h.ToolUses)
			case "system", "summary", "result":
			default:
				if _, known := claudecode.Types[h.Type]; known {
					count(&s.Skipped, h.Type)
				} else {
					// Kept raw and counted, not damage: harnesses
					// keep adding record types.
					count(&s.Unknown, h.Type)
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

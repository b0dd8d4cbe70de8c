package importer

import (
	"fmt"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/pi"
)

// piLine classifies a Pi session file line: the header gives the session,
// cwd and model; a user message starts a turn; a compaction entry is a
// compaction (complete in one line).
func (w *walk) piLine(recs []harness.Record, n int) lineInfo {
	var info lineInfo
	var heads []pi.Head
	for _, r := range recs {
		h, ok := pi.ReadHead(r.Data)
		if !ok {
			w.problem(n, "entry does not decode; kept as read")
			continue
		}
		heads = append(heads, h)
		if t := harness.ParseTime(h.Timestamp); !t.IsZero() && info.time.IsZero() {
			info.time = t
		}
		if h.Type != "session" && h.ID != "" {
			w.cur.Tree = true
			info.lane = w.piLane(h.ID, h.ParentID)
			info.entries = append(info.entries, h.ID)
		}
		switch h.Type {
		case "session":
			if !w.cur.Header {
				w.cur.Header = true
				w.cur.Session, w.cur.Cwd = h.ID, h.Cwd
				w.branchedFrom = h.BranchedFrom
				v := h.Version
				if v == 0 {
					v = 1
				}
				w.cur.Version = fmt.Sprintf("(session v%d)", v)
				w.cur.Tree = v >= 2
				if h.Model != "" {
					w.cur.Model = h.Model
				}
			} else {
				w.problem(n, "a second session header; kept as read")
			}
		case "message":
			info.content = true
			switch h.Role {
			case "user":
				info.human = true
				info.summary = h.Text
			case "assistant":
				if h.Model != "" {
					w.cur.Model, info.model = h.Model, h.Model
				}
			}
		case "compaction":
			info.compaction = "summary"
			info.summary = h.Summary
		case "custom_message", "branch_summary":
			info.content = true
		}
	}
	info.session = w.cur.Session
	info.count = func(s *SessionSummary) {
		for _, h := range heads {
			s.Records++
			switch h.Type {
			case "message":
				switch h.Role {
				case "user":
					s.Prompts++
				case "toolResult":
					s.ToolResults++
				case "assistant":
					s.Responses++
					s.ToolCalls += h.ToolCalls
				default:
					s.Injected++
				}
			case "custom_message", "branch_summary":
				s.Injected++
			case "session", "compaction":
			default:
				if _, known := pi.Types[h.Type]; known {
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

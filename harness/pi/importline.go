package pi

import (
	"fmt"

	"github.com/ctxstore/ctxstore/harness"
)

var _ harness.LineImporter = Codec{}

// ImportLine classifies a Pi session file line: the header gives the session,
// cwd and model; a user message starts a turn; a compaction entry is a
// compaction (complete in one line).
func (Codec) ImportLine(st *harness.ImportState, recs []harness.Record, n int) harness.LineInfo {
	var info harness.LineInfo
	var heads []Head
	for _, r := range recs {
		h, ok := ReadHead(r.Data)
		if !ok {
			st.Problem(n, "entry does not decode; kept as read")
			continue
		}
		heads = append(heads, h)
		if t := harness.ParseTime(h.Timestamp); !t.IsZero() && info.Time.IsZero() {
			info.Time = t
		}
		if h.Type != "session" && h.ID != "" {
			st.Tree = true
			info.Lane = st.Lane(h.ID, h.ParentID)
			info.Entries = append(info.Entries, h.ID)
		}
		switch h.Type {
		case "session":
			if !st.Header {
				st.Header = true
				st.Session, st.Cwd = h.ID, h.Cwd
				st.BranchedFrom = h.BranchedFrom
				v := h.Version
				if v == 0 {
					v = 1
				}
				st.Version = fmt.Sprintf("(session v%d)", v)
				st.Tree = v >= 2
				if h.Model != "" {
					st.Model = h.Model
				}
			} else {
				st.Problem(n, "a second session header; kept as read")
			}
		case "message":
			info.Content = true
			switch h.Role {
			case "user":
				info.Human = true
				info.Summary = h.Text
			case "assistant":
				if h.Model != "" {
					st.Model, info.Model = h.Model, h.Model
				}
			}
		case "compaction":
			info.Compaction = "summary"
			info.Summary = h.Summary
		case "custom_message", "branch_summary":
			info.Content = true
		}
	}
	info.Session = st.Session
	info.Count = func(s *harness.ImportCounts) {
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

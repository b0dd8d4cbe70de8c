package transcript

import (
	"testing"

	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// datasets returns the datasets directory (internal/datasets).
func datasets(t testing.TB) string {
	t.Helper()
	return datasetdir.Dir(t)
}

// checkInvariants checks what every reader promises, whatever the input.
func checkInvariants(t testing.TB, s *Session) {
	t.Helper()
	if len(s.Messages) != len(s.MessageLines) {
		t.Fatalf("%d messages, %d message lines", len(s.Messages), len(s.MessageLines))
	}
	called := map[string]bool{}
	answered := map[string]bool{}
	for i, m := range s.Messages {
		if l := s.MessageLines[i]; l < 1 || l > s.Report.Lines {
			t.Fatalf("message %d: line %d out of range 1..%d", i, l, s.Report.Lines)
		}
		switch m.Role {
		case conversation.RoleAssistant:
			for _, c := range m.ToolCalls {
				called[c.ID] = true
			}
		case conversation.RoleToolResult:
			if !called[m.ToolCallID] {
				t.Fatalf("message %d: tool result %q does not follow its call", i, m.ToolCallID)
			}
			if answered[m.ToolCallID] {
				t.Fatalf("message %d: second result for %q", i, m.ToolCallID)
			}
			answered[m.ToolCallID] = true
		case conversation.RoleUser:
		default:
			t.Fatalf("message %d: role %q", i, m.Role)
		}
	}
	for k, i := range s.CompactionAt {
		if i < 0 || i >= len(s.Messages) || s.Messages[i].Role != conversation.RoleUser || !s.Messages[i].Meta ||
			(k > 0 && i <= s.CompactionAt[k-1]) {
			t.Fatalf("compaction index %d (of %v) is not a Meta user message in order", i, s.CompactionAt)
		}
	}
	if len(s.CompactionAt) > s.Report.Compactions {
		t.Fatalf("%d compaction indexes for %d compactions", len(s.CompactionAt), s.Report.Compactions)
	}
	for _, p := range s.Report.Problems {
		if p.Line < 1 || p.Line > s.Report.Lines {
			t.Fatalf("problem %q: line out of range 1..%d", p, s.Report.Lines)
		}
	}
}

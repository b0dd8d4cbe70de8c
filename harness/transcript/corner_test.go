package transcript

import (
	"fmt"
	"github.com/ctxstore/ctxstore/harness/pi"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Small Claude Code records for the table tests. u and a build a user and an
// assistant record; parent "" is a root.
func ccUser(uuid, parent, content string, extra ...string) string {
	p := `null`
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"sessionId":"s1","type":"user","message":{"role":"user","content":%s},"uuid":%q,"timestamp":"2025-01-01T00:00:00Z"%s}`,
		p, content, uuid, strings.Join(extra, ""))
}

func ccAsst(uuid, parent, msgID, content string, extra ...string) string {
	return fmt.Sprintf(`{"parentUuid":%q,"isSidechain":false,"sessionId":"s1","type":"assistant","message":{"id":%q,"model":"claude-x","role":"assistant","content":%s,"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":5}},"uuid":%q,"timestamp":"2025-01-01T00:00:01Z"%s}`,
		parent, msgID, content, uuid, strings.Join(extra, ""))
}

const (
	toolUse1    = `[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a"}}]`
	toolResult1 = `[{"type":"tool_result","tool_use_id":"t1","content":"file a"}]`
)

// summary renders messages compactly: role letter, then text, calls or
// output.
func summary(ms []conversation.Message) string {
	var parts []string
	for _, m := range ms {
		switch m.Role {
		case conversation.RoleUser:
			p := "U:" + m.Text
			if m.Meta {
				p = "M:" + m.Text
			}
			parts = append(parts, p)
		case conversation.RoleAssistant:
			p := "A:" + m.Text
			for _, c := range m.ToolCalls {
				p += "+" + c.Name + "(" + c.ID + ")"
			}
			parts = append(parts, p)
		case conversation.RoleToolResult:
			p := "R:" + m.ToolName + "(" + m.ToolCallID + ")=" + m.Output
			if m.IsError {
				p += "!"
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " | ")
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestCorners(t *testing.T) {
	cases := []struct {
		name   string
		format Format // FormatAuto: detected
		in     string
		want   string // summary of the messages
		check  func(t *testing.T, s *Session)
	}{
		{
			name: "cc streamed response merged by message id, usage once",
			in: lines(
				ccUser("u1", "", `"read a"`),
				ccAsst("a1", "u1", "m1", `[{"type":"thinking","thinking":"hm"}]`),
				ccAsst("a2", "a1", "m1", `[{"type":"text","text":"reading"}]`),
				ccAsst("a3", "a2", "m1", toolUse1),
				ccUser("u2", "a3", toolResult1),
				ccAsst("a4", "u2", "m2", `[{"type":"text","text":"done"}]`),
			),
			want: "U:read a | A:reading+Read(t1) | R:Read(t1)=file a | A:done",
			check: func(t *testing.T, s *Session) {
				if s.Format != FormatClaudeCode || s.Report.Merged != 2 || s.Report.Thinking != 1 {
					t.Fatalf("format %q merged %d thinking %d", s.Format, s.Report.Merged, s.Report.Thinking)
				}
				if u := s.Messages[1].Usage; u == nil || u.Sent() != 60 || u.Output != 5 {
					t.Fatalf("usage %+v", u)
				}
				if s.MessageLines[1] != 2 || s.MessageLines[2] != 5 {
					t.Fatalf("lines %v", s.MessageLines)
				}
			},
		},
		{
			name: "cc sidechain set aside and counted",
			in: lines(
				ccUser("u1", "", `"go"`),
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"delegating"}]`),
				`{"parentUuid":null,"isSidechain":true,"type":"user","message":{"role":"user","content":"sub task"},"uuid":"s1"}`,
				`{"parentUuid":"s1","isSidechain":true,"type":"assistant","message":{"id":"ms","role":"assistant","content":[{"type":"text","text":"sub"}]},"uuid":"s2"}`,
				ccUser("u2", "a1", `"next"`),
			),
			want: "U:go | A:delegating | U:next",
			check: func(t *testing.T, s *Session) {
				if s.Report.Sidechain != 2 || s.Report.OffBranch != 0 {
					t.Fatalf("sidechain %d off-branch %d", s.Report.Sidechain, s.Report.OffBranch)
				}
			},
		},
		{
			name: "cc tool result as a block list with an image, error flag",
			in: lines(
				ccUser("u1", "", `"shot"`),
				ccAsst("a1", "u1", "m1", `[{"type":"tool_use","id":"t1","name":"Screenshot","input":{}}]`),
				ccUser("u2", "a1", `[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"took it"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAABBBB"}}]}]`),
			),
			want: "U:shot | A:+Screenshot(t1) | R:Screenshot(t1)=took it\n[image: image/png, 6 bytes]!",
			check: func(t *testing.T, s *Session) {
				if s.Report.Images != 1 {
					t.Fatalf("images %d", s.Report.Images)
				}
			},
		},
		{
			name: "cc unknown record types counted and skipped",
			in: lines(
				`{"type":"queue-operation","operation":"dequeue","sessionId":"s1"}`,
				ccUser("u1", "", `"hi"`),
				`{"type":"brand-new-thing","uuid":"x1","parentUuid":"u1","sessionId":"s1"}`,
				ccAsst("a1", "x1", "m1", `[{"type":"text","text":"hello"}]`),
			),
			want: "U:hi | A:hello",
			check: func(t *testing.T, s *Session) {
				if s.Report.Unknown["brand-new-thing"] != 1 || s.Report.Skipped["queue-operation"] != 1 {
					t.Fatalf("unknown %v skipped %v", s.Report.Unknown, s.Report.Skipped)
				}
			},
		},
		{
			name: "two JSON objects on one line",
			in: lines(
				ccUser("u1", "", `"hi"`)+ccAsst("a1", "u1", "m1", `[{"type":"text","text":"hello"}]`),
				ccUser("u2", "a1", `"more"`),
			),
			want: "U:hi | A:hello | U:more",
			check: func(t *testing.T, s *Session) {
				wantProblems(t, s, 1, "2 JSON values on one line")
			},
		},
		{
			name: "truncated last line",
			in: ccUser("u1", "", `"hi"`) + "\n" + ccAsst("a1", "u1", "m1", `[{"type":"text","text":"hello"}]`) + "\n" +
				ccUser("u2", "a1", `"cut here`)[:60],
			want: "U:hi | A:hello",
			check: func(t *testing.T, s *Session) {
				if s.Report.Lines != 3 {
					t.Fatalf("lines %d", s.Report.Lines)
				}
				wantProblems(t, s, 3, "invalid JSON at byte 1")
			},
		},
		{
			name: "truncated record with the next one written on the same line",
			in: lines(
				ccUser("u1", "", `"hi"`),
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"hel`)[:150]+ccAsst("a2", "u1", "m2", `[{"type":"text","text":"hello"}]`),
				ccUser("u2", "a2", `"next"`),
			),
			want: "U:hi | A:hello | U:next",
			check: func(t *testing.T, s *Session) {
				wantProblems(t, s, 2, "reading on at byte 151")
			},
		},
		{
			name: "damaged lines in the middle, non-objects, blank lines",
			in: lines(
				ccUser("u1", "", `"hi"`),
				`{"type":"user", garbage`,
				``,
				`[1,2,3]`,
				`   `,
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"hello"}]`),
			),
			want: "U:hi | A:hello",
			check: func(t *testing.T, s *Session) {
				wantProblems(t, s, 2, "invalid JSON")
				wantProblems(t, s, 4, "not an object")
				if s.Report.Lines != 6 {
					t.Fatalf("lines %d", s.Report.Lines)
				}
			},
		},
		{
			name: "cc compaction: the thread crosses the compact summary root",
			in: lines(
				ccUser("u1", "", `"task"`),
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"working"}]`),
				ccUser("c1", "", `"This session is being continued from a previous conversation. Summary: x"`, `,"isCompactSummary":true`),
				ccAsst("a2", "c1", "m2", `[{"type":"text","text":"resuming"}]`),
			),
			want: "U:task | A:working | M:This session is being continued from a previous conversation. Summary: x | A:resuming",
			check: func(t *testing.T, s *Session) {
				if s.Report.Compactions != 1 || s.Report.OffBranch != 0 {
					t.Fatalf("compactions %d off-branch %d", s.Report.Compactions, s.Report.OffBranch)
				}
			},
		},
		{
			name: "cc compact_boundary with logicalParentUuid",
			in: lines(
				ccUser("u1", "", `"task"`),
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"working"}]`),
				ccUser("x1", "", `"unrelated, abandoned"`),
				`{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"a1","uuid":"b1","sessionId":"s1"}`,
				ccUser("c1", "b1", `"summary of it"`, `,"isCompactSummary":true`),
				ccAsst("a2", "c1", "m2", `[{"type":"text","text":"resuming"}]`),
			),
			want: "U:task | A:working | M:summary of it | A:resuming",
			check: func(t *testing.T, s *Session) {
				if s.Report.OffBranch != 1 {
					t.Fatalf("off-branch %d", s.Report.OffBranch)
				}
			},
		},
		{
			name: "cc /clear: an earlier root is another conversation",
			in: lines(
				ccUser("u1", "", `"old"`),
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"old answer"}]`),
				strings.Replace(ccUser("u2", "", `"new"`), `"s1"`, `"s2"`, 1),
				strings.Replace(ccAsst("a2", "u2", "m2", `[{"type":"text","text":"new answer"}]`), `"s1"`, `"s2"`, 1),
			),
			want: "U:new | A:new answer",
			check: func(t *testing.T, s *Session) {
				if s.Report.OffBranch != 2 || len(s.Report.SessionIDs) != 1 || s.ID != "s2" {
					t.Fatalf("off-branch %d sessions %v id %q", s.Report.OffBranch, s.Report.SessionIDs, s.ID)
				}
			},
		},
		{
			name: "cc a resumed session continues the chain under a new session id",
			in: lines(
				ccUser("u1", "", `"task"`),
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"ok"}]`),
				strings.Replace(ccUser("u2", "a1", `"go on"`), `"s1"`, `"s2"`, 1),
				strings.Replace(ccAsst("a2", "u2", "m2", `[{"type":"text","text":"on it"}]`), `"s1"`, `"s2"`, 1),
			),
			want: "U:task | A:ok | U:go on | A:on it",
			check: func(t *testing.T, s *Session) {
				if got := strings.Join(s.Report.SessionIDs, ","); got != "s1,s2" {
					t.Fatalf("sessions %s", got)
				}
			},
		},
		{
			name: "cc parallel tool results written as siblings are attached",
			in: lines(
				ccUser("u1", "", `"two reads"`),
				ccAsst("a1", "u1", "m1", `[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a"}}]`),
				ccAsst("a2", "a1", "m1", `[{"type":"tool_use","id":"t2","name":"Grep","input":{"pattern":"x"}}]`),
				ccUser("r1", "a1", `[{"type":"tool_result","tool_use_id":"t1","content":"A"}]`),
				ccUser("r2", "a2", `[{"type":"tool_result","tool_use_id":"t2","content":"B"}]`),
				ccAsst("a3", "r2", "m2", `[{"type":"text","text":"both"}]`),
			),
			want: "U:two reads | A:+Read(t1)+Grep(t2) | R:Read(t1)=A | R:Grep(t2)=B | A:both",
			check: func(t *testing.T, s *Session) {
				if s.Report.Attached != 1 || s.Report.OffBranch != 0 {
					t.Fatalf("attached %d off-branch %d", s.Report.Attached, s.Report.OffBranch)
				}
			},
		},
		{
			name: "cc orphaned and duplicate tool results are dropped and reported",
			in: lines(
				ccUser("u1", "", `[{"type":"tool_result","tool_use_id":"nope","content":"?"}]`),
				ccAsst("a1", "u1", "m1", toolUse1),
				ccUser("u2", "a1", `[{"type":"tool_result","tool_use_id":"t1","content":"A"},{"type":"tool_result","tool_use_id":"t1","content":"again"},{"type":"text","text":"and a note"}]`),
			),
			want: "A:+Read(t1) | R:Read(t1)=A | U:and a note",
			check: func(t *testing.T, s *Session) {
				if s.Report.Orphans != 1 || s.Report.Duplicates != 1 {
					t.Fatalf("orphans %d duplicates %d", s.Report.Orphans, s.Report.Duplicates)
				}
				wantProblems(t, s, 1, `"nope" has no earlier call`)
				wantProblems(t, s, 3, "second result")
			},
		},
		{
			name: "cc synthetic messages have no usage; meta and commands",
			in: lines(
				ccUser("u1", "", `"<command-name>/model</command-name>"`),
				ccUser("u2", "u1", `"Caveat: local commands"`, `,"isMeta":true`),
				strings.Replace(ccAsst("a1", "u2", "m1", `[{"type":"text","text":"API Error"}]`), `"claude-x"`, `"<synthetic>"`, 1),
			),
			want: "M:<command-name>/model</command-name> | M:Caveat: local commands | A:API Error",
			check: func(t *testing.T, s *Session) {
				if s.Messages[2].Usage != nil {
					t.Fatalf("synthetic usage %+v", s.Messages[2].Usage)
				}
			},
		},
		{
			name: "cc a missing parent is reported and the thread goes on",
			in: lines(
				ccUser("u1", "", `"hi"`),
				ccAsst("a1", "u1", "m1", `[{"type":"text","text":"hello"}]`),
				ccUser("u2", "lost-record", `"after a dropped line"`),
			),
			want: "U:hi | A:hello | U:after a dropped line",
			check: func(t *testing.T, s *Session) {
				wantProblems(t, s, 3, "parent lost-record is not in the file")
			},
		},
		{
			name: "cc lenient fields: wrong types do not lose the record",
			in: lines(
				`{"parentUuid":null,"isSidechain":"no","type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":7}`,
				`{"parentUuid":"u1","type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":"12","output_tokens":3.7,"cache_read_input_tokens":null}},"uuid":"a1"}`,
			),
			want: "U:hi | A:ok",
			check: func(t *testing.T, s *Session) {
				if u := s.Messages[1].Usage; u == nil || u.Input != 12 || u.Output != 3 || u.CacheRead != 0 {
					t.Fatalf("usage %+v", u)
				}
			},
		},
		{
			name: "pi v1: file order, tool results, compaction, bash",
			in: lines(
				`{"type":"session","id":"p1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w","provider":"anthropic","modelId":"m"}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"text","text":"fix it"}],"timestamp":1}}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"looking"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.go"}}],"model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4},"stopReason":"toolUse"}}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:03Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"package a"}],"isError":false}}`,
				`{"type":"model_change","timestamp":"2025-01-01T00:00:04Z","provider":"anthropic","modelId":"m2"}`,
				`{"type":"compaction","timestamp":"2025-01-01T00:00:05Z","summary":"we read a.go","firstKeptEntryIndex":3,"tokensBefore":100}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:06Z","message":{"role":"bashExecution","command":"ls","output":"a.go\n","exitCode":1,"cancelled":false}}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:07Z","message":{"role":"bashExecution","command":"secret","output":"x","excludeFromContext":true}}`,
			),
			// Pi's own texts (convertToLlm): the summary inside its prefix and
			// suffix, the output untrimmed, a blank line before the exit code.
			want: "U:fix it | A:looking+read(c1) | R:read(c1)=package a | M:" + pi.CompactionPrefix + "we read a.go" + pi.CompactionSuffix +
				" | M:Ran `ls`\n```\na.go\n\n```\n\nCommand exited with code 1",
			check: func(t *testing.T, s *Session) {
				if s.Format != FormatPi || s.Version != "1" || s.ID != "p1" || s.Cwd != "/w" {
					t.Fatalf("format %q version %q id %q cwd %q", s.Format, s.Version, s.ID, s.Cwd)
				}
				if u := s.Messages[1].Usage; u == nil || u.Sent() != 8 {
					t.Fatalf("usage %+v", u)
				}
				if s.Report.Compactions != 1 || s.Report.Skipped["model_change"] != 1 || s.Report.Thinking != 1 {
					t.Fatalf("report %+v", s.Report)
				}
			},
		},
		{
			name: "pi v3: the path to the last entry; an abandoned branch is set aside",
			in: lines(
				`{"type":"session","version":3,"id":"p3","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}`,
				`{"type":"message","id":"e1","parentId":null,"timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"first"}}`,
				`{"type":"message","id":"e2","parentId":"e1","timestamp":"2025-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"answer A"}]}}`,
				`{"type":"message","id":"e3","parentId":"e2","timestamp":"2025-01-01T00:00:03Z","message":{"role":"user","content":"abandoned"}}`,
				`{"type":"branch_summary","id":"e4","parentId":"e2","timestamp":"2025-01-01T00:00:04Z","fromId":"e3","summary":"tried something"}`,
				`{"type":"custom","id":"e5","parentId":"e4","customType":"ext","data":{}}`,
				`{"type":"custom_message","id":"e6","parentId":"e5","customType":"ext","content":"injected","display":false}`,
				`{"type":"message","id":"e7","parentId":"e6","timestamp":"2025-01-01T00:00:07Z","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"QUJD","mimeType":"image/jpeg"}]}}`,
			),
			want: "U:first | A:answer A | M:" + pi.BranchPrefix + "tried something" + pi.BranchSuffix + " | M:injected | U:look\n\n[image: image/jpeg, 3 bytes]",
			check: func(t *testing.T, s *Session) {
				if s.Version != "3" || s.Report.OffBranch != 1 || s.Report.Skipped["custom"] != 1 {
					t.Fatalf("version %q off-branch %d skipped %v", s.Version, s.Report.OffBranch, s.Report.Skipped)
				}
			},
		},
		{
			name: "pi v3 without a header, a missing parent, an unknown entry type in the chain",
			in: lines(
				`{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"a"}}`,
				`{"type":"future_entry","id":"e2","parentId":"e1"}`,
				`{"type":"message","id":"e3","parentId":"e2","message":{"role":"assistant","content":[{"type":"text","text":"b"}]}}`,
				`{"type":"message","id":"e5","parentId":"e4","message":{"role":"user","content":"c"}}`,
			),
			want: "U:a | A:b | U:c",
			check: func(t *testing.T, s *Session) {
				if s.Format != FormatPi || s.Report.Unknown["future_entry"] != 1 {
					t.Fatalf("format %q unknown %v", s.Format, s.Report.Unknown)
				}
				wantProblems(t, s, 4, "parent e4 is not in the file")
			},
		},
		{
			name: "pi two entries on one line and a truncated last line",
			in: `{"type":"session","id":"p1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}` + "\n" +
				`{"type":"message","timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"one"}}{"type":"message","timestamp":"2025-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}` + "\n" +
				`{"type":"message","timestamp":"2025-01-01T00:00:03Z","message":{"role":"user","content":"thr`,
			want: "U:one | A:two",
			check: func(t *testing.T, s *Session) {
				wantProblems(t, s, 2, "2 JSON values")
				wantProblems(t, s, 3, "invalid JSON")
			},
		},
		{
			name: "pi aborted and errored responses keep their usage, not their content",
			in: lines(
				`{"type":"message","timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"go"}}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"partial"},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"a"}}],"usage":{"input":1,"output":1,"cacheRead":100,"cacheWrite":0},"stopReason":"aborted","errorMessage":"Request was aborted."}}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:03Z","message":{"role":"user","content":"again"}}`,
				`{"type":"message","timestamp":"2025-01-01T00:00:04Z","message":{"role":"assistant","content":[{"type":"text","text":"x"}],"usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":0},"stopReason":"error","errorMessage":"terminated"}}`,
			),
			want: "U:go | A: | U:again | A:",
			check: func(t *testing.T, s *Session) {
				if s.Report.Aborted != 2 || s.Messages[1].Usage == nil || s.Messages[1].Usage.Sent() != 101 || s.Report.Unanswered != 0 {
					t.Fatalf("aborted %d usage %+v unanswered %d", s.Report.Aborted, s.Messages[1].Usage, s.Report.Unanswered)
				}
			},
		},
		{
			name:   "pi tool result before its call is dropped",
			format: FormatPi,
			in: lines(
				`{"type":"message","message":{"role":"toolResult","toolCallId":"c9","toolName":"bash","content":[{"type":"text","text":"early"}]}}`,
				`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c9","name":"bash","arguments":{"command":"ls"}}]}}`,
			),
			want: "A:+bash(c9)",
			check: func(t *testing.T, s *Session) {
				if s.Report.Orphans != 1 || s.Report.Unanswered != 1 {
					t.Fatalf("orphans %d unanswered %d", s.Report.Orphans, s.Report.Unanswered)
				}
			},
		},
		{
			name: "empty input",
			in:   "",
			want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Read(strings.NewReader(c.in), c.format)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
			if got := summary(s.Messages); got != c.want {
				t.Fatalf("messages\n got %q\nwant %q\nproblems %v", got, c.want, s.Report.Problems)
			}
			if c.check != nil {
				c.check(t, s)
			}
		})
	}
}

// wantProblems fails unless a problem at line mentions text.
func wantProblems(t *testing.T, s *Session, line int, text string) {
	t.Helper()
	for _, p := range s.Report.Problems {
		if p.Line == line && strings.Contains(p.Msg, text) {
			return
		}
	}
	t.Fatalf("no problem at line %d mentioning %q in %v", line, text, s.Report.Problems)
}

func TestDetect(t *testing.T) {
	if _, err := Read(strings.NewReader(`{"type":"whatever","x":1}`+"\n"), FormatAuto); err == nil {
		t.Fatal("an unknown format was accepted")
	}
	if _, err := Read(strings.NewReader(`{"type":"session"}`+"\n"), "no-such-format"); err == nil {
		t.Fatal("an unknown format name was accepted")
	}
	for in, want := range map[string]Format{
		`{"type":"summary","summary":"t","leafUuid":"x"}`:                FormatClaudeCode,
		`{"type":"file-history-snapshot","messageId":"m","snapshot":{}}`: FormatClaudeCode,
		`{"type":"session","version":3,"id":"s"}`:                        FormatPi,
		`{"type":"model_change","provider":"p","modelId":"m"}`:           FormatPi,
	} {
		s, err := Read(strings.NewReader(in+"\n"), FormatAuto)
		if err != nil || s.Format != want {
			t.Errorf("%s: format %q err %v, want %q", in, s.Format, err, want)
		}
	}
}

package transcript

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// rawLines decodes every line of a dataset file as a generic JSON object;
// the datasets have no damaged lines.
func rawLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func asString(v any) string { s, _ := v.(string); return s }
func asInt(v any) int64     { f, _ := v.(float64); return int64(f) }

// blocksOf returns a message's content blocks (nil for a string content).
func blocksOf(msg map[string]any) []map[string]any {
	items, _ := msg["content"].([]any)
	var out []map[string]any
	for _, it := range items {
		if b, ok := it.(map[string]any); ok {
			out = append(out, b)
		}
	}
	return out
}

// totals summarizes a session the same way for the reader's output and for
// the counts derived from raw JSON.
type totals struct {
	Assistant, ToolCalls, ToolResults, Compactions, Sidechain int
	Sent, Output                                              int64
	CallNames                                                 map[string]int
}

func sessionTotals(s *Session) totals {
	tt := totals{CallNames: map[string]int{}, Sidechain: s.Report.Sidechain, Compactions: s.Report.Compactions}
	for _, m := range s.Messages {
		switch m.Role {
		case conversation.RoleAssistant:
			tt.Assistant++
			tt.ToolCalls += len(m.ToolCalls)
			for _, c := range m.ToolCalls {
				tt.CallNames[c.Name]++
			}
			if m.Usage != nil {
				tt.Sent += m.Usage.Sent()
				tt.Output += m.Usage.Output
			}
		case conversation.RoleToolResult:
			tt.ToolResults++
		}
	}
	return tt
}

// TestClaudeCodeDatasets reads every Claude Code file and checks the
// reader's messages against counts derived here from the raw records:
// distinct message ids of main-thread assistant records (one message per
// API response), tool_use blocks, tool_result blocks, usage once per message
// id (the maximum output_tokens of its records), compaction summaries and
// sidechain records. Every main-thread record of these files is on the
// thread the reader follows (or hangs off it as a parallel tool result), so
// the raw counts over all non-sidechain records must match exactly.
func TestClaudeCodeDatasets(t *testing.T) {
	ds := datasets(t)
	files, _ := filepath.Glob(filepath.Join(ds, "claude-code", "*.jsonl"))
	raw, _ := filepath.Glob(filepath.Join(ds, "claude-code", "raw", "*.jsonl"))
	files = append(files, raw...)
	if len(files) < 11 {
		t.Fatalf("found %d Claude Code files, want 11", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
			if s.Format != FormatClaudeCode {
				t.Fatalf("format %q", s.Format)
			}
			if len(s.Report.Problems) > 0 {
				t.Fatalf("problems: %v", s.Report.Problems)
			}
			if s.Report.OffBranch != 0 || s.Report.Orphans != 0 || s.Report.Duplicates != 0 {
				t.Fatalf("off-branch %d, orphans %d, duplicates %d", s.Report.OffBranch, s.Report.Orphans, s.Report.Duplicates)
			}

			want := totals{CallNames: map[string]int{}}
			type usage struct{ sent, out int64 }
			ids := map[string]*usage{}
			uses := map[string]bool{}
			for _, r := range rawLines(t, path) {
				if r["isSidechain"] == true {
					want.Sidechain++
					continue
				}
				msg, _ := r["message"].(map[string]any)
				switch r["type"] {
				case "assistant":
					id := asString(msg["id"])
					u, seen := ids[id]
					if !seen {
						u = &usage{}
						ids[id] = u
						want.Assistant++
						if us, ok := msg["usage"].(map[string]any); ok && msg["model"] != "<synthetic>" {
							u.sent = asInt(us["input_tokens"]) + asInt(us["cache_read_input_tokens"]) + asInt(us["cache_creation_input_tokens"])
						}
					}
					if us, ok := msg["usage"].(map[string]any); ok && msg["model"] != "<synthetic>" {
						u.out = max(u.out, asInt(us["output_tokens"]))
					}
					for _, b := range blocksOf(msg) {
						if b["type"] == "tool_use" {
							want.ToolCalls++
							want.CallNames[asString(b["name"])]++
							uses[asString(b["id"])] = true
						}
					}
				case "user":
					text := asString(msg["content"])
					for _, b := range blocksOf(msg) {
						if b["type"] == "tool_result" && uses[asString(b["tool_use_id"])] {
							want.ToolResults++
						}
						if text == "" && b["type"] == "text" {
							text = asString(b["text"])
						}
					}
					if r["isCompactSummary"] == true || strings.HasPrefix(strings.TrimSpace(text), claudecode.ContinuedPrefix) {
						want.Compactions++
					}
				}
			}
			for _, u := range ids {
				want.Sent += u.sent
				want.Output += u.out
			}
			got := sessionTotals(s)
			if !equalTotals(got, want) {
				t.Fatalf("reader %+v\nraw    %+v", got, want)
			}
			if len(s.CompactionAt) != want.Compactions {
				t.Fatalf("%d compaction indexes, raw %d compactions", len(s.CompactionAt), want.Compactions)
			}
			if got.Assistant == 0 || got.Sent == 0 {
				t.Fatalf("nothing read: %+v", got)
			}
			t.Logf("%d messages, %d calls, %d tool calls, sent %d; sessions %v; report: merged %d, attached %d, skipped %v",
				len(s.Messages), got.Assistant, got.ToolCalls, got.Sent, s.Report.SessionIDs, s.Report.Merged, s.Report.Attached, s.Report.Skipped)
		})
	}
}

// TestPiDatasets reads both Pi files and checks them against the raw
// entries: assistant, toolResult, user (plus "!" commands and compaction
// summaries as user messages), toolCall blocks, usage.
func TestPiDatasets(t *testing.T) {
	ds := datasets(t)
	files, _ := filepath.Glob(filepath.Join(ds, "pi", "*.jsonl"))
	if len(files) < 2 {
		t.Fatalf("found %d Pi files, want 2", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
			if s.Format != FormatPi || s.Version != "1" {
				t.Fatalf("format %q version %q", s.Format, s.Version)
			}
			if len(s.Report.Problems) > 0 {
				t.Fatalf("problems: %v", s.Report.Problems)
			}
			want := totals{CallNames: map[string]int{}}
			users, aborted := 0, 0
			calls := map[string]bool{}
			for _, r := range rawLines(t, path) {
				switch r["type"] {
				case "compaction":
					want.Compactions++
					users++
				case "message":
					msg, _ := r["message"].(map[string]any)
					switch msg["role"] {
					case "assistant":
						want.Assistant++
						if us, ok := msg["usage"].(map[string]any); ok {
							want.Sent += asInt(us["input"]) + asInt(us["cacheRead"]) + asInt(us["cacheWrite"])
							want.Output += asInt(us["output"])
						}
						if msg["stopReason"] == "aborted" || msg["stopReason"] == "error" {
							aborted++
							continue // Pi leaves them out of later contexts
						}
						for _, b := range blocksOf(msg) {
							if b["type"] == "toolCall" {
								want.ToolCalls++
								want.CallNames[asString(b["name"])]++
								calls[asString(b["id"])] = true
							}
						}
					case "toolResult":
						if calls[asString(msg["toolCallId"])] {
							want.ToolResults++
						}
					case "user", "bashExecution":
						users++
					}
				}
			}
			got := sessionTotals(s)
			if !equalTotals(got, want) {
				t.Fatalf("reader %+v\nraw    %+v", got, want)
			}
			if len(s.CompactionAt) != want.Compactions || s.Report.Aborted != aborted || aborted == 0 {
				t.Fatalf("%d compaction indexes, raw %d compactions; %d aborted, raw %d", len(s.CompactionAt), want.Compactions, s.Report.Aborted, aborted)
			}
			gotUsers := 0
			for _, m := range s.Messages {
				if m.Role == conversation.RoleUser {
					gotUsers++
				}
			}
			if gotUsers != users {
				t.Fatalf("%d user messages, raw %d", gotUsers, users)
			}
			t.Logf("%d messages, %d calls, %d tool calls (%v), sent %d, unanswered %d, orphans %d",
				len(s.Messages), got.Assistant, got.ToolCalls, got.CallNames, got.Sent, s.Report.Unanswered, s.Report.Orphans)
		})
	}
}

func equalTotals(a, b totals) bool {
	if a.Assistant != b.Assistant || a.ToolCalls != b.ToolCalls || a.ToolResults != b.ToolResults ||
		a.Compactions != b.Compactions || a.Sidechain != b.Sidechain || a.Sent != b.Sent || a.Output != b.Output ||
		len(a.CallNames) != len(b.CallNames) {
		return false
	}
	for k, v := range a.CallNames {
		if b.CallNames[k] != v {
			return false
		}
	}
	return true
}

package transcript

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadAllConversations: a Claude Code file with two conversations (a
// /clear starts a second parent chain) and an abandoned branch of the
// second gives both conversations, oldest first; the branch is set aside
// and counted; Read still returns the last conversation alone.
func TestReadAllConversations(t *testing.T) {
	in := lines(
		ccUser("a1", "", `"first task"`),
		ccAsst("a2", "a1", "m1", toolUse1),
		ccUser("a3", "a2", toolResult1),
		ccAsst("a4", "a3", "m2", `[{"type":"text","text":"first done"}]`),
		// /clear: a new root.
		ccUser("b1", "", `"second task"`),
		ccAsst("b2", "b1", "m3", `[{"type":"text","text":"answer one"}]`),
		// A branch off b1 (the prompt edited and sent again), abandoned.
		ccAsst("x2", "b1", "m9", `[{"type":"text","text":"abandoned"}]`),
		ccUser("b3", "b2", `"more"`),
		ccAsst("b4", "b3", "m4", `[{"type":"text","text":"second done"}]`),
	)
	ss, err := ReadAll(strings.NewReader(in), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("%d conversations", len(ss))
	}
	if got, want := summary(ss[0].Messages), "U:first task | A:+Read(t1) | R:Read(t1)=file a | A:first done"; got != want {
		t.Fatalf("conversation 1: %s", got)
	}
	if got, want := summary(ss[1].Messages), "U:second task | A:answer one | U:more | A:second done"; got != want {
		t.Fatalf("conversation 2: %s", got)
	}
	for k, s := range ss {
		if s.Format != FormatClaudeCode || s.Report.OffBranch != 1 {
			t.Fatalf("conversation %d: format %s, off-branch %d", k+1, s.Format, s.Report.OffBranch)
		}
	}
	one, err := Read(strings.NewReader(in), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if summary(one.Messages) != summary(ss[1].Messages) {
		t.Fatalf("Read: %s", summary(one.Messages))
	}
	// A file of one conversation gives it alone; ReadAllFile names the path.
	path := filepath.Join(t.TempDir(), "one.jsonl")
	if err := os.WriteFile(path, []byte(lines(ccUser("a1", "", `"hi"`), ccAsst("a2", "a1", "m1", `[{"type":"text","text":"ok"}]`))), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err = ReadAllFile(path)
	if err != nil || len(ss) != 1 || ss[0].Path != path || len(ss[0].Messages) != 2 {
		t.Fatalf("one conversation: %v %d", err, len(ss))
	}
	// A Pi file is one conversation.
	pi := lines(`{"type":"session","version":3,"id":"p1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}`,
		`{"type":"message","id":"e1","parentId":null,"timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"hi","timestamp":1}}`)
	ss, err = ReadAll(strings.NewReader(pi), FormatAuto)
	if err != nil || len(ss) != 1 || ss[0].Format != FormatPi {
		t.Fatalf("pi: %v %d", err, len(ss))
	}
}

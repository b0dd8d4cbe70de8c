package importer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

func ccUser(uuid, parent, content string, extra string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%q,"sessionId":"sc","timestamp":"2026-02-01T00:00:00Z"%s,"message":{"role":"user","content":%s}}`, uuid, parent, extra, content)
}

// TestClassifyAndCompaction: Claude Code user records classified as spec
// 002 says (tool results, system-injected content tagged with its kind,
// isMeta, human prompts), streamed assistant records sharing a message id,
// and a 2.x compaction (compact_boundary, then the isCompactSummary record)
// committed as the pre-compaction delta, the compaction's lines as a delta
// and as a compaction commit: materialized from the compaction (the
// default stop) the chain starts at the boundary; to the root it is the
// file.
func TestClassifyAndCompaction(t *testing.T) {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	lines := []string{
		ccUser("u1", "", q("fix the bug"), ""),
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"sc","timestamp":"2026-02-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":"hmm","signature":"sig"}],"usage":{"input_tokens":5,"output_tokens":7}}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"sc","timestamp":"2026-02-01T00:00:02Z","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":5,"output_tokens":7}}}`,
		ccUser("r1", "a2", `[{"type":"tool_result","tool_use_id":"t1","content":"a.go"}]`, ""),
		ccUser("i1", "r1", q("<task-notification>done</task-notification>"), ""),
		ccUser("i2", "i1", q("<command-name>/clear</command-name>"), ""),
		ccUser("i3", "i2", q("Continue from where you left off."), ""),
		ccUser("i4", "i3", q("Base directory for this skill: /x"), ""),
		ccUser("i5", "i4", q("<bash-input>ls</bash-input>"), ""),
		ccUser("mt", "i5", q("Caveat: generated"), `,"isMeta":true`),
		`{"type":"system","subtype":"compact_boundary","uuid":"cb","parentUuid":null,"logicalParentUuid":"mt","sessionId":"sc","timestamp":"2026-02-01T00:01:00Z","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":1000}}`,
		ccUser("cs", "cb", q("This session is being continued from a previous conversation. Summary: fixed."), `,"isCompactSummary":true`),
		ccUser("u2", "cs", q("now test it"), ""),
	}
	file := strings.Join(lines, "\n") + "\n"
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "c.jsonl")
		os.WriteFile(p, []byte(file), 0o644)
		im := importer.New(e.Store, importer.Options{})
		res, err := im.ImportFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Sessions[0]
		if s.Prompts != 2 || s.Injected != 6 || s.ToolResults != 1 || s.ToolCalls != 1 || s.Compactions != 1 {
			t.Fatalf("summary %+v", s)
		}
		hist, err := im.Service().History(ctx, res.Tip, 0)
		if err != nil {
			t.Fatal(err)
		}
		// tip (u2), compaction, compaction delta, pre-compaction delta.
		if len(hist) != 4 || hist[1].Type != commits.Compaction || hist[2].Type != commits.Delta || hist[1].Content != hist[2].Content ||
			hist[2].Trigger != commits.CompactionTrigger || !strings.Contains(hist[1].Summary, "Summary: fixed.") {
			for _, c := range hist {
				t.Logf("%s %s %s %q", c.ID, c.Type, c.Trigger, c.Summary)
			}
			t.Fatal("chain shape")
		}
		if got := string(materialize(t, im, res.Tip, "")); got != file {
			t.Fatal("root materialization is not the file")
		}
		m, err := im.Service().Materialize(ctx, commits.MaterializeRequest{ID: res.Tip})
		if err != nil || string(m.Content) != strings.Join(lines[10:], "\n")+"\n" {
			t.Fatalf("from the compaction: %q %v", m.Content, err)
		}
		evs, _ := events.Decode(materialize(t, im, res.Tip, commits.FormatEvents))
		var got []string
		for _, x := range evs {
			got = append(got, strings.Trim(fmt.Sprintf("%s/%s/%s", x.Type, x.Subtype, x.Source), "/"))
		}
		want := "prompt//user thinking//assistant tool_call//assistant tool_result prompt/task_notification/system prompt/command/system " +
			"prompt/continue/system prompt/skill/system prompt/bash/system prompt/meta/meta system/compact_boundary system/compaction_summary prompt//user"
		if strings.Join(got, " ") != want {
			t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, " "), want)
		}
		if evs[1].MessageID != "m1" || evs[2].MessageID != "m1" || evs[1].Usage == nil || evs[2].Usage != nil || evs[1].Signature != "sig" {
			t.Fatalf("streamed records: %+v %+v", evs[1], evs[2])
		}
	})
}

// TestResumedSessionShares: a resumed Claude Code session's file starts
// with the records it copied in from the session it resumed; imported from
// one project folder, its first commits are the earlier file's (same bytes,
// parent, time and session: the same ids), its chain goes on from there
// with its own session id, and each file still materializes to its bytes.
func TestResumedSessionShares(t *testing.T) {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	a := strings.Join([]string{
		ccUser("u1", "", q("first"), ""),
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"sc","timestamp":"2026-02-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"text","text":"one"}]}}`,
		ccUser("u2", "a1", q("second"), ""),
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"sc","timestamp":"2026-02-01T00:00:03Z","message":{"id":"m2","role":"assistant","model":"claude","content":[{"type":"text","text":"two"}]}}`,
	}, "\n") + "\n"
	b := a + strings.Join([]string{
		`{"type":"user","uuid":"u3","parentUuid":"a2","sessionId":"sd","timestamp":"2026-02-02T00:00:00Z","message":{"role":"user","content":"resumed"}}`,
		`{"type":"assistant","uuid":"a3","parentUuid":"u3","sessionId":"sd","timestamp":"2026-02-02T00:00:01Z","message":{"id":"m3","role":"assistant","model":"claude","content":[{"type":"text","text":"three"}]}}`,
	}, "\n") + "\n"
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "sc.jsonl"), []byte(a), 0o644)
		os.WriteFile(filepath.Join(dir, "sd.jsonl"), []byte(b), 0o644)
		im := importer.New(e.Store, importer.Options{})
		res, err := im.Import(ctx, dir)
		if err != nil || len(res.Files) != 2 {
			t.Fatalf("%+v %v", res, err)
		}
		fa, fb := res.Files[0], res.Files[1]
		if string(materialize(t, im, fa.Tip, "")) != a || string(materialize(t, im, fb.Tip, "")) != b {
			t.Fatal("a file does not materialize to its bytes")
		}
		hist, _ := im.Service().History(ctx, fb.Tip, 0)
		if len(hist) != 3 || hist[1].ID != fa.Tip || hist[0].Session != "sd" || hist[2].ID != fa.Root {
			t.Fatalf("the resumed chain does not go on from the earlier one: %d commits", len(hist))
		}
		if len(fb.Sessions) != 2 || fb.Sessions[0].Session != "sc" || fb.Sessions[1].Session != "sd" || len(fb.Commits) != 3 {
			t.Fatalf("sessions %+v, commits %d", fb.Sessions, len(fb.Commits))
		}
	})
}

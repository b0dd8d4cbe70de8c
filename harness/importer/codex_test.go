package importer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestCodexRollout imports a Codex rollout (harness/codex's hand-written
// fixture: every line type, a compaction, an unknown type and a cut line)
// from a ~/.codex/sessions tree: the rollout is found in its day folder,
// imported as codex-v1 with its damage reported by file and line and
// kept, materializes to its bytes, decodes to its conversation; lines
// appended later are imported alone.
func TestCodexRollout(t *testing.T) {
	data, err := os.ReadFile("../codex/testdata/rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		root := filepath.Join(t.TempDir(), "sessions")
		day := filepath.Join(root, "2026", "01", "02")
		if err := os.MkdirAll(day, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(day, "rollout-2026-01-02T03-04-05-0badc0de-0000-4000-8000-000000000001.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		im := importer.New(e.Store, importer.Options{})
		res, err := im.Import(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Files) != 1 {
			t.Fatalf("files %+v", res.Files)
		}
		f := res.Files[0]
		if f.Status != importer.Imported || f.Format != commits.FormatCodex || f.Path != p || f.Lines != 19 {
			t.Fatalf("file %+v", f)
		}
		want := map[int]string{17: `unknown rollout line type "hologram"`, 18: "invalid JSON"}
		for line, msg := range want {
			found := false
			for _, pr := range f.Problems {
				found = found || (pr.Line == line && pr.Path == p && strings.Contains(pr.Msg, msg))
			}
			if !found {
				t.Errorf("no problem %q at line %d: %v", msg, line, f.Problems)
			}
		}
		if len(f.Sessions) != 1 {
			t.Fatalf("sessions %+v", f.Sessions)
		}
		s := f.Sessions[0]
		if s.Session != "0badc0de-0000-4000-8000-000000000001" || s.Harness != "codex 0.171.0" || s.Prompts != 2 || s.Responses != 2 ||
			s.ToolCalls != 2 || s.ToolResults != 2 || s.Compactions != 1 || s.Unknown["hologram"] != 1 || s.Skipped["event_msg"] != 2 {
			t.Errorf("session %+v", s)
		}
		if got := materialize(t, im, f.Tip, ""); !bytes.Equal(got, data) {
			t.Fatalf("materialized %d bytes, want the file's %d", len(got), len(data))
		}
		evs, err := events.Decode(materialize(t, im, f.Tip, commits.FormatEvents))
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, x := range evs {
			if x.Type == events.Prompt && x.Source == "user" || x.Type == events.Response {
				texts = append(texts, x.Text)
			}
		}
		if got := strings.Join(texts, "|"); got != "Q1: what is in notes.txt?|A1: the notes say alpha-note.|Q2: patch it|A2: patched." {
			t.Errorf("events: %q", got)
		}

		// The rollout grows: only the new line is imported.
		more := `{"timestamp":"2026-01-02T03:05:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Q3: more"}]}}` + "\n"
		fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteString(more); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		res, err = im.Import(ctx, filepath.Join(root, "2026", "01", "02"))
		if err != nil {
			t.Fatal(err)
		}
		g := res.Files[0]
		if g.Status != importer.Grew || g.NewLines != 1 || len(g.Commits) != 1 || g.Sessions[0].Prompts != 1 {
			t.Fatalf("after the rollout grew: %+v", g)
		}
		if got := materialize(t, im, g.Tip, ""); !bytes.Equal(got, append(append([]byte(nil), data...), more...)) {
			t.Fatal("the grown chain does not materialize to the file's bytes")
		}
		res, err = im.Import(ctx, p)
		if err != nil || res.Files[0].Status != importer.Unchanged {
			t.Fatalf("again: %v %+v", err, res)
		}
	})
}

// TestCodexSubagent imports a sessions tree holding a Codex session that
// spawned a sub-agent (spawn_agent, its output naming the agent) and the
// sub-agent's rollout (its session_meta naming the parent thread, in the
// shape Codex 0.171.0 writes), in a later day folder and sorting before
// its parent: the parent is imported first, and the sub-agent's chain
// forks at the parent's commit holding the spawn_agent call, its own
// bytes coming back from its root.
func TestCodexSubagent(t *testing.T) {
	const parentID, childID = "01a24b0c-8ddc-7c21-bc07-eddccf32e74f", "01a24b0c-8f04-7953-a21f-65260935a067"
	parent := strings.Join([]string{
		`{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"` + parentID + `","session_id":"` + parentID + `","cwd":"/work","originator":"codex_exec","cli_version":"0.171.0","source":"exec","thread_source":"user"}}`,
		`{"timestamp":"2026-01-02T03:04:05.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"use a sub-agent"}]}}`,
		`{"timestamp":"2026-01-02T03:04:05.200Z","type":"response_item","payload":{"type":"function_call","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{\"message\":\"say hi\"}","call_id":"call_spawn"}}`,
		`{"timestamp":"2026-01-02T03:04:05.300Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_spawn","output":"{\"agent_id\":\"` + childID + `\",\"nickname\":\"Euclid\"}"}}`,
		`{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"spawned"}]}}`,
		`{"timestamp":"2026-01-02T03:04:07.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"and then?"}]}}`,
		`{"timestamp":"2026-01-02T03:04:08.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
	}, "\n") + "\n"
	child := strings.Join([]string{
		`{"timestamp":"2026-01-03T03:04:05.250Z","type":"session_meta","payload":{"id":"` + childID + `","session_id":"` + parentID + `","parent_thread_id":"` + parentID + `","cwd":"/work","originator":"codex_exec","cli_version":"0.171.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + parentID + `","depth":1,"agent_nickname":"Euclid"}}},"thread_source":"subagent"}}`,
		`{"timestamp":"2026-01-03T03:04:05.260Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"say hi"}]}}`,
		`{"timestamp":"2026-01-03T03:04:05.270Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi from the sub-agent"}]}}`,
	}, "\n") + "\n"
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		root := filepath.Join(t.TempDir(), "sessions")
		d1, d0 := filepath.Join(root, "2026", "01", "03"), filepath.Join(root, "2025", "12", "31")
		for _, d := range []string{d0, d1} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// The parent's folder sorts after the sub-agent's: the sub-agent's
		// import imports it first.
		pp := filepath.Join(d1, "rollout-2026-01-03T03-04-05-"+parentID+".jsonl")
		cp := filepath.Join(d0, "rollout-2025-12-31T03-04-05-"+childID+".jsonl")
		if err := os.WriteFile(pp, []byte(parent), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp, []byte(child), 0o644); err != nil {
			t.Fatal(err)
		}
		im := importer.New(e.Store, importer.Options{})
		res, err := im.Import(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		var cf, pf *importer.FileResult
		for i := range res.Files {
			switch res.Files[i].Path {
			case cp:
				cf = &res.Files[i]
			case pp:
				pf = &res.Files[i]
			}
		}
		if cf == nil || pf == nil || cf.Parent == "" || len(cf.Problems) != 0 {
			t.Fatalf("files %+v", res.Files)
		}
		fp, err := im.Service().Show(ctx, cf.Parent, storeBasis())
		if err != nil {
			t.Fatal(err)
		}
		fc, _ := im.Service().Content(ctx, fp)
		if !strings.Contains(string(fc), `"name":"spawn_agent"`) || fp.Session != parentID {
			t.Fatalf("fork point %s (session %s) holds %q", fp.ID, fp.Session, fc)
		}
		m, err := im.Service().Materialize(ctx, commits.MaterializeRequest{ID: cf.Tip, Stop: cf.Root})
		if err != nil || string(m.Content) != child {
			t.Fatalf("the sub-agent's rollout from its root: %q %v", m.Content, err)
		}
		evs, _ := events.Decode(materialize(t, im, cf.Tip, commits.FormatEvents))
		var texts []string
		for _, ev := range evs {
			if ev.Type == events.Prompt || ev.Type == events.Response {
				texts = append(texts, ev.Text)
			}
		}
		parentOf := ""
		for _, ev := range evs {
			if ev.Type == events.System && ev.Subtype == "init" && ev.ID == childID {
				parentOf, _ = ev.Metadata["parent_thread"].(string)
			}
		}
		if parentOf != parentID {
			t.Errorf("the sub-agent's init event names parent %q", parentOf)
		}
		if got := strings.Join(texts, "|"); got != "use a sub-agent|spawned|say hi|hi from the sub-agent" {
			t.Fatalf("the sub-agent's chain as events: %s", got)
		}
		if string(materialize(t, im, pf.Tip, "")) != parent {
			t.Fatal("parent rollout")
		}
	})
}

package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestSubagentFiles imports a Claude Code 2.1.x project folder: a session
// whose Task call spawned a sub-agent written to
// <session>/subagents/agent-<id>.jsonl with its .meta.json. The sub-agent's
// chain forks at the commit holding the Task call, its commits carry the
// agent type as template and SESSION/AGENT as session, and its own bytes
// come back materializing from its first commit.
func TestSubagentFiles(t *testing.T) {
	main := strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s21","timestamp":"2026-01-01T00:00:00Z","version":"2.1.14","message":{"role":"user","content":"explore the repo"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s21","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"tu1","name":"Task","input":{"prompt":"look around"}}]}}`,
		`{"type":"user","uuid":"r1","parentUuid":"a1","sessionId":"s21","timestamp":"2026-01-01T00:00:09Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"found it"}]},"toolUseResult":{"agentId":"ab12","totalTokens":10}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"r1","sessionId":"s21","timestamp":"2026-01-01T00:00:10Z","message":{"id":"m2","role":"assistant","model":"claude","content":[{"type":"text","text":"done"}]}}`,
		`{"type":"user","uuid":"u2","parentUuid":"a2","sessionId":"s21","timestamp":"2026-01-01T00:00:20Z","message":{"role":"user","content":"thanks"}}`,
	}, "\n") + "\n"
	sub := strings.Join([]string{
		`{"type":"user","uuid":"x1","parentUuid":null,"isSidechain":true,"agentId":"ab12","sessionId":"s21","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"look around"}}`,
		`{"type":"assistant","uuid":"x2","parentUuid":"x1","isSidechain":true,"agentId":"ab12","sessionId":"s21","timestamp":"2026-01-01T00:00:03Z","message":{"id":"m9","role":"assistant","model":"claude","content":[{"type":"text","text":"found it"}]}}`,
	}, "\n") + "\n"
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		proj := filepath.Join(t.TempDir(), "-home-me-repo")
		os.MkdirAll(filepath.Join(proj, "s21", "subagents"), 0o755)
		os.WriteFile(filepath.Join(proj, "s21.jsonl"), []byte(main), 0o644)
		subPath := filepath.Join(proj, "s21", "subagents", "agent-ab12.jsonl")
		os.WriteFile(subPath, []byte(sub), 0o644)
		os.WriteFile(filepath.Join(proj, "s21", "subagents", "agent-ab12.meta.json"), []byte(`{"agentType":"Explore","description":"look around"}`), 0o644)
		im := importer.New(e.Store, importer.Options{})
		res, err := im.Import(ctx, proj)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Files) != 2 || res.Imported != 2 || len(res.Ignored) != 0 {
			t.Fatalf("%+v", res)
		}
		parent, child := res.Files[0], res.Files[1]
		if child.Path != subPath || child.Parent == "" {
			t.Fatalf("child %+v", child)
		}
		// The fork point holds the Task call.
		fp, err := im.Service().Show(ctx, child.Parent, storeBasis())
		if err != nil {
			t.Fatal(err)
		}
		fc, _ := im.Service().Content(ctx, fp)
		if !strings.Contains(string(fc), `"name":"Task"`) || fp.Session != "s21" {
			t.Fatalf("fork point %s holds %q", fp.ID, fc)
		}
		tip, _ := im.Service().Show(ctx, child.Tip, storeBasis())
		if tip.Template != "Explore" || tip.Session != "s21/ab12" {
			t.Fatalf("sub-agent commit: template %q session %q", tip.Template, tip.Session)
		}
		m, err := im.Service().Materialize(ctx, commits.MaterializeRequest{ID: child.Tip, Stop: child.Root})
		if err != nil || string(m.Content) != sub {
			t.Fatalf("sub-agent file from its root commit: %q %v", m.Content, err)
		}
		evs, _ := events.Decode(materialize(t, im, child.Tip, commits.FormatEvents))
		if len(evs) == 0 || evs[0].Text != "explore the repo" || evs[len(evs)-1].Text != "found it" {
			t.Fatalf("the branch's events %+v", evs)
		}
		if string(materialize(t, im, parent.Tip, "")) != main {
			t.Fatal("parent file")
		}
	})
}

func storeBasis() store.Basis { return store.Basis{} }

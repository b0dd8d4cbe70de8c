package importer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// datasetFiles lists every Claude Code and Pi file of the shared datasets.
func datasetFiles(t *testing.T) []string {
	dir := datasets.Dir(t)
	var out []string
	for _, g := range []string{"claude-code/*.jsonl", "claude-code/raw/*.jsonl", "pi/*.jsonl"} {
		m, _ := filepath.Glob(filepath.Join(dir, g))
		out = append(out, m...)
	}
	if len(out) < 13 {
		t.Fatalf("expected the 13 Claude Code and Pi dataset files, found %d", len(out))
	}
	return out
}

// copyTo copies src into dir (a file of the test's own: the cursor is per
// absolute path, and XTDB's database is shared by the process's tests).
func copyTo(t *testing.T, src, dir string) string {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFidelityEveryDataset imports every dataset file and materializes
// its chain to the root in its own format: the file's bytes exactly. The
// chain also decodes into events (field tier) with the file's prompts.
func TestFidelityEveryDataset(t *testing.T) {
	files := datasetFiles(t)
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		dir := t.TempDir()
		im := importer.New(e.Store, importer.Options{})
		for _, src := range files {
			p := copyTo(t, src, dir)
			want, _ := os.ReadFile(p)
			res, err := im.ImportFile(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if res.Status != importer.Imported || res.Offset != int64(len(want)) || res.Pending != 0 {
				t.Fatalf("%s: status %s offset %d pending %d, want imported %d", src, res.Status, res.Offset, res.Pending, len(want))
			}
			m, err := im.Service().Materialize(ctx, commits.MaterializeRequest{ID: res.Tip, Stop: commits.StopRoot})
			if err != nil {
				t.Fatalf("%s: materialize: %v", src, err)
			}
			if m.Tier != commits.TierNative || !bytes.Equal(m.Content, want) {
				t.Fatalf("%s: materialized %d bytes (tier %s), want the file's %d bytes", src, len(m.Content), m.Tier, len(want))
			}
			ev, err := im.Service().Materialize(ctx, commits.MaterializeRequest{ID: res.Tip, Stop: commits.StopRoot, Format: commits.FormatEvents})
			if err != nil {
				t.Fatalf("%s: materialize events: %v", src, err)
			}
			evs, err := events.Decode(ev.Content)
			if err != nil {
				t.Fatal(err)
			}
			prompts := 0
			for _, x := range evs {
				if x.Type == events.Prompt && x.Source == "user" {
					prompts++
				}
			}
			sum := 0
			for _, s := range res.Sessions {
				sum += s.Prompts
			}
			if prompts == 0 || prompts != sum || len(res.Commits) == 0 {
				t.Fatalf("%s: %d human prompts in the events, %d commits", src, prompts, len(res.Commits))
			}
			if first, _, _ := strings.Cut(string(want), "\n"); strings.Contains(first, `"branchedFrom"`) {
				root, err := im.Service().Show(ctx, res.Root, store.Basis{})
				if err != nil || res.BranchedFrom == "" || !slices.Contains(root.Tags, "branched-from:"+res.BranchedFrom) {
					t.Fatalf("%s: branchedFrom %q, root tags %v (%v)", src, res.BranchedFrom, root.Tags, err)
				}
			}
			t.Logf("%s: %d commits, %d events, %d prompts (summary: %d), %d problems", filepath.Base(src), len(res.Commits), len(evs), prompts, sum, len(res.Problems))
		}
	})
}

// TestTrajectories imports every SWE-agent dataset trajectory (a folder
// import) as events-v1 chains: the task is the one human prompt, the
// chain decodes, and a second import finds every file unchanged.
func TestTrajectories(t *testing.T) {
	dir := datasets.Dir(t)
	m, _ := filepath.Glob(filepath.Join(dir, "swe-agent", "*.traj"))
	if len(m) < 13 {
		t.Fatalf("want the 13 trajectories, found %d", len(m))
	}
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		tmp := t.TempDir()
		for _, p := range m {
			copyTo(t, p, tmp)
		}
		im := importer.New(e.Store, importer.Options{})
		res, err := im.Import(ctx, tmp)
		if err != nil {
			t.Fatal(err)
		}
		if res.Imported != len(m) || res.Failed != 0 {
			t.Fatalf("%+v", res)
		}
		for _, f := range res.Files {
			if f.Harness != "swe-agent" || len(f.Sessions) != 1 || f.Sessions[0].Prompts != 1 || f.Sessions[0].Responses == 0 {
				t.Fatalf("%s: %+v", f.Path, f)
			}
			ev := materialize(t, im, f.Tip, commits.FormatEvents)
			evs, err := events.Decode(ev)
			if err != nil || len(evs) < 3 {
				t.Fatalf("%s: %d events, %v", f.Path, len(evs), err)
			}
			var status string
			calls, sys := 0, 0
			for _, x := range evs {
				switch {
				case x.Type == events.Metric && x.Metric != nil:
					status = x.Metric.Status
				case x.Type == events.ToolCall:
					calls++
				case x.Type == events.System && x.Subtype == events.SubtypeSystemPrompt:
					sys++
				}
			}
			if status == "" || calls == 0 || calls != f.Sessions[0].ToolCalls || sys != 1 {
				t.Fatalf("%s: outcome %q, %d tool calls (summary %d), %d system prompts", f.Path, status, calls, f.Sessions[0].ToolCalls, sys)
			}
		}
		again, err := im.Import(ctx, tmp)
		if err != nil || again.Unchanged != len(m) || again.Commits != 0 {
			t.Fatalf("second import: %+v %v", again, err)
		}
	})
}

func TestMain(m *testing.M) { storetestenv.Main(m) }

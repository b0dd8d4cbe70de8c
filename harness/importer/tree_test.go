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
	"github.com/ctxstore/ctxstore/store"
)

// piEntry is one line of a Pi v3 file.
func piEntry(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	content := fmt.Sprintf(`[{"type":"text","text":%q}]`, text)
	extra := ""
	if role == "assistant" {
		extra = `,"model":"m1","provider":"p","api":"a","stopReason":"stop","usage":{"input":1,"output":1}`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:%02sZ","message":{"role":%q,"content":%s,"timestamp":1767225600000%s}}`,
		id, p, id[len(id)-2:], role, content, extra)
}

// TestPiTreeBranches imports a Pi v3 file whose tree has three branches:
// one forking at the end of a commit, one inside a commit (split there),
// and a return to the first path. The file chain gives the file's bytes;
// every branch's last commit materializes to the header and exactly the
// entries on its path, in the same format (a Pi file resuming that branch).
func TestPiTreeBranches(t *testing.T) {
	header := `{"type":"session","version":3,"id":"pi-tree","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`
	e := map[string]string{
		"e01": piEntry("e01", "", "user", "first"),
		"e02": piEntry("e02", "e01", "assistant", "one"),
		"e03": piEntry("e03", "e02", "user", "second"),
		"e04": piEntry("e04", "e03", "assistant", "two"),
		"e05": piEntry("e05", "e02", "user", "branch at one"),
		"e06": piEntry("e06", "e05", "assistant", "b1"),
		"e07": piEntry("e07", "e03", "user", "branch inside"),
		"e08": piEntry("e08", "e07", "assistant", "b2"),
		"e09": piEntry("e09", "e04", "user", "back on the first path"),
	}
	order := []string{"e01", "e02", "e03", "e04", "e05", "e06", "e07", "e08", "e09"}
	lines := []string{header}
	for _, id := range order {
		lines = append(lines, e[id])
	}
	file := strings.Join(lines, "\n") + "\n"
	path := func(ids ...string) string {
		out := []string{header}
		for _, id := range ids {
			out = append(out, e[id])
		}
		return strings.Join(out, "\n") + "\n"
	}
	storetestenv.RunParallel(t, func(t *testing.T, env *storetestenv.Env) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "tree.jsonl")
		os.WriteFile(p, []byte(file), 0o644)
		im := importer.New(env.Store, importer.Options{})
		res, err := im.ImportFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(materialize(t, im, res.Tip, "")); got != file {
			t.Fatalf("file chain:\n%s", got)
		}
		want := map[string]string{
			"":           path("e01", "e02", "e03", "e04", "e09"),
			"branch-e05": path("e01", "e02", "e05", "e06"),
			"branch-e07": path("e01", "e02", "e03", "e07", "e08"),
		}
		if len(res.Lanes) != len(want) {
			t.Fatalf("lanes %v", res.Lanes)
		}
		for lane, w := range want {
			tip, ok := res.Lanes[lane]
			if !ok {
				t.Fatalf("no lane %q in %v", lane, res.Lanes)
			}
			if got := string(materialize(t, im, tip, "")); got != w {
				t.Fatalf("lane %q materialized:\n%s\nwant:\n%s", lane, got, w)
			}
			evs, err := events.Decode(materialize(t, im, tip, commits.FormatEvents))
			if err != nil || len(evs) != strings.Count(w, "\n") {
				t.Fatalf("lane %q: %d events, %v", lane, len(evs), err)
			}
		}
		// Every line is counted once: the counted commits' contents are the
		// file's lines.
		counted := 0
		for _, id := range res.Commits {
			c, err := im.Service().Show(ctx, id, store.Basis{})
			if err != nil {
				t.Fatal(err)
			}
			if importer.Counted(c) {
				counted += int(c.MessageCount)
			}
		}
		if counted != len(lines) {
			t.Fatalf("counted %d lines, the file has %d", counted, len(lines))
		}
		if res.Sessions[0].Branches != 2 {
			t.Fatalf("branches %d", res.Sessions[0].Branches)
		}
		// Importing again writes nothing; the lanes stay.
		again, err := im.ImportFile(ctx, p)
		if err != nil || again.Status != importer.Unchanged || again.Lanes["branch-e07"] != res.Lanes["branch-e07"] {
			t.Fatalf("again: %+v %v", again, err)
		}
	})
}

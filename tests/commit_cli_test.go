package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// TestCLICommits drives the context-commit commands (docs/commits.md) on
// SQLite and XTDB: checkpoints from two processes at once on one parent
// land as branches, materialize and fork print what they should, bad input
// exits 1 and writes nothing.
func TestCLICommits(t *testing.T) {
	for name, store := range map[string]func(t *testing.T, c *cli) string{
		"sqlite": func(t *testing.T, c *cli) string { return c.path("store.db") },
		"xtdb":   func(t *testing.T, c *cli) string { return xtdbtest.ForTest(t) },
	} {
		t.Run(name, func(t *testing.T) {
			c := newCLI(t)
			st := store(t, c)
			tag := randomTag(t)
			run := func(stdin string, args ...string) string {
				return c.ok(stdin, append([]string{"--store", st}, args...)...)
			}
			ev := func(text string) string {
				return fmt.Sprintf(`[{"type":"prompt","source":"user","text":%q}]`, text+" "+tag)
			}
			root := strings.TrimSpace(run(ev("root"), "commit", "checkpoint", "--content", "-", "--session", "s-"+tag, "--principal", "p-"+tag))
			var wg sync.WaitGroup
			ids := make([][]string, 2)
			for w := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 4 {
						r := c.run(ev(fmt.Sprintf("w%d-%d", w, i)), "--store", st, "commit", "checkpoint", "--content", "-", "--parent", root,
							"--session", fmt.Sprintf("s%d-%s", w, tag), "--principal", "p-"+tag, "--trigger", "turn_boundary")
						if r.code != 0 {
							t.Errorf("checkpoint: %s", r.stderr)
							return
						}
						ids[w] = append(ids[w], strings.TrimSpace(r.stdout))
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			var children []map[string]any
			out := run("", "--json", "query", "--where", "type=ctx_commit", "--where", "parent="+root)
			if err := json.Unmarshal([]byte(out), &children); err != nil {
				t.Fatalf("query output %q: %v", out, err)
			}
			if len(children) != 8 {
				t.Fatalf("%d children of the root, want 8 (two processes, four each):\n%s", len(children), out)
			}
			// History and materialize of one branch.
			tip := ids[1][3]
			var hist []map[string]any
			if err := json.Unmarshal([]byte(run("", "--json", "commit", "history", tip)), &hist); err != nil {
				t.Fatal(err)
			}
			if len(hist) != 2 || hist[1]["id"] != root {
				t.Fatalf("history %v", hist)
			}
			var m struct {
				Tier    string `json:"tier"`
				Content string `json:"content"`
				Cached  bool   `json:"cached"`
			}
			if err := json.Unmarshal([]byte(run("", "--json", "commit", "materialize", tip)), &m); err != nil {
				t.Fatal(err)
			}
			if m.Tier != "native" || m.Cached || !strings.Contains(m.Content, "root "+tag) || !strings.Contains(m.Content, "w1-3 "+tag) || strings.Contains(m.Content, "w0-") {
				t.Fatalf("materialized %+v", m)
			}
			if err := json.Unmarshal([]byte(run("", "--json", "commit", "materialize", tip)), &m); err != nil || !m.Cached {
				t.Fatalf("repeat not cached: %+v %v", m, err)
			}
			r := c.run("", "--store", st, "commit", "materialize", "--format", "narrative-v1", tip)
			nar := r.stdout
			if r.code != 0 || !strings.Contains(r.stderr, "tier narrative") {
				t.Fatalf("materialize narrative: exit %d, stderr %s", r.code, r.stderr)
			}
			if !strings.Contains(nar, "## User\n\nw1-3 "+tag) {
				t.Fatalf("narrative:\n%s", nar)
			}
			// Resolve: the principal's latest commit.
			if got := strings.TrimSpace(run("", "commit", "resolve", "p-"+tag)); got == root || !strings.HasPrefix(got, "ctx-") {
				t.Fatalf("resolve gave %s", got)
			}
			// Summary.
			run("", "commit", "update-metadata", root, "--summary", "the start")
			var show map[string]any
			if err := json.Unmarshal([]byte(run("", "--json", "commit", "show", root)), &show); err != nil || show["summary"] != "the start" {
				t.Fatalf("show %v %v", show, err)
			}
			// Fork.
			var f struct {
				Session string         `json:"session"`
				Commit  map[string]any `json:"commit"`
			}
			if err := json.Unmarshal([]byte(run("", "--json", "commit", "fork", ids[0][1], "--session", "f-"+tag)), &f); err != nil {
				t.Fatal(err)
			}
			if f.Session != "f-"+tag || f.Commit["parent"] != ids[0][1] || f.Commit["trigger"] != "fork" {
				t.Fatalf("fork %+v", f)
			}
			// Bad input: exit 1, a clear message, nothing written.
			before := run("", "--json", "status")
			c.fail(1, ev("y"), []string{"--store", st, "commit", "checkpoint", "--content", "-", "--parent", "ctx-00000000000000000000"}, "unknown parent commit")
			c.fail(1, ev("x"), []string{"--store", st, "commit", "checkpoint", "--content", "-", "--format", "nope-v1"}, "unknown format")
			c.fail(1, "", []string{"--store", st, "commit", "materialize", tip, "--stop", ids[0][0]}, "stop is not an ancestor")
			c.fail(1, "", []string{"--store", st, "commit", "materialize", tip, "--format", "nope-v2"}, "unknown format")
			if after := run("", "--json", "status"); txOf(after) != txOf(before) {
				t.Fatalf("bad input wrote:\n%s\n%s", before, after)
			}
		})
	}
}

func txOf(status string) string {
	var s struct {
		LatestSubmitted *struct {
			TxID int64 `json:"tx_id"`
		} `json:"latest_submitted"`
	}
	_ = json.Unmarshal([]byte(status), &s)
	if s.LatestSubmitted == nil {
		return "none"
	}
	return fmt.Sprint(s.LatestSubmitted.TxID)
}

func randomTag(t *testing.T) string {
	t.Helper()
	return strings.ReplaceAll(t.Name(), "/", "-") + fmt.Sprintf("-%d-%d", time.Now().UnixNano(), os.Getpid())
}

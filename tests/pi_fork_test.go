package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// TestPiForkSQLite and TestPiForkXTDB: a Pi session writes conversation
// commits through `ctxstore serve`; one of its commits is forked with
// `ctxstore commit fork --format pi-v3` and resumed in a new Pi process
// (the real Pi CLI, offline scripted model). The forked session sees the
// conversation up to that commit and nothing after it, the original chain
// is untouched, and both branches appear in history.
func TestPiForkSQLite(t *testing.T) {
	t.Parallel()
	piForkScenario(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
}

func TestPiForkXTDB(t *testing.T) {
	t.Parallel()
	piCLI(t)
	piForkScenario(t, xtdbtest.ForTest(t))
}

type commitDoc struct {
	ID     string         `json:"xt/id"`
	Parent string         `json:"parent"`
	Depth  int            `json:"depth"`
	Meta   map[string]any `json:"meta"`
}

func sessionCommits(t *testing.T, c *cli, storeURL, session string) map[int]commitDoc {
	t.Helper()
	var docs []commitDoc
	out := c.ok("", "--store", storeURL, "--json", "query", "--where", "type=ctx_commit", "--where", "session="+session)
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		t.Fatalf("query: %v\n%s", err, out)
	}
	byDepth := map[int]commitDoc{}
	for _, d := range docs {
		if _, dup := byDepth[d.Depth]; dup {
			t.Fatalf("session %s branched at depth %d: %s", session, d.Depth, out)
		}
		byDepth[d.Depth] = d
	}
	return byDepth
}

func historyIDs(t *testing.T, c *cli, storeURL, id string) []string {
	t.Helper()
	var h []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", storeURL, "--json", "commit", "history", id)), &h); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range h {
		ids = append(ids, x.ID)
	}
	return ids
}

func piForkScenario(t *testing.T, storeURL string) {
	e := newPiEnv(t)
	c := newCLI(t)
	srv := startServe(t, storeURL)
	script := []piStep{{Text: "Answer one."}, {Text: "Answer two."}, {Text: "Answer three."}}
	pi := startPi(t, e, srv.pxURL, script)
	pi.prompt("first question")
	pi.prompt("second question")
	pi.prompt("third question")
	pi.quit()
	sid := piSessionID(t, piSessionFile(t, e.sessions))

	// One conversation commit per context call: [first], [Answer one,
	// second], [Answer two, third].
	orig := sessionCommits(t, c, storeURL, sid)
	if len(orig) != 3 {
		t.Fatalf("%d conversation commits in session %s, want 3", len(orig), sid)
	}
	if h := orig[0].Meta["harness"]; h != "pi "+piVersion || orig[2].Meta["trigger"] != "turn_boundary" {
		t.Errorf("provenance: %v", orig[0].Meta)
	}
	tip, fork := orig[2].ID, orig[1].ID
	before := c.ok("", "--store", storeURL, "--json", "commit", "materialize", tip, "--no-cache")

	// Fork the middle commit as a Pi session file and continue it in a new
	// Pi process.
	newSID := fmt.Sprintf("fork-%d", time.Now().UnixNano())
	file := filepath.Join(t.TempDir(), "forked.jsonl")
	r := c.run("", "--store", storeURL, "commit", "fork", fork, "--format", "pi-v3", "--session", newSID, "-o", file)
	if r.code != 0 {
		t.Fatalf("fork: %s", r.stderr)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), `"id":"`+newSID+`"`) {
		t.Fatalf("forked file header:\n%s", b)
	}
	pi2 := startPi(t, e, srv.pxURL, []piStep{{Text: "Forked answer."}}, "--session", file)
	pi2.prompt("fork question")
	pi2.quit()

	ctxs := readContexts(t, e.ctxLog)
	last := ctxs[len(ctxs)-1]
	var seen strings.Builder
	for _, m := range last.Messages {
		for _, b := range m.Content {
			seen.WriteString(b.Text + "\n")
		}
	}
	for _, want := range []string{"first question", "Answer one.", "second question", "fork question"} {
		if !strings.Contains(seen.String(), want) {
			t.Errorf("the forked session's model call lacks %q:\n%s", want, seen.String())
		}
	}
	for _, not := range []string{"Answer two.", "third question", "Answer three."} {
		if strings.Contains(seen.String(), not) {
			t.Errorf("the forked session's model call holds %q, said after the fork:\n%s", not, seen.String())
		}
	}

	// The new branch: the fork commit (parent: the forked commit), then the
	// new turn; its history runs through the forked commit to the root.
	br := sessionCommits(t, c, storeURL, newSID)
	if len(br) != 2 || br[2].Parent != fork || br[3].Parent != br[2].ID {
		t.Fatalf("forked session's commits: %+v", br)
	}
	if h := historyIDs(t, c, storeURL, br[3].ID); strings.Join(h, " ") != strings.Join([]string{br[3].ID, br[2].ID, fork, orig[0].ID}, " ") {
		t.Errorf("history of the fork: %v", h)
	}
	// The original is untouched.
	if h := historyIDs(t, c, storeURL, tip); strings.Join(h, " ") != strings.Join([]string{tip, fork, orig[0].ID}, " ") {
		t.Errorf("history of the original: %v", h)
	}
	if after := c.ok("", "--store", storeURL, "--json", "commit", "materialize", tip, "--no-cache"); after != before {
		t.Errorf("the original's conversation changed:\n%s\n%s", before, after)
	}
	if got := sessionCommits(t, c, storeURL, sid); len(got) != 3 || got[2].ID != tip {
		t.Errorf("the original session's commits changed: %+v", got)
	}
}

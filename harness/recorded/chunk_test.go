package recorded_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestChunkedDerivation: a dataset session imported a part at a time,
// each import deriving only the calls its commits add (going on from the
// state the last one stored), ends with the calls Derive gives for the
// same commits and the state, totals and chat turns of a derivation at
// once, whatever the cuts: evenly spread, and between two records of one
// API response (TestCutInsideCall).
func TestChunkedDerivation(t *testing.T) {
	dir := datasets.Dir(t)
	files := []string{"claude-code/attio-mcp-server__465eb442__8664c04e.jsonl", "claude-code/dmux__eef6c282__a9185eb7.jsonl",
		"pi/pi-mono__before-compaction.jsonl"}
	if !testing.Short() {
		files = append(files, "claude-code/templar__577e2177__8f2aa855.jsonl", "pi/pi-mono__large-session.jsonl")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			lines := fileLines(t, filepath.Join(dir, f))
			var cuts []int
			for k := 1; k < 5; k++ {
				cuts = append(cuts, len(lines)*k/5)
			}
			// A file of interleaved sessions (templar's: a session
			// resumed in the file of the one it resumed) has records
			// parented in the other session, which make an import
			// derive the session whole (docs/inspector.md).
			checkChunked(t, filepath.Base(f), lines, cuts, !strings.Contains(f, "templar"))
		})
	}
}

// TestCutInsideCall: an import that ends between two records of one API
// response (one call), the next import bringing the rest, derives what
// the whole file does.
func TestCutInsideCall(t *testing.T) {
	dir := datasets.Dir(t)
	f := "attio-mcp-server__465eb442__8664c04e.jsonl"
	lines := fileLines(t, filepath.Join(dir, "claude-code", f))
	var cuts []int
	prev := ""
	for i, l := range lines {
		var r struct {
			Type    string `json:"type"`
			Message struct {
				ID string `json:"id"`
			} `json:"message"`
		}
		if json.Unmarshal(l, &r) != nil || r.Type != "assistant" || r.Message.ID == "" {
			prev = ""
			continue
		}
		if r.Message.ID == prev && (len(cuts) == 0 || i-cuts[len(cuts)-1] > 10) {
			cuts = append(cuts, i) // lines[i-1] and lines[i] are one response's
		}
		prev = r.Message.ID
	}
	if len(cuts) < 3 {
		t.Fatalf("%s: only %d cuts inside a response", f, len(cuts))
	}
	checkChunked(t, f, lines, cuts[:3], true)
}

// checkChunked imports lines[:cut] for each cut, then all of them, and
// compares what the imports derived, each going on from the last, with a
// derivation of the same commits at once: Derive's calls, and Update's
// state, totals and chat turns with its resume removed.
func checkChunked(t *testing.T, name string, lines [][]byte, cuts []int, strict bool) {
	t.Helper()
	ctx := context.Background()
	var updates []recorded.Updated
	*recorded.OnUpdate = func(u *recorded.Updated) { updates = append(updates, *u) }
	defer func() { *recorded.OnUpdate = nil }()

	path := filepath.Join(t.TempDir(), name)
	e := storetestenv.New(t, storetestenv.SQLite)
	st := e.Store
	im := importer.New(st, importer.Options{})
	derived := map[string]bool{}
	var sids []string
	resumed := 0
	for _, cut := range append(cuts, len(lines)) {
		updates = updates[:0]
		if err := os.WriteFile(path, bytes.Join(lines[:cut], nil), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := im.ImportFile(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Problems {
			t.Errorf("import of %d lines: %s", cut, p.Msg)
		}
		for _, u := range updates {
			// A session derived before goes on from its stored state.
			if derived[u.Session] && u.Whole && (strict || u.Why == "") {
				t.Errorf("import of %d lines derived %s whole (%+v)", cut, u.Session, u)
			}
			if !u.Whole {
				resumed++
			}
			if !derived[u.Session] {
				sids = append(sids, u.Session)
			}
			derived[u.Session] = true
		}
	}
	if resumed < len(cuts) && strict || resumed == 0 {
		t.Errorf("%d updates went on from a stored state over %d later imports", resumed, len(cuts))
	}
	svc := commits.New(st, commits.Options{Registry: formats.Commits()})
	for _, sid := range sids {
		got, err := recorded.Page(ctx, st, sid, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := recorded.Derive(ctx, svc, sid)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(d.Calls) {
			t.Fatalf("%s: %d calls imported in parts, %d derived at once", sid, len(got), len(d.Calls))
		}
		for k := range got {
			if !sameCall(got[k], d.Calls[k]) {
				g, _ := json.Marshal(got[k])
				w, _ := json.Marshal(d.Calls[k])
				t.Fatalf("%s call %d:\n in parts %s\n at once  %s", sid, k+1, g, w)
			}
		}
		// The state is current: it counts the chain's commits.
		chains, err := svc.Chains(ctx, []string{sid})
		if err != nil || len(chains) != 1 {
			t.Fatalf("%s: chains %+v, %v", sid, chains, err)
		}
		gs, ok, err := recorded.ReadState(ctx, st, sid, chains[0].Commits)
		if err != nil || !ok {
			t.Fatalf("%s: state %+v current %v (the chain has %d commits), %v", sid, gs, ok, chains[0].Commits, err)
		}
		gt := chatTurns(t, st, sid)
		// Nothing new: the next update goes on and derives nothing.
		u, err := recorded.Update(ctx, svc, sid)
		if err != nil || u.Whole || u.Derived != 0 || u.Calls != len(got) {
			t.Errorf("%s: an update without new commits: %+v, %v", sid, u, err)
		}
		// Without its resume, the session is derived whole: the same.
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Delete(recorded.ResumeID(sid))}); err != nil {
			t.Fatal(err)
		}
		if u, err := recorded.Update(ctx, svc, sid); err != nil || !u.Whole || u.Calls != len(got) {
			t.Fatalf("%s: an update without a resume: %+v, %v", sid, u, err)
		}
		ws, _, err := recorded.ReadState(ctx, st, sid, -1)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gs, ws) {
			t.Errorf("%s: state in parts %+v %+v\n at once %+v %+v", sid, gs, gs.Totals, ws, ws.Totals)
		}
		if wt := chatTurns(t, st, sid); !reflect.DeepEqual(gt, wt) {
			t.Errorf("%s: %d chat turns in parts, %d at once", sid, len(gt), len(wt))
		}
	}
}

func fileLines(t *testing.T, path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for l := range bytes.SplitAfterSeq(b, []byte("\n")) {
		if strings.TrimSpace(string(l)) != "" {
			out = append(out, l)
		}
	}
	return out
}

func chatTurns(t *testing.T, st store.Store, sid string) []string {
	var out []string
	if err := session.EachTurn(context.Background(), st, sid, store.Basis{}, func(n int, tr objects.Turn) error {
		b, _ := json.Marshal(tr)
		out = append(out, string(b))
		return nil
	}); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return out
}

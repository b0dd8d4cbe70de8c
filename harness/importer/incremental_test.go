package importer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

func materialize(t *testing.T, im *importer.Importer, tip, format string) []byte {
	t.Helper()
	m, err := im.Service().Materialize(context.Background(), commits.MaterializeRequest{ID: tip, Stop: commits.StopRoot, Format: format})
	if err != nil {
		t.Fatalf("materialize %s: %v", tip, err)
	}
	return m.Content
}

// TestIncrementalLiveFile appends to a live transcript between imports,
// with a last line cut in the middle that is completed later: each import
// adds only the new complete lines, the partial line waits, an unchanged
// file writes nothing, and the chain always materializes to the bytes
// imported so far.
func TestIncrementalLiveFile(t *testing.T) {
	dir := datasets.Dir(t)
	for _, name := range []string{"claude-code/raw/claude-reliability__python-to-rust-port.jsonl", "pi/pi-mono__large-session.jsonl"} {
		full, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
			ctx := context.Background()
			p := filepath.Join(t.TempDir(), filepath.Base(name))
			im := importer.New(e.Store, importer.Options{})
			lines := bytes.SplitAfter(full, []byte("\n"))
			// Cut points: a third of the lines, then half a line more, then
			// the rest of that line and more lines, then everything.
			third := len(bytes.Join(lines[:len(lines)/3], nil))
			half := third + len(lines[len(lines)/3])/2
			twoThirds := len(bytes.Join(lines[:2*len(lines)/3], nil))
			steps := []struct {
				upto    int
				status  importer.Status
				offset  int
				pending int
			}{
				{third, importer.Imported, third, 0},
				{half, importer.Grew, third, half - third},
				{half, importer.Grew, third, half - third},
				{twoThirds, importer.Grew, twoThirds, 0},
				{twoThirds, importer.Unchanged, twoThirds, 0},
				{len(full), importer.Grew, len(full), 0},
				{len(full), importer.Unchanged, len(full), 0},
			}
			var tips []string
			for i, s := range steps {
				if err := os.WriteFile(p, full[:s.upto], 0o644); err != nil {
					t.Fatal(err)
				}
				before, _ := e.Store.EntityTx(ctx, importer.CursorID(p), store.Basis{})
				res, err := im.ImportFile(ctx, p)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if res.Status != s.status || res.Offset != int64(s.offset) || res.Pending != int64(s.pending) {
					t.Fatalf("step %d: status %s offset %d pending %d, want %s %d %d", i, res.Status, res.Offset, res.Pending, s.status, s.offset, s.pending)
				}
				after, _ := e.Store.EntityTx(ctx, importer.CursorID(p), store.Basis{})
				if (res.Status == importer.Unchanged || len(res.Commits) == 0) && i > 0 && after.TxID != before.TxID {
					t.Fatalf("step %d: an import that added nothing wrote the cursor", i)
				}
				if (res.Status == importer.Unchanged || s.offset == steps[max(i-1, 0)].offset && i > 0) && len(res.Commits) != 0 {
					t.Fatalf("step %d: %d commits for no new complete line", i, len(res.Commits))
				}
				if got := materialize(t, im, res.Tip, ""); !bytes.Equal(got, full[:s.offset]) {
					t.Fatalf("step %d: materialized %d bytes, want the %d imported", i, len(got), s.offset)
				}
				tips = append(tips, res.Tip)
			}
			// The earlier tips are ancestors of the last: one chain.
			hist, err := im.Service().History(ctx, tips[len(tips)-1], 0)
			if err != nil {
				t.Fatal(err)
			}
			on := map[string]bool{}
			for _, c := range hist {
				on[c.ID] = true
				// Commits are content-addressed: a run another test imported
				// from its own copy of the file is the same commit, with that
				// copy as its source.
				if filepath.Base(c.Source) != filepath.Base(p) || c.SourceEnd <= c.SourceStart {
					t.Fatalf("commit %s: source %q [%d,%d)", c.ID, c.Source, c.SourceStart, c.SourceEnd)
				}
			}
			for _, tip := range tips {
				if !on[tip] {
					t.Fatalf("tip %s is not on the final chain", tip)
				}
			}
			// A rewritten file is imported again as a new chain.
			edited := bytes.Replace(full, []byte(`"type"`), []byte(`"type" `), 1)
			if err := os.WriteFile(p, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := im.ImportFile(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != importer.Rewritten || !bytes.Equal(materialize(t, im, res.Tip, ""), edited) {
				t.Fatalf("rewritten: status %s", res.Status)
			}
		})
	}
}

// TestDamage: a line holding two JSON objects, a truncated line and
// invalid UTF-8 are reported with the file and line, read past, and kept
// byte for byte; an unknown record type is kept and counted, not reported
// as damage; nothing else is lost.
func TestDamage(t *testing.T) {
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"first prompt"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","timestamp":"2025-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"text","text":"answer one"}]}}{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s1","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user","content":"second prompt"}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s1","timestamp":"2025-01-01T00:00:03Z","message":{"id":"m2","role":"assis`,
		"{\"type\":\"user\",\"uuid\":\"u3\",\"parentUuid\":\"u2\",\"sessionId\":\"s1\",\"timestamp\":\"2025-01-01T00:00:04Z\",\"message\":{\"role\":\"user\",\"content\":\"bad \xff\xfe bytes\"}}",
		`{"type":"hologram","uuid":"h1","sessionId":"s1","timestamp":"2025-01-01T00:00:05Z","payload":{"x":1}}`,
		`{"type":"assistant","uuid":"a3","parentUuid":"u3","sessionId":"s1","timestamp":"2025-01-01T00:00:06Z","message":{"id":"m3","role":"assistant","model":"claude","content":[{"type":"text","text":"last answer"}]}}`,
	}
	data := []byte(strings.Join(lines, "\n") + "\n")
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "damaged.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		im := importer.New(e.Store, importer.Options{})
		res, err := im.ImportFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]string{2: "2 JSON values on one line", 3: "invalid JSON", 4: "invalid UTF-8"}
		for _, pr := range res.Problems {
			if pr.Line == 5 {
				t.Errorf("the unknown record type is reported as damage: %v", pr)
			}
		}
		unknown := 0
		for _, s := range res.Sessions {
			unknown += s.Unknown["hologram"]
		}
		if unknown != 1 {
			t.Errorf("unknown record types counted: %d hologram, want 1", unknown)
		}
		for line, msg := range want {
			found := false
			for _, pr := range res.Problems {
				if pr.Line == line && pr.Path == p && strings.Contains(pr.Msg, msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem %q at %s:%d in %v", msg, p, line, res.Problems)
			}
		}
		if got := materialize(t, im, res.Tip, ""); !bytes.Equal(got, data) {
			t.Fatalf("materialized %q, want the file's bytes", got)
		}
		evs, err := events.Decode(materialize(t, im, res.Tip, commits.FormatEvents))
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		raw := false
		for _, x := range evs {
			if x.Text != "" && (x.Type == events.Prompt || x.Type == events.Response) {
				texts = append(texts, x.Text)
			}
			if x.Type == events.Output && x.Subtype == "unknown/hologram" && strings.Contains(string(x.Raw), `"payload"`) {
				raw = true
			}
		}
		got := strings.Join(texts, "|")
		if got != "first prompt|answer one|second prompt|bad \ufffd\ufffd bytes|last answer" || !raw {
			t.Fatalf("events: %q (unknown record kept raw: %v)", got, raw)
		}
		if s := res.Sessions; len(s) != 1 || s[0].Prompts != 3 || s[0].Unknown["hologram"] != 1 {
			t.Fatalf("summary %+v", s)
		}
	})
}

// TestLongLine: a line over harness.MaxLineBytes is not held; the file is
// imported up to the line before it and the result says where it stopped.
func TestLongLine(t *testing.T) {
	first := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"sl","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}` + "\n"
	long := `{"type":"user","uuid":"u2","message":{"role":"user","content":"` + strings.Repeat("x", harness.MaxLineBytes) + `"}}` + "\n"
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		p := filepath.Join(t.TempDir(), "long.jsonl")
		os.WriteFile(p, []byte(first+long+first), 0o644)
		im := importer.New(e.Store, importer.Options{})
		res, err := im.ImportFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Offset != int64(len(first)) || res.Lines != 1 || !strings.Contains(res.Error, "line 2 is over") {
			t.Fatalf("offset %d lines %d error %q", res.Offset, res.Lines, res.Error)
		}
	})
}

// TestNotASession: a file with no record of a known format fails with an
// error naming it and its lines, and writes nothing; a folder import goes
// on with the other files.
func TestNotASession(t *testing.T) {
	e := storetestenv.New(t, storetestenv.SQLite)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a-junk.jsonl"), []byte("not json\n{\"x\":1\n"), 0o644)
	good := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"sg","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}` + "\n"
	os.WriteFile(filepath.Join(dir, "b-good.jsonl"), []byte(good), 0o644)
	im := importer.New(e.Store, importer.Options{})
	res, err := im.Import(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || res.Imported != 1 || !strings.Contains(res.Files[0].Error, "lines 1-2 hold no record") {
		t.Fatalf("%+v", res)
	}
	if _, _, _, _, ok, _ := im.Cursor(context.Background(), filepath.Join(dir, "a-junk.jsonl")); ok {
		t.Fatal("a cursor was written for the failed file")
	}
}

// TestConcurrentImports: four importers (four store handles, as four hook
// processes would be) import one file at once, twice over as it grows:
// every import succeeds, one chain results, and it materializes to the
// file's bytes.
func TestConcurrentImports(t *testing.T) {
	full, err := os.ReadFile(filepath.Join(datasets.Dir(t), "claude-code", "raw", "claude-reliability__python-to-rust-port.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "live.jsonl")
		lines := bytes.SplitAfter(full, []byte("\n"))
		var tips []string
		for _, upto := range []int{len(lines) / 2, len(lines)} {
			os.WriteFile(p, bytes.Join(lines[:upto], nil), 0o644)
			errs := make(chan error, 4)
			res := make(chan string, 4)
			for i := 0; i < 4; i++ {
				st := e.Reopen()
				go func() {
					r, err := importer.New(st, importer.Options{}).ImportFile(ctx, p)
					if err == nil {
						res <- r.Tip
					}
					errs <- err
				}()
			}
			for i := 0; i < 4; i++ {
				if err := <-errs; err != nil {
					t.Fatalf("concurrent import: %v", err)
				}
			}
			close(res)
			for tip := range res {
				tips = append(tips, tip)
			}
		}
		last := tips[len(tips)-1]
		for _, tip := range tips[4:] {
			if tip != last {
				t.Fatalf("two chains: %s and %s", tip, last)
			}
		}
		if got := materialize(t, importer.New(e.Store, importer.Options{}), last, ""); !bytes.Equal(got, full) {
			t.Fatalf("materialized %d bytes, want %d", len(got), len(full))
		}
	})
}

package importer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/opencode"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// opencodeDB makes an opencode database in WAL mode (as opencode keeps
// it) holding the rows of harness/opencode's fixture, a session the real
// opencode 1.18.33 wrote. The tables have the columns of the rows.
func opencodeDB(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	rows, err := os.ReadFile("../opencode/testdata/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "opencode.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`PRAGMA journal_mode=WAL`,
		`CREATE TABLE project (id text PRIMARY KEY, worktree text, time_created integer, time_updated integer, sandboxes text)`,
		`CREATE TABLE session (id text PRIMARY KEY, project_id text, workspace_id text, parent_id text, slug text, directory text, path text, title text, version text,
			share_url text, summary_additions integer, summary_deletions integer, summary_files integer, summary_diffs text, metadata text, cost real,
			tokens_input integer, tokens_output integer, tokens_reasoning integer, tokens_cache_read integer, tokens_cache_write integer, revert text,
			permission text, agent text, model text, time_created integer, time_updated integer, time_compacting integer, time_archived integer)`,
		`CREATE TABLE message (id text PRIMARY KEY, session_id text, time_created integer, time_updated integer, data text)`,
		`CREATE TABLE part (id text PRIMARY KEY, message_id text, session_id text, time_created integer, time_updated integer, data text)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := opencode.Place(context.Background(), path, rows, false); err != nil {
		t.Fatal(err)
	}
	return path, rows
}

func fileHashes(t *testing.T, paths ...string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestOpencodeDatabase imports an opencode database found in a folder,
// read-only while another connection holds a write transaction open (as a
// running opencode may): the session is a chain of opencode-v1 commits
// that materializes to its rows; a second import writes nothing; rows
// added later, a row that changed and a damaged row are imported alone,
// the change as an update line, the damage reported by table and id.
func TestOpencodeDatabase(t *testing.T) {
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		dir := filepath.Join(t.TempDir(), "opencode")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path, rows := opencodeDB(t, dir)
		sid := opencode.SessionOf(rows)

		// opencode "running": a connection in a write transaction.
		w, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.SetMaxOpenConns(1)
		tx, err := w.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO message VALUES ('msg_uncommitted', ?, 1, 1, '{"role":"user"}')`, sid); err != nil {
			t.Fatal(err)
		}
		before := fileHashes(t, path, path+"-wal")

		im := importer.New(e.Store, importer.Options{})
		res, err := im.Import(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if after := fileHashes(t, path, path+"-wal"); after != before {
			t.Error("the import wrote to opencode's database")
		}
		if len(res.Files) != 1 || len(res.Ignored) != 0 {
			t.Fatalf("files %+v, ignored %v", res.Files, res.Ignored)
		}
		f := res.Files[0]
		if f.Status != importer.Imported || f.Format != opencode.FormatName || f.Harness != "opencode" || len(f.Sessions) != 1 || len(f.Problems) != 0 {
			t.Fatalf("file %+v", f)
		}
		s := f.Sessions[0]
		if s.Session != sid || s.Prompts != 1 || s.ToolCalls != 1 || s.ToolResults != 1 || s.Responses != 1 || s.Harness != "opencode 1.18.33" || s.Tip == "" {
			t.Fatalf("session %+v", s)
		}
		svc := im.Service()
		m, err := svc.Materialize(ctx, commits.MaterializeRequest{ID: s.Tip, Stop: "root"})
		if err != nil || !bytes.Equal(m.Content, rows) || m.Format != opencode.FormatName || m.MessageCount < 4 {
			t.Fatalf("the chain does not materialize to the rows: %v\n%s", err, m.Content)
		}
		tip, err := svc.Show(ctx, s.Tip, store.Basis{})
		if err != nil || tip.Provenance.Session != sid || tip.Provenance.Cwd != "/tmp/ocx/work" || tip.Provenance.Model != "scripted-1" ||
			tip.Provenance.Source != path+"#"+sid {
			t.Fatalf("provenance: %v %+v", err, tip)
		}

		again, err := im.Import(ctx, path)
		if err != nil || again.Files[0].Status != importer.Unchanged || len(again.Files[0].Commits) != 0 {
			t.Fatalf("a second import: %v %+v", err, again)
		}

		// opencode goes on: a new turn, the session's title changes, a part
		// of the first turn is damaged.
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range []string{
			`UPDATE session SET title = 'A title' WHERE id = '` + sid + `'`,
			`INSERT INTO message VALUES ('msg_24a59000000100000000000000', '` + sid + `', 1796543700000, 1796543700000, '{"role":"user","time":{"created":1796543700000}}')`,
			`INSERT INTO part VALUES ('prt_24a59000000200000000000000', 'msg_24a59000000100000000000000', '` + sid + `', 1796543700001, 1796543700001, '{"type":"text","text":"second question"}')`,
			`UPDATE part SET data = '{"type":"text","te' WHERE id = 'prt_24a58c8da0017Qk1ySSLvFKtzj'`,
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		grew, err := im.Import(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		g := grew.Files[0]
		if g.Status != importer.Grew || len(g.Commits) == 0 || g.NewLines != 4 {
			t.Fatalf("after opencode went on: %+v", g)
		}
		if len(g.Problems) != 1 || !strings.Contains(g.Problems[0].String(), "part prt_24a58c8da0017Qk1ySSLvFKtzj") || g.Problems[0].Path != path {
			t.Errorf("problems: %v", g.Problems)
		}
		m, err = svc.Materialize(ctx, commits.MaterializeRequest{ID: g.Sessions[0].Tip, Stop: "root"})
		if err != nil || !bytes.HasPrefix(m.Content, rows) {
			t.Fatalf("the grown chain: %v", err)
		}
		added := string(m.Content[len(rows):])
		for _, want := range []string{`{"table":"session","op":"update","row":{`, `A title`, `{"table":"part","op":"update"`, `\"te"`,
			`"id":"msg_24a59000000100000000000000"`, `second question`} {
			if !strings.Contains(added, want) {
				t.Errorf("the rows added lack %s:\n%s", want, added)
			}
		}
		if strings.Count(added, "\n") != 4 {
			t.Errorf("%d lines added, want 4:\n%s", strings.Count(added, "\n"), added)
		}
		// Restored into an empty database, the rows are the database's
		// rows now (each row's last version).
		dir2 := t.TempDir()
		path2, _ := opencodeDB(t, dir2)
		if _, err := opencode.Place(ctx, path2, m.Content, true); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`SELECT group_concat(id || title) FROM session`, `SELECT group_concat(id || data) FROM (SELECT * FROM part ORDER BY id)`} {
			var a, b string
			if err := db.QueryRow(q).Scan(&a); err != nil {
				t.Fatal(err)
			}
			db2, _ := sql.Open("sqlite", path2)
			err := db2.QueryRow(q).Scan(&b)
			db2.Close()
			if err != nil || a != b {
				t.Errorf("%s: restored %q, want %q (%v)", q, b, a, err)
			}
		}
	})
}

// TestOpencodeSubagent imports a database holding a session whose task
// call started a sub-agent session (harness/opencode's fixture, written by
// the real opencode 1.18.33): the sub-agent's chain forks at the parent's
// commit holding the task call (whose state names the sub-agent's
// session), not at a root, and its own rows come back from its root.
func TestOpencodeSubagent(t *testing.T) {
	rows, err := os.ReadFile("../opencode/testdata/subagent.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const parentID, childID = "ses_db4ffe361ffeK0U3Lw5H1AqmJp", "ses_db4ffb025ffex0d63Yq5XhbSuM"
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		path, _ := opencodeDB(t, t.TempDir())
		if _, err := opencode.Place(ctx, path, rows, false); err != nil {
			t.Fatal(err)
		}
		im := importer.New(e.Store, importer.Options{})
		res, err := im.Import(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Files) != 1 || len(res.Files[0].Problems) != 0 {
			t.Fatalf("%+v", res.Files)
		}
		var parent, child *importer.SessionSummary
		for i, s := range res.Files[0].Sessions {
			switch s.Session {
			case parentID:
				parent = &res.Files[0].Sessions[i]
			case childID:
				child = &res.Files[0].Sessions[i]
			}
		}
		if parent == nil || child == nil || child.Parent == "" || parent.Parent != "" {
			t.Fatalf("sessions %+v", res.Files[0].Sessions)
		}
		fp, err := im.Service().Show(ctx, child.Parent, storeBasis())
		if err != nil {
			t.Fatal(err)
		}
		fc, _ := im.Service().Content(ctx, fp)
		if !strings.Contains(string(fc), "toolu_task1") || !strings.Contains(string(fc), childID) || fp.Session != parentID {
			t.Fatalf("fork point %s (session %s) holds %q", fp.ID, fp.Session, fc)
		}
		// The sub-agent's first commit has the fork point as parent; its
		// rows, from its root, are the sub-agent session's.
		var first *commits.Commit
		for id := child.Tip; id != child.Parent; {
			c, err := im.Service().Show(ctx, id, storeBasis())
			if err != nil {
				t.Fatal(err)
			}
			first, id = c, c.Parent
			if id == "" {
				t.Fatal("the sub-agent's chain does not reach the fork point")
			}
		}
		m, err := im.Service().Materialize(ctx, commits.MaterializeRequest{ID: child.Tip, Stop: first.ID})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(m.Content, []byte(`{"table":"session","row":{`)) || !strings.Contains(string(m.Content), "SUB-A: two files.") || strings.Count(string(m.Content), `{"table":"session"`) != 1 {
			t.Fatalf("the sub-agent's rows from its root: %s", m.Content)
		}
		again, err := im.Import(ctx, path)
		if err != nil || again.Files[0].Status != importer.Unchanged {
			t.Fatalf("a second import: %+v %v", again, err)
		}
	})
}

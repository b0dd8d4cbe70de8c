package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// TestRecallCLI: search, session index and meta, query-session and a
// broken recall config, through the binary on a SQLite file.
func TestRecallCLI(t *testing.T) {
	c := newCLI(t)
	st := "--store=" + c.path("s.db")
	ctx := context.Background()
	db, err := bitemporal.Open(ctx, c.path("s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.Create(ctx, db, "s1", session.CreateOptions{SystemPrompt: "sys"})
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }
	if _, _, err := sess.AppendTurns(ctx,
		objects.Turn{User: "Please migrate the billing ledger to PostgreSQL.", Assistant: text("Migrated the ledger tables.")},
		objects.Turn{User: "Now add the billing ledger backfill job.", Assistant: text("Added the backfill job.")}); err != nil {
		t.Fatal(err)
	}
	out1 := "ERROR: relation ledger_old does not exist"
	tc, err := objects.NewToolcall("call_1", objects.ToolcallFields{Tool: "bash", Args: map[string]any{"command": "psql -f backfill.sql"},
		Status: objects.StatusOK, ChatRef: objects.ChatObjectID("s1")}, &out1)
	if err != nil {
		t.Fatal(err)
	}
	d, err := tc.Doc()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, db, []store.Op{store.Put(d)}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var sr struct {
		Hits []struct {
			ID, Kind, Session, Snippet string
			Turn                       int
		}
	}
	c.jsonOut(&sr, "", st, "search", "postgresql")
	if len(sr.Hits) != 1 || sr.Hits[0].ID != "chat:s1" || sr.Hits[0].Turn != 0 || !strings.Contains(sr.Hits[0].Snippet, "«PostgreSQL»") {
		t.Fatalf("search: %+v", sr)
	}
	if out := c.ok("", st, "search", "--kind", "toolcall", "ledger_old"); !strings.Contains(out, "call_1") {
		t.Errorf("search --kind toolcall: %s", out)
	}

	out := c.ok("", st, "session", "index", "s1")
	if !strings.Contains(out, "name:        ledger-billing-backfill") || !strings.Contains(out, "generator:   offline") {
		t.Fatalf("session index: %s", out)
	}
	var meta struct {
		Name string
		TxID int64 `json:"tx_id"`
	}
	c.jsonOut(&meta, "", st, "session", "meta", "s1")
	if meta.Name == "" {
		t.Errorf("session meta: %+v", meta)
	}
	if out := c.ok("", st, "query-session", meta.Name, "why", "did", "the", "backfill", "fail"); !strings.Contains(out, "call_1") {
		t.Errorf("query-session: %s", out)
	}
	// A broken config: a warning naming the file, and nothing generated.
	bad := c.write("recall.json", `{"providers":[{"name":"x","type":"anthropic"}]}`)
	c.fail(1, "", []string{st, "session", "index", "--recall-config", bad, "s1"}, "warning: recall config "+bad, "model: required", "disabled")
	c.fail(1, "", []string{st, "session", "meta", "nosuch"}, "no metadata")
}

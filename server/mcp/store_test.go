package mcp

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// TestRecordedSessions: a transcript imported as a commit chain (never
// served live) is a session the MCP tools list, resolve by id prefix and
// describe, with its person's prompts read from its commits.
func TestRecordedSessions(t *testing.T) {
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	file := filepath.Join(datasets.Dir(t), "claude-code", "attio-mcp-server__465eb442__8664c04e.jsonl")
	res, err := importer.New(st, importer.Options{}).Import(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || len(res.Files[0].Sessions) == 0 {
		t.Fatalf("import: %+v", res)
	}
	var sid string
	prompts := 0
	for _, ss := range res.Files[0].Sessions {
		if ss.Prompts > prompts {
			sid, prompts = ss.Session, ss.Prompts
		}
	}
	s := StoreSessions{Store: st}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got *SessionSummary
	for i := range list {
		if list[i].ID == sid {
			got = &list[i]
		}
	}
	if got == nil || !got.Recorded || got.Commits == 0 || got.Tip == "" || !strings.HasPrefix(got.Harness, "claude-code") || got.Source != file {
		t.Fatalf("listed %+v (looking for %s among %d)", got, sid, len(list))
	}
	id, err := s.Resolve(ctx, sid[:8])
	if err != nil || id != sid {
		t.Fatalf("Resolve(%q) = %q, %v", sid[:8], id, err)
	}
	d, err := s.Get(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Prompts) != prompts || d.Turns != prompts || d.FirstPrompt == "" || !d.Recorded {
		t.Fatalf("detail: %d prompts (the import counted %d): %+v", len(d.Prompts), prompts, d.SessionSummary)
	}
	if _, err := s.Get(ctx, "no-such-session"); err == nil {
		t.Fatal("Get of an unknown session succeeded")
	}
}

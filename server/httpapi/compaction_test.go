package httpapi

import (
	"context"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestHarnessCompactionCommits: when Pi compacts its log
// (a compaction event with the next call, whose log opens with Pi's
// compactionSummary message), the log ctxstore saw last is checkpointed,
// a compaction commit holds the summary, and the compacted log is
// committed on top of it: materializing the tip stops at the summary by
// default, and the whole history stays reachable with stop root.
func TestHarnessCompactionCommits(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.open("s1")
	var p piLogBuilder
	p.user("first question about the parser")
	p.say("first answer")
	e.ok("POST", "/v1/sessions/s1/context", p.body(), nil)

	compacted := []map[string]any{
		{"role": "compactionSummary", "summary": "The user asked about the parser.", "tokensBefore": 1234, "timestamp": 10},
		{"role": "user", "content": "second question", "timestamp": 11},
	}
	e.ok("POST", "/v1/sessions/s1/context", map[string]any{
		"messages": compacted,
		"events":   []map[string]any{{"type": "compaction", "reason": "overflow", "tokens_before": 1234}},
	}, nil)

	docs, err := e.st.Query(ctx, store.Query{
		Where:   []store.Pred{store.Where("type", commits.DocCommit), store.Where("session", "s1")},
		OrderBy: []store.Order{{Field: "depth", Desc: true}}, Limit: 1,
	})
	if err != nil || len(docs) != 1 {
		t.Fatalf("the session's commits: %v %v", docs, err)
	}
	tip := docs[0][store.IDKey].(string)
	svc := commits.New(e.st, commits.Options{})
	chain, err := svc.History(ctx, tip, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	compactions := 0
	for _, c := range chain {
		kinds = append(kinds, string(c.Type)+"/"+string(c.Trigger))
		if c.Type == commits.Compaction {
			compactions++
		}
	}
	if compactions != 1 || chain[0].Type == commits.Compaction {
		t.Fatalf("chain (tip first): %v; want the compacted log on top of one compaction commit", kinds)
	}
	m, err := svc.Materialize(ctx, commits.MaterializeRequest{ID: tip, Format: "narrative-v1", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m.Content); !strings.Contains(got, "The user asked about the parser.") || strings.Contains(got, "first answer") {
		t.Fatalf("materialized from the compaction:\n%s", got)
	}
	all, err := svc.Materialize(ctx, commits.MaterializeRequest{ID: tip, Format: "narrative-v1", Stop: commits.StopRoot, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(all.Content); !strings.Contains(got, "first answer") || !strings.Contains(got, "second question") {
		t.Fatalf("materialized from the root:\n%s", got)
	}
}

package inspect_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/recorded/recordedtest"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// TestRecordedSessionsNamedAndPriced: imported sessions are listed with
// the name a person recognizes (the harness's title records, else the
// first prompt), their recorded calls, tokens and cache share, a cost
// from the price table (unknown for a model it does not list), newest
// first; the filters narrow the list.
func TestRecordedSessionsNamedAndPriced(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	dir := t.TempDir()
	small := filepath.Join(datasets.Dir(t), "claude-code/attio-mcp-server__465eb442__8664c04e.jsonl")
	piFile := filepath.Join(datasets.Dir(t), "pi/pi-mono__before-compaction.jsonl")
	titled := filepath.Join(dir, "titled.jsonl")
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"sess-titled","cwd":"/home/a/shop","timestamp":"2030-01-02T10:00:00Z","message":{"role":"user","content":"please fix the cart total"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"sess-titled","cwd":"/home/a/shop","timestamp":"2030-01-02T10:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-mystery-9","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":30,"cache_creation_input_tokens":60,"cache_creation":{"ephemeral_1h_input_tokens":60}}}}`,
		`{"type":"ai-title","sessionId":"sess-titled","aiTitle":"Fix the cart total"}`,
	}
	if err := os.WriteFile(titled, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	im := importer.New(se.Store, importer.Options{})
	for _, p := range []string{small, piFile, titled} {
		if _, err := im.ImportFile(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	in := inspect.New(se.Reopen(), inspect.Options{Formats: formats.Commits()})
	ss, err := in.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 {
		t.Fatalf("%d sessions: %+v", len(ss), ss)
	}
	for i := 1; i < len(ss); i++ {
		a, b := ss[i-1], ss[i]
		if a.LastCall == nil || b.LastCall == nil || a.LastCall.Before(*b.LastCall) {
			t.Errorf("not newest first: %s (%v) before %s (%v)", a.ID, a.LastCall, b.ID, b.LastCall)
		}
	}
	by := map[string]inspect.Session{}
	for _, s := range ss {
		by[s.Harness] = s
		if !s.Recorded || s.Name == "" || s.Calls == 0 || s.TokensSent == 0 {
			t.Errorf("session %s (%s): %+v", s.ID, s.Harness, s)
		}
	}
	first := ss[0]
	if first.ID != "sess-titled" || first.Name != "Fix the cart total" || first.Calls != 1 || first.TokensSent != 100 ||
		math.Abs(first.CachedShare-0.3) > 1e-9 || !first.CostUnknown || first.CostUSD != 0 ||
		len(first.UnpricedModels) != 1 || first.UnpricedModels[0] != "claude-mystery-9" {
		t.Errorf("titled session %+v", first)
	}
	calls, sent := recordedtest.FileCalls(t, small)
	cc := by["claude-code"]
	for _, s := range ss {
		if strings.HasPrefix(s.Harness, "claude-code") && s.ID != "sess-titled" {
			cc = s
		}
	}
	if cc.Calls != calls || int64(cc.TokensSent) != sent || cc.CostUnknown || cc.CostUSD <= 0 || cc.CachedShare <= 0 {
		t.Errorf("claude-code session: %d calls, %d tokens, cost %v (unknown %v); the file has %d calls, %d tokens",
			cc.Calls, cc.TokensSent, cc.CostUSD, cc.CostUnknown, calls, sent)
	}
	if strings.HasPrefix(cc.Name, "<") || cc.Name == "" {
		t.Errorf("claude-code session named %q", cc.Name)
	}
	for _, c := range []struct {
		f    inspect.Filter
		want int
	}{
		{inspect.Filter{Harness: "pi"}, 1},
		{inspect.Filter{Harness: "claude-code"}, 2},
		{inspect.Filter{Project: "shop"}, 1},
		{inspect.Filter{Since: time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)}, 1},
		{inspect.Filter{Since: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)}, 0},
	} {
		got, err := in.SessionsWhere(ctx, c.f)
		if err != nil || len(got) != c.want {
			t.Errorf("filter %+v: %d sessions, %v; want %d", c.f, len(got), err, c.want)
		}
	}
	d, err := in.Session(ctx, "sess-titled")
	if err != nil || d.Calls != 1 || d.Name != "Fix the cart total" {
		t.Errorf("session detail %+v, %v", d, err)
	}
}

// TestRecordedSubAgentLane: a sub-agent's records, imported as a lane of
// their own, count there (named by the agent's task), not in the
// parent's calls.
func TestRecordedSubAgentLane(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "lane.jsonl")
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"sess-lane","timestamp":"2030-01-02T10:00:00Z","message":{"role":"user","content":"audit the repo"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"sess-lane","timestamp":"2030-01-02T10:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"prompt":"list the files"}}],"usage":{"input_tokens":100,"output_tokens":5}}}`,
		`{"type":"user","uuid":"s1","parentUuid":null,"isSidechain":true,"sessionId":"sess-lane","timestamp":"2030-01-02T10:00:02Z","message":{"role":"user","content":"list the files"}}`,
		`{"type":"assistant","uuid":"s2","parentUuid":"s1","isSidechain":true,"sessionId":"sess-lane","timestamp":"2030-01-02T10:00:03Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"a, b"}],"usage":{"input_tokens":40,"output_tokens":3}}}`,
		`{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"sess-lane","timestamp":"2030-01-02T10:00:04Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a, b"}]}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"sess-lane","timestamp":"2030-01-02T10:00:05Z","message":{"id":"m3","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"two files"}],"usage":{"input_tokens":120,"output_tokens":4}}}`,
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.New(se.Store, importer.Options{}).ImportFile(ctx, p); err != nil {
		t.Fatal(err)
	}
	ss, err := inspect.New(se.Reopen(), inspect.Options{Formats: formats.Commits()}).Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var parent, lane *inspect.Session
	for i := range ss {
		switch {
		case ss[i].ID == "sess-lane":
			parent = &ss[i]
		case strings.HasPrefix(ss[i].ID, "sess-lane/"):
			lane = &ss[i]
		}
	}
	if parent == nil || parent.Calls != 2 || parent.TokensSent != 220 || parent.Name != "audit the repo" {
		t.Errorf("parent %+v", parent)
	}
	if lane == nil || lane.Calls != 1 || lane.TokensSent != 40 || lane.Name != "list the files" || lane.CostUSD <= 0 {
		t.Errorf("lane %+v (sessions %+v)", lane, ss)
	}
}

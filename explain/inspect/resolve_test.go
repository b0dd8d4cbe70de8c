package inspect_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/store"
)

// TestResolveObject: a whole id is itself, a prefix of one id is that id,
// a prefix of several is an AmbiguousError listing them, and a prefix of
// none is returned as given.
func TestResolveObject(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	var ops []store.Op
	for _, id := range []string{"3f9a1c2b4d5e6f70aaaa", "3f9a1c2b4d5e6f70bbbb", "77aa00"} {
		ops = append(ops, store.Op{Kind: store.OpPut, ID: id, Doc: store.Doc{store.IDKey: id, "v": 1}})
	}
	if _, err := se.Store.Submit(ctx, ops); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"77aa00", "77aa00"}, {"77a", "77aa00"}, {"3f9a1c2b4d5e6f70a", "3f9a1c2b4d5e6f70aaaa"}, {"zz", "zz"},
	} {
		got, err := inspect.ResolveObject(ctx, se.Store, c.in)
		if err != nil || got != c.want {
			t.Errorf("ResolveObject(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	_, err := inspect.ResolveObject(ctx, se.Store, "3f9a1c2b4d5e6f70")
	var amb *inspect.AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 || amb.Kind != "object" {
		t.Fatalf("an ambiguous prefix: %v", err)
	}
}

// TestDefaultPrices: the inspector's default prices are the price
// table's for DefaultModel: $3 per million input tokens, writes 1.25x,
// reads 0.1x.
func TestDefaultPrices(t *testing.T) {
	p := inspect.DefaultPrices()
	if math.Abs(p.InputPerMTok-3) > 1e-9 || math.Abs(p.Write-1.25) > 1e-9 || math.Abs(p.Read-0.1) > 1e-9 {
		t.Fatalf("default prices %+v", p)
	}
}

// TestResolveSessionLanes: a prefix of a session and of its sub-agents'
// lanes ("S/agent-…") names the session; one of a lane alone names it.
func TestResolveSessionLanes(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "lane.jsonl")
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"sess-lane","timestamp":"2030-01-02T10:00:00Z","message":{"role":"user","content":"audit the repo"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"sess-lane","timestamp":"2030-01-02T10:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"prompt":"list the files"}}],"usage":{"input_tokens":100,"output_tokens":5}}}`,
		`{"type":"user","uuid":"s1","parentUuid":null,"isSidechain":true,"sessionId":"sess-lane","timestamp":"2030-01-02T10:00:02Z","message":{"role":"user","content":"list the files"}}`,
		`{"type":"assistant","uuid":"s2","parentUuid":"s1","isSidechain":true,"sessionId":"sess-lane","timestamp":"2030-01-02T10:00:03Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"a, b"}],"usage":{"input_tokens":40,"output_tokens":3}}}`,
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.New(se.Store, importer.Options{}).ImportFile(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, err := inspect.ResolveSession(ctx, se.Store, "sess-l"); err != nil || got != "sess-lane" {
		t.Errorf("ResolveSession(sess-l) = %q, %v; want the session, not its lane", got, err)
	}
	if got, err := inspect.ResolveSession(ctx, se.Store, "sess-lane/"); err != nil || !strings.HasPrefix(got, "sess-lane/agent-") {
		t.Errorf("ResolveSession(sess-lane/) = %q, %v; want its lane", got, err)
	}
}

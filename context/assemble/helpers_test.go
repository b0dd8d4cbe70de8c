package assemble

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// env is a session on a real store (storetestenv: SQLite or XTDB), its
// tools and an assembler with a fake clock.
type env struct {
	tb    testing.TB
	ctx   context.Context
	se    *storetestenv.Env
	sid   string              // the session id
	uid   func(string) string // makes ids the test chooses unique where the store is shared
	st    store.Store
	ix    *files.Indexer
	tools *tools.Tools
	a     *Assembler
	dir   string
	now   time.Time
	seq   int
}

var testTools = []ToolSpec{
	{Name: "read", Description: "Read a file", Parameters: map[string]any{"type": "object", "required": []any{"path"}, "max": 3}},
	{Name: "bash", Description: "Run a command"},
}

// newEnv is newEnvOn on a new SQLite database, with the session id "s1"
// and toolcall ids as the test writes them.
func newEnv(tb testing.TB, layout Layout, pol Policy) *env {
	tb.Helper()
	return newEnvNamed(tb, storetestenv.New(tb, storetestenv.SQLite), layout, pol, func(s string) string { return s })
}

// newEnvOn starts a session on se's store. With se from storetestenv.Run
// (any backend) the session and toolcall ids are made unique by se.ID; use
// e.sid and e.uid in the test.
func newEnvOn(tb testing.TB, se *storetestenv.Env, layout Layout, pol Policy) *env {
	tb.Helper()
	return newEnvNamed(tb, se, layout, pol, se.ID)
}

func newEnvNamed(tb testing.TB, se *storetestenv.Env, layout Layout, pol Policy, uid func(string) string) *env {
	tb.Helper()
	ctx := context.Background()
	st := se.Store
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-test"})
	if err != nil {
		tb.Fatal(err)
	}
	ix := files.NewIndexer(st, res, 0)
	sid := uid("s1")
	s, err := session.Create(ctx, st, sid, session.CreateOptions{SystemPrompt: "You are a careful agent."})
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{tb: tb, ctx: ctx, se: se, sid: sid, uid: uid, st: st, ix: ix, dir: tb.TempDir(),
		now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	e.tools = tools.New(s, ix, tools.Options{Policy: collapse.Default()})
	return e.start(layout, pol)
}

func (e *env) start(layout Layout, pol Policy) *env {
	a, err := New(e.ctx, e.tools.Session(), Options{Layout: layout, Tools: testTools, Policy: pol,
		Now: func() time.Time { return e.now }})
	if err != nil {
		e.tb.Fatal(err)
	}
	e.a = a
	return e
}

func (e *env) file(name, content string) string {
	e.tb.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.tb.Fatal(err)
	}
	return p
}

func (e *env) must(err error) {
	e.tb.Helper()
	if err != nil {
		e.tb.Fatal(err)
	}
}

// read runs read(path) as the harness would: the tool, its recorded call,
// the assistant message and the tool result.
func (e *env) read(path string) {
	e.tb.Helper()
	e.seq++
	id := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	args := map[string]any{"path": path}
	e.must(e.a.Assistant(e.ctx, "Reading "+filepath.Base(path), []ToolCall{{ID: id, Name: "read", Args: args}}))
	r, err := e.tools.Read(e.ctx, path)
	e.must(err)
	rr, err := e.tools.RecordResult(e.ctx, tools.Call{ID: id, Tool: "read", Args: args}, r)
	e.must(err)
	e.must(e.a.ToolResult(e.ctx, rr))
}

// bash runs a recorded bash call with the given output.
func (e *env) bash(cmd, out string) {
	e.tb.Helper()
	e.seq++
	id := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	args := map[string]any{"command": cmd, "timeout": 30}
	e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: id, Name: "bash", Args: args}}))
	r, err := e.tools.Record(e.ctx, tools.Call{ID: id, Tool: "bash", Args: args, Output: &out})
	e.must(err)
	e.must(e.a.ToolResult(e.ctx, r))
}

// activate runs activate(id) as the harness would: the assistant's call,
// the tool, its recorded result.
func (e *env) activate(id string) {
	e.tb.Helper()
	e.seq++
	aid := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	args := map[string]any{"id": id}
	e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: aid, Name: "activate", Args: args}}))
	r, err := e.tools.Activate(e.ctx, id)
	e.must(err)
	rr, err := e.tools.RecordResult(e.ctx, tools.Call{ID: aid, Tool: "activate", Args: args}, r)
	e.must(err)
	e.must(e.a.ToolResult(e.ctx, rr))
}

func (e *env) turn(text string) {
	e.tb.Helper()
	_, err := e.tools.BeginTurn(e.ctx)
	e.must(err)
	e.must(e.a.User(e.ctx, text))
}

func (e *env) call() *Assembled {
	e.tb.Helper()
	c, err := e.a.Call(e.ctx)
	e.must(err)
	// The stale tokens counted are those the items hold: a rebase that
	// moved items once left collapsing inputs marked on the wrong item
	// (their tokens counted stale for ever, never dropped).
	sum := 0
	for _, it := range e.a.items[e.a.gone:] { // released items hold nothing stale
		sum += e.a.staleTokens(it)
	}
	if sum != e.a.stale || c.Layout == LayoutStream && c.StaleTokens != sum {
		e.tb.Fatalf("call %d: %d stale tokens counted, the items hold %d", c.N, e.a.stale, sum)
	}
	for id, i := range e.a.callAt {
		if e.a.items[i].kind != kAssistant || !slices.ContainsFunc(e.a.items[i].calls, func(tc ToolCall) bool { return tc.ID == id }) {
			e.tb.Fatalf("call %d: tool call %s is not at item %d", c.N, id, i)
		}
	}
	return c
}

func lcp(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func output(tag string, lines int) string {
	var b strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "%s line %d: some tool output text that takes room\n", tag, i)
	}
	return b.String()
}

func toolsCall(id string, args map[string]any, out string) tools.Call {
	return tools.Call{ID: id, Tool: "bash", Args: args, Output: &out}
}

func TestMain(m *testing.M) { storetestenv.Main(m) }

// rebuildAll rebuilds every call of a session in one pass (Rebuilder)
// and checks each call of got, in order, against it as it was sent: its
// bytes, head, withheld tools, rebase offset, messages and spans; a call
// past the last one fails.
func rebuildAll(t *testing.T, ctx context.Context, st store.Store, sid string, got []*Assembled) {
	t.Helper()
	b := NewRebuilder(st, sid)
	n := 0
	for _, c := range got {
		for n < c.N {
			cm, err := b.Next(ctx)
			if err != nil {
				t.Fatalf("rebuilder: reading call %d: %v", n+1, err)
			}
			n = cm.N
		}
		r, err := b.Context(ctx)
		if err != nil {
			t.Fatalf("rebuilder: call %d: %v", c.N, err)
		}
		if r.Len() != c.Len() || !bytes.Equal(r.Bytes[c.BytesFrom:], c.Bytes) || r.System() != c.System() || !slices.Equal(r.Withheld(), c.Withheld()) {
			t.Fatalf("rebuilder: call %d differs: %d bytes, want %d", c.N, r.Len(), c.Len())
		}
		if r.RebaseOffset != c.RebaseOffset {
			t.Fatalf("rebuilder: call %d rebases at %d, want %d", c.N, r.RebaseOffset, c.RebaseOffset)
		}
		if c.Released() == 0 && fmt.Sprint(r.Messages()) != fmt.Sprint(c.Messages()) {
			t.Fatalf("rebuilder: call %d: messages differ", c.N)
		}
		checkSpans(t, r)
	}
	if _, err := b.Next(ctx); err == nil {
		t.Fatalf("rebuilder: a call after %d read", n)
	}
}

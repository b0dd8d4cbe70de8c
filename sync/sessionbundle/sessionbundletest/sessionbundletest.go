// Package sessionbundletest builds realistic agent sessions for the tests
// of session bundles: files read from a real directory, recorded bash
// calls collapsed by the policy, files edited behind the agent's back, a
// deactivation, idle gaps and rebases, with a context commit per call.
package sessionbundletest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/runtime"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Tools is the tool list the sessions offer.
var Tools = []assemble.ToolSpec{
	{Name: "read", Description: "Read a file", Parameters: map[string]any{"type": "object", "required": []any{"path"}}},
	{Name: "bash", Description: "Run a command"},
}

// Session is a session being driven as a harness would.
type Session struct {
	tb    testing.TB
	ctx   context.Context
	ID    string
	Store store.Store
	// Dir holds the files the agent reads (shared by sessions built with
	// the same Dir, as on one machine).
	Dir   string
	Ix    *files.Indexer
	Tools *tools.Tools
	A     *assemble.Assembler
	// Calls are the contexts of every call so far.
	Calls []*assemble.Assembled
	now   time.Time
	seq   int
	turn  int
}

// New creates session id in st, reading files from dir (a new temporary
// directory if empty), with a fake clock.
func New(tb testing.TB, st store.Store, id, dir string) *Session {
	tb.Helper()
	ctx := context.Background()
	if dir == "" {
		dir = tb.TempDir()
	}
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-sessionbundletest"})
	if err != nil {
		tb.Fatal(err)
	}
	ix := files.NewIndexer(st, res, 0)
	e := &Session{tb: tb, ctx: ctx, ID: id, Store: st, Dir: dir, Ix: ix,
		now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	rt, err := runtime.Open(ctx, st, id, runtime.Options{
		Mode:     runtime.CreateOnly,
		Create:   session.CreateOptions{SystemPrompt: "You are a careful agent.", Harness: "test"},
		Indexer:  ix,
		Tools:    tools.Options{Policy: collapse.Default()},
		Assemble: assemble.Options{Tools: Tools, Policy: assemble.Policy{StaleThreshold: 600}, Now: func() time.Time { return e.now }},
		Ingest:   ingest.Options{Cwd: dir},
	})
	if err != nil {
		tb.Fatal(err)
	}
	e.Tools, e.A = rt.Tools, rt.Assembler
	return e
}

func (e *Session) must(err error) {
	e.tb.Helper()
	if err != nil {
		e.tb.Fatal(err)
	}
}

// File writes a file in Dir and returns its path.
func (e *Session) File(name, content string) string {
	e.tb.Helper()
	p := filepath.Join(e.Dir, name)
	e.must(os.WriteFile(p, []byte(content), 0o644))
	return p
}

// Read runs read(path) with its recorded call and tool result.
func (e *Session) Read(path string) {
	e.tb.Helper()
	e.seq++
	id := fmt.Sprintf("toolu_%s_%04d", e.ID, e.seq)
	args := map[string]any{"path": path}
	e.must(e.A.Assistant(e.ctx, "Reading "+filepath.Base(path), []assemble.ToolCall{{ID: id, Name: "read", Args: args}}))
	r, err := e.Tools.Read(e.ctx, path)
	e.must(err)
	rr, err := e.Tools.RecordResult(e.ctx, tools.Call{ID: id, Tool: "read", Args: args}, r)
	e.must(err)
	e.must(e.A.ToolResult(e.ctx, rr))
}

// Bash records a bash call with the given output.
func (e *Session) Bash(cmd, out string) {
	e.tb.Helper()
	e.seq++
	id := fmt.Sprintf("toolu_%s_%04d", e.ID, e.seq)
	args := map[string]any{"command": cmd, "timeout": 30}
	e.must(e.A.Assistant(e.ctx, "", []assemble.ToolCall{{ID: id, Name: "bash", Args: args}}))
	r, err := e.Tools.Record(e.ctx, tools.Call{ID: id, Tool: "bash", Args: args, Output: &out})
	e.must(err)
	e.must(e.A.ToolResult(e.ctx, r))
}

// Call assembles the next call and keeps its context.
func (e *Session) Call() *assemble.Assembled {
	e.tb.Helper()
	c, err := e.A.Call(e.ctx)
	e.must(err)
	e.Calls = append(e.Calls, c)
	return c
}

// Turns runs n more turns: a user message, a read in the first two turns
// (a.go, b.go), an external edit of a.go every fifth turn, a deactivation
// of b.go every seventh, three bash calls, an idle gap past the cache TTL
// every ninth turn, then a call.
func (e *Session) Turns(n int) {
	e.tb.Helper()
	for range n {
		e.turn++
		turn := e.turn
		_, err := e.Tools.BeginTurn(e.ctx)
		e.must(err)
		e.must(e.A.User(e.ctx, fmt.Sprintf("turn %d: please continue", turn)))
		switch {
		case turn == 1:
			e.Read(e.File("a.go", "package a\n"))
		case turn == 2:
			e.Read(e.File("b.go", "package b\n\nfunc B() {}\n"))
		case turn%5 == 0:
			p := e.File("a.go", fmt.Sprintf("package a\n\n// edit %d\n", turn))
			_, err := e.Ix.Index(e.ctx, p)
			e.must(err)
		case turn%7 == 0:
			r, err := e.Ix.Index(e.ctx, filepath.Join(e.Dir, "b.go"))
			e.must(err)
			_, err = e.Tools.Deactivate(e.ctx, r.Object.ID())
			e.must(err)
		}
		for k := range 3 {
			e.Bash(fmt.Sprintf("make step%d", k), output(fmt.Sprintf("%s t%d.%d", e.ID, turn, k), 4))
		}
		if turn%9 == 0 {
			e.now = e.now.Add(6 * time.Minute)
		} else {
			e.now = e.now.Add(20 * time.Second)
		}
		e.Call()
	}
}

func output(tag string, lines int) string {
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "%s line %d: some tool output text that takes room\n", tag, i)
	}
	return b.String()
}

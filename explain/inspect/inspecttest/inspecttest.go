// Package inspecttest makes real sessions for the inspector's tests: it
// replays a transcript of the shared datasets through the real context
// manager (eval/replay) into a store.
package inspecttest

import (
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

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/eval/replay"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Small is a short Claude Code session of the datasets (30 calls).
const Small = "claude-code/attio-mcp-server__465eb442__8664c04e.jsonl"

// Replay replays the dataset file rel (relative to the datasets directory)
// with the named ctxstore strategies ("ctxstore_stream", ...) into st and
// returns the new sessions' ids in the order of strategies. Token counts
// use assemble.BytesTokenizer (fast, deterministic).
func Replay(tb testing.TB, st store.Store, rel string, strategies ...string) []string {
	tb.Helper()
	path := filepath.Join(datasets.Dir(tb), rel)
	s, err := transcripttest.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	known := map[string]replay.Strategy{}
	for _, x := range append(replay.DefaultStrategies(), replay.OtherStrategies()...) {
		known[x.Name()] = x
	}
	var strats []replay.Strategy
	for _, n := range strategies {
		x, ok := known[n]
		if !ok {
			tb.Fatalf("inspecttest: unknown strategy %q", n)
		}
		strats = append(strats, x)
	}
	ctx := context.Background()
	before, err := session.List(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := replay.Run(ctx, s, replay.Options{Strategies: strats, Counter: replay.NewCounter(assemble.BytesTokenizer{}),
		Store: st, Dir: tb.TempDir()}); err != nil {
		tb.Fatalf("replaying %s: %v", rel, err)
	}
	after, err := session.List(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, id := range after {
		if !slices.Contains(before, id) {
			out = append(out, id)
		}
	}
	// ids are replay-{transcript}-{k}-{nanos}: order by strategy index k
	slices.SortFunc(out, func(a, b string) int { return cmpStrategy(a) - cmpStrategy(b) })
	if len(out) != len(strategies) {
		tb.Fatalf("inspecttest: %d new sessions for %d strategies", len(out), len(strategies))
	}
	return out
}

// cmpStrategy extracts k from replay-{id}-{k}-{nanos}.
func cmpStrategy(id string) int {
	// the strategy index is the second-to-last dash-separated field
	end := len(id)
	dashes := 0
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '-' {
			dashes++
			if dashes == 1 {
				end = i
			} else {
				k := 0
				for _, c := range id[i+1 : end] {
					k = k*10 + int(c-'0')
				}
				return k
			}
		}
	}
	return 0
}

// Live is a session driven the way a harness drives one: a session on a
// real store, its tools, files in a temporary directory and an assembler
// with a clock the test moves.
type Live struct {
	tb    testing.TB
	ctx   context.Context
	SID   string
	St    store.Store
	Tools *tools.Tools
	A     *assemble.Assembler
	Dir   string
	Now   time.Time
	seq   int
}

// NewLive creates session sid in st. Read files stay active until
// deactivated (FilesPerTurn -1), so a test can grow a large context.
func NewLive(tb testing.TB, st store.Store, sid string) *Live {
	tb.Helper()
	ctx := context.Background()
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-inspecttest"})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := session.Create(ctx, st, sid, session.CreateOptions{SystemPrompt: "You are a careful agent.", Harness: "inspecttest"})
	if err != nil {
		tb.Fatal(err)
	}
	l := &Live{tb: tb, ctx: ctx, SID: sid, St: st, Dir: tb.TempDir(), Now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	pol := collapse.Default()
	pol.FilesPerTurn = -1
	l.Tools = tools.New(s, files.NewIndexer(st, res, 0), tools.Options{Policy: pol})
	l.A, err = assemble.New(ctx, s, assemble.Options{Tools: []assemble.ToolSpec{{Name: "read", Description: "Read a file"}, {Name: "bash", Description: "Run a command"}},
		Now: func() time.Time { return l.Now }})
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func (l *Live) must(err error) {
	l.tb.Helper()
	if err != nil {
		l.tb.Fatal(err)
	}
}

// File writes a file in the session's directory and returns its path.
func (l *Live) File(name, content string) string {
	l.tb.Helper()
	p := filepath.Join(l.Dir, name)
	l.must(os.WriteFile(p, []byte(content), 0o644))
	return p
}

// Turn begins a turn with a user message.
func (l *Live) Turn(text string) {
	l.tb.Helper()
	_, err := l.Tools.BeginTurn(l.ctx)
	l.must(err)
	l.must(l.A.User(l.ctx, text))
}

// Read runs read(path) as a harness would: the assistant's call, the tool,
// its recorded result.
func (l *Live) Read(path string) {
	l.tb.Helper()
	l.seq++
	id := fmt.Sprintf("toolu_%s_%04d", l.SID, l.seq)
	args := map[string]any{"path": path}
	l.must(l.A.Assistant(l.ctx, "Reading "+filepath.Base(path), []assemble.ToolCall{{ID: id, Name: "read", Args: args}}))
	r, err := l.Tools.Read(l.ctx, path)
	l.must(err)
	rr, err := l.Tools.RecordResult(l.ctx, tools.Call{ID: id, Tool: "read", Args: args}, r)
	l.must(err)
	l.must(l.A.ToolResult(l.ctx, rr))
}

// Bash records a bash call with the given output.
func (l *Live) Bash(cmd, out string) {
	l.tb.Helper()
	l.seq++
	id := fmt.Sprintf("toolu_%s_%04d", l.SID, l.seq)
	args := map[string]any{"command": cmd}
	l.must(l.A.Assistant(l.ctx, "", []assemble.ToolCall{{ID: id, Name: "bash", Args: args}}))
	r, err := l.Tools.Record(l.ctx, tools.Call{ID: id, Tool: "bash", Args: args, Output: &out})
	l.must(err)
	l.must(l.A.ToolResult(l.ctx, r))
}

// Activate records an activate(id) call as a harness would: the
// assistant's call, the tool, its recorded result.
func (l *Live) Activate(id string) {
	l.tb.Helper()
	l.seq++
	cid := fmt.Sprintf("toolu_%s_%04d", l.SID, l.seq)
	args := map[string]any{"id": id}
	l.must(l.A.Assistant(l.ctx, "", []assemble.ToolCall{{ID: cid, Name: "activate", Args: args}}))
	r, err := l.Tools.Activate(l.ctx, id)
	l.must(err)
	rr, err := l.Tools.RecordResult(l.ctx, tools.Call{ID: cid, Tool: "activate", Args: args}, r)
	l.must(err)
	l.must(l.A.ToolResult(l.ctx, rr))
}

// Call assembles and records the next model call, the clock moved by step.
func (l *Live) Call(step time.Duration) *assemble.Assembled {
	l.tb.Helper()
	l.Now = l.Now.Add(step)
	c, err := l.A.Call(l.ctx)
	l.must(err)
	return c
}

// Big makes session sid whose last call's context holds at least tokens
// tokens (assemble.BytesTokenizer: 4 bytes a token): files of about 16 KB
// read one per call.
func Big(tb testing.TB, st store.Store, sid string, tokens int) *Live {
	tb.Helper()
	l := NewLive(tb, st, sid)
	l.Turn("Please read the project's sources and summarize them.")
	line := "func example() { return someValue + anotherValue // a line of Go code of ordinary length }\n"
	for i := 0; ; i++ {
		var b strings.Builder
		for b.Len() < 16000 {
			fmt.Fprintf(&b, "%d: %s", i, line)
		}
		l.Read(l.File(fmt.Sprintf("src%03d.go", i), b.String()))
		if c := l.Call(10 * time.Second); c.Tokens >= tokens {
			return l
		}
	}
}

// BreakSessionObject overwrites session sid's session object in st with
// one whose identity_hash does not match its fields, as a bundle imported
// without verification could leave it: the session's state can no longer
// be read.
func BreakSessionObject(tb testing.TB, st store.Store, sid string) {
	tb.Helper()
	ctx := context.Background()
	head := objects.SessionObjectID(sid)
	doc, err := st.Entity(ctx, head, store.Basis{})
	if err != nil {
		tb.Fatal(err)
	}
	doc["identity_hash"] = strings.Repeat("0", 64)
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(doc)}); err != nil {
		tb.Fatal(err)
	}
}

package ingest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/pressly/goose/v3"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/migrations"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// rig is a session on a real SQLite file, driven through an Ingester.
type rig struct {
	t     *testing.T
	ctx   context.Context
	db    string
	dir   string
	st    store.Store
	tools *tools.Tools
	a     *assemble.Assembler
	in    *Ingester
	opt   Options
	now   time.Time
}

func newRig(t *testing.T, o Options) *rig {
	r := &rig{t: t, ctx: context.Background(), db: filepath.Join(t.TempDir(), "s.db"), dir: t.TempDir(),
		now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	if o.Cwd == "" {
		o.Cwd = r.dir
	}
	r.opt = o
	st, err := bitemporal.Open(r.ctx, r.db, bitemporal.Options{})
	r.must(err)
	if _, err := session.Create(r.ctx, st, "s1", session.CreateOptions{SystemPrompt: "You are careful."}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r.open()
	return r
}

// open opens everything on a new store handle, as a new process would.
func (r *rig) open() {
	st, err := bitemporal.Open(r.ctx, r.db, bitemporal.Options{})
	r.must(err)
	r.t.Cleanup(func() { st.Close() })
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-test"})
	r.must(err)
	s, err := session.Open(r.ctx, st, "s1")
	r.must(err)
	r.st = st
	r.tools = tools.New(s, files.NewIndexer(st, res, 0), tools.Options{Policy: collapse.Config{PerTurn: 5, TurnsBack: 2}})
	r.a, err = assemble.Open(r.ctx, s, assemble.Options{Policy: assemble.Policy{StaleThreshold: 400, Horizon: 200},
		Now: func() time.Time { return r.now }})
	r.must(err)
	if r.opt.Commits != nil {
		co := *r.opt.Commits
		co.Service = commits.New(st, commits.Options{Now: func() time.Time { return r.now }})
		r.opt.Commits = &co
	}
	r.in, err = New(r.ctx, r.tools, r.a, r.opt)
	r.must(err)
}

func (r *rig) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) file(name, content string) string {
	p := filepath.Join(r.dir, name)
	r.must(os.MkdirAll(filepath.Dir(p), 0o755))
	r.must(os.WriteFile(p, []byte(content), 0o644))
	return p
}

func (r *rig) context(log []conversation.Message) (*assemble.Assembled, Report) {
	r.t.Helper()
	r.now = r.now.Add(10 * time.Second)
	c, rep, err := r.in.Context(r.ctx, log)
	r.must(err)
	return c, rep
}

func user(s string) conversation.Message {
	return conversation.Message{Role: conversation.RoleUser, Text: s}
}
func said(s string) conversation.Message {
	return conversation.Message{Role: conversation.RoleAssistant, Text: s}
}
func call(id, name string, args map[string]any) conversation.Message {
	return conversation.Message{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: id, Name: name, Args: args}}}
}
func result(id, name, out string) conversation.Message {
	return conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: name, Output: out}
}

// extends fails unless next extends prev byte for byte (or rebased).
func extends(t *testing.T, prev, next *assemble.Assembled) {
	t.Helper()
	if next.Rebased {
		if !strings.HasPrefix(string(next.Bytes), string(prev.Bytes[:next.RebaseOffset])) {
			t.Fatalf("call %d rebased from %d but changed bytes before it", next.N, next.RebaseOffset)
		}
		return
	}
	if !strings.HasPrefix(string(next.Bytes), string(prev.Bytes)) {
		t.Fatalf("call %d does not extend call %d", next.N, prev.N)
	}
}

func TestLiveSession(t *testing.T) {
	r := newRig(t, Options{})
	r.file("a.go", "package a\n\nfunc A() int { return 1 }\n")
	bigOut := strings.Repeat("PASS ok ctxstore/a 0.01s\n", 40)
	log := []conversation.Message{
		user("fix a.go"),
		call("c1", "read", map[string]any{"path": "a.go"}),
		result("c1", "read", "package a\n\nfunc A() int { return 1 }\n"),
	}
	c1, rep := r.context(log)
	if rep.Applied != 3 || rep.Cursor != 3 || rep.Reset {
		t.Fatalf("report %+v", rep)
	}
	body := string(c1.Bytes)
	if !strings.Contains(body, "<<content id=") || !strings.Contains(body, "func A() int { return 1 }") {
		t.Fatalf("the read file is not active content:\n%s", body)
	}
	if strings.Contains(body, "<<tool_result id=c1>>\npackage a") {
		t.Fatal("the read's output is in the tool result")
	}
	// The same log again applies nothing and changes nothing.
	c2, rep := r.context(log)
	if rep.Applied != 0 {
		t.Fatalf("re-sent log applied %d", rep.Applied)
	}
	extends(t, c1, c2)
	if len(c2.Bytes) != len(c1.Bytes) {
		t.Fatalf("unchanged log grew the context by %d bytes", len(c2.Bytes)-len(c1.Bytes))
	}
	// Pi's own edit and a bash run.
	r.file("a.go", "package a\n\nfunc A() int { return 2 }\n")
	log = append(log,
		call("c2", "edit", map[string]any{"path": "a.go", "oldText": "return 1", "newText": "return 2"}),
		result("c2", "edit", "Successfully replaced text in a.go."),
		call("c3", "bash", map[string]any{"command": "go test ./..."}),
		result("c3", "bash", bigOut),
		said("Fixed."),
	)
	c3, rep := r.context(log)
	if rep.Applied != 5 {
		t.Fatalf("report %+v", rep)
	}
	extends(t, c2, c3)
	body = string(c3.Bytes)
	if !strings.Contains(body, "<<tool_result id=c3>>\n"+bigOut[:40]) {
		t.Fatalf("the bash call's live output is not its tool result:\n%s", body[len(c2.Bytes):])
	}
	if !strings.Contains(body, "return 2") {
		t.Fatal("the edited file's new version is not shown")
	}
	// The next user message closes the turn in the chat object.
	log = append(log, user("thanks"))
	c4, _ := r.context(log)
	extends(t, c3, c4)
	chat, err := r.tools.Session().Chat(r.ctx)
	r.must(err)
	if n := len(chat.Chat.Turns); n != 1 {
		t.Fatalf("chat has %d turns, want 1", n)
	}
	if got := strings.Join(chat.Chat.Turns[0].ToolcallIDs, ","); got != "c1,c2,c3" {
		t.Fatalf("turn toolcalls %q", got)
	}
	// Every call can be rebuilt.
	for n := 1; n <= c4.N; n++ {
		if _, err := assemble.Rebuild(r.ctx, r.st, "s1", n); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSkippedAndProblems(t *testing.T) {
	r := newRig(t, Options{})
	log := []conversation.Message{
		user("hi"),
		{Role: "system", Text: "odd"},
		{Role: conversation.RoleAssistant},
		call("c1", "read", map[string]any{"path": "missing.go"}),
		result("c1", "read", "ENOENT"),
		call("c2", "WebFetch", map[string]any{"url": "https://example.com"}),
		result("c2", "WebFetch", "<html>"),
	}
	c, rep := r.context(log)
	if rep.Skipped["role:system"] != 1 || rep.Skipped["empty assistant"] != 1 {
		t.Fatalf("skipped %v", rep.Skipped)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "c1") {
		t.Fatalf("problems %v", rep.Problems)
	}
	body := string(c.Bytes)
	for _, id := range []string{"c1", "c2"} {
		if !strings.Contains(body, "<<tool_result id="+id+">>\n") {
			t.Fatalf("%s is not in the context", id)
		}
	}
	if rep.Cursor != len(log) {
		t.Fatalf("cursor %d, want %d (skipped messages are passed)", rep.Cursor, len(log))
	}
}

func TestReplacedLog(t *testing.T) {
	r := newRig(t, Options{})
	log := []conversation.Message{user("one"), said("1"), user("two"), said("2")}
	c1, _ := r.context(log)
	// The harness rewrites history after message 2 (a branch switch).
	log2 := []conversation.Message{user("one"), said("1"), user("three"), said("3")}
	c2, rep := r.context(log2)
	if !rep.Reset || rep.ResetAt != 2 || rep.Applied != 2 {
		t.Fatalf("report %+v", rep)
	}
	extends(t, c1, c2)
	if !strings.Contains(string(c2.Bytes[len(c1.Bytes):]), "replaced after message 2") {
		t.Fatal("no note about the replaced log")
	}
	// A shortened log.
	c3, rep := r.context(log2[:1])
	if !rep.Reset || rep.ResetAt != 1 || rep.Applied != 0 {
		t.Fatalf("report %+v", rep)
	}
	extends(t, c2, c3)
	// Nothing said before is lost from the store: the first turns' text is
	// in the commits.
	if !strings.Contains(string(c3.Bytes), "two") {
		t.Fatal("state was lost")
	}
}

func TestResumeInNewProcess(t *testing.T) {
	r := newRig(t, Options{})
	r.file("a.txt", "alpha\n")
	log := []conversation.Message{user("go"), call("c1", "read", map[string]any{"path": "a.txt"}), result("c1", "read", "alpha\n")}
	c1, _ := r.context(log)
	log = append(log, call("c2", "bash", map[string]any{"command": "ls"}), result("c2", "bash", "a.txt\n"))
	// Applied but never assembled: the process dies before its call.
	if _, err := r.in.Ingest(r.ctx, log); err != nil {
		t.Fatal(err)
	}
	r.open()
	log = append(log, said("done"))
	c2, rep := r.context(log)
	if rep.Applied != 3 || rep.Cursor != 6 {
		t.Fatalf("after resume: %+v, want the 3 messages after the last call", rep)
	}
	extends(t, c1, c2)
	if c2.N != c1.N+1 {
		t.Fatalf("call %d after %d", c2.N, c1.N)
	}
	if n := strings.Count(string(c2.Bytes), "<<tool_result id=c2>>"); n != 1 {
		t.Fatalf("c2's result appears %d times", n)
	}
	// Resume between calls: nothing is applied twice.
	r.open()
	c3, rep := r.context(log)
	if rep.Applied != 0 {
		t.Fatalf("resumed cursor applied %d", rep.Applied)
	}
	if string(c3.Bytes) != string(c2.Bytes) {
		t.Fatal("an unchanged log after resume changed the context")
	}
	// The turn in progress survives: the next user message writes it.
	r.open()
	r.context(append(log, user("next")))
	chat, err := r.tools.Session().Chat(r.ctx)
	r.must(err)
	if n := len(chat.Chat.Turns); n != 1 || strings.Join(chat.Chat.Turns[0].ToolcallIDs, ",") != "c1,c2" {
		t.Fatalf("chat turns %+v", chat.Chat.Turns)
	}
}

func TestOwnToolsRecognized(t *testing.T) {
	r := newRig(t, Options{})
	p := r.file("b.txt", "bravo\n")
	// The service runs ctxstore's read for the harness and records it.
	res, err := r.tools.Read(r.ctx, p)
	r.must(err)
	_, err = r.tools.RecordResult(r.ctx, tools.Call{ID: "own1", Tool: "read", Args: map[string]any{"path": p}}, res)
	r.must(err)
	log := []conversation.Message{user("read b"), call("own1", "read", map[string]any{"path": p}), result("own1", "read", res.Message)}
	c, _ := r.context(log)
	h, err := r.st.History(r.ctx, "own1", store.HistoryOptions{})
	r.must(err)
	if len(h) != 1 {
		t.Fatalf("own toolcall has %d versions, want 1 (not recorded again)", len(h))
	}
	if !strings.Contains(string(c.Bytes), "bravo") {
		t.Fatal("the file read by the service is not active")
	}
}

func TestMirror(t *testing.T) {
	mirror := t.TempDir()
	r := newRig(t, Options{Cwd: "/home/u/proj", Files: Mirror(mirror)})
	shown := "     1→package main\n     2→\n     3→func main() {}\n\n<system-reminder>\nbe careful\n</system-reminder>\n"
	log := []conversation.Message{
		user("look"),
		call("r1", "Read", map[string]any{"file_path": "/home/u/proj/main.go"}),
		result("r1", "Read", shown),
		call("e1", "Edit", map[string]any{"file_path": "/home/u/proj/main.go", "old_string": "func main() {}", "new_string": "func main() { run() }"}),
		result("e1", "Edit", "The file has been updated."),
		call("w1", "Write", map[string]any{"file_path": "notes/todo.md", "content": "# todo\n"}),
		result("w1", "Write", "File created"),
	}
	c, rep := r.context(log)
	if len(rep.Problems) > 0 {
		t.Fatal(rep.Problems)
	}
	got, err := os.ReadFile(filepath.Join(mirror, "home/u/proj/main.go"))
	r.must(err)
	if string(got) != "package main\n\nfunc main() { run() }\n" {
		t.Fatalf("mirrored file %q", got)
	}
	if _, err := os.Stat(filepath.Join(mirror, "home/u/proj/notes/todo.md")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.Bytes), "func main() { run() }") {
		t.Fatal("the edited version is not shown")
	}
	if strings.Contains(string(c.Bytes), "→") {
		t.Fatal("line-number prefixes leaked into the context")
	}
	st := r.tools.Session().State()
	var fileObjs int
	for _, id := range st.Pool {
		o, err := r.st.Entity(r.ctx, id, store.Basis{})
		r.must(err)
		if o["type"] == string(objects.KindFile) {
			fileObjs++
		}
	}
	if fileObjs != 2 {
		t.Fatalf("%d files in the pool, want 2", fileObjs)
	}
}

func TestReadOutputContent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"     1\ta\n     2\tb\n", "a\nb\n"},
		{"     1→a\n     2→\n", "a\n\n"},
		{"plain text\n     1→x\n", "plain text\n     1→x\n"},
		{"", ""},
		{"    10→x\n    11→y", "x\ny\n"},
	} {
		if got := ReadOutputContent(tc.in); got != tc.want {
			t.Errorf("ReadOutputContent(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The context never exceeds the model's window: when a rebase alone cannot
// make room, the oldest active content is deactivated.
func TestWindowNeverExceeded(t *testing.T) {
	r := newRig(t, Options{})
	// Files stay active until deactivated, so only the window guard can
	// make room.
	r.tools = tools.New(r.tools.Session(), files.NewIndexer(r.st, mustResolver(t), 0), tools.Options{Policy: collapse.Config{PerTurn: 5, TurnsBack: 3, FilesPerTurn: -1}})
	r.a, _ = assemble.New(r.ctx, r.tools.Session(), assemble.Options{Policy: assemble.Policy{Window: 4000, WindowMargin: 0.9},
		Now: func() time.Time { return r.now }})
	in, err := New(r.ctx, r.tools, r.a, Options{Cwd: r.dir})
	r.must(err)
	r.in = in
	var log []conversation.Message
	deactivated := 0
	for i := 1; i <= 8; i++ {
		name := fmt.Sprintf("f%d.txt", i)
		r.file(name, strings.Repeat(fmt.Sprintf("line of file %d\n", i), 120)) // ~500 tokens each
		id := fmt.Sprintf("c%d", i)
		log = append(log, user("read "+name), call(id, "read", map[string]any{"path": name}), result(id, "read", "..."))
		c, rep := r.context(log)
		deactivated += len(rep.Deactivated)
		if c.Tokens > 4000 {
			t.Fatalf("call %d: %d tokens in a 4,000-token window", c.N, c.Tokens)
		}
		if !strings.Contains(string(c.Bytes), fmt.Sprintf("line of file %d", i)) {
			t.Fatalf("call %d: the file just read was deactivated", c.N)
		}
	}
	if deactivated == 0 {
		t.Fatal("nothing was deactivated to make room")
	}
}

func mustResolver(t *testing.T) *files.Resolver {
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-test"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A harness alternating between two branches of one
// conversation does not re-apply a branch it returns to: after each branch
// was seen once, a switch applies nothing and writes only its call (and a
// note), also after a resume in a new process.
func TestBranchSwitchingBounded(t *testing.T) {
	r := newRig(t, Options{})
	var prefix []conversation.Message
	for i := range 10 {
		id := fmt.Sprintf("p%d", i)
		prefix = append(prefix, user(fmt.Sprintf("step %d", i)), call(id, "bash", map[string]any{"command": "echo " + id}),
			result(id, "bash", strings.Repeat(id+" output\n", 20)), said("ok"))
	}
	branch := func(tag string) []conversation.Message {
		log := append([]conversation.Message(nil), prefix...)
		for i := range 10 {
			id := fmt.Sprintf("%s%d", tag, i)
			log = append(log, user(tag+" asks "+id), call(id, "bash", map[string]any{"command": "echo " + id}),
				result(id, "bash", strings.Repeat(id+" out\n", 20)), said("done "+id))
		}
		return log
	}
	a, b := branch("a"), branch("b")
	latest := func() int64 {
		s, err := r.st.Status(r.ctx)
		r.must(err)
		return s.LatestSubmitted.ID
	}
	r.context(a)
	// Per message the ingester keeps its node on the chain and nothing
	// else: no hashes once committed, no set of nodes while
	// no branch was left.
	if len(r.in.chain) != len(a) || len(r.in.left) != 0 || len(r.in.unsaved) != 0 {
		t.Fatalf("after one branch: %d nodes for %d messages, %d left, %d hashes unsaved", len(r.in.chain), len(a), len(r.in.left), len(r.in.unsaved))
	}
	_, rep := r.context(b)
	if rep.Applied != 40 || rep.Known != 0 {
		t.Fatalf("first switch to b: %+v", rep)
	}
	if len(r.in.left) != 40 {
		t.Fatalf("after the switch: %d nodes of the branch left, want 40", len(r.in.left))
	}
	for k := range 6 {
		log := a
		if k%2 == 1 {
			log = b
		}
		if k == 3 {
			r.open() // a new process: what was seen is restored from the commits
		}
		before := latest()
		_, rep := r.context(log)
		if rep.Applied != 0 || rep.Known != 40 || !rep.Reset {
			t.Fatalf("switch %d: %+v, want nothing applied and 40 known", k, rep)
		}
		if d := latest() - before; d > 3 {
			t.Fatalf("switch %d wrote %d transactions", k, d)
		}
	}
	// A new message on a branch returned to is applied, in its turn.
	_, rep = r.context(append(append([]conversation.Message(nil), a...), user("and now?")))
	if rep.Applied != 1 || rep.Known != 40 {
		t.Fatalf("a new message after a switch: %+v", rep)
	}
}

// TestContextSince: a caller that says the log's first messages are the
// previous call's gets the same contexts as one that sends the whole log
// to be checked, and those messages are not checked again (a changed
// message inside the prefix it vouches for goes unnoticed, where the full
// check sees a replaced log); a prefix longer than what was applied, or
// than the log, is cut to it.
func TestContextSince(t *testing.T) {
	full, inc := newRig(t, Options{}), newRig(t, Options{})
	var log []conversation.Message
	prev := 0
	for turn := 0; turn < 6; turn++ {
		log = append(log, user(fmt.Sprintf("q%d", turn)), said(fmt.Sprintf("a%d", turn)))
		cf, rf := full.context(log)
		inc.now = inc.now.Add(10 * time.Second)
		ci, ri, err := inc.in.ContextSince(inc.ctx, log, prev+5, nil)
		inc.must(err)
		if string(cf.Bytes) != string(ci.Bytes) || fmt.Sprint(rf) != fmt.Sprint(ri) {
			t.Fatalf("turn %d: ContextSince differs from Context:\n%q %+v\n%q %+v", turn, cf.Bytes, rf, ci.Bytes, ri)
		}
		prev = len(log)
	}
	edited := append([]conversation.Message(nil), log...)
	edited[1] = said("edited")
	edited = append(edited, user("next"))
	_, rf := full.context(edited)
	inc.now = inc.now.Add(10 * time.Second)
	_, ri, err := inc.in.ContextSince(inc.ctx, edited, len(log), nil)
	inc.must(err)
	if !rf.Reset || rf.ResetAt != 1 || ri.Reset || ri.Applied != 1 {
		t.Fatalf("the full check should see the edit and the vouched prefix not: %+v / %+v", rf, ri)
	}
}

// TestMigratedStoreRebuilds: a session whose store is in the
// form earlier releases wrote (its chat whole in one document, long
// strings whole in the field index, schema version 3; made here by writing
// with today's code and then putting the chat and the index rows back in
// that form) is migrated on open: every past call rebuilds byte for byte,
// the chat reads back whole, and the session goes on (its chat converted to
// turn documents by the next append).
func TestMigratedStoreRebuilds(t *testing.T) {
	r := newRig(t, Options{})
	big := strings.Repeat("a long line of output that the field index used to copy whole\n", 60) // > 2 KiB
	var log []conversation.Message
	var calls []string
	for turn := 0; turn < 4; turn++ {
		id := fmt.Sprintf("c%d", turn)
		log = append(log, user(fmt.Sprintf("turn %d", turn)), call(id, "bash", map[string]any{"command": "make"}), result(id, "bash", big+id))
		c, _ := r.context(log)
		calls = append(calls, string(c.Bytes))
		log = append(log, said(fmt.Sprintf("done %d", turn)))
	}
	r.must(r.in.Flush(r.ctx))
	want, err := session.ReadChat(r.ctx, r.st, "s1", store.Basis{})
	r.must(err)
	r.st.Close()

	// Back to the earlier form: schema 8 by the migrations' own Down
	// (documents and tx log as JSONB and text), then by hand.
	db, err := sql.Open("sqlite", r.db)
	r.must(err)
	mig, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	r.must(err)
	_, err = mig.DownTo(r.ctx, 8)
	r.must(err)
	doc, err := want.Doc()
	r.must(err)
	canon, err := store.Canonical(doc)
	r.must(err)
	h := sha256.Sum256(canon)
	sum := hex.EncodeToString(h[:])
	for _, q := range []struct {
		sql  string
		args []any
	}{
		// The chat's latest version becomes the whole chat (an earlier
		// release's last AppendTurns wrote exactly this document).
		{"ALTER TABLE points ADD COLUMN hash TEXT", nil}, // before migration 00008
		{"UPDATE points SET hash = (SELECT d.hash FROM docs d WHERE d.id = points.doc)", nil},
		{"CREATE TEMP TABLE head AS SELECT p.doc AS id, p.hash AS hash FROM points p WHERE p.eid = 'chat:s1' ORDER BY p.vt DESC, p.tx_id DESC LIMIT 1", nil},
		{"UPDATE docs SET doc = ?, hash = ? WHERE id = (SELECT id FROM head)", []any{string(canon), sum}},
		{"UPDATE points SET hash = ? WHERE hash = (SELECT hash FROM head)", []any{sum}},
		{"DELETE FROM fields WHERE kind = 'S'", nil},
		{`INSERT INTO fields (doc, field, kind, value)
		  SELECT d.id, t.key, 's', t.value FROM docs d, json_each(d.doc) t
		  WHERE t.type = 'text' AND length(CAST(t.value AS BLOB)) > 2048`, nil},
		{"DELETE FROM goose_db_version WHERE version_id >= 4", nil},
		{"DROP TRIGGER search_docs_turn_ai", nil},
		{"DROP TABLE indexed_fields", nil},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	var whole int
	r.must(db.QueryRow("SELECT count(*) FROM fields WHERE kind = 's' AND length(value) > 2048").Scan(&whole))
	db.Close()
	if whole == 0 {
		t.Fatal("no long string in the field index to migrate")
	}

	r.open() // migrates
	for n, w := range calls {
		c, err := assemble.Rebuild(r.ctx, r.st, "s1", n+1)
		r.must(err)
		if string(c.Bytes) != w {
			t.Fatalf("call %d does not rebuild byte for byte after the migration", n+1)
		}
	}
	got, err := session.ReadChat(r.ctx, r.st, "s1", store.Basis{})
	r.must(err)
	if len(got.Chat.Turns) != 4 || got.Chat.Turns[3].UserText() != "turn 3" {
		t.Fatalf("chat after the migration: %d turns", len(got.Chat.Turns))
	}
	hits, err := r.st.Query(r.ctx, store.Query{Where: []store.Pred{store.Where("content", big+"c2")}})
	r.must(err)
	if len(hits) != 1 {
		t.Fatalf("query on a long content after the migration: %d hits", len(hits))
	}
	log = append(log, user("after the migration"))
	c, rep := r.context(log)
	if rep.Applied != 2 || !strings.Contains(string(c.Bytes), "after the migration") { // "done 3" and the prompt
		t.Fatalf("the session does not go on: %+v", rep)
	}
	r.must(r.in.Flush(r.ctx))
	got, err = session.ReadChat(r.ctx, r.st, "s1", store.Basis{})
	r.must(err)
	if n := len(got.Chat.Turns); n < 5 || got.Chat.Turns[n-1].UserText() != "after the migration" || got.Chat.Turns[0].UserText() != "turn 0" {
		t.Fatalf("chat after the next append: %d turns", n)
	}
}

// TestContextLog: a caller that gives only the part of the log
// from Need on (as the service keeps it) gets the contexts and
// conversation commits a caller giving the whole log gets, Need stays
// within the turn in progress, and a window that starts past what the
// call needs is ErrLogWindow, after which the whole log works.
func TestContextLog(t *testing.T) {
	opts := func() Options {
		return Options{Commits: &CommitOptions{Provenance: commits.Provenance{Harness: "test"}}}
	}
	full, win := newRig(t, opts()), newRig(t, opts())
	var log []conversation.Message
	start, prev := 0, 0
	step := func(what string) {
		t.Helper()
		cf, rf := full.context(log)
		win.now = win.now.Add(10 * time.Second)
		cw, rw, err := win.in.ContextLog(win.ctx, Log{Start: start, Messages: log[start:]}, prev, nil)
		win.must(err)
		if string(cf.Bytes) != string(cw.Bytes) || fmt.Sprint(rf) != fmt.Sprint(rw) {
			t.Fatalf("%s: a window differs from the whole log:\n%q %+v\n%q %+v", what, cf.Bytes, rf, cw.Bytes, rw)
		}
		if a, b := convTexts(t, full, full.in.ConversationCommit(), "root"), convTexts(t, win, win.in.ConversationCommit(), "root"); a != b {
			t.Fatalf("%s: conversation commits differ: %q / %q", what, a, b)
		}
		prev = len(log)
		start = win.in.Need()
	}
	for turn := range 8 {
		log = append(log, user(fmt.Sprintf("q%d", turn)))
		step("prompt")
		id := fmt.Sprintf("t%d", turn)
		log = append(log, call(id, "bash", map[string]any{"command": "ls"}), result(id, "bash", "a.go"))
		step("tool result")
		if start < len(log)-3 {
			t.Fatalf("turn %d: Need %d of %d messages, beyond the turn in progress", turn, start, len(log))
		}
		log = append(log, said(fmt.Sprintf("a%d", turn)))
	}
	if start < 20 {
		t.Fatalf("Need %d after 8 turns: the caller would hold the whole log", start)
	}
	// Flush commits the session's end from the window it holds.
	if err := win.in.Flush(win.ctx); err != nil {
		t.Fatal(err)
	}
	// A window past what the call needs (the last answer and the new
	// prompt are new; the window holds the prompt only).
	log = append(log, user("late"))
	win.now = win.now.Add(10 * time.Second)
	if _, _, err := win.in.ContextLog(win.ctx, Log{Start: len(log) - 1, Messages: log[len(log)-1:]}, len(log)-1, nil); !errors.Is(err, ErrLogWindow) {
		t.Fatalf("a window past the last applied message: %v, want ErrLogWindow", err)
	}
	win.now = win.now.Add(10 * time.Second)
	if _, rep, err := win.in.ContextLog(win.ctx, Whole(log), 0, nil); err != nil || rep.Applied != 2 || rep.Reset {
		t.Fatalf("the whole log after ErrLogWindow: %+v %v", rep, err)
	}
}

package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// env is a session on a store of one backend (storetestenv), its indexer
// and its tools. Ids the test chooses go through uid: the XTDB database is
// shared by every test of the process.
type env struct {
	t     *testing.T
	ctx   context.Context
	se    *storetestenv.Env
	st    store.Store
	sid   string
	ix    *files.Indexer
	tools *Tools
	dir   string
}

func newEnv(t *testing.T, se *storetestenv.Env, policy collapse.Config) *env {
	t.Helper()
	ctx := context.Background()
	st := se.Store
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-test"})
	if err != nil {
		t.Fatal(err)
	}
	ix := files.NewIndexer(st, res, 0)
	sid := se.ID("s1")
	s, err := session.Create(ctx, st, sid, session.CreateOptions{SystemPrompt: "sys"})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, se: se, st: st, sid: sid, ix: ix, tools: New(s, ix, Options{Policy: policy}), dir: t.TempDir()}
}

// uid makes an id the test chooses (a toolcall id) unique to this env.
func (e *env) uid(name string) string { return e.se.ID(name) }

func (e *env) file(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) state() session.State { return e.tools.Session().State() }

func out(s string) *string { return &s }

func TestReadActivateDeactivate(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		p := e.file("a.md", "# A\n")
		r, err := e.tools.Read(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !e.state().IsActive(r.ID) || !strings.HasPrefix(r.Message, "Read and activated") || *r.Object.Content != "# A\n" {
			t.Fatalf("read: %+v", r)
		}
		if r2, err := e.tools.Read(e.ctx, p); err != nil || !strings.HasPrefix(r2.Message, "Already active and unchanged") {
			t.Fatalf("read again: %+v %v", r2, err)
		}
		e.file("a.md", "# A v2\n")
		if r3, err := e.tools.Read(e.ctx, p); err != nil || !strings.HasPrefix(r3.Message, "Refreshed") || *r3.Object.Content != "# A v2\n" {
			t.Fatalf("read changed: %+v %v", r3, err)
		}
		if _, err := e.tools.Read(e.ctx, filepath.Join(e.dir, "missing")); err == nil {
			t.Fatal("reading a missing file succeeded")
		}

		if d, err := e.tools.Deactivate(e.ctx, r.ID); err != nil || e.state().IsActive(r.ID) || !e.state().InPool(r.ID) {
			t.Fatalf("deactivate: %+v %v", d, err)
		}
		if rr, err := e.tools.Read(e.ctx, p); err != nil || !strings.Contains(rr.Message, "use activate") {
			t.Fatalf("read of a pooled file: %+v %v", rr, err)
		}
		if _, err := e.tools.Deactivate(e.ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		if a, err := e.tools.Activate(e.ctx, r.ID); err != nil || !e.state().IsActive(r.ID) || !strings.HasPrefix(a.Message, "Activated") {
			t.Fatalf("activate: %+v %v", a, err)
		}

		// Locked objects.
		for _, id := range []string{objects.ChatObjectID(e.sid), objects.SystemPromptObjectID(e.sid)} {
			_, err := e.tools.Deactivate(e.ctx, id)
			if !errors.Is(err, session.ErrLocked) || !strings.Contains(err.Error(), "always active") {
				t.Fatalf("deactivate %s: %v", id, err)
			}
			if !e.state().IsActive(id) {
				t.Fatalf("%s deactivated", id)
			}
		}
		if _, err := e.tools.Activate(e.ctx, "nope"); !errors.Is(err, ErrUnknownObject) {
			t.Fatalf("activate unknown: %v", err)
		}

		// Binary: activation says nothing was loaded.
		bin := e.file("x.bin", "\x00\x01")
		rb, err := e.tools.Read(e.ctx, bin)
		if err != nil || !strings.HasPrefix(rb.Message, "Content unavailable") {
			t.Fatalf("binary read: %+v %v", rb, err)
		}
		if ab, err := e.tools.Activate(e.ctx, rb.ID); err != nil || !strings.HasPrefix(ab.Message, "Content unavailable") {
			t.Fatalf("binary activate: %+v %v", ab, err)
		}
	})
}

func TestActivateByNicknamePinUnpin(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		f, err := objects.NewFile(objects.FilesystemSource{FilesystemID: "elsewhere", Path: "/notes/plan.md"}, out("plan"), []byte("plan"))
		if err != nil {
			t.Fatal(err)
		}
		f.Nickname = "plan"
		if err := f.Seal(); err != nil {
			t.Fatal(err)
		}
		doc, _ := f.Doc()
		if _, err := store.SubmitWait(e.ctx, e.st, []store.Op{store.Put(doc)}); err != nil {
			t.Fatal(err)
		}
		// An object the session never encountered is not reachable from
		// it, by id or by nickname.
		for _, ref := range []string{"plan", f.ID()} {
			if _, err := e.tools.Activate(e.ctx, ref); !errors.Is(err, ErrUnknownObject) {
				t.Fatalf("activate %s before the session discovered it: %v", ref, err)
			}
		}
		if _, _, err := e.tools.Session().Update(e.ctx, nil, func(s *session.State) error { s.AddToIndex(f.ID()); return nil }); err != nil {
			t.Fatal(err)
		}
		a, err := e.tools.Activate(e.ctx, "plan")
		if err != nil || a.ID != f.ID() || !e.state().IsActive(f.ID()) {
			t.Fatalf("activate by nickname: %+v %v", a, err)
		}
		if _, err := e.tools.Pin(e.ctx, "plan"); err != nil || !e.state().IsPinned(f.ID()) {
			t.Fatalf("pin: %v", err)
		}
		if _, err := e.tools.Unpin(e.ctx, "plan"); err != nil || e.state().IsPinned(f.ID()) || !e.state().IsActive(f.ID()) {
			t.Fatalf("unpin: %v", err)
		}
	})
}

func TestToolcallsAndAutoCollapse(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{PerTurn: 2, TurnsBack: 1})
		if _, err := e.tools.BeginTurn(e.ctx); err != nil {
			t.Fatal(err)
		}
		rec := func(id, tool string) Result {
			t.Helper()
			r, err := e.tools.Record(e.ctx, Call{ID: id, Tool: tool, Args: map[string]any{"command": "echo " + id}, Output: out(id + "\n")})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		r1 := rec(e.uid("toolu_1"), "bash")
		if r1.Object.Toolcall.ChatRef != objects.ChatObjectID(e.sid) || r1.Object.Toolcall.ArgsDisplay != "echo "+e.uid("toolu_1") || r1.Object.Toolcall.Status != objects.StatusOK {
			t.Fatalf("toolcall object: %+v", r1.Object.Toolcall)
		}
		if _, err := e.tools.Pin(e.ctx, e.uid("toolu_1")); err != nil {
			t.Fatal(err)
		}
		rec(e.uid("toolu_2"), "bash")
		rec(e.uid("toolu_m"), "activate") // does not count, not activated
		rec(e.uid("toolu_3"), "bash")
		rec(e.uid("toolu_4"), "bash")
		s := e.state()
		if s.IsActive(e.uid("toolu_2")) || !s.IsActive(e.uid("toolu_3")) || !s.IsActive(e.uid("toolu_4")) || !s.IsActive(e.uid("toolu_1")) || s.IsActive(e.uid("toolu_m")) || !s.InPool(e.uid("toolu_m")) {
			t.Fatalf("after 4 calls: active %v", s.Active)
		}
		// A new turn collapses the old turn's unpinned calls.
		if _, err := e.tools.BeginTurn(e.ctx); err != nil {
			t.Fatal(err)
		}
		s = e.state()
		if s.IsActive(e.uid("toolu_3")) || s.IsActive(e.uid("toolu_4")) || !s.IsActive(e.uid("toolu_1")) {
			t.Fatalf("after new turn: active %v", s.Active)
		}
		// Explicit activation brings one back into the window.
		if _, err := e.tools.Activate(e.ctx, e.uid("toolu_3")); err != nil {
			t.Fatal(err)
		}
		rec(e.uid("toolu_5"), "bash")
		if s = e.state(); !s.IsActive(e.uid("toolu_3")) || !s.IsActive(e.uid("toolu_5")) {
			t.Fatalf("after re-activation: active %v", s.Active)
		}
		// Failure status and null output.
		fr, err := e.tools.Record(e.ctx, Call{ID: e.uid("toolu_f"), Tool: "bash", Failed: true})
		if err != nil || fr.Object.Toolcall.Status != objects.StatusFail || fr.Object.Content != nil {
			t.Fatalf("failed call: %+v %v", fr, err)
		}
		if a, err := e.tools.Activate(e.ctx, e.uid("toolu_f")); err != nil || !strings.Contains(a.Message, "stored no output") {
			t.Fatalf("activate null output: %+v %v", a, err)
		}
		// The state survives a reopen.
		st2 := se.Reopen()
		r, err := session.Open(e.ctx, st2, e.sid)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.State(), e.state(); strings.Join(got.Active, ",") != strings.Join(want.Active, ",") || got.Turn != want.Turn || len(got.Toolcalls) != len(want.Toolcalls) {
			t.Fatalf("reopened state differs: %+v vs %+v", got, want)
		}
	})
}

func TestRecordResultOfOwnTools(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{PerTurn: 1, TurnsBack: 1})
		p := e.file("r.txt", "content")
		rec := func(id, tool string) {
			t.Helper()
			if _, err := e.tools.Record(e.ctx, Call{ID: id, Tool: tool, Output: out(id)}); err != nil {
				t.Fatal(err)
			}
		}
		rec(e.uid("toolu_1"), "bash")
		r, err := e.tools.Read(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := e.tools.RecordResult(e.ctx, Call{ID: e.uid("toolu_read"), Tool: "read", Args: map[string]any{"path": p}}, r)
		if err != nil {
			t.Fatal(err)
		}
		if *tc.Object.Content != r.Message || len(tc.Object.Toolcall.FileRefs) != 1 || tc.Object.Toolcall.FileRefs[0] != r.ID {
			t.Fatalf("read toolcall: %+v", tc.Object)
		}
		s := e.state()
		// The read's toolcall took no slot: toolu_1 is still the active one.
		if !s.IsActive(e.uid("toolu_1")) || s.IsActive(e.uid("toolu_read")) || !s.InPool(e.uid("toolu_read")) || !s.IsActive(r.ID) {
			t.Fatalf("active %v", s.Active)
		}
	})
}

// One session's tools never reach another session's
// objects: its toolcalls, chat, system prompt and files answer as unknown
// ids to activate, pin, deactivate and unpin, and its tool call id cannot
// be recorded again (which would rewrite its content and chat_ref).
func TestSessionsIsolated(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		a := newEnv(t, se, collapse.Config{})
		bs, err := session.Create(a.ctx, a.st, se.ID("victim"), session.CreateOptions{SystemPrompt: "victim's prompt"})
		if err != nil {
			t.Fatal(err)
		}
		b := New(bs, a.ix, Options{})
		tc := se.ID("toolu_victim")
		if _, err := b.Record(a.ctx, Call{ID: tc, Tool: "bash", Args: map[string]any{"command": "cat secret"}, Output: out("victim secret\n")}); err != nil {
			t.Fatal(err)
		}
		secret := a.file("secret.txt", "victim file\n")
		rf, err := b.Read(a.ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{tc, rf.ID, bs.Info().ChatID, bs.Info().SystemPromptID, objects.SessionObjectID(bs.Info().ID)} {
			for name, f := range map[string]func(context.Context, string) (Result, error){
				"activate": a.tools.Activate, "pin": a.tools.Pin, "deactivate": a.tools.Deactivate, "unpin": a.tools.Unpin,
			} {
				if _, err := f(a.ctx, id); !errors.Is(err, ErrUnknownObject) {
					t.Errorf("%s(%s) from another session: %v, want ErrUnknownObject", name, id, err)
				}
			}
			if st := a.state(); st.Indexed(id) {
				t.Errorf("%s entered the attacker's index", id)
			}
		}
		if _, err := a.tools.Record(a.ctx, Call{ID: tc, Tool: "bash", Output: out("pwned")}); !errors.Is(err, ErrForeignObject) {
			t.Fatalf("recording another session's tool call id: %v", err)
		}
		o, _, err := resolveLatest(a, tc)
		if err != nil || o.Content == nil || *o.Content != "victim secret\n" || o.Toolcall.ChatRef != bs.Info().ChatID {
			t.Fatalf("the victim's toolcall after the attack: %+v %v", o, err)
		}
	})
}

// TestReadPart: read with offset and limit shows those
// lines as the call's output, pools the file without activating it, and
// the part is an object the session can activate again.
func TestReadPart(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		env := newEnv(t, se, collapse.Config{})
		ctx, tl, e := env.ctx, env.tools, se
		var b strings.Builder
		for i := 1; i <= 50; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		p := env.file("big.txt", b.String())
		r, err := tl.ReadPart(ctx, Call{ID: e.ID("part1"), Tool: "read"}, p, 10, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Message, "lines 10-12 of 50") || !strings.Contains(r.Message, "line 10\nline 11\nline 12\n") || strings.Contains(r.Message, "line 13") {
			t.Fatalf("part: %q", r.Message)
		}
		st := tl.Session().State()
		if len(r.Files) != 1 || !st.InPool(r.Files[0]) || st.IsActive(r.Files[0]) || !st.IsActive(r.ID) {
			t.Fatalf("the file is pooled, not active; the part is active: files %v, state %+v", r.Files, st)
		}
		if _, err := tl.Deactivate(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		if a, err := tl.Activate(ctx, r.ID); err != nil || a.Object.Content == nil || !strings.Contains(*a.Object.Content, "line 11") {
			t.Fatalf("activating the part: %v %+v", err, a)
		}
		if _, err := tl.ReadPart(ctx, Call{ID: e.ID("part2"), Tool: "read"}, p, 51, 1); err == nil || !strings.Contains(err.Error(), "past the end (50 lines)") {
			t.Fatalf("offset past the end: %v", err)
		}
		if r, err := tl.ReadPart(ctx, Call{ID: e.ID("part3"), Tool: "read"}, p, 49, 0); err != nil || !strings.Contains(r.Message, "lines 49-50 of 50") {
			t.Fatalf("to the end: %v %q", err, r.Message)
		}
	})
}

// The policy's budget sees each call's size: recorded in the session (and
// kept by a reopen), an old large output collapses before the recent ones
// while a small one of the same turn stays.
func TestToolcallTokensAndBudget(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{PerTurn: 2, TurnsBack: 3, Budget: 1000})
		if _, err := e.tools.BeginTurn(e.ctx); err != nil {
			t.Fatal(err)
		}
		rec := func(id string, size int) {
			t.Helper()
			if _, err := e.tools.Record(e.ctx, Call{ID: e.uid(id), Tool: "bash", Args: map[string]any{"command": "x"}, Output: out(strings.Repeat("o", size))}); err != nil {
				t.Fatal(err)
			}
		}
		turn := func() {
			t.Helper()
			if _, err := e.tools.BeginTurn(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		rec("big", 3600) // about 900 tokens
		turn()
		rec("small", 400) // about 100 tokens
		turn()
		rec("r1", 1200) // the two most recent, kept whatever their size
		rec("r2", 1200)
		s := e.state()
		if s.IsActive(e.uid("big")) || !s.IsActive(e.uid("small")) || !s.IsActive(e.uid("r1")) || !s.IsActive(e.uid("r2")) {
			t.Fatalf("active %v: want the big old output collapsed, the others kept", s.Active)
		}
		r, err := e.tools.Read(e.ctx, e.file("f.go", strings.Repeat("x", 2000)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.tools.RecordResult(e.ctx, Call{ID: e.uid("read1"), Tool: "read", Args: map[string]any{"path": "f.go"}}, r); err != nil {
			t.Fatal(err)
		}
		st2 := se.Reopen()
		reopened, err := session.Open(e.ctx, st2, e.sid)
		if err != nil {
			t.Fatal(err)
		}
		tokens := map[string]int{}
		for _, c := range reopened.State().Toolcalls {
			tokens[c.ID] = c.Tokens
		}
		if tokens[e.uid("big")] < 900 || tokens[e.uid("small")] < 100 || tokens[e.uid("read1")] != 500 {
			t.Fatalf("recorded sizes %v", tokens)
		}
	})
}

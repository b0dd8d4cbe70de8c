package inspect_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// A real Claude Code session replayed through the context manager in both
// layouts: the read model's numbers agree with the call records and with
// the rebuilt bytes, pages agree with the whole list, and a limited grant
// sees one session only.
func TestInspectReplayedSession(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		ctx := context.Background()
		sids := inspecttest.Replay(t, se.Store, inspecttest.Small, "ctxstore_stream", "ctxstore_literal")
		in := inspect.New(se.Reopen(), inspect.Options{})

		ss, err := in.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ss = mine(t, se, ss, sids...)
		for _, s := range ss {
			if s.Calls != 30 || s.Name == "" || s.Harness != "claude-code" || s.Cwd == "" || s.LastCall == nil || s.Started.IsZero() {
				t.Fatalf("session summary %+v", s)
			}
			if s.CachedShare <= 0 || s.CachedShare >= 1 || s.CostUSD <= 0 || s.TokensSent < s.Tokens {
				t.Fatalf("session %s: cached share %.3f cost $%.4f sent %d last %d", s.ID, s.CachedShare, s.CostUSD, s.TokensSent, s.Tokens)
			}
			lost := 0.0
			for _, l := range s.Lost {
				lost += l.LostCost
			}
			if len(s.Lost) == 0 || s.Lost[0].Calls == 0 {
				t.Fatalf("session %s: no cache-break causes %+v", s.ID, s.Lost)
			}
		}

		for li, sid := range sids {
			all, err := in.Calls(ctx, sid, inspect.Page{})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 30 {
				t.Fatalf("%d calls", len(all))
			}
			page, err := in.Calls(ctx, sid, inspect.Page{From: 10, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(page, all[9:14]) {
				t.Fatalf("page 10-14 differs from the whole list:\n%+v\n%+v", page, all[9:14])
			}
			causes := map[string]int{}
			var prev *inspect.Call
			for i := range all {
				c := &all[i]
				causes[c.Break.Cause]++
				if c.N != i+1 || c.CachedTokens+c.WrittenTokens != c.Tokens || c.CachedTokens < 0 {
					t.Fatalf("call %d: %+v", i+1, c)
				}
				rec, err := assemble.ReadCommit(ctx, se.Store, sid, c.N)
				if err != nil {
					t.Fatal(err)
				}
				if c.Tokens != rec.Tokens || c.Bytes != rec.ByteLen || c.Rebased != (rec.RebaseFrom >= 0) {
					t.Fatalf("call %d: %+v against its record %+v", c.N, c, rec)
				}
				if prev != nil && c.Break.Cause == inspect.CauseNone {
					if c.Break.PrefixBytes != prev.Bytes || c.Break.RewrittenTokens != 0 || c.CachedTokens != prev.Tokens {
						t.Fatalf("call %d extends call %d but %+v", c.N, prev.N, c.Break)
					}
				}
				if c.Break.Cause == inspect.CauseExpired && (c.GapSeconds < 300 || c.CachedTokens != 0 || c.Break.RewrittenTokens <= 0) {
					t.Fatalf("call %d: expired but %+v gap %.0fs", c.N, c.Break, c.GapSeconds)
				}
				prev = c
			}
			if causes[inspect.CauseFirst] != 1 || all[0].Break.Cause != inspect.CauseFirst {
				t.Fatalf("causes %v", causes)
			}
			// The system prompt never changes here: the records after the
			// first name the call that records its reference.
			if causes[inspect.CauseSystem] != 0 {
				t.Fatalf("a system prompt change attributed: %v", causes)
			}
			if li == 0 && causes[inspect.CauseChanged] != 0 {
				t.Fatalf("stream layout: a call changed its prefix without a rebase: %v", causes)
			}
			if li == 1 && causes[inspect.CauseChanged] == 0 {
				t.Fatalf("literal layout: no call changed a block before the chat: %v", causes)
			}

			// every call: the exact bytes, labelled, and the diff with the
			// previous call agreeing with the attribution
			var prevView *inspect.CallView
			obj, objKind, objCall := "", "", 0
			for _, c := range all {
				v, err := in.Call(ctx, sid, c.N)
				if err != nil {
					t.Fatal(err)
				}
				rec, _ := assemble.ReadCommit(ctx, se.Store, sid, c.N)
				sum := sha256.Sum256(v.Raw)
				if hex.EncodeToString(sum[:]) != rec.BytesSHA256 {
					t.Fatalf("call %d: raw bytes are not the ones sent", c.N)
				}
				at := 0
				var text bytes.Buffer
				for _, b := range v.Blocks {
					if b.Start != at || b.Label == "" || (b.Kind == "content" && b.ObjectID == "") {
						t.Fatalf("call %d block %d: %+v", c.N, b.Index, b)
					}
					if b.Cached != (b.End <= c.Break.PrefixBytes) {
						t.Fatalf("call %d block %d: cached %v with prefix %d", c.N, b.Index, b.Cached, c.Break.PrefixBytes)
					}
					text.WriteString(b.Text)
					at = b.End
				}
				if !bytes.Equal(text.Bytes(), v.Raw) {
					t.Fatalf("call %d: the blocks' texts are not the context", c.N)
				}
				if v.Call.Break.Detail == "" {
					t.Fatalf("call %d: no attribution detail: %+v", c.N, v.Call.Break)
				}
				if v.Call.Break.Cause == inspect.CauseRebase && (v.Call.Break.FirstObject == "" || !strings.Contains(v.Call.Break.Detail, "rebase")) {
					t.Fatalf("call %d: rebase not explained: %+v", c.N, v.Call.Break)
				}
				if prevView != nil {
					d, err := in.Diff(ctx, sid, c.N-1, c.N)
					if err != nil {
						t.Fatal(err)
					}
					if c.Break.Cause == inspect.CauseNone || c.Break.Cause == inspect.CauseExpired && !c.Rebased && li == 0 {
						if d.PrefixBytes != len(prevView.Raw) || d.Removed != 0 || d.Added == 0 {
							t.Fatalf("call %d: an extension, but %s", c.N, d)
						}
					}
					if c.Rebased && li == 0 && (d.Removed == 0 || d.PrefixBytes < c.Break.PrefixBytes) {
						t.Fatalf("call %d: a rebase, but %s (recorded prefix %d)", c.N, d, c.Break.PrefixBytes)
					}
				}
				prevView = v
				for _, b := range v.Blocks {
					// A content block, or (rendering 3) a tool result that
					// is its call's live output.
					if b.Kind == "content" || b.Kind == "toolref" && b.ObjectID != "" && !strings.Contains(b.Text, "\nstatus=") && !strings.Contains(b.Text, "[ctxstore] collapsed: ") {
						obj, objKind, objCall = b.ObjectID, b.ObjectKind, c.N
					}
				}
			}

			// an object shown as content: its versions and the calls that
			// showed them
			if obj == "" {
				t.Fatal("no file content in any call")
			}
			o, err := in.Object(ctx, obj, "")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range o.Versions {
				if v.TxTime.IsZero() || v.ValidTime.IsZero() {
					t.Fatalf("version %+v", v)
				}
				for _, s := range v.Shown {
					if s.Session == sid && s.From <= objCall && objCall <= s.To && s.As == "content" {
						found = true
					}
				}
			}
			// Tool calls are per session (replay suffixes
			// their ids per run), so only this session shows it.
			mine := false
			for _, s := range o.Sessions {
				mine = mine || s == sid
			}
			if !found || !mine || o.Kind != objKind {
				t.Fatalf("object %s: %+v", obj, o)
			}
		}

		// a grant limited to the first session
		lim := inspect.New(se.Store, inspect.Options{Allowed: func(id string) bool { return id == sids[0] }})
		ss, err = lim.Sessions(ctx)
		if err != nil || len(ss) != 1 || ss[0].ID != sids[0] {
			t.Fatalf("limited sessions: %v %+v", err, ss)
		}
		if _, err := lim.Calls(ctx, sids[1], inspect.Page{}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("limited grant read another session's calls: %v", err)
		}
		if _, err := lim.Call(ctx, sids[1], 1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("limited grant read another session's call: %v", err)
		}
		if _, err := lim.Object(ctx, "chat:"+sids[1], ""); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("limited grant read another session's chat: %v", err)
		}
		if o, err := lim.Object(ctx, "chat:"+sids[0], ""); err != nil || len(o.Sessions) != 1 {
			t.Fatalf("limited grant, own chat: %v %+v", err, o)
		}
		if _, err := in.Call(ctx, sids[0], 31); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("call 31: %v", err)
		}
		if _, err := in.Calls(ctx, "no-such-session", inspect.Page{}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown session: %v", err)
		}
	})
}

// A session known only from its context commits (an imported transcript)
// is listed beside a served one, marked Recorded, with its chain's facts;
// Session describes it without calls; a grant that hides it hides it.
func TestRecordedSessions(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		ctx := context.Background()
		served := inspecttest.Replay(t, se.Store, inspecttest.Small, "ctxstore_stream")[0]
		res, err := importer.New(se.Store, importer.Options{}).ImportFile(ctx, filepath.Join(datasets.Dir(t), inspecttest.Small))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Sessions) != 1 || res.Sessions[0].Commits == 0 {
			t.Fatalf("import: sessions %+v", res.Sessions)
		}
		rec := res.Sessions[0].Session
		in := inspect.New(se.Reopen(), inspect.Options{})
		ss, err := in.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ss = mine(t, se, ss, served, rec)
		got := map[string]inspect.Session{}
		for _, s := range ss {
			got[s.ID] = s
		}
		if got[served].Recorded || got[served].Calls != 30 {
			t.Fatalf("sessions %+v, want the served %s and the recorded %s", ss, served, rec)
		}
		r, ok := got[rec]
		if !ok || !r.Recorded || r.Calls != got[served].Calls || !strings.HasPrefix(r.Harness, "claude-code") || r.Cwd == "" || r.Started.IsZero() ||
			r.LastCall == nil || r.LastCall.Before(r.Started) || r.Commits < res.Sessions[0].Commits || r.Source == "" {
			t.Fatalf("recorded session summary %+v (import said %+v)", r, res.Sessions[0])
		}
		d, err := in.Session(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Recorded || d.Commits != r.Commits || d.Turn != 0 {
			t.Fatalf("recorded session detail %+v", d)
		}
		// The calls its harness recorded, stored at import.
		if cs, err := in.Calls(ctx, rec, inspect.Page{}); err != nil || len(cs) != r.Calls || !cs[0].Recorded || cs[0].Usage == nil {
			t.Fatalf("calls of a recorded session: %d, %v", len(cs), err)
		}
		if _, err := in.Session(ctx, "no-such-session"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Session(no-such-session) = %v, want ErrNotFound", err)
		}
		lim := inspect.New(se.Store, inspect.Options{Allowed: func(sid string) bool { return sid == served }})
		if ss, err := lim.Sessions(ctx); err != nil || len(ss) != 1 || ss[0].ID != served {
			t.Fatalf("a grant for %s lists %+v, %v", served, ss, err)
		}
		if _, err := lim.Session(ctx, rec); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a grant for %s reads the recorded %s: %v", served, rec, err)
		}
	})
}

// mine returns the sessions of ss whose ids are in ids, failing t unless
// every id is there. On SQLite the database is the test's own, so ss must
// hold nothing else; on XTDB every test of the package shares one database
// (storetestenv), so other tests' sessions are listed too and set aside.
func mine(t *testing.T, se *storetestenv.Env, ss []inspect.Session, ids ...string) []inspect.Session {
	t.Helper()
	var out []inspect.Session
	for _, s := range ss {
		if slices.Contains(ids, s.ID) {
			out = append(out, s)
		}
	}
	if len(out) != len(ids) || (se.Backend == storetestenv.SQLite && len(ss) != len(ids)) {
		var got []string
		for _, s := range ss {
			got = append(got, s.ID)
		}
		t.Fatalf("sessions listed %v, want %v", got, ids)
	}
	return out
}

// A rebase that leaves out a collapsed file (rendering 4: the stream names
// it already) still reports it as collapsed at that call: the commit lists
// what it left out.
func TestCollapsedListsDroppedFiles(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	l := inspecttest.NewLive(t, se.Store, "s-drop")
	l.Turn("read the file")
	f := l.File("a.go", "package a\n\n"+strings.Repeat("// a line of the file\n", 200))
	l.Read(f)
	l.Call(time.Second)
	var fileID string
	for _, id := range l.Tools.Session().State().Pool {
		if o, _, err := expand.Resolve(ctx, se.Store, objects.DynamicRef(id)); err == nil && o.Kind() == objects.KindFile {
			fileID = id
		}
	}
	if _, err := l.Tools.Deactivate(ctx, fileID); err != nil {
		t.Fatal(err)
	}
	l.Turn("go on")
	l.Bash("make", "ok\n")
	c := l.Call(10 * time.Minute) // the cache is cold: the rebase is free
	if !c.Rebased || strings.Contains(string(c.Bytes), "a line of the file") {
		t.Fatalf("rebased %v; the file's content must be gone:\n%s", c.Rebased, c.Bytes)
	}
	calls, err := inspect.New(se.Store, inspect.Options{}).Calls(ctx, "s-drop", inspect.Page{})
	if err != nil {
		t.Fatal(err)
	}
	got := calls[c.N-1].Collapsed
	if fileID == "" || !slices.ContainsFunc(got, func(x inspect.Collapsed) bool { return x.ObjectID == fileID }) {
		t.Fatalf("call %d collapsed %+v, want the file %s", c.N, got, fileID)
	}
}

// TestRenewedCacheNotExpired: a call after a pause longer than the cache
// lives, when the harness renewed the cache during the pause (a warm
// request; assemble.Assembler.Renewed, recorded as the call's
// "cache_renewed"), is not a cache expiry: its idle time counts from the
// renewal and the prefix it shares is read. The same pause without a
// renewal is an expiry.
func TestRenewedCacheNotExpired(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		ctx := context.Background()
		sids := []string{se.ID("s-renewed"), se.ID("s-cold")}
		for i, sid := range sids {
			l := inspecttest.NewLive(t, se.Store, sid)
			l.Turn("read the file")
			l.Read(l.File("a.go", "package a\n\n"+strings.Repeat("// a line of the file\n", 50)))
			l.Call(time.Second)
			l.Turn("go on")
			if i == 0 {
				l.A.Renewed(l.Now.Add(4 * time.Minute)) // a warm request 4 minutes into the pause
			}
			l.Call(6 * time.Minute)
		}
		in := inspect.New(se.Store, inspect.Options{})
		for i, sid := range sids {
			cs, err := in.Calls(ctx, sid, inspect.Page{})
			if err != nil {
				t.Fatal(err)
			}
			c := cs[1]
			if c.GapSeconds != 360 {
				t.Fatalf("%s: gap %v s", sid, c.GapSeconds)
			}
			renewed := i == 0
			if renewed && (c.CacheRenewed == nil || c.IdleSeconds != 120 || c.Break.Cause == inspect.CauseExpired || c.CachedTokens == 0) {
				t.Errorf("%s: renewed 4 minutes in: %+v", sid, c)
			}
			if !renewed && (c.CacheRenewed != nil || c.IdleSeconds != 360 || c.Break.Cause != inspect.CauseExpired || c.CachedTokens != 0) {
				t.Errorf("%s: not renewed: %+v", sid, c)
			}
		}
	})
}

package assemble

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/store"
)

// A long session: reads, bash outputs that the policy collapses, files
// changed behind the agent's back, idle gaps past the cache TTL. Between
// rebases every context extends the previous one byte for byte; a rebase
// changes nothing before its first collapsed item; and every call is
// rebuilt byte for byte from a new store handle.
func TestStreamStabilityAndRebuild(t *testing.T) {
	storetestenv.RunParallel(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnvOn(t, se, LayoutStream, Policy{StaleThreshold: 600, Horizon: 200})
		a := e.file("a.go", "package a\n")
		b := e.file("b.go", "package b\n\nfunc B() {}\n")
		var got []*Assembled
		rebases := map[string]int{}
		for turn := 1; turn <= 24; turn++ {
			e.turn(fmt.Sprintf("turn %d: please continue", turn))
			switch {
			case turn == 1:
				e.read(a)
				if _, err := e.tools.Pin(e.ctx, mustID(t, e, a)); err != nil { // stays active: its edits are shown
					t.Fatal(err)
				}
			case turn == 2:
				e.read(b)
			case turn%5 == 0:
				// Another process edits a file the agent has active: a new
				// version appears without any tool call.
				p := e.file("a.go", fmt.Sprintf("package a\n\n// edit %d\n", turn))
				if _, err := e.ix.Index(e.ctx, p); err != nil {
					t.Fatal(err)
				}
			case turn%7 == 0:
				if _, err := e.tools.Deactivate(e.ctx, mustID(t, e, b)); err != nil {
					t.Fatal(err)
				}
			}
			for k := 0; k < 3; k++ {
				e.bash(fmt.Sprintf("make step%d", k), output(fmt.Sprintf("t%d.%d", turn, k), 4))
			}
			if turn%9 == 0 {
				e.now = e.now.Add(6 * time.Minute) // idle: the cache is cold
			} else {
				e.now = e.now.Add(20 * time.Second)
			}
			c := e.call()
			if n := len(got); n > 0 {
				prev := got[n-1].Bytes
				p := lcp(prev, c.Bytes)
				wantPrefix := len(prev)
				if c.Rebased {
					wantPrefix = c.RebaseOffset
				}
				if c.PrefixBytes != wantPrefix || c.PrefixTokens <= 0 || c.PrefixTokens > got[n-1].Tokens {
					t.Fatalf("call %d: shared prefix %d bytes, %d tokens; want %d bytes, at most %d tokens", c.N, c.PrefixBytes, c.PrefixTokens, wantPrefix, got[n-1].Tokens)
				}
				if !c.Rebased {
					if p != len(prev) {
						t.Fatalf("call %d: not an extension of call %d: common prefix %d of %d bytes", c.N, n, p, len(prev))
					}
				} else {
					rebases[c.Reason]++
					if c.RebaseOffset <= len(e.a.head) || p < c.RebaseOffset {
						t.Fatalf("call %d: rebase from byte %d but the common prefix is %d", c.N, c.RebaseOffset, p)
					}
					rest := strings.Replace(string(c.Bytes[c.RebaseOffset:]), ctxPrefix, "", 1)
					first, _, _ := strings.Cut(strings.TrimPrefix(rest, "<<user>>\n"), "\n<<")
					// rendering 4: a collapsed file the stream names is left out
					dropped := strings.HasPrefix(strings.TrimPrefix(string(prev[c.RebaseOffset:]), "<<user>>\n"), "<<content ")
					if !dropped && !strings.HasPrefix(rest, "collapsed: ") && !strings.HasPrefix(rest, "<<user>>\ncollapsed: ") &&
						!(strings.HasPrefix(rest, "<<tool_result id=") && strings.Contains(first, "collapsed: ")) {
						t.Fatalf("call %d: the rebase does not start at a collapsed item: %.80q (was %.300q)", c.N, rest, prev[c.RebaseOffset:])
					}
				}
			}
			got = append(got, c)
		}
		if rebases[ReasonStale] == 0 || rebases[ReasonExpired] == 0 {
			t.Fatalf("rebases by reason: %v", rebases)
		}
		last := got[len(got)-1]
		if !strings.Contains(string(last.Bytes), "// edit 20") {
			t.Fatal("the external edit is not in the context")
		}
		// The edit came with a note; a later rebase that drops the old
		// version's block may drop the note with it (rendering 4).
		if !slices.ContainsFunc(got, func(c *Assembled) bool {
			return strings.Contains(string(c.Bytes), "// edit 20") && strings.Contains(string(c.Bytes), "changed, new version below")
		}) {
			t.Fatal("the external edit was never announced")
		}
		checkShape(t, last)

		st2 := e.se.Reopen()
		for _, c := range got {
			r, err := Rebuild(e.ctx, st2, e.sid, c.N)
			if err != nil {
				t.Fatalf("rebuild call %d: %v", c.N, err)
			}
			if !bytes.Equal(r.Bytes, c.Bytes) || r.RebaseOffset != c.RebaseOffset {
				t.Fatalf("rebuild call %d: %d bytes, want %d (common prefix %d)", c.N, len(r.Bytes), len(c.Bytes), lcp(r.Bytes, c.Bytes))
			}
			if fmt.Sprint(r.Messages()) != fmt.Sprint(c.Messages()) {
				t.Fatalf("rebuild call %d: messages differ", c.N)
			}
			if r.PrefixBytes != c.PrefixBytes || r.PrefixTokens != c.PrefixTokens {
				t.Fatalf("rebuild call %d: prefix %d/%d, want %d/%d", c.N, r.PrefixBytes, r.PrefixTokens, c.PrefixBytes, c.PrefixTokens)
			}
			checkSpans(t, r)
		}
		if _, err := Rebuild(e.ctx, st2, e.sid, len(got)+1); err == nil {
			t.Fatal("rebuilding a call that never happened")
		}
		rebuildAll(t, e.ctx, st2, e.sid, got)
	})
}

// checkShape checks the message model: tool results are single toolcall_ref
// lines, content blocks name id and version, tool outputs appear only in
// content blocks.
func checkShape(t *testing.T, c *Assembled) {
	t.Helper()
	if c.PoolTokens <= 0 || c.ActiveTokens <= 0 || c.PoolTokens+c.ActiveTokens+c.StaleTokens > c.Tokens {
		t.Errorf("call %d: pool %d + active %d + stale %d tokens of %d", c.N, c.PoolTokens, c.ActiveTokens, c.StaleTokens, c.Tokens)
	}
	msgs := c.Messages()
	if c.System() != "You are a careful agent." || len(c.Tools()) != 2 {
		t.Fatalf("system %q tools %v", c.System(), c.Tools())
	}
	var results, contents int
	for i, m := range msgs {
		if i > 0 && m.Role == RoleUser && msgs[i-1].Role == RoleUser {
			t.Fatalf("message %d: two user messages in a row", i)
		}
		for _, bl := range m.Blocks {
			switch {
			case m.Role == RoleToolResult:
				// Its line, then (rendering 3) the call's output while live.
				// One block: its line, its collapsed line, or (rendering 3)
				// the call's live output.
				results++
				line := m.Blocks[0]
				if len(m.Blocks) != 1 || (line.Type == BlockMetadata && (!strings.HasPrefix(line.Text, "status=") && !strings.HasPrefix(line.Text, "[ctxstore] collapsed: ") || strings.Contains(line.Text, "\n"))) {
					t.Fatalf("tool result %d: %+v", i, m)
				}
			case bl.Type == BlockContent:
				contents++
				if bl.ID == "" || bl.Version <= 0 {
					t.Fatalf("content block without id or version: %+v", bl)
				}
			case bl.Type == BlockText && strings.Contains(bl.Text, "some tool output"):
				t.Fatalf("tool output outside a content block: %q", bl.Text)
			}
		}
	}
	if results == 0 || contents == 0 {
		t.Fatalf("%d tool results, %d content blocks", results, contents)
	}
	if !bytes.Contains(c.Bytes, []byte("<<content id=")) {
		t.Fatal("no content header in the bytes")
	}
}

func mustID(t *testing.T, e *env, path string) string {
	t.Helper()
	r, err := e.ix.Index(e.ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return r.Object.ID()
}

// The literal layout: pool block, chat, active block, in that order; it is
// rebuilt too.
func TestLiteralLayout(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnvOn(t, se, LayoutLiteral, Policy{})
		e.turn("look at a")
		e.read(e.file("a.go", "package a\n"))
		e.bash("ls", "a.go\n")
		c1 := e.call()
		e.turn("again")
		e.bash("make", output("m", 3))
		c2 := e.call()
		msgs := c2.Messages()
		first, lastm := msgs[0], msgs[len(msgs)-1]
		if first.Role != RoleUser || first.Blocks[0].Type != BlockMetadata {
			t.Fatalf("first message is not the pool block: %+v", first)
		}
		if lastm.Role != RoleUser || lastm.Blocks[len(lastm.Blocks)-1].Type != BlockContent {
			t.Fatalf("last message is not the active block: %+v", lastm)
		}
		for _, m := range msgs[1 : len(msgs)-1] {
			for _, bl := range m.Blocks {
				if bl.Type == BlockContent || (bl.Type == BlockMetadata && m.Role == RoleUser) {
					t.Fatalf("object block inside the chat: %+v", bl)
				}
			}
		}
		for _, c := range []*Assembled{c1, c2} {
			r, err := Rebuild(e.ctx, e.st, e.sid, c.N)
			if err != nil || !bytes.Equal(r.Bytes, c.Bytes) {
				t.Fatalf("rebuild literal call %d: %v", c.N, err)
			}
		}
		rebuildAll(t, e.ctx, e.st, e.sid, []*Assembled{c1, c2})
	})
}

// An Assembler started on a session that already has objects opens with
// their snapshot: a metadata entry for each pooled object and the content
// of each active one, before any chat; a later version of an active file
// is appended, not rewritten.
func TestSessionStartSnapshot(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnvOn(t, se, LayoutStream, Policy{})
		p := e.file("a.go", "package a // v1\n")
		if _, err := e.tools.Read(e.ctx, p); err != nil {
			t.Fatal(err)
		}
		e.bash("ls", "a.go\n")
		e.start(LayoutStream, Policy{})
		c1 := e.call()
		msgs := c1.Messages()
		if len(msgs) != 1 || msgs[0].Role != RoleUser {
			t.Fatalf("snapshot messages: %+v", msgs)
		}
		var kinds []BlockType
		for _, bl := range msgs[0].Blocks {
			kinds = append(kinds, bl.Type)
		}
		if fmt.Sprint(kinds) != "[metadata metadata content content]" {
			t.Fatalf("snapshot blocks: %v", kinds)
		}
		e.file("a.go", "package a // v2\n")
		if _, err := e.ix.Index(e.ctx, p); err != nil {
			t.Fatal(err)
		}
		e.turn("what changed?")
		c2 := e.call()
		if c2.Rebased || !bytes.HasPrefix(c2.Bytes, c1.Bytes) || !bytes.Contains(c2.Bytes[len(c1.Bytes):], []byte("// v2")) {
			t.Fatalf("new version not appended:\n%s", c2.Bytes[len(c1.Bytes):])
		}
		for _, c := range []*Assembled{c1, c2} {
			r, err := Rebuild(e.ctx, e.st, e.sid, c.N)
			if err != nil || !bytes.Equal(r.Bytes, c.Bytes) {
				t.Fatalf("rebuild %d: %v", c.N, err)
			}
		}
	})
}

// A second Assembler on the same session cannot overwrite the first one's
// commits: its first Call fails with a conflict.
func TestCommitsNeverOverwritten(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnvOn(t, se, LayoutStream, Policy{})
		e.turn("hello")
		c1 := e.call()
		e.start(LayoutStream, Policy{})
		if _, err := e.a.Call(e.ctx); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second assembler's first call: %v", err)
		}
		if r, err := Rebuild(e.ctx, e.st, e.sid, 1); err != nil || !bytes.Equal(r.Bytes, c1.Bytes) {
			t.Fatalf("commit 1 after the conflict: %v", err)
		}
	})
}

// checkSpans checks that a rebuilt context's spans cover its bytes in
// order, each object span names its object and version, and each content
// span holds its block header.
func checkSpans(t *testing.T, c *Assembled) {
	t.Helper()
	sp := c.Spans()
	if len(sp) < 2 || sp[0].Kind != SpanSystem || sp[1].Kind != SpanTools || sp[0].Start != 0 {
		t.Fatalf("call %d: spans start %+v", c.N, sp[:min(len(sp), 2)])
	}
	at := 0
	for i, s := range sp {
		if s.Start != at || s.End < s.Start {
			t.Fatalf("call %d: span %d %+v does not continue at byte %d", c.N, i, s, at)
		}
		at = s.End
		if s.Kind == "content" {
			// A content block names its version; a tool result holding its
			// call's live output (rendering 3) is that output.
			inline := s.Role == RoleToolResult && bytes.HasPrefix(c.Bytes[s.Start:s.End], []byte("<<tool_result id="+s.ObjectID+">>\n"))
			if s.ObjectID == "" || s.ObjectKind == "" || s.Version <= 0 || !inline && !bytes.Contains(c.Bytes[s.Start:s.End], []byte(" version="+fmt.Sprint(s.Version)+">>")) {
				t.Fatalf("call %d: content span %d %+v: %.80q", c.N, i, s, c.Bytes[s.Start:s.End])
			}
		}
	}
	if at != len(c.Bytes) {
		t.Fatalf("call %d: spans end at %d of %d bytes", c.N, at, len(c.Bytes))
	}
}

package assemble

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/tools"
)

// TestReleaseFrozenPrefix (issue 18): an Assembler with Options.Release
// drops the stream's frozen prefix from memory (items and bytes) and
// still makes exactly the calls of one that keeps everything: the same
// length, SHA-256, messages from its Released mark on, Stable mark and
// rebase offsets at every call; Whole rebuilds the released messages from
// the commits; and the released items are gone.
func TestReleaseFrozenPrefix(t *testing.T) {
	pol := Policy{StaleThreshold: 600, Horizon: 200}
	keep, rel := newEnv(t, LayoutStream, pol), newEnv(t, LayoutStream, pol)
	a, err := New(rel.ctx, rel.tools.Session(), Options{Layout: LayoutStream, Tools: testTools, Policy: pol,
		Now: func() time.Time { return rel.now }, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	rel.a = a
	fa := keep.file("a.go", "package a\n") // both read the same path
	released, rebases := 0, 0
	pending := map[*env]func(){}
	for turn := 1; turn <= 30; turn++ {
		for _, e := range []*env{keep, rel} {
			e.turn(fmt.Sprintf("turn %d: go on", turn))
			if turn == 8 {
				e.read(fa)
			}
			if turn == 4 {
				// A write whose result comes ten calls later: its
				// assistant message is not frozen while its input may
				// still become collapsible (the result notes it).
				body := fmt.Sprintf("%s\n", bytes.Repeat([]byte("func generated() { /* a large body */ }\n"), 20))
				p := keep.dir + "/gen.go" // one path for both
				args := map[string]any{"path": p, "content": body}
				e.must(e.a.Assistant(e.ctx, "Writing", []ToolCall{{ID: "toolu_split", Name: "write", Args: args}}))
				pending[e] = func() {
					keep.file("gen.go", body)
					out := "Wrote gen.go"
					r, err := e.tools.Write(e.ctx, tools.Call{ID: "toolu_split", Tool: "write", Args: args, ArgsDisplay: "gen.go", Output: &out}, p)
					e.must(err)
					e.must(e.a.ToolResult(e.ctx, r))
				}
				continue
			}
			if f := pending[e]; f != nil && turn == 14 { // after a rebase moved the frozen prefix past it
				f()
				delete(pending, e)
			}
			for k := 0; k < 2; k++ {
				e.bash(fmt.Sprintf("make step%d", k), output(fmt.Sprintf("t%d.%d", turn, k), 3))
			}
			if turn%11 == 0 {
				e.now = e.now.Add(6 * time.Minute) // a cold cache: a rebase is free
			} else {
				e.now = e.now.Add(20 * time.Second)
			}
		}
		want, got := keep.call(), rel.call()
		if got.Len() != want.Len() || !bytes.Equal(got.Bytes, want.Bytes[got.BytesFrom:]) {
			i := lcp(got.Bytes, want.Bytes[got.BytesFrom:])
			t.Fatalf("call %d: %d bytes (%d held from %d), want %d: %q, want %q", got.N, got.Len(), len(got.Bytes), got.BytesFrom, want.Len(),
				got.Bytes[max(0, i-100):min(i+100, len(got.Bytes))], want.Bytes[got.BytesFrom+max(0, i-100):min(got.BytesFrom+i+100, len(want.Bytes))])
		}
		if got.Stable != want.Stable || got.Rebased != want.Rebased || got.RebaseOffset != want.RebaseOffset ||
			got.PrefixBytes != want.PrefixBytes || got.Tokens != want.Tokens || got.StaleTokens != want.StaleTokens {
			t.Fatalf("call %d: stable %d rebased %v at %d prefix %d tokens %d/%d; want %d %v at %d prefix %d tokens %d/%d", got.N,
				got.Stable, got.Rebased, got.RebaseOffset, got.PrefixBytes, got.Tokens, got.StaleTokens,
				want.Stable, want.Rebased, want.RebaseOffset, want.PrefixBytes, want.Tokens, want.StaleTokens)
		}
		if got.Rebased {
			rebases++
		}
		k := got.Released()
		if k > got.Stable {
			t.Fatalf("call %d: %d messages released, only %d stable", got.N, k, got.Stable)
		}
		ms, n := got.MessagesFrom(k)
		wms, wn := want.MessagesFrom(k)
		if n != wn || !reflect.DeepEqual(ms, wms) {
			t.Fatalf("call %d: messages from %d differ (%d and %d in all)", got.N, k, n, wn)
		}
		w, err := got.Whole(rel.ctx)
		if err != nil {
			t.Fatalf("call %d: whole: %v", got.N, err)
		}
		if !reflect.DeepEqual(w.Messages(), want.Messages()) || !bytes.Equal(w.Bytes, want.Bytes) {
			t.Fatalf("call %d: the whole context rebuilt differs", got.N)
		}
		released = max(released, k)
		// The same commit is written: the recorded digests agree.
		ck, err := ReadCommit(keep.ctx, keep.st, keep.sid, want.N)
		keep.must(err)
		cr, err := ReadCommit(rel.ctx, rel.st, rel.sid, got.N)
		rel.must(err)
		if ck.BytesSHA256 != cr.BytesSHA256 || ck.ByteLen != cr.ByteLen || ck.Base != cr.Base || !reflect.DeepEqual(ck.Items, cr.Items) {
			t.Fatalf("call %d: the commits differ", got.N)
		}
	}
	if !strings.Contains(string(keep.a.buf), "[collapsed input,") {
		t.Fatal("the split write's input never collapsed")
	}
	if released == 0 || rebases == 0 || rel.a.bufBase == 0 {
		t.Fatalf("%d messages released at most, %d rebases, %d bytes released", released, rebases, rel.a.bufBase)
	}
	nils := 0
	for _, it := range rel.a.items {
		if it == nil {
			nils++
		}
	}
	if nils != rel.a.gone || nils == 0 || len(keep.a.callAt) <= len(rel.a.callAt) {
		t.Fatalf("%d items nil, %d released; %d tool-call positions kept, %d without release", nils, rel.a.gone, len(rel.a.callAt), len(keep.a.callAt))
	}
	// Turned off, the Assembler keeps what follows; what was released
	// stays released.
	rel.a.SetRelease(false)
	keep.turn("one more")
	rel.turn("one more")
	want, got := keep.call(), rel.call()
	if got.Released() == 0 || got.Len() != want.Len() {
		t.Fatalf("after SetRelease(false): %d released, %d bytes, want %d", got.Released(), got.Len(), want.Len())
	}
}

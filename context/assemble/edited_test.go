package assemble

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// editOutput does to toolcall id what a context edit of a recorded result
// does (ingest.Ingester.EditResults): every version evicted, the
// replacement (nil: no output) put as its only version, the call
// deactivated.
func (e *env) editOutput(id string, replacement *string) {
	e.tb.Helper()
	s := e.tools.Session()
	doc, err := e.st.Entity(e.ctx, id, store.Basis{})
	e.must(err)
	o, err := objects.FromDoc(doc)
	e.must(err)
	_, _, err = s.Update(e.ctx, []store.Op{store.Evict(id)}, nil)
	e.must(err)
	n, err := objects.NewToolcall(id, o.Toolcall, replacement)
	e.must(err)
	nd, err := n.Doc()
	e.must(err)
	_, _, err = s.Update(e.ctx, []store.Op{store.Put(nd)}, func(state *session.State) error {
		if state.IsActive(id) {
			return state.Deactivate(id)
		}
		return nil
	})
	e.must(err)
}

// TestContextEditRebases: after a context edit evicted the version of an
// output the stream renders, the next call (live, after Reload; or in a
// new process, after Resume) rebases from that output with reason
// context_edit and holds no byte of the original; the calls from then on
// rebuild, the ones before answer ErrEvicted.
func TestContextEditRebases(t *testing.T) {
	const secret = "SECRET-7f3a9c"
	redacted := "[redacted by the harness]"
	for _, c := range []struct {
		name        string
		replacement *string
		reload      bool
	}{
		{"replaced, live", &redacted, true},
		{"omitted, live", nil, true},
		{"replaced, resumed", &redacted, false},
		{"omitted, resumed", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, LayoutStream, Policy{})
			e.turn("show the environment")
			e.bash("env", "HOME=/root\nTOKEN="+secret+"\nPATH=/bin\n")
			id := e.uid("toolu_0001")
			first := e.call()
			if !bytes.Contains(first.Bytes, []byte(secret)) {
				t.Fatalf("call 1 does not show the output: %s", first.Bytes)
			}
			e.bash("ls", "a.go\nb.go\n")
			e.call()
			e.editOutput(id, c.replacement)
			if c.reload {
				e.must(e.a.Reload(e.ctx))
			} else {
				e.reopen(t, Policy{})
			}
			e.turn("go on")
			got := e.call()
			if bytes.Contains(got.Bytes, []byte(secret)) {
				t.Fatalf("call %d still holds the edited output: %s", got.N, got.Bytes)
			}
			if !got.Rebased || got.Reason != ReasonContextEdit {
				t.Fatalf("call %d: rebased %v, reason %q; want a %q rebase", got.N, got.Rebased, got.Reason, ReasonContextEdit)
			}
			if !bytes.Contains(got.Bytes, []byte("go on")) || !bytes.Contains(got.Bytes, []byte("b.go")) {
				t.Fatalf("call %d lost the rest of the session: %s", got.N, got.Bytes)
			}
			e.bash("pwd", "/work\n")
			next := e.call()
			if bytes.Contains(next.Bytes, []byte(secret)) {
				t.Fatalf("call %d holds the edited output", next.N)
			}
			for _, n := range []int{got.N, next.N} {
				r, err := Rebuild(e.ctx, e.st, e.sid, n)
				if err != nil {
					t.Fatalf("rebuilding call %d: %v", n, err)
				}
				if bytes.Contains(r.Bytes, []byte(secret)) {
					t.Fatalf("call %d rebuilt holds the edited output", n)
				}
			}
			if _, err := Rebuild(e.ctx, e.st, e.sid, 1); !errors.Is(err, ErrEvicted) {
				t.Fatalf("rebuilding call 1, which showed the original: %v, want ErrEvicted", err)
			}
			// A new process resumes after the edit's rebase as from any call.
			e.reopen(t, Policy{})
			e.turn("and then")
			last := e.call()
			if last.Rebased || bytes.Contains(last.Bytes, []byte(secret)) {
				t.Fatalf("call %d after a resume: rebased %v (%s)", last.N, last.Rebased, last.Reason)
			}
		})
	}
}

// TestReloadKeepsEvents: Reload refuses to drop what was reported since
// the last call (it is in no commit), and changes nothing without an
// evicted version.
func TestReloadKeepsEvents(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{})
	e.turn("list")
	e.bash("ls", "a.go\n")
	e.call()
	e.must(e.a.Reload(e.ctx))
	e.turn("again")
	if err := e.a.Reload(e.ctx); err == nil {
		t.Fatalf("Reload after an event no commit holds succeeded")
	}
	if c := e.call(); c.Rebased || !bytes.Contains(c.Bytes, []byte("again")) {
		t.Fatalf("call %d after the refused reload: rebased %v", c.N, c.Rebased)
	}
}

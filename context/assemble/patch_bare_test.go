package assemble

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/tools"
)

// bareEnv is newEnv with a bare head (rendering 5's silent own edits).
func bareEnv(t *testing.T, pol Policy) *env {
	e := newEnv(t, LayoutStream, pol)
	e.a = e.bareAssembler(t, pol, false)
	return e
}

func (e *env) bareOptions(pol Policy) Options {
	return Options{Layout: LayoutStream, Tools: leanTools, Policy: pol, Now: func() time.Time { return e.now },
		Lean: &LeanHead{Guide: leanGuide, Withheld: []string{"activate", "deactivate", "pin"}, Bare: true, Spill: "/work/.ctxstore/spill/s1"}}
}

func (e *env) bareAssembler(t *testing.T, pol Policy, resume bool) *Assembler {
	t.Helper()
	if resume {
		a, err := Resume(e.ctx, e.tools.Session(), e.bareOptions(pol))
		e.must(err)
		return a
	}
	a, err := New(e.ctx, e.tools.Session(), e.bareOptions(pol))
	e.must(err)
	return a
}

// edit runs a recorded edit of the file at p as the harness would: the
// call, the file changed on disk, the result.
func (e *env) edit(p, old, nw, content string) {
	e.tb.Helper()
	e.seq++
	id := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	args := map[string]any{"file_path": p, "old_string": old, "new_string": nw}
	e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: id, Name: "edit", Args: args}}))
	e.file(p[strings.LastIndex(p, "/")+1:], content)
	out := "The file has been updated."
	r, err := e.tools.Edit(e.ctx, tools.Call{ID: id, Tool: "edit", Args: args, Output: &out}, p)
	e.must(err)
	e.must(e.a.ToolResult(e.ctx, r))
}

// TestBareHeadOwnEditSilent (rendering 5): under a bare head the model's
// own edit of a shown file renders nothing, not even the one-line patch:
// the call's context ends with the edit's result, as the harness would
// send it. The version the model holds is the edited one all the same: a
// later change by another process is a diff against it (the edit's line
// is not in it), the calls rebuild byte for byte with spans covering every
// byte, and an assembler resumed after the edit continues byte for byte.
// A managed head keeps the line (TestPatchNamesEdits).
func TestBareHeadOwnEditSilent(t *testing.T) {
	pol := Policy{StaleThreshold: 1 << 20, Horizon: 200}
	var lines strings.Builder
	for i := range 30 {
		fmt.Fprintf(&lines, "line %d of the notes\n", i)
	}
	rest := lines.String()
	var live [][]byte
	dir := t.TempDir() // the same paths in both runs: they are rendered
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resumed=%v", resume), func(t *testing.T) {
			e := bareEnv(t, pol)
			e.dir = dir
			p := e.file("notes.txt", "alpha\n"+rest)
			e.turn("Edit notes.txt.")
			e.read(p)
			c1 := e.call()
			e.edit(p, "alpha", "beta", "beta\n"+rest)
			e.now = e.now.Add(10 * time.Second)
			c2 := e.call()
			text := string(c2.Bytes)
			if !bytes.HasPrefix(c2.Bytes, c1.Bytes) {
				t.Fatal("call 2 does not extend call 1")
			}
			if strings.Contains(text, "changed, version") || strings.Contains(text, "applied to the version above") || strings.Count(text, "<<content id=") != 1 {
				t.Fatalf("the own edit is shown:\n%s", text[strings.Index(text, "Edit notes"):])
			}
			if !strings.HasSuffix(text, "The file has been updated.\n") {
				t.Fatalf("call 2 does not end with the edit's result:\n%s", text[len(text)-200:])
			}
			ms := c2.Messages()
			if last := ms[len(ms)-1]; last.Role != RoleToolResult || len(last.Blocks) == 0 {
				t.Fatalf("the last message is %s with %d blocks", last.Role, len(last.Blocks))
			}
			for i, m := range ms {
				if len(m.Blocks) == 0 {
					t.Fatalf("message %d (%s) is empty", i, m.Role)
				}
			}
			if resume {
				e.a = e.bareAssembler(t, pol, true)
			}
			// Another process changes the file: a diff against the edited
			// version the model holds.
			e.file("notes.txt", "beta\n"+rest+"gamma\n")
			_, err := e.ix.Index(e.ctx, p)
			e.must(err)
			e.turn("What changed?")
			e.now = e.now.Add(10 * time.Second)
			c3 := e.call()
			tail := string(c3.Bytes[len(c2.Bytes):])
			// The silent patch belongs to the edit's result: the next
			// prompt starts a user message of its own, in the bytes and
			// in the messages.
			if !strings.HasPrefix(tail, "<<user>>\nWhat changed?\n") {
				t.Fatalf("call 3 does not go on with a user message: %.200q", tail)
			}
			ms3 := c3.Messages()
			if n := len(ms3); n < 2 || ms3[n-2].Role != RoleToolResult || ms3[n-1].Role != RoleUser || !strings.HasPrefix(ms3[n-1].Blocks[0].Text, "What changed?") {
				t.Fatalf("call 3's last messages: %+v", ms3[max(0, len(ms3)-2):])
			}
			if !strings.Contains(tail, "changed, version") || !strings.Contains(tail, "+gamma") || strings.Contains(tail, "alpha") || strings.Contains(tail, "beta") {
				t.Fatalf("the change is not a diff against the edited version:\n%s", tail)
			}
			for _, c := range []*Assembled{c1, c2, c3} {
				r, err := Rebuild(e.ctx, e.st, e.sid, c.N)
				e.must(err)
				if !bytes.Equal(r.Bytes, c.Bytes) {
					t.Fatalf("call %d rebuilds differently", c.N)
				}
				end := 0
				for _, s := range r.Spans() {
					if s.Start != end || s.End <= s.Start {
						t.Fatalf("call %d: span %+v after byte %d", c.N, s, end)
					}
					end = s.End
				}
				if end != len(r.Bytes) {
					t.Fatalf("call %d: spans end at %d of %d bytes", c.N, end, len(r.Bytes))
				}
			}
			if !resume {
				live = [][]byte{c1.Bytes, c2.Bytes, c3.Bytes}
			} else if !bytes.Equal(c3.Bytes, live[2]) {
				t.Fatalf("the resumed assembler's call 3 differs from the live one's")
			}
		})
	}
}

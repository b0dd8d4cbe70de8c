package assemble

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
)

// write runs a recorded write(path, content) as the harness would.
func (e *env) write(name, content string) string {
	e.tb.Helper()
	e.seq++
	id := fmt.Sprintf("toolu_w%04d", e.seq)
	p := e.file(name, content)
	args := map[string]any{"path": p, "content": content}
	e.must(e.a.Assistant(e.ctx, "Writing "+name, []ToolCall{{ID: id, Name: "write", Args: args}}))
	out := "Wrote " + name
	r, err := e.tools.Write(e.ctx, tools.Call{ID: id, Tool: "write", Args: args, ArgsDisplay: name, Output: &out}, p)
	e.must(err)
	e.must(e.a.ToolResult(e.ctx, r))
	return id
}

func TestToolInputsCollapse(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 300, Horizon: 200})
	body := strings.Repeat("func generated() { /* a large body the agent wrote */ }\n", 40)
	e.turn("write the generator")
	e.write("gen.go", body)
	small := e.write("small.go", "package small\n")
	first := e.call()
	if !strings.Contains(string(first.Bytes), "a large body the agent wrote") {
		t.Fatal("the write's input is not in the stream while the call is active")
	}
	var last *Assembled
	for turn := 2; turn <= 6; turn++ {
		e.turn(fmt.Sprintf("turn %d", turn))
		e.bash("make", output(fmt.Sprintf("t%d", turn), 3))
		last = e.call()
		if last.Rebased && strings.Contains(string(last.Bytes), "[collapsed input,") {
			break
		}
	}
	if !last.Rebased {
		t.Fatal("no rebase happened")
	}
	b := string(last.Bytes)
	if strings.Contains(b, "a large body the agent wrote") {
		i := strings.LastIndex(b, "a large body the agent wrote")
		t.Fatalf("the collapsed input is still rendered after the rebase: %q", b[max(0, i-300):i+100])
	}
	if !strings.Contains(b, "[collapsed input,") || !strings.Contains(b, "produced file ") {
		t.Fatalf("no collapsed-input reference:\n%s", b)
	}
	if !strings.Contains(b, `"content":"package small\n"`) && !strings.Contains(b, `package small\\n`) {
		t.Fatalf("a small input (%s) was collapsed too", small)
	}
	// The reference names the file version the write produced; activating it
	// brings the content back.
	id := mustID(t, e, e.dir+"/gen.go")
	short := objects.DisplayID(id)
	if !strings.Contains(b, "produced file "+short+" ") {
		t.Fatal("the reference does not name the file")
	}
	if _, err := e.tools.Activate(e.ctx, short); err != nil { // the id as the context shows it
		t.Fatal(err)
	}
	c := e.call()
	if !strings.Contains(string(c.Bytes[len(last.Bytes):]), "a large body the agent wrote") {
		t.Fatal("activation did not bring the file back")
	}
	for n := 1; n <= c.N; n++ {
		if _, err := Rebuild(e.ctx, e.st, "s1", n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
}

func TestCollapseArgs(t *testing.T) {
	big := strings.Repeat("x", 600)
	for _, tc := range []struct {
		name    string
		args    map[string]any
		changed bool
		keep    []string
	}{
		{"small", map[string]any{"path": "a", "content": "short"}, false, []string{"path", "content"}},
		{"content", map[string]any{"path": "a", "content": big}, true, []string{"path"}},
		{"edit", map[string]any{"file_path": "a", "old_string": big, "new_string": "y"}, true, []string{"file_path", "new_string"}},
		{"edits", map[string]any{"path": "a", "edits": []any{map[string]any{"oldText": big, "newText": "z"}}}, true, []string{"path"}},
		{"todos", map[string]any{"todos": []any{map[string]any{"content": big}}, "flag": true}, true, []string{"flag"}},
		{"object", map[string]any{"opts": map[string]any{"body": big}, "n": 3.0}, true, []string{"n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed := collapseArgs(tc.args, "call1", fileRef(), minInputBytes)
			if changed != tc.changed {
				t.Fatalf("changed = %v", changed)
			}
			for _, k := range tc.keep {
				if fmt.Sprint(out[k]) != fmt.Sprint(tc.args[k]) {
					t.Fatalf("%s changed: %v", k, out[k])
				}
			}
			for k, v := range out {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "[collapsed input,") && !strings.Contains(s, "produced file f1 version 7") {
					t.Fatalf("%s: %s", k, s)
				}
			}
		})
	}
}

func fileRef() objects.Ref { return objects.Ref{ID: "f1", Tx: 7, Static: true} }

// A large input of a call that produced no file collapses into a reference
// to the toolcall, whose arguments stay in the store.
func TestCollapseArgsToToolcall(t *testing.T) {
	out, changed := collapseArgs(map[string]any{"command": strings.Repeat("y", 700)}, "call1", objects.Ref{ID: "call1", Tx: 4, Static: true}, minInputBytes)
	if !changed || out["command"] != "[collapsed input, 700 chars, kept with toolcall call1]" {
		t.Fatalf("%v %v", changed, out)
	}
}

// TestPreviewAndActivate (issue 17 item 3, demand paging): an output past
// Policy.PreviewTokens enters as its start and end with a line saying how
// to see it whole; activate(call id) shows it whole as a content block;
// every call is rebuilt byte for byte.
func TestPreviewAndActivate(t *testing.T) {
	e := newEnv(t, LayoutStream, Policy{StaleThreshold: 100, Horizon: 200, PreviewTokens: 500})
	e.turn("build")
	var b strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, "build line %d: compiling something that takes a line\n", i)
	}
	big := b.String()
	e.bash("make", big)
	callID := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
	c1 := e.call()
	s := string(c1.Bytes)
	if !strings.Contains(s, "build line 0:") || !strings.Contains(s, "build line 399:") || strings.Contains(s, "build line 200:") ||
		!strings.Contains(s, "left out here; activate(<this call's id>) shows the output whole") {
		t.Fatalf("no preview:\n%s", s[len(s)-min(len(s), 3000):])
	}
	if n, part := e.a.Previews(callID); n != 1 || !part {
		t.Fatalf("previews %d, %s previewed %v", n, callID, part)
	}
	// The model activates it.
	e.activate(callID)
	c2 := e.call()
	if !strings.Contains(string(c2.Bytes[len(c1.Bytes):]), "build line 200:") {
		t.Fatal("activate did not show the output whole")
	}
	if _, part := e.a.Previews(callID); part {
		t.Fatal("still a preview after activate")
	}
	for n := 1; n <= c2.N; n++ {
		if _, err := Rebuild(e.ctx, e.st, e.sid, n); err != nil {
			t.Fatalf("rebuild %d: %v", n, err)
		}
	}
}

// TestPatchInShortSession (issue 17): the model's own edit of a small
// file it holds is shown as a patch naming the edit, not as a new full
// copy, in a session that has not rebased, even when the edit's input is
// large against the file: that input would collapse only at a rebase.
// Once the session has rebased, the input's saving counts and the same
// edit brings a new full copy (its input then collapses with its call).
func TestPatchInShortSession(t *testing.T) {
	for _, rebased := range []bool{false, true} {
		t.Run(fmt.Sprintf("rebased=%v", rebased), func(t *testing.T) {
			e := newEnv(t, LayoutStream, Policy{})
			var lines strings.Builder
			for i := range 30 {
				fmt.Fprintf(&lines, "line %d of the notes\n", i)
			}
			p := e.file("notes.txt", "alpha\n"+lines.String())
			e.turn("Edit notes.txt.")
			e.read(p)
			e.call()
			if rebased {
				e.a.shape.Rebases = 1
			}
			// An edit whose input (JSON over Policy.InputBytes) is larger
			// than the file.
			pad := strings.Repeat("a long explanation of the change ", 60)
			args := map[string]any{"file_path": p, "old_string": "alpha\n", "new_string": "beta\n", "description": pad}
			e.seq++
			id := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
			e.must(e.a.Assistant(e.ctx, "", []ToolCall{{ID: id, Name: "edit", Args: args}}))
			e.file("notes.txt", "beta\n"+lines.String())
			out := "edited"
			r, err := e.tools.Edit(e.ctx, tools.Call{ID: id, Tool: "edit", Args: args, Output: &out}, p)
			e.must(err)
			e.must(e.a.ToolResult(e.ctx, r))
			c := e.call()
			text := string(c.Bytes)
			patched := strings.Contains(text, ": your edit applied to the version above")
			copies := strings.Count(text, "<<content id=")
			if patched == rebased || !patched && copies != 2 || patched && copies != 1 {
				t.Fatalf("patch %v, %d content blocks; want a patch only without a rebase: %s", patched, copies, text[strings.Index(text, "alpha"):])
			}
		})
	}
}

// TestPatchNamesEdits: one edit of a file since the version the model
// holds is "your edit", a line short enough that even a two-byte file is
// patched rather than shown again (its block and its name in the
// "changed" note); several edits are named by their call ids, in order
// (their ids pass a small file's size, so that case edits a larger one).
func TestPatchNamesEdits(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("edits=%d", n), func(t *testing.T) {
			e := newEnv(t, LayoutStream, Policy{})
			rest := ""
			if n > 1 {
				rest = strings.Repeat("a line that stays as it is\n", 30)
			}
			p := e.file("tiny.txt", "a\n"+rest)
			e.turn("Edit tiny.txt.")
			e.read(p)
			e.call()
			var ids []string
			var calls []ToolCall
			for i := range n {
				e.seq++
				id := e.uid(fmt.Sprintf("toolu_%04d", e.seq))
				ids = append(ids, id)
				calls = append(calls, ToolCall{ID: id, Name: "edit", Args: map[string]any{"file_path": p, "old_string": string(rune('a' + i)), "new_string": string(rune('b' + i))}})
			}
			e.must(e.a.Assistant(e.ctx, "", calls))
			for i, c := range calls {
				e.file("tiny.txt", string(rune('b'+i))+"\n"+rest)
				out := "edited"
				r, err := e.tools.Edit(e.ctx, tools.Call{ID: c.ID, Tool: "edit", Args: c.Args, Output: &out}, p)
				e.must(err)
				e.must(e.a.ToolResult(e.ctx, r))
			}
			text := string(e.call().Bytes)
			want := ": your edit applied to the version above; nothing else changed"
			if n > 1 {
				want = ": your calls " + strings.Join(ids, ", ") + " applied to the version above; nothing else changed"
			}
			if !strings.Contains(text, want) {
				t.Fatalf("no patch %q in:\n%s", want, text[strings.Index(text, "Edit tiny"):])
			}
			if c := strings.Count(text, "<<content id="); c != 1 {
				t.Fatalf("%d content blocks, want the one read (the edit is a patch):\n%s", c, text[strings.Index(text, "Edit tiny"):])
			}
		})
	}
}

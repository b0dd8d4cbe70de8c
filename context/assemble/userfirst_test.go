package assemble

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// fenced is a session driven the way OpenClaw drives its context engine:
// every call of a turn is made with the history before the turn, and the
// harness sends the turn's messages (prompt, tool calls, results) after
// that call's messages itself; the assembler meets them at the next turn.
// sent is what the model was sent last in each turn, as the harness built
// it: the last call's messages and the turn's own.
type fenced struct {
	*env
	calls []*Assembled
	sent  []turnSent
}

// turnSent is what the model was sent last in a turn: the messages of the
// call before it, and the turn's own.
type turnSent struct{ call, turn []Message }

func newFenced(t *testing.T, render int) *fenced {
	e := newEnv(t, LayoutStream, Policy{})
	a, err := New(e.ctx, e.tools.Session(), Options{Layout: LayoutStream, Tools: testTools, Render: render,
		Now: func() time.Time { return e.now }})
	e.must(err)
	e.a = a
	return &fenced{env: e}
}

func (f *fenced) call() *Assembled {
	f.tb.Helper()
	f.now = f.now.Add(time.Second)
	c := f.env.call()
	f.calls = append(f.calls, c)
	return c
}

// send records what the model was sent in the turn after call c: its
// messages, then the turn's own.
func (f *fenced) send(c *Assembled, turn ...Message) {
	f.sent = append(f.sent, turnSent{c.Messages(), turn})
}

func user(text string) Message {
	return Message{Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: text}}}
}

func toolUse(id, name string, args map[string]any) Message {
	return Message{Role: RoleAssistant, Blocks: []Block{{Type: BlockToolCall, ID: id, Name: name, Args: args}}}
}

func toolOut(id, out string) Message {
	return Message{Role: RoleToolResult, ToolCallID: id, Blocks: []Block{{Type: BlockText, Text: out}}}
}

// script runs three turns. Turn 1 runs make (an output entered in its tool
// result, as the harness sent it). In turn 2 the model reads notes.txt
// through ctxstore's tool route (the run is recorded before the log holds
// it), so the turn's next call ends with the file's metadata line and
// content block; and between that call and the next turn something
// deactivates the file (a collapse at the turn's start, say). Turn 3 is a
// question.
func (f *fenced) script(t *testing.T) {
	p := f.file("notes.txt", "the secret word is heliotrope\n")
	makeArgs := map[string]any{"command": "make", "timeout": 30}

	// Turn 1: nothing before it.
	c := f.call()
	f.send(c, user("run make"), toolUse("toolu_make", "bash", makeArgs), toolOut("toolu_make", "built ok\n"))

	// Turn 2: the service meets turn 1, then the model reads through it.
	_, err := f.tools.BeginTurn(f.ctx)
	f.must(err)
	f.must(f.a.User(f.ctx, "run make"))
	f.must(f.a.Assistant(f.ctx, "", []ToolCall{{ID: "toolu_make", Name: "bash", Args: makeArgs}}))
	out := "built ok\n"
	r, err := f.tools.Record(f.ctx, tools.Call{ID: "toolu_make", Tool: "bash", Args: makeArgs, Output: &out})
	f.must(err)
	f.must(f.a.ToolResult(f.ctx, r))
	f.must(f.a.Assistant(f.ctx, "built", nil))
	f.call()
	readArgs := map[string]any{"path": p}
	rr, err := f.tools.Read(f.ctx, p)
	f.must(err)
	rec, err := f.tools.RecordResult(f.ctx, tools.Call{ID: "toolu_read", Tool: "read", Args: readArgs}, rr)
	f.must(err)
	c = f.call() // before the turn's second model call: the read is shown
	f.send(c, user("read the notes"), toolUse("toolu_read", "read", readArgs), toolOut("toolu_read", rec.Message))

	// Between the turns the file goes inactive.
	_, err = f.tools.Deactivate(f.ctx, rr.ID)
	f.must(err)

	// Turn 3: the service meets turn 2.
	_, err = f.tools.BeginTurn(f.ctx)
	f.must(err)
	f.must(f.a.User(f.ctx, "read the notes"))
	f.must(f.a.Assistant(f.ctx, "", []ToolCall{{ID: "toolu_read", Name: "read", Args: readArgs}}))
	f.must(f.a.ToolResult(f.ctx, rec))
	f.must(f.a.Assistant(f.ctx, "the word is heliotrope", nil))
	c = f.call()
	f.send(c, user("what now"))
}

// extends reports where the context of call c stops extending what the
// model was sent in the turn before (the call's messages, then the turn's
// up to and including its first tool call: ctxstore writes tool results
// its own way): -1 when it extends it whole.
func extends(c *Assembled, sent turnSent) int {
	want := sent.call
	for _, m := range sent.turn {
		want = append(want, m)
		if m.Role == RoleAssistant {
			break
		}
	}
	got := c.Messages()
	for i, m := range want {
		if i >= len(got) || fmt.Sprint(got[i]) != fmt.Sprint(m) {
			return i
		}
	}
	return -1
}

// TestUserFirstKeepsTheTurnsBytes: under rendering 6 (RenderUserFirst),
// what a fenced harness sent in each turn, up to its first tool call, is
// where the next turn's context starts: the prompt is a message of its own
// right after the previous context, and ctxstore's notes of the turn (the
// file going inactive) come after the turn's tool results. Rendering 5 put
// the note in front of the prompt, in one message with it.
func TestUserFirstKeepsTheTurnsBytes(t *testing.T) {
	f := newFenced(t, RenderUserFirst)
	f.script(t)
	// The calls: 1 (turn 1), 2 and 3 (turn 2), 4 (turn 3).
	for i, pair := range [][2]int{{0, 1}, {1, 3}} {
		if at := extends(f.calls[pair[1]], f.sent[i]); at >= 0 {
			t.Errorf("call %d does not extend turn %d as sent: they differ at message %d:\n%v\nvs\n%v",
				pair[1]+1, i+1, at, f.calls[pair[1]].Messages(), f.sent[i])
		}
	}
	// Turn 1's tool result is the output as the harness sent it.
	if ms := f.calls[1].Messages(); len(ms) < 3 || fmt.Sprint(ms[2]) != fmt.Sprint(toolOut("toolu_make", "built ok\n")) {
		t.Errorf("call 2: turn 1's tool result is not the output as sent: %v", ms)
	}
	// The note of the deactivation follows the turn's tool result, in a
	// message of its own; the prompt stays whole.
	last := f.calls[3].Messages()
	prompt, note := -1, -1
	for i, m := range last {
		for _, b := range m.Blocks {
			if b.Text == "read the notes" {
				prompt = i
			}
			if strings.Contains(b.Text, "inactive now") {
				note = i
			}
		}
	}
	if prompt < 0 || note < prompt+3 || len(last[prompt].Blocks) != 1 {
		t.Errorf("call 4: the prompt at message %d (%d blocks), the inactive note at %d, want the note after the turn's tool result:\n%v",
			prompt, len(last[max(prompt, 0)].Blocks), note, last)
	}
	rebuildAll(t, f.ctx, f.st, f.sid, f.calls)
	doc, err := f.st.Entity(f.ctx, CommitID(f.sid, 1), store.Basis{})
	f.must(err)
	if fmt.Sprint(doc["render"]) != fmt.Sprint(RenderUserFirst) {
		t.Errorf("the root commit records rendering %v, want %d", doc["render"], RenderUserFirst)
	}

	// Resumed, the session keeps rendering 6: the next prompt is a message
	// of its own after the call's last one (a note of the call before).
	f.reopen(t, Policy{})
	_, err = f.tools.Activate(f.ctx, "toolu_read") // a content block ends the next call
	f.must(err)
	c := f.call()
	f.must(f.a.User(f.ctx, "what now"))
	f.must(f.a.Assistant(f.ctx, "nothing", nil))
	next := f.call()
	if at := extends(next, turnSent{c.Messages(), []Message{user("what now")}}); at >= 0 {
		t.Errorf("resumed: call %d does not extend call %d and the prompt: they differ at message %d:\n%v", next.N, c.N, at, next.Messages())
	}
	rebuildAll(t, f.ctx, f.st, f.sid, []*Assembled{c, next})
}

// TestUserFirstOnlyWhenAsked: the same session under RenderVersion (what
// every other harness gets) joins the prompt to the notes before it, so
// the turn's bytes change: the rule is rendering 6's alone.
func TestUserFirstOnlyWhenAsked(t *testing.T) {
	if RenderVersion == RenderUserFirst {
		t.Fatal("RenderVersion is the user-first rendering")
	}
	f := newFenced(t, RenderVersion)
	f.script(t)
	if at := extends(f.calls[3], f.sent[1]); at < 0 {
		t.Errorf("rendering %d extends turn 2 as sent: %v", RenderVersion, f.calls[3].Messages())
	}
}

// TestUserFirstRendering: rendering 6 renders every item as rendering 5
// does, and has its rules, but for user messages (a message of its own)
// and, in the stream layout, tool results kept as the harness sent them.
func TestUserFirstRendering(t *testing.T) {
	out := "hello"
	o, err := objects.NewToolcall("toolu_1", objects.ToolcallFields{Tool: "bash", Args: map[string]any{"command": "ls"}, Status: objects.StatusOK}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []Layout{LayoutStream, LayoutLiteral} {
		v5, err := newStyle(l, 5, objects.MetadataVersion, Paths{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		v6, err := newStyle(l, RenderUserFirst, objects.MetadataVersion, Paths{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		frags := func(sty *style) string {
			var b strings.Builder
			for _, k := range []ItemKind{kToolRef, kStub, kMeta, kNote, kUser, kAssistant} {
				it := &item{kind: k, ref: objects.StaticRef(o, 7), obj: o, text: "x", style: sty}
				it.render()
				fmt.Fprintf(&b, "%s %s %v|", it.f.role, it.f.callID, it.f.blocks)
			}
			return b.String()
		}
		if frags(v5) != frags(v6) || v5.r.note("[context] x") != v6.r.note("[context] x") {
			t.Errorf("%s: rendering 6 renders items unlike rendering 5:\n%s\n%s", l, frags(v5), frags(v6))
		}
		r5, r6 := v5.rules, v6.rules
		if r5.userFirst() || !r6.userFirst() || r5.keepsSent() || r6.keepsSent() != (l == LayoutStream) || r5.inlineOutputs() != r6.inlineOutputs() || r5.patches() != r6.patches() ||
			r5.silentOwnEdit("/s") != r6.silentOwnEdit("/s") || r5.waitsForResult() != r6.waitsForResult() {
			t.Errorf("%s: rendering 6's rules are not rendering 5's with userFirst and keepsSent", l)
		}
	}
	// A user message joins nothing and nothing joins it; a silent
	// fragment after it stays in its message, and what follows does not.
	u := &frag{role: RoleUser, alone: true, blocks: []Block{{Type: BlockText, Text: "hi"}}}
	n := &frag{role: RoleUser, blocks: []Block{{Type: BlockText, Text: "[ctxstore] note"}}}
	s := &frag{role: RoleUser, silent: true}
	s.follow(u)
	if u.joins(n) || n.joins(u) || !s.joins(u) || n.joins(s) {
		t.Error("a user-first message joins or is joined")
	}
	if _, err := newStyle(LayoutStream, newestRender+1, objects.MetadataVersion, Paths{}, nil); err == nil {
		t.Error("a rendering after the newest accepted")
	}
}

// asJSON is each message as JSON: the bytes the model is sent of it.
func asJSON(t *testing.T, ms []Message) []string {
	t.Helper()
	out := make([]string, len(ms))
	for i, m := range ms {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// begins reports where cur stops repeating prev, byte for byte: -1 when
// it begins with all of prev.
func begins(prev, cur []string) int {
	for i, m := range prev {
		if i >= len(cur) || cur[i] != m {
			return i
		}
	}
	return -1
}

// TestUserFirstKeepsTheResultsAsSent: under rendering 6 a tool result the
// harness sent in its own form is rendered so from the next turn on, until
// a rebase. Turn 1 of a fenced session reads notes.txt (the harness's read:
// the file's text, where ctxstore writes a line and a content block) and,
// in a second step, runs a build whose output is too long to enter whole
// (ctxstore's form: a preview). Each turn's request (the call's messages,
// then the turn's) begins with the previous turn's, byte for byte, its
// tool results included, also after the session is reopened from its
// commits; ctxstore's metadata line and content block of the read come
// after the turn's messages, and what a later call of the turn adds starts
// a message of its own. After a pause the cache is cold and the call
// rebases: from then on the results are ctxstore's.
func TestUserFirstKeepsTheResultsAsSent(t *testing.T) {
	f := newFenced(t, RenderUserFirst)
	notes := "the secret word is heliotrope\n" + output("note", 20)
	p := f.file("notes.txt", notes)
	readArgs := map[string]any{"path": p}
	makeArgs := map[string]any{"command": "make", "timeout": 30}
	readOut := notes + "\n[21 lines]" // the harness's own form
	long := output("build", 400)
	turn1 := []Message{user("read the notes, then build"),
		toolUse("toolu_read", "read", readArgs), toolOut("toolu_read", readOut),
		toolUse("toolu_make", "bash", makeArgs), toolOut("toolu_make", long)}
	c1 := f.call()
	f.send(c1, turn1...)

	// Turn 2: the service meets turn 1 as a log, as ingestion applies it.
	_, err := f.tools.BeginTurn(f.ctx)
	f.must(err)
	f.must(f.a.User(f.ctx, "read the notes, then build"))
	f.must(f.a.Assistant(f.ctx, "", []ToolCall{{ID: "toolu_read", Name: "read", Args: readArgs}}))
	rr, err := f.tools.Read(f.ctx, p)
	f.must(err)
	rec, err := f.tools.RecordResult(f.ctx, tools.Call{ID: "toolu_read", Tool: "read", Args: readArgs}, rr)
	f.must(err)
	f.must(f.a.ToolResultSent(f.ctx, rec, readOut))
	f.must(f.a.Assistant(f.ctx, "", []ToolCall{{ID: "toolu_make", Name: "bash", Args: makeArgs}}))
	r, err := f.tools.Record(f.ctx, tools.Call{ID: "toolu_make", Tool: "bash", Args: makeArgs, Output: &long})
	f.must(err)
	f.must(f.a.ToolResultSent(f.ctx, r, long))
	f.must(f.a.Assistant(f.ctx, "built", nil))
	c2 := f.call()
	// Within turn 2, something the turn's tools do through the service
	// (the file going inactive) adds a note to the next call's context:
	// a message of its own, not a block more in the message that ended
	// the previous call's context, after which the harness sent the
	// turn's own messages.
	_, err = f.tools.Deactivate(f.ctx, rr.ID)
	f.must(err)
	c2b := f.call()
	if at := begins(asJSON(t, c2.Messages()), asJSON(t, c2b.Messages())); at >= 0 || len(c2b.Messages()) <= len(c2.Messages()) {
		t.Errorf("turn 2's second call does not extend its first by messages: message %d differs:\n%v\nvs\n%v", at, c2.Messages(), c2b.Messages())
	}
	echoArgs := map[string]any{"command": "echo hello"}
	turn2 := []Message{user("say hello"), toolUse("toolu_echo", "bash", echoArgs), toolOut("toolu_echo", "hello\n")}
	f.send(c2b, turn2...)

	// A new process: the session is resumed from its commits.
	f.reopen(t, Policy{})

	// Turn 3: the service meets turn 2.
	_, err = f.tools.BeginTurn(f.ctx)
	f.must(err)
	f.must(f.a.User(f.ctx, "say hello"))
	f.must(f.a.Assistant(f.ctx, "", []ToolCall{{ID: "toolu_echo", Name: "bash", Args: echoArgs}}))
	hello := "hello\n"
	r, err = f.tools.Record(f.ctx, tools.Call{ID: "toolu_echo", Tool: "bash", Args: echoArgs, Output: &hello})
	f.must(err)
	f.must(f.a.ToolResultSent(f.ctx, r, hello))
	f.must(f.a.Assistant(f.ctx, "said", nil))
	c3 := f.call()
	f.send(c3, user("what now"))

	for i, c := range []*Assembled{c2, c3} {
		sent := append(slices.Clone(f.sent[i].call), f.sent[i].turn...)
		prev, cur := asJSON(t, sent), asJSON(t, c.Messages())
		if at := begins(prev, cur); at >= 0 || c.Rebased {
			t.Errorf("turn %d's request does not begin with turn %d's (rebased %v): message %d differs:\n%.300s\nvs\n%.300s",
				i+2, i+1, c.Rebased, at, prev[max(at, 0)], cur[min(max(at, 0), len(cur)-1)])
		}
	}
	// ctxstore's line and content block of the read follow turn 1's
	// messages; the sent forms count as stale.
	ms := c2.Messages()
	n := len(f.sent[0].call) + len(turn1)
	if len(ms) < n+2 || ms[n].Role != RoleAssistant || !strings.Contains(fmt.Sprint(ms[n+1:]), "heliotrope") {
		t.Errorf("call 2: after turn 1's messages, want its last answer and then the read's file: %v", ms[min(n, len(ms)):])
	}
	if c3.StaleTokens == 0 {
		t.Error("call 3: the results kept as sent count no stale tokens")
	}

	// Turn 4 after a pause: the cache is cold, the call rebases, and turn
	// 1's results take ctxstore's form.
	_, err = f.tools.BeginTurn(f.ctx)
	f.must(err)
	f.must(f.a.User(f.ctx, "what now"))
	f.must(f.a.Assistant(f.ctx, "nothing", nil))
	f.now = f.now.Add(time.Hour)
	c4 := f.call()
	if !c4.Rebased {
		t.Fatalf("call 4 after an hour did not rebase (%d stale tokens)", c4.StaleTokens)
	}
	var read, build *Message
	for _, m := range c4.Messages() {
		switch m.ToolCallID {
		case "toolu_read":
			read = &m
		case "toolu_make":
			build = &m
		}
	}
	if read == nil || build == nil || len(read.Blocks) != 1 || read.Blocks[0].Type != BlockMetadata || !strings.Contains(read.Blocks[0].Text, "tool=read") {
		t.Errorf("call 4: the read's result is not ctxstore's line: %v", read)
	}
	if build == nil || len(build.Blocks) != 1 || build.Blocks[0].Text != PreviewText(long, "activate(<this call's id>) shows the output whole") {
		t.Errorf("call 4: the build's result is not ctxstore's preview: %.200s", fmt.Sprint(build))
	}
	if c4.StaleTokens != 0 {
		t.Errorf("call 4: %d stale tokens after the rebase", c4.StaleTokens)
	}
	rebuildAll(t, f.ctx, f.st, f.sid, []*Assembled{c3, c4})
	if n := len(f.calls); n != 5 {
		t.Errorf("%d calls, want 5", n)
	}
}

package tests

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// TestPiSQLite and TestPiXTDB drive the real Pi CLI (piVersion, RPC mode)
// with an offline scripted model through `ctxstore serve`, and check what
// the model received.
func TestPiSQLite(t *testing.T) {
	t.Parallel()
	piScenario(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
}

func TestPiXTDB(t *testing.T) {
	t.Parallel()
	piCLI(t) // fail or skip on Pi before starting a JVM
	piScenario(t, xtdbtest.ForTest(t))
}

var contentRe = regexp.MustCompile(`^<<content id=(\S+) version=(\d+)>>\n`)

// live returns the content the model is told is active, read as the model
// reads it (rendering version 3): each content block; a tool result that
// is the call's live output (not a one-line "status=…" or "[ctxstore]
// collapsed: …" reference); a "[ctxstore] <id> changed, version a -> b"
// patch adds to its object's content (a diff, or the arguments of the
// model's own edits it names: "your edit" is its latest write or edit); a "[ctxstore] inactive now: id, id" note
// drops them: id as shown -> text.
func live(c piContext) map[string]string {
	out := map[string]string{}
	args := map[string]string{}
	for _, m := range c.Messages {
		for _, b := range m.Content {
			if b.Type == "toolCall" {
				a, _ := json.Marshal(b.Arguments)
				args[b.ID] = string(a)
			}
		}
	}
	lastEdit := "" // the model's latest write or edit call so far: what "your edit" names
	for _, m := range c.Messages {
		if m.Role == "toolResult" && len(m.Content) == 1 && !strings.HasPrefix(m.Content[0].Text, "status=") && !strings.HasPrefix(m.Content[0].Text, "[ctxstore] collapsed: ") {
			out[m.ToolCallID] = m.Content[0].Text
			continue
		}
		for _, b := range m.Content {
			if b.Type == "toolCall" && (b.Name == "edit" || b.Name == "write") {
				lastEdit = b.ID
			}
			if mm := contentRe.FindStringSubmatch(b.Text); mm != nil {
				out[mm[1]] = b.Text
			}
			if mm := patchRe.FindStringSubmatch(b.Text); mm != nil {
				out[mm[1]] += "\n" + b.Text
				calls := mm[2]
				if strings.Contains(b.Text, ": your edit applied") {
					calls = lastEdit
				}
				for _, call := range strings.Split(calls, ", ") {
					out[mm[1]] += "\n" + args[call]
				}
			}
			if strings.HasPrefix(b.Text, "[ctxstore] inactive now: ") && !strings.Contains(b.Text, "\n") {
				for _, id := range strings.Split(strings.TrimPrefix(b.Text, "[ctxstore] inactive now: "), ", ") {
					delete(out, id)
				}
			}
		}
	}
	return out
}

// resultOutput reports whether id is a call whose output c shows in its
// tool result.
func resultOutput(c piContext, id string) bool {
	for _, m := range c.Messages {
		if m.Role == "toolResult" && m.ToolCallID == id && len(m.Content) == 1 &&
			!strings.HasPrefix(m.Content[0].Text, "status=") && !strings.HasPrefix(m.Content[0].Text, "[ctxstore] collapsed: ") {
			return true
		}
	}
	return false
}

// patchRe matches a patch: its object and, for the model's own edits, the
// calls it names.
var patchRe = regexp.MustCompile(`^\[ctxstore\] (\S+) changed, version \d+ -> \d+(?:: your (?:edit|calls (\S+(?:, \S+)*)) applied)?`)

// shownID returns the id a context shows for id (contexts may shorten
// long ids to a prefix).
func shownID(c piContext, id string) string {
	for _, m := range c.Messages {
		for _, b := range m.Content {
			if mm := contentRe.FindStringSubmatch(b.Text); mm != nil && strings.HasPrefix(id, mm[1]) {
				return mm[1]
			}
		}
	}
	return id
}

func piScenario(t *testing.T, storeURL string) {
	e := newPiEnv(t)
	e.write(t, "a.txt", "alpha v1\n"+strings.Repeat("a line of the file that takes some room\n", 20))
	// Tool outputs stay active for the current turn only; any collapsed
	// content still rendered is rebased away at the next call. The cost
	// model counts any shared prefix as served (--breakpoints prefix):
	// with the stable-boundary default, this small session's file, active
	// from its first turn, keeps the boundary at the start and no rebase
	// would pay, which is right for it but leaves rebases untested here.
	srv := startServe(t, storeURL, "--collapse-turns", "1", "--collapse-files=-1", "--stale-threshold", "1", "--breakpoints", "prefix")
	build := "for i in $(seq 1 20); do echo build-output-line $i; done"
	script := []piStep{
		{Tool: "read", Args: map[string]any{"path": "a.txt"}, ID: "call_read_a"},  // 0, turn 1
		{Tool: "bash", Args: map[string]any{"command": build}, ID: "call_bash_1"}, // 1
		{Text: "Turn 1 done."}, // 2
		{Tool: "bash", Args: map[string]any{"command": "echo second-output"}, ID: "call_bash_2"}, // 3, turn 2
		{Text: "Turn 2 done."}, // 4
		{Tool: "activate", Args: map[string]any{"id": "call_bash_1"}, ID: "call_activate"}, // 5, turn 3
		{Text: "Turn 3 done."}, // 6
		{Tool: "edit", Args: map[string]any{"path": "a.txt", "edits": []any{map[string]any{"oldText": "alpha v2", "newText": "alpha v3"}}}, ID: "call_edit"}, // 7, turn 4
		{Text: "Turn 4 done."}, // 8
		{Text: "Turn 5 done."}, // 9, turn 5
	}
	pi := startPi(t, e, srv.pxURL, script)
	pi.prompt("Read a.txt and run the build.")
	sessFile := piSessionFile(t, e.sessions)
	sid := piSessionID(t, sessFile)
	aID := piReadID(t, sessFile, "call_read_a")

	// Edited on disk between turns: the server's file tracker indexes it.
	e.write(t, "a.txt", "alpha v2\n"+strings.Repeat("a line of the file that takes some room\n", 20))
	waitVersions(t, srv, aID, 2)
	pi.prompt("What changed?")
	pi.prompt("Show me the first build output again.")
	pi.prompt("Bump a.txt to v3.")
	pi.prompt("Thanks.")
	pi.quit()

	// Context calls travel as deltas once the first one is through.
	if n, d, a, m := srv.contextCalls(); n != len(script) || d != len(script)-1 || a < len(script)/2 || m != 0 {
		t.Errorf("context calls: %d, %d with a delta log, %d with a delta answer, %d mismatches", n, d, a, m)
	}
	var info httpapi.SessionInfo
	srv.get("/v1/sessions/"+sid, &info)
	if info.Turn != 5 || !slices.Contains(info.Active, aID) || slices.Contains(info.Active, "call_bash_1") || !slices.Contains(info.Pool, "call_bash_1") {
		t.Errorf("session after 5 turns: turn %d, active %v", info.Turn, info.Active)
	}

	// Resume in a new server process (graceful stop, same store) and a new
	// Pi process continuing the session file.
	srv.Stop()
	srv2 := startServe(t, storeURL, "--collapse-turns", "1", "--collapse-files=-1", "--stale-threshold", "1", "--breakpoints", "prefix")
	pi2 := startPi(t, e, srv2.pxURL, []piStep{{Text: "Resumed."}}, "--session", sessFile)
	pi2.prompt("Still there?")
	pi2.quit()

	// Move the session: export it over HTTP, import it into a new SQLite
	// store behind a third server, and continue it there with a third Pi.
	st, bundle := srv2.fetch("GET", "/v1/sessions/"+sid+"/export", "", nil)
	if st != 200 {
		t.Fatalf("export: %d %s", st, bundle)
	}
	srv3 := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "moved.db"), "--collapse-turns", "1", "--collapse-files=-1", "--stale-threshold", "1", "--breakpoints", "prefix")
	if st, body := srv3.fetch("POST", "/v1/sessions/"+sid+"/import", "application/x-ndjson", bundle); st != 200 || !strings.Contains(string(body), `"complete":true`) {
		t.Fatalf("import: %d %s", st, body)
	}
	pi3 := startPi(t, e, srv3.pxURL, []piStep{{Text: "Moved."}}, "--session", sessFile)
	pi3.prompt("And now?")
	pi3.quit()

	cs := readContexts(t, e.ctxLog)
	if len(cs) != len(script)+2 {
		t.Fatalf("the model was called %d times, want %d", len(cs), len(script)+2)
	}
	// Prompt-cache breakpoints: ctxstore's, at the end of its stable
	// prefix and of its answer.
	if split := checkBreakpoints(t, e.ctxLog, false); split == 0 {
		t.Errorf("no request had a stable-prefix breakpoint before the end one")
	}
	rebased := make([]bool, len(cs))
	for i := range cs {
		from := srv2
		if i == len(cs)-1 {
			from = srv3
		}
		var obj httpapi.ObjectResponse
		from.get(fmt.Sprintf("/v1/objects/ctx-%s-%d", sid, i+1), &obj)
		_, rebased[i] = obj.Doc["rebase_from"]
	}
	srv2.Stop()
	srv3.Stop()

	for i, c := range cs {
		// The system prompt is ctxstore's, the same on every call: the
		// session's (Pi's prompt at the session's start, then the guide).
		if g := strings.Index(c.SystemPrompt, "# Your context (ctxstore)"); g <= 0 || c.SystemPrompt != info.SystemPrompt {
			t.Errorf("call %d: system prompt is not ctxstore's: %.200q", i, c.SystemPrompt)
		}
		for _, tool := range []string{"read", "activate", "deactivate", "pin", "unpin"} {
			if !slices.Contains(c.Tools, tool) {
				t.Errorf("call %d: tool %s not offered: %v", i, tool, c.Tools)
			}
		}
		// A tool result is one block: the call's live output, or a one-line
		// reference once collapsed (and for calls whose output is not
		// shown there: reads, ctxstore's own tools). Outputs appear only
		// there or in a content block (activated again).
		for _, m := range c.Messages {
			for _, b := range m.Content {
				ref := strings.HasPrefix(b.Text, "status=") || strings.HasPrefix(b.Text, "[ctxstore] collapsed: ")
				if m.Role == "toolResult" {
					if len(m.Content) != 1 || ref && (strings.Contains(b.Text, "\n") || len(b.Text) > 300) ||
						!ref && !strings.HasPrefix(m.ToolCallID, "call_bash_") && m.ToolCallID != "call_edit" {
						t.Errorf("call %d: tool result %s is neither its live output nor one reference: %q", i, m.ToolCallID, b.Text)
					}
				}
				for _, out := range []string{"build-output-line 7", "second-output\n"} {
					if strings.Contains(b.Text, out) && !strings.HasPrefix(b.Text, "<<content id=call_bash_") && !(m.Role == "toolResult" && strings.HasPrefix(m.ToolCallID, "call_bash_")) {
						t.Errorf("call %d: output %q outside its tool result or a content block: %.200q", i, out, b.Text)
					}
				}
			}
		}
	}

	// The active content is what the policy says, at every call.
	want := []struct {
		ids  []string
		file string
	}{
		{nil, ""}, {[]string{aID}, "alpha v1"}, {[]string{aID, "call_bash_1"}, "alpha v1"}, // turn 1
		{[]string{aID}, "alpha v2"}, {[]string{aID, "call_bash_2"}, "alpha v2"}, // turn 2: the output of turn 1 collapsed; the file's new version
		{[]string{aID}, "alpha v2"}, {[]string{aID, "call_bash_1"}, "alpha v2"}, // turn 3: activate brings the old output back
		{[]string{aID}, "alpha v2"}, {[]string{aID, "call_edit"}, "alpha v3"}, // turn 4: the edit's new version
		{[]string{aID}, "alpha v3"}, // turn 5
		{[]string{aID}, "alpha v3"}, // resumed
		{[]string{aID}, "alpha v3"}, // moved to another store
	}
	for i, c := range cs {
		l := live(c)
		got := make([]string, 0, len(l))
		for id := range l {
			got = append(got, id)
		}
		slices.Sort(got)
		var w []string
		for _, id := range want[i].ids {
			w = append(w, shownID(c, id))
		}
		slices.Sort(w)
		// Rendering 3 gives a collapsing output no note: it stays rendered,
		// in its tool result, until a rebase rewrites it as collapsed. So
		// the view may hold more outputs than the policy keeps active, but
		// only such tool results, and never fewer.
		extra := false
		for _, id := range got {
			if !slices.Contains(w, id) && !resultOutput(c, id) {
				extra = true
			}
		}
		for _, id := range w {
			if !slices.Contains(got, id) {
				extra = true
			}
		}
		if extra {
			t.Errorf("call %d: active content %v, want %v (and collapsing outputs still in their tool results)", i, got, w)
		}
		if f := want[i].file; f != "" && !strings.Contains(l[shownID(c, aID)], f) {
			t.Errorf("call %d: a.txt shows %.100q, want %q", i, l[shownID(c, aID)], f)
		}
	}
	if !strings.Contains(live(cs[6])["call_bash_1"], "build-output-line 20") {
		t.Errorf("after activate the collapsed output is not back whole: %.300q", live(cs[6])["call_bash_1"])
	}

	// Between rebases each context extends the previous one byte for byte;
	// a rebase changes bytes only from its first collapsed block.
	for i := 1; i < len(cs); i++ {
		prev, poffs := serialize(cs[i-1].Messages)
		cur, _ := serialize(cs[i].Messages)
		n := commonPrefix(prev, cur)
		if !rebased[i] {
			if n != len(prev) {
				t.Errorf("call %d does not extend call %d (no rebase); they differ from byte %d: %q vs %q", i, i-1, n, excerpt(prev, n), excerpt(cur, n))
			}
			continue
		}
		first := -1
		pl := live(cs[i-1])
		for mi, m := range cs[i-1].Messages {
			for bi, b := range m.Content {
				mm := contentRe.FindStringSubmatch(b.Text)
				if first < 0 && (mm != nil || m.Role == "toolResult") && !strings.Contains(cur, fmt.Sprintf("\"text\":%q", b.Text)) {
					first = poffs[mi][bi]
				}
			}
		}
		if first < 0 {
			t.Errorf("call %d rebased but nothing of call %d collapsed (%d live blocks)", i, i-1, len(pl))
			continue
		}
		if n < first || n == len(prev) {
			t.Errorf("call %d rebased: common prefix %d bytes, first collapsed block of call %d at %d", i, n, i-1, first)
		}
		if !strings.Contains(cur[n:], "collapsed: ") {
			t.Errorf("call %d rebased without a collapsed reference after byte %d", i, n)
		}
	}
	t.Logf("rebased calls: %v", rebased)
	if !slices.Contains(rebased, true) || rebased[10] || rebased[11] {
		t.Errorf("rebases at calls %v: want at least one, and none at the resumed call 10 or the moved call 11", rebased)
	}

	// Pi's own session file keeps the full transcript; ctxstore never wrote to it.
	msgs, raw := piTranscript(t, sessFile)
	var users, assistants int
	var bashOut, readOut string
	for _, m := range msgs {
		switch m["role"] {
		case "user":
			users++
		case "assistant":
			assistants++
		case "toolResult":
			text := fmt.Sprint(m["content"])
			switch m["toolCallId"] {
			case "call_bash_1":
				bashOut = text
			case "call_read_a":
				readOut = text
			}
		}
	}
	if users != 7 || assistants != len(cs) {
		t.Errorf("Pi's session file has %d user and %d assistant messages, want 7 and %d", users, assistants, len(cs))
	}
	if !strings.Contains(bashOut, "build-output-line 1\n") || !strings.Contains(bashOut, "build-output-line 20") || !strings.Contains(readOut, "alpha v1") {
		t.Errorf("Pi's session file lacks full tool outputs: bash %.100q, read %.100q", bashOut, readOut)
	}
	// Pi records its own system prompt (with the tools' descriptions, which
	// mention ctxstore's blocks) as system messages; the conversation holds
	// none of ctxstore's rendering.
	_ = raw
	var conv strings.Builder
	for _, m := range msgs {
		if m["role"] != "system" {
			b, _ := json.Marshal(m)
			conv.Write(b)
		}
	}
	for _, s := range []string{"<<content", "collapsed: ", "[context]", "[ctxstore]", "# Your context (ctxstore)"} {
		if strings.Contains(conv.String(), s) {
			t.Errorf("Pi's session file holds ctxstore's rendering %q", s)
		}
	}
}

func excerpt(s string, at int) string {
	return s[max(0, at-40):min(len(s), at+80)]
}

// piSessionID reads the session id from a Pi session file's header.
func piSessionID(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"type":"session"[^\n]*?"id":"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no session header", file)
	}
	return string(m[1])
}

// piReadID returns the file object id ctxstore's read reported for a call.
func piReadID(t *testing.T, file, callID string) string {
	t.Helper()
	msgs, _ := piTranscript(t, file)
	for _, m := range msgs {
		if m["role"] == "toolResult" && m["toolCallId"] == callID {
			d, _ := m["details"].(map[string]any)
			c, _ := d["ctxstore"].(map[string]any)
			if id, _ := c["id"].(string); id != "" {
				return id
			}
		}
	}
	t.Fatalf("no ctxstore read result for %s in %s", callID, file)
	return ""
}

// waitVersions waits until the store has n versions of id.
func waitVersions(t *testing.T, srv *serveProc, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var h httpapi.HistoryResponse
		srv.get("/v1/history/"+id, &h)
		if len(h.Entries) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d versions after 10 s, want %d", id, len(h.Entries), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPiFailsOpen: with the service unreachable, Pi keeps working on its
// own context and says why.
func TestPiFailsOpen(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	e.write(t, "a.txt", "alpha v1\n")
	pi := startPi(t, e, "http://127.0.0.1:9", []piStep{
		{Tool: "read", Args: map[string]any{"path": "a.txt"}, ID: "call_r"},
		{Tool: "activate", Args: map[string]any{"id": "x"}, ID: "call_a"},
		{Text: "done"},
	})
	pi.prompt("Read a.txt.")
	pi.quit()
	cs := readContexts(t, e.ctxLog)
	if len(cs) != 3 {
		t.Fatalf("the model was called %d times, want 3", len(cs))
	}
	if strings.Contains(cs[0].SystemPrompt, "# Your context (ctxstore)") {
		t.Errorf("the system prompt is ctxstore's although it is unreachable")
	}
	var results []string
	for _, m := range cs[2].Messages {
		if m.Role == "toolResult" {
			results = append(results, m.Content[0].Text)
		}
	}
	// ctxstore's tools come from the service (GET /v1/tools) when Pi loads
	// the extension: unreachable then, none is registered, so read is Pi's
	// own and activate is not a tool (the tools are defined once, in context/tools).
	if len(results) != 2 || !strings.Contains(results[0], "alpha v1") || !strings.Contains(results[1], "activate not found") {
		t.Errorf("without ctxstore, read should be Pi's own and activate fail: %q", results)
	}
	if len(pi.notices) != 1 || !strings.Contains(pi.notices[0], "unreachable") {
		t.Errorf("Pi should have said once that ctxstore is unreachable: %q", pi.notices)
	}
}

// TestPiFork: Pi's fork (a new session holding a branch of the current
// one) reaches ctxstore as a harness event recorded with the forked
// session's first context commit: which session, which entry, which side.
// The branch holds a tool call the parent recorded: the forked session
// records it as its own (renamed for it) and its context pairs the call
// with its result.
func TestPiFork(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	pi := startPi(t, e, srv.pxURL, []piStep{
		{Tool: "bash", ID: "toolu_fork_1", Args: map[string]any{"command": "echo parent-tool-output"}},
		{Text: "One."}, {Text: "Two."}, {Text: "Forked."}})
	pi.prompt("First question.")
	pi.prompt("Second question.")
	parent := piSessionID(t, piSessionFile(t, e.sessions))
	fm := pi.command(map[string]any{"type": "get_fork_messages"})
	msgs, _ := fm["messages"].([]any)
	var entry string
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["text"] == "Second question." {
			entry, _ = mm["entryId"].(string)
		}
	}
	if entry == "" {
		t.Fatalf("get_fork_messages: no entry for the second question: %v", fm)
	}
	if r := pi.command(map[string]any{"type": "fork", "entryId": entry}); r["cancelled"] == true {
		t.Fatalf("fork cancelled: %v", r)
	}
	pi.prompt("Another second question.")
	pi.quit()
	files, _ := filepath.Glob(filepath.Join(e.sessions, "*.jsonl"))
	var child string
	for _, f := range files {
		if id := piSessionID(t, f); id != parent {
			child = id
		}
	}
	if len(files) != 2 || child == "" {
		t.Fatalf("after the fork, session files %v (parent %s)", files, parent)
	}
	var c1 httpapi.ObjectResponse
	srv.get(fmt.Sprintf("/v1/objects/ctx-%s-1", child), &c1)
	h, _ := c1.Doc["harness"].(map[string]any)
	evs, _ := h["events"].([]any)
	if len(evs) != 1 {
		t.Fatalf("the forked session's first commit records events %v, want one fork", h["events"])
	}
	ev, _ := evs[0].(map[string]any)
	if ev["type"] != "fork" || ev["parent_session_id"] != parent || ev["entry_id"] != entry || ev["position"] != "before" {
		t.Errorf("fork event %v, want parent %s entry %s position before", ev, parent, entry)
	}
	// The parent's commits record no event; the child's second call none.
	var p1 httpapi.ObjectResponse
	srv.get(fmt.Sprintf("/v1/objects/ctx-%s-1", parent), &p1)
	if ph, _ := p1.Doc["harness"].(map[string]any); ph["events"] != nil {
		t.Errorf("the parent's first commit records events %v", ph["events"])
	}
	// The forked context holds the branch: the first question, not the second.
	cs := readContexts(t, e.ctxLog)
	last := cs[len(cs)-1]
	var texts []string
	for _, m := range last.Messages {
		for _, b := range m.Content {
			texts = append(texts, b.Text)
		}
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "First question.") || strings.Contains(all, "Second question.") || !strings.Contains(all, "Another second question.") {
		t.Errorf("the forked context is not the branch: %q", texts)
	}
	if !strings.Contains(all, "parent-tool-output") {
		t.Errorf("the forked context lost the parent's tool output: %q", texts)
	}
	calls := map[string]bool{}
	var results []string
	for _, m := range last.Messages {
		for _, b := range m.Content {
			if b.Type == "toolCall" {
				calls[b.ID] = true
			}
		}
		if m.Role == "toolResult" {
			if !calls[m.ToolCallID] {
				t.Errorf("the forked context's tool result %q answers no tool call before it", m.ToolCallID)
			}
			results = append(results, m.ToolCallID)
		}
	}
	if len(results) != 1 || !strings.HasPrefix(results[0], "toolu_fork_1_") {
		t.Errorf("the forked context's tool results %v, want toolu_fork_1 renamed for the child", results)
	}
	var pc httpapi.ObjectResponse
	srv.get("/v1/objects/toolu_fork_1", &pc)
	if pc.Doc["chat_ref"] != "chat:"+parent {
		t.Errorf("the parent's toolcall after the fork: %v", pc.Doc)
	}
	srv.Stop()
}

// TestPiStoreLocked: while another process holds the SQLite store's write
// lock, the context call fails (after the store's busy timeout); Pi keeps
// working on its own context and prompt, the user is told once, and told
// once again when ctxstore answers after the lock is released.
func TestPiStoreLocked(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	path := filepath.Join(t.TempDir(), "store.db")
	srv := startServe(t, "sqlite:"+path)
	pi := startPi(t, e, srv.pxURL, []piStep{{Text: "One."}, {Text: "Two."}, {Text: "Three."}})
	pi.prompt("First.")

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	pi.prompt("Second, with the store locked.")
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	pi.prompt("Third.")
	pi.quit()
	srv.Stop()

	cs := readContexts(t, e.ctxLog)
	if len(cs) != 3 {
		t.Fatalf("the model was called %d times, want 3", len(cs))
	}
	for i, want := range []bool{true, false, true} {
		if got := strings.Contains(cs[i].SystemPrompt, "# Your context (ctxstore)"); got != want {
			t.Errorf("call %d: ctxstore's prompt %v, want %v", i, got, want)
		}
	}
	if n := len(cs[1].Messages); n != 3 {
		t.Errorf("call 2 (Pi's own context) has %d messages, want 3", n)
	}
	if len(pi.notices) != 2 || !strings.Contains(pi.notices[0], "Pi keeps its own context") || !strings.Contains(pi.notices[1], "reachable again") {
		t.Errorf("notices %q: want one failure, then one recovery", pi.notices)
	}
	t.Logf("notices: %q", pi.notices)
}

// TestPiCompactionCancelled: while ctxstore answers, Pi's compaction is
// cancelled (ctxstore bounds the context itself): a /compact (RPC compact,
// reason "manual") fails and Pi's session file gets no compaction entry.
func TestPiCompactionCancelled(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	// Keep almost nothing recent, so that there is something to compact.
	if err := os.WriteFile(filepath.Join(e.agentDir, "settings.json"), []byte(`{"compaction":{"keepRecentTokens":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pi := startPi(t, e, srv.pxURL, []piStep{{Text: "One."}, {Text: "Two."}, {Text: "Three."}})
	pi.prompt("First.")
	pi.prompt("Second.")
	r := pi.try(map[string]any{"type": "compact"})
	pi.prompt("Third.")
	pi.quit()
	srv.Stop()
	if r["success"] == true || !strings.Contains(strings.ToLower(fmt.Sprint(r["error"])), "cancel") {
		t.Errorf("compact while ctxstore answers: %v, want it cancelled", r)
	}
	_, raw := piTranscript(t, piSessionFile(t, e.sessions))
	if strings.Contains(raw, `"type":"compaction"`) {
		t.Errorf("Pi's session file has a compaction entry")
	}
	if n := len(readContexts(t, e.ctxLog)); n != 3 {
		t.Errorf("the model was called %d times, want 3 (no summarization call)", n)
	}
}

// TestPiTree: moving the session's leaf (Pi's /tree, through a test
// command calling ctx.navigateTree) reaches ctxstore as a tree event with
// the next context commit, and the next context notes the switch.
func TestPiTree(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	e.exts = []string{"tests/testdata/pi/tree-command.ts"}
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	pi := startPi(t, e, srv.pxURL, []piStep{{Text: "One."}, {Text: "Two."}, {Text: "Three."}})
	pi.prompt("First.")
	pi.prompt("Second.")
	sid := piSessionID(t, piSessionFile(t, e.sessions))
	ents := pi.command(map[string]any{"type": "get_entries"})
	list, _ := ents["entries"].([]any)
	var target string
	for _, x := range list {
		en, _ := x.(map[string]any)
		if m, _ := en["message"].(map[string]any); m["role"] == "assistant" && strings.Contains(fmt.Sprint(m["content"]), "One.") {
			target, _ = en["id"].(string)
		}
	}
	oldLeaf, _ := ents["leafId"].(string)
	if target == "" || oldLeaf == "" {
		t.Fatalf("get_entries: no assistant entry for the first answer, or no leaf: %v", ents)
	}
	if r := pi.try(map[string]any{"type": "prompt", "message": "/tree-to " + target}); r["success"] != true {
		t.Fatalf("/tree-to: %v", r)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		tr := pi.command(map[string]any{"type": "get_tree"})
		if tr["leafId"] == target {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leaf is %v after /tree-to %s", tr["leafId"], target)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pi.prompt("Third, on the first branch.")
	pi.quit()

	cs := readContexts(t, e.ctxLog)
	last := cs[len(cs)-1]
	var texts []string
	for _, m := range last.Messages {
		for _, b := range m.Content {
			texts = append(texts, b.Text)
		}
	}
	// ctxstore's stream is append-only: the model is told the log was
	// replaced, and the new branch continues from there.
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "[ctxstore] the harness's message log was replaced") || texts[len(texts)-1] != "Third, on the first branch." {
		t.Errorf("the context after /tree does not note the switch and continue on the new branch: %q", texts)
	}
	var c3 httpapi.ObjectResponse
	srv.get(fmt.Sprintf("/v1/objects/ctx-%s-3", sid), &c3)
	h, _ := c3.Doc["harness"].(map[string]any)
	evs, _ := h["events"].([]any)
	if len(evs) != 1 {
		t.Fatalf("the call after /tree records events %v, want one tree event", h["events"])
	}
	ev, _ := evs[0].(map[string]any)
	if ev["type"] != "tree" || ev["new_leaf_id"] != target || ev["old_leaf_id"] != oldLeaf {
		t.Errorf("tree event %v, want old leaf %s, new leaf %s", ev, oldLeaf, target)
	}
	srv.Stop()
}

// TestPiOverflowCompaction: when the provider refuses a request as too
// long (Anthropic's "prompt is too long"), ctxstore lets Pi compact (it
// cancels every other compaction) and records the compaction as a harness
// event with the retried call's commit.
func TestPiOverflowCompaction(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	if err := os.WriteFile(filepath.Join(e.agentDir, "settings.json"), []byte(`{"compaction":{"keepRecentTokens":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls, overflowed := 0, false
	e.respond = func(req messagesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(string(req.System), "context summarization assistant") {
			return piStep{Text: "## Goal\nThe user asked two questions."}
		}
		calls++
		if calls == 3 && !overflowed {
			overflowed = true
			return piStep{Error: "prompt is too long: 213462 tokens > 200000 maximum"}
		}
		return piStep{Text: fmt.Sprintf("Answer %d.", calls)}
	}
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	pi := startPi(t, e, srv.pxURL, nil)
	pi.prompt("First.")
	pi.prompt("Second.")
	var errs []string
	pi.modelErrors = &errs
	pi.prompt("Third.") // overflows once: the agent ends, Pi compacts and retries
	pi.waitFor("agent_end")
	pi.quit()
	if len(errs) != 1 || !strings.Contains(errs[0], "prompt is too long") {
		t.Errorf("model errors %q, want the one overflow", errs)
	}
	sid := piSessionID(t, piSessionFile(t, e.sessions))
	_, raw := piTranscript(t, piSessionFile(t, e.sessions))
	if !strings.Contains(raw, `"type":"compaction"`) {
		t.Fatalf("Pi did not compact after the overflow")
	}
	var info httpapi.SessionInfo
	srv.get("/v1/sessions/"+sid, &info)
	var found map[string]any
	for n := 1; n <= info.Calls; n++ {
		var c httpapi.ObjectResponse
		srv.get(fmt.Sprintf("/v1/objects/ctx-%s-%d", sid, n), &c)
		h, _ := c.Doc["harness"].(map[string]any)
		if evs, _ := h["events"].([]any); len(evs) > 0 {
			if found != nil {
				t.Errorf("more than one call records events: %v", evs)
			}
			found, _ = evs[0].(map[string]any)
		}
	}
	if found["type"] != "compaction" || found["reason"] != "overflow" || found["entry_id"] == nil {
		t.Errorf("the compaction event %v, want type compaction, reason overflow, its entry", found)
	}
	srv.Stop()
}

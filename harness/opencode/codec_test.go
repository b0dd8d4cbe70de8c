package opencode

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/events"
)

// fixture is a session opencode 1.18.33 wrote (a prompt, a bash call and
// its output, an answer), its rows as ReadDB gives them.
func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newDB makes a database with the tables Place writes, their columns
// those of the rows (untyped), as opencode's migrations would have made
// them.
func newDB(t *testing.T, rows []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "opencode.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cols := map[string]map[string]bool{TableSession: {}, TableMessage: {}, TablePart: {}}
	readRows(rows, func(_ int, r *Row) {
		for c := range r.Row {
			cols[r.Table][c] = true
		}
	}, func(n int, msg string, _ []byte) { t.Fatalf("line %d: %s", n, msg) })
	for table, cs := range cols {
		var names []string
		for c := range cs {
			names = append(names, `"`+c+`"`)
		}
		sort.Strings(names)
		if _, err := db.Exec(fmt.Sprintf("CREATE TABLE %s (%s)", table, strings.Join(names, ", "))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`CREATE TABLE project (id text PRIMARY KEY, worktree text, time_created integer, time_updated integer, sandboxes text)`); err != nil {
		t.Fatal(err)
	}
	return path
}

func sessionLines(t *testing.T, path string) []harness.DBSession {
	t.Helper()
	ss, err := Codec{}.ReadDB(path)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func joined(rows []harness.DBRow) []byte {
	var b []byte
	for _, r := range rows {
		b = append(b, r.Line...)
	}
	return b
}

// TestPlaceAndRead: rows placed into a database read back as the same
// lines, byte for byte (the rows are restorable), and the database is
// recognised as opencode's.
func TestPlaceAndRead(t *testing.T) {
	rows := fixture(t)
	path := newDB(t, rows)
	head, _ := os.ReadFile(path)
	if !(Codec{}).LooksDB(path, head[:100]) {
		t.Fatal("LooksDB: not recognised")
	}
	if (Codec{}).LooksDB(path, []byte("{}")) {
		t.Fatal("LooksDB: a JSON file recognised")
	}
	id, err := Place(context.Background(), path, rows, false)
	if err != nil || id != SessionOf(rows) {
		t.Fatalf("Place: %q %v", id, err)
	}
	ss := sessionLines(t, path)
	if len(ss) != 1 || len(ss[0].Problems) != 0 {
		t.Fatalf("sessions: %+v", ss)
	}
	if got := joined(ss[0].Rows); !bytes.Equal(got, rows) {
		t.Fatalf("rows read back differ:\n%s\nwant\n%s", got, rows)
	}
	if ss[0].Cwd != "/tmp/ocx/work" || ss[0].Model != "scripted-1" || ss[0].Version != "1.18.33" {
		t.Errorf("session: %+v", ss[0])
	}
	if !ss[0].Rows[1].Human || ss[0].Rows[1].Summary != `"hello TOOLS please"` {
		t.Errorf("the prompt's message row: %+v", ss[0].Rows[1])
	}
	if _, err := Place(context.Background(), path, rows, false); err == nil {
		t.Fatal("Place replaced a session that is there")
	}
	if _, err := Place(context.Background(), path, rows, true); err != nil {
		t.Fatalf("Place with force: %v", err)
	}
	if got := joined(sessionLines(t, path)[0].Rows); !bytes.Equal(got, rows) {
		t.Fatal("rows after a forced Place differ")
	}
	// A copy under another session shares no row with the original and
	// reads as the same conversation.
	cp, err := SetSessionID(rows, "ses_copy0000000000000000000000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(context.Background(), path, cp, false); err != nil {
		t.Fatalf("Place of the copy: %v", err)
	}
	ss = sessionLines(t, path)
	if len(ss) != 2 {
		t.Fatalf("%d sessions", len(ss))
	}
	for _, s := range ss {
		a, _ := Decode(joined(s.Rows))
		b, _ := Decode(rows)
		if conv(a) != conv(b) {
			t.Errorf("session %s reads as\n%s\nwant\n%s", s.ID, conv(a), conv(b))
		}
	}
}

// conv is the conversation of events: prompts, responses, calls and
// results, one a line.
func conv(evs []events.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e.Type {
		case events.Prompt, events.Response:
			fmt.Fprintf(&b, "%s: %s\n", e.Type, e.Text)
		case events.ToolCall:
			in, _ := json.Marshal(e.Tool.Input)
			fmt.Fprintf(&b, "call %s %s %s\n", e.Tool.ID, e.Tool.Name, in)
		case events.ToolResult:
			fmt.Fprintf(&b, "result %s %v: %s\n", e.Tool.ID, e.Result.IsError, e.Result.Content)
		case events.System:
			if e.Subtype == events.SubtypeCompactionSummary {
				fmt.Fprintf(&b, "summary: %s\n", e.Text)
			}
		}
	}
	return b.String()
}

// TestReadInProgressAndDamage: a response still being written stops the
// session's rows before it; a row whose data does not decode is reported
// by table and id, and kept as read.
func TestReadInProgressAndDamage(t *testing.T) {
	rows := fixture(t)
	path := newDB(t, rows)
	if _, err := Place(context.Background(), path, rows, false); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sid := SessionOf(rows)
	// The last response loses its completion time: in progress.
	if _, err := db.Exec(`UPDATE message SET data = json_remove(data, '$.time.completed') WHERE id = 'msg_24a58dedf001DHIowWRDpRcaov'`); err != nil {
		t.Fatal(err)
	}
	// A part's data is damaged.
	if _, err := db.Exec(`UPDATE part SET data = '{"type":"text",' WHERE id = 'prt_24a58c8da0017Qk1ySSLvFKtzj'`); err != nil {
		t.Fatal(err)
	}
	ss := sessionLines(t, path)
	if len(ss) != 1 || ss[0].ID != sid {
		t.Fatalf("%+v", ss)
	}
	for _, r := range ss[0].Rows {
		if strings.Contains(r.Key, "msg_24a58dedf001") || strings.Contains(r.Key, "prt_24a58e1") {
			t.Errorf("row of the response in progress read: %s", r.Key)
		}
	}
	if len(ss[0].Rows) != 7 {
		t.Errorf("%d rows, want 7 (session, prompt and its part, the tool step and its 3 parts)", len(ss[0].Rows))
	}
	if len(ss[0].Problems) != 1 || ss[0].Problems[0].Table != TablePart || ss[0].Problems[0].ID != "prt_24a58c8da0017Qk1ySSLvFKtzj" {
		t.Fatalf("problems: %+v", ss[0].Problems)
	}
	if !bytes.Contains(joined(ss[0].Rows), []byte(`{\"type\":\"text\",`)) {
		t.Error("the damaged row is not kept as read")
	}
	evs, err := Decode(joined(ss[0].Rows))
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for _, e := range evs {
		if e.Type == events.Output && e.Subtype == "damaged" {
			damaged++
		}
	}
	if damaged != 1 {
		t.Errorf("%d damaged events, want 1", damaged)
	}
}

// TestDecode: the fixture as events.
func TestDecode(t *testing.T) {
	evs, err := Decode(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "prompt: \"hello TOOLS please\"\n" +
		"call toolu_2 bash {\"command\":\"echo hello-from-bash\",\"description\":\"echo\"}\n" +
		"result toolu_2 false: hello-from-bash\n\n" +
		"response: answer 3\n"
	if got := conv(evs); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if evs[0].Type != events.System || evs[0].Subtype != "init" || evs[0].Metadata["cwd"] != "/tmp/ocx/work" {
		t.Errorf("first event: %+v", evs[0])
	}
}

// TestEncode: events of another harness as opencode rows: shell commands
// and reads mapped to bash and read, a tool opencode lacks as text, a
// call without a result given an error; decoded again, the conversation
// is what was encoded, restated.
func TestEncode(t *testing.T) {
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	tick := func(i int) time.Time { return at.Add(time.Duration(i) * time.Second) }
	evs := []events.Event{
		{Type: events.Prompt, Source: "user", Text: "look around", Time: tick(0)},
		{Type: events.Thinking, Text: "hmm", Signature: "sig", MessageID: "m1", Model: "claude-x", Time: tick(1)},
		{Type: events.ToolCall, MessageID: "m1", Model: "claude-x", Time: tick(1), Tool: &events.Tool{ID: "c1", Name: "Bash", Input: map[string]any{"command": "ls", "description": "list"}}},
		{Type: events.ToolCall, MessageID: "m1", Model: "claude-x", Time: tick(1), Tool: &events.Tool{ID: "c2", Name: "Read", Input: map[string]any{"file_path": "/w/a.txt", "offset": 2, "limit": 3}}},
		{Type: events.ToolCall, MessageID: "m1", Model: "claude-x", Time: tick(1), Tool: &events.Tool{ID: "c3", Name: "TodoWrite", Input: map[string]any{"todos": []any{}}}},
		{Type: events.ToolCall, MessageID: "m1", Model: "claude-x", Time: tick(1), Tool: &events.Tool{ID: "c4", Name: "Bash", Input: map[string]any{"command": "sleep 9"}}},
		{Type: events.ToolResult, Time: tick(2), Tool: &events.Tool{ID: "c1"}, Result: &events.Result{Content: "a.txt"}},
		{Type: events.ToolResult, Time: tick(2), Tool: &events.Tool{ID: "c2"}, Result: &events.Result{Content: "no such file", IsError: true}},
		{Type: events.ToolResult, Time: tick(2), Tool: &events.Tool{ID: "c3"}, Result: &events.Result{Content: "todos saved"}},
		{Type: events.Response, MessageID: "m2", Model: "claude-x", Text: "done", Time: tick(3)},
		{Type: events.Metric, Subtype: "usage", Time: tick(3)},
	}
	b, lost, err := EncodeLost(evs)
	if err != nil {
		t.Fatal(err)
	}
	if lost != (Lost{Thinking: 1, Events: 1, AsText: 1, Unanswered: 1}) {
		t.Errorf("lost: %+v", lost)
	}
	if err := validate(b); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := "prompt: look around\n" +
		"call c1 bash {\"command\":\"ls\",\"description\":\"list\"}\n" +
		"result c1 false: a.txt\n" +
		"call c2 read {\"filePath\":\"/w/a.txt\",\"limit\":3,\"offset\":2}\n" +
		"result c2 true: no such file\n" +
		"response: [I called the tool TodoWrite (call c3), which this opencode session does not have, with input: {\"todos\":[]}]\n" +
		"call c4 bash {\"command\":\"sleep 9\"}\n" +
		"result c4 true: [no result was recorded for this tool call]\n" +
		"prompt: [Result of the tool call TodoWrite (call c3):]\ntodos saved\n" +
		"response: done\n"
	if got := conv(back); got != want {
		t.Errorf("decoded:\n%s\nwant\n%s", got, want)
	}
	// Encoding is deterministic, and the rows hold together: one session,
	// every message and part in it, parts after their message, ids
	// ascending in file order.
	b2, _ := Encode(evs)
	if !bytes.Equal(b, b2) {
		t.Error("two encodings differ")
	}
	sid := SessionOf(b)
	if !strings.HasPrefix(sid, "ses_") || len(sid) != 30 {
		t.Errorf("session id %q", sid)
	}
	seen := map[string]bool{}
	prev := map[string]string{}
	readRows(b, func(n int, r *Row) {
		if r.Table != TableSession && r.str("session_id") != sid {
			t.Errorf("line %d: session %s", n, r.str("session_id"))
		}
		if r.Table == TablePart && !seen[r.str("message_id")] {
			t.Errorf("line %d: part before its message", n)
		}
		seen[r.ID()] = true
		if r.ID() <= prev[r.Table] {
			t.Errorf("line %d: %s id %s not after %s", n, r.Table, r.ID(), prev[r.Table])
		}
		prev[r.Table] = r.ID()
	}, func(n int, msg string, _ []byte) { t.Errorf("line %d: %s", n, msg) })

	// Placed into a database and read back: the same lines, in order.
	path := newDB(t, b)
	if _, err := Place(context.Background(), path, b, false); err != nil {
		t.Fatal(err)
	}
	if got := joined(sessionLines(t, path)[0].Rows); !bytes.Equal(got, b) {
		t.Errorf("placed rows read back differ:\n%s\nwant\n%s", got, b)
	}
	c, err := SetCwd(b, "/w")
	if err != nil || !bytes.Contains(c, []byte(`"directory":"/w"`)) || !bytes.Contains(c, []byte(`\"cwd\":\"/w\"`)) {
		t.Errorf("SetCwd: %v\n%s", err, c)
	}
}

// TestMapTool: every harness's shell, read, edit and write calls map to
// opencode's; what has no counterpart does not.
func TestMapTool(t *testing.T) {
	for _, c := range []struct {
		name string
		in   map[string]any
		want string
		args string
	}{
		{"Bash", map[string]any{"command": "ls", "description": "d"}, "bash", `{"command":"ls","description":"d"}`},
		{"bash", map[string]any{"command": "ls", "timeout": 5}, "bash", `{"command":"ls","timeout":5}`},
		{"exec_command", map[string]any{"cmd": "ls -a", "workdir": "/w"}, "bash", `{"command":"ls -a","workdir":"/w"}`},
		{"shell", map[string]any{"command": []any{"bash", "-lc", "ls"}}, "bash", `{"command":"ls"}`},
		{"Read", map[string]any{"file_path": "/a", "offset": 3}, "read", `{"filePath":"/a","offset":3}`},
		{"read", map[string]any{"path": "/a", "limit": 2}, "read", `{"filePath":"/a","limit":2}`},
		{"read", map[string]any{"filePath": "/a"}, "read", `{"filePath":"/a"}`},
		{"Edit", map[string]any{"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true}, "edit", `{"filePath":"/a","newString":"y","oldString":"x","replaceAll":true}`},
		{"edit", map[string]any{"path": "/a", "oldText": "x", "newText": "y"}, "edit", `{"filePath":"/a","newString":"y","oldString":"x"}`},
		{"Write", map[string]any{"file_path": "/a", "content": "c"}, "write", `{"content":"c","filePath":"/a"}`},
		{"Grep", map[string]any{"pattern": "p", "glob": "*.go"}, "grep", `{"include":"*.go","pattern":"p"}`},
		{"Glob", map[string]any{"pattern": "**/*.go"}, "glob", `{"pattern":"**/*.go"}`},
		{"TodoWrite", map[string]any{"todos": []any{}}, "", ""},
		{"apply_patch", map[string]any{"input": "*** Begin Patch"}, "", ""},
		{"edit", map[string]any{"path": "/a", "edits": []any{}}, "", ""},
		{"Task", map[string]any{"prompt": "p"}, "", ""},
	} {
		name, args, ok := MapTool(c.name, c.in)
		if c.want == "" {
			if ok {
				t.Errorf("%s: mapped to %s", c.name, name)
			}
			continue
		}
		got, _ := json.Marshal(args)
		if !ok || name != c.want || string(got) != c.args {
			t.Errorf("%s: %s %s %v, want %s %s", c.name, name, got, ok, c.want, c.args)
		}
	}
}

package pi

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/codex"
	"github.com/ctxstore/ctxstore/harness/opencode"
	"github.com/ctxstore/ctxstore/objects/events"
)

const editBase = `{"type":"session","version":3,"id":"p1","timestamp":"2026-12-01T10:00:00Z","cwd":"/w"}
{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"read the key","timestamp":1}}
{"type":"message","id":"e2","parentId":"e1","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"read","arguments":{"path":".env"}}],"stopReason":"toolUse","timestamp":2}}
{"type":"message","id":"e3","parentId":"e2","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"KEY=secret"}],"timestamp":3}}
{"type":"message","id":"e4","parentId":"e3","message":{"role":"assistant","content":[{"type":"text","text":"The key is sec"}],"stopReason":"length","timestamp":4}}
`

// TestEdit: a context_edit entry's target and action, with null, an
// absent or an undecodable replacement taken for an omission; other
// entries are no edits.
func TestEdit(t *testing.T) {
	cases := []struct {
		line         string
		ok           bool
		target, text string
		omit         bool
	}{
		{`{"type":"context_edit","targetId":"e4","replacement":null}`, true, "e4", "", true},
		{`{"type":"context_edit","targetId":"e4"}`, true, "e4", "", true},
		{`{"type":"context_edit","targetId":"e3","replacement":{"content":[{"type":"text","text":"[redacted]"}]}}`, true, "e3", "[redacted]", false},
		{`{"type":"context_edit","targetId":"e1","replacement":{"content":"say hello"}}`, true, "e1", "say hello", false},
		{`{"type":"context_edit","targetId":"e3","replacement":"x"}`, true, "e3", "", true},
		{`{"type":"context_edit","targetId":"e3","replacement":{"content":null}}`, true, "e3", "", true},
		{`{"type":"context_edit","entryId":"e3","replacement":null}`, false, "", "", false},
		{`{"type":"context_edit","replacement":null}`, false, "", "", false},
		{`{"type":"message","targetId":"e4"}`, false, "", "", false},
	}
	for _, c := range cases {
		e, err := DecodeEntry(harness.Record{Data: []byte(c.line)})
		if err != nil {
			t.Fatal(err)
		}
		ed, ok := e.Edit()
		if ok != c.ok || ed.Target != c.target || ed.Omit != c.omit || ContentText(ed.Content) != c.text {
			t.Errorf("%s: got %+v %v", c.line, ed, ok)
		}
	}
}

// TestReadHonoursEdits: the thread leaves an omitted message out and has
// a replaced one's replacement in its place; the entries are known, not
// problems.
func TestReadHonoursEdits(t *testing.T) {
	file := editBase +
		`{"type":"context_edit","id":"e5","parentId":"e4","targetId":"e4","replacement":null}
{"type":"context_edit","id":"e6","parentId":"e5","targetId":"e3","replacement":{"content":[{"type":"text","text":"KEY=[redacted]"}]}}
`
	s := &harness.Session{Report: harness.Report{Types: map[string]int{}}}
	recs, err := harness.ReadRecords(strings.NewReader(file), &s.Report, known)
	if err != nil {
		t.Fatal(err)
	}
	Read(s, recs)
	if len(s.Report.Problems) > 0 || len(s.Report.Unknown) > 0 {
		t.Fatalf("problems %v, unknown %v", s.Report.Problems, s.Report.Unknown)
	}
	var roles, outputs []string
	for _, m := range s.Messages {
		roles = append(roles, string(m.Role))
		outputs = append(outputs, m.Output+m.Text)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool_result" {
		t.Fatalf("roles %s (%q)", got, outputs)
	}
	if s.Messages[2].Output != "KEY=[redacted]" || strings.Contains(strings.Join(outputs, " "), "secret") {
		t.Errorf("outputs %q", outputs)
	}
}

// TestEditsMaterialize: the commit codec reads edits as
// system/context_edit events, and every session writer honours them: Pi's
// file, Claude Code's, Codex's rollout and opencode's rows hold the
// replacement and not the omitted answer.
func TestEditsMaterialize(t *testing.T) {
	file := editBase +
		`{"type":"context_edit","id":"e5","parentId":"e4","targetId":"e4","replacement":null}
{"type":"context_edit","id":"e6","parentId":"e5","targetId":"e3","replacement":{"content":[{"type":"text","text":"KEY=[redacted]"}]}}
`
	evs, err := Decode([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	edits := 0
	for _, e := range evs {
		if e.Type == events.System && e.Subtype == events.SubtypeContextEdit {
			edits++
		}
	}
	if edits != 2 {
		t.Fatalf("%d context_edit events in %+v", edits, evs)
	}
	for name, write := range map[string]func([]events.Event) ([]byte, error){"pi": SessionFile, "claude-code": claudecode.SessionFile, "codex": codex.Encode, "opencode": opencode.Encode} {
		out, err := write(evs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if bytes.Contains(out, []byte("secret")) || bytes.Contains(out, []byte("The key is sec")) {
			t.Errorf("%s: the file still holds what the edits took out:\n%s", name, out)
		}
		if !bytes.Contains(out, []byte("KEY=[redacted]")) {
			t.Errorf("%s: the replacement is missing:\n%s", name, out)
		}
	}
}

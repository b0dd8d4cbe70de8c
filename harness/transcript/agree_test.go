package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/pi"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
)

// The two views of a session file (docs/replay.md "Replay and import
// agree"): the replay view is what Read gives (the main thread as the
// model saw it); the import view is the events the format's commit codec
// decodes from the file's lines, which is what an imported chain holds
// (the importer stores the lines byte for byte). They agree when every
// message of the replay view is the import view's message of the same id
// with the same content, and the replay's messages come in the order the
// import view has them.

// eventText is a prompt's or summary's text as the harness sends it.
func eventText(e events.Event) string { return e.Text }

// piText is a Pi summary's text as Pi sends it (wrapped in the texts
// Pi's convertToLlm gives it).
func piText(e events.Event) string {
	switch {
	case e.Type == events.System && e.Subtype == events.SubtypeCompactionSummary:
		return pi.CompactionPrefix + e.Text + pi.CompactionSuffix
	case e.Type == events.System:
		return pi.BranchPrefix + e.Text + pi.BranchSuffix
	}
	return e.Text
}

// TestClaudeCodeViewsAgree: for every Claude Code dataset file, every
// conversation the replay reads agrees with the file's decoded events.
func TestClaudeCodeViewsAgree(t *testing.T) {
	ds := datasets(t)
	files, _ := filepath.Glob(filepath.Join(ds, "claude-code", "*.jsonl"))
	raw, _ := filepath.Glob(filepath.Join(ds, "claude-code", "raw", "*.jsonl"))
	files = append(files, raw...)
	if len(files) == 0 {
		t.Fatal("no Claude Code dataset files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			agreeFile(t, path, claudecode.Decode, eventText)
		})
	}
}

// TestPiViewsAgree: the same for every Pi dataset file.
func TestPiViewsAgree(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(datasets(t), "pi", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no Pi dataset files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			agreeFile(t, path, pi.Decode, piText)
		})
	}
}

func agreeFile(t *testing.T, path string, decode func([]byte) ([]events.Event, error), seen func(events.Event) string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := ReadAllFile(path)
	if err != nil {
		t.Fatal(err)
	}
	imp := importView(t, b, decode, seen)
	n := 0
	for _, s := range ss {
		n += len(s.Messages)
		if diffs := disagreements(s.Messages, imp); len(diffs) > 0 {
			if len(diffs) > 10 {
				diffs = append(diffs[:10], fmt.Sprintf("... %d more", len(diffs)-10))
			}
			t.Errorf("session %s: the replay and import views differ:\n%s", s.ID, strings.Join(diffs, "\n"))
		}
	}
	if n == 0 {
		t.Fatal("the replay view has no messages")
	}
}

// viewMessage is one message as both views can say it. Key names it the
// same way in both: a user message by its record id, an assistant message
// by its message id, a tool result by its call id (ids are empty in Pi
// version 1 files, which have none).
type viewMessage struct {
	Key    string
	Text   string
	Meta   bool
	Calls  []string // id, name and arguments (JSON) of each tool call
	Output string
	Error  bool
}

func (m viewMessage) String() string {
	b, _ := json.Marshal(struct {
		Text   string   `json:",omitempty"`
		Meta   bool     `json:",omitempty"`
		Calls  []string `json:",omitempty"`
		Output string   `json:",omitempty"`
		Error  bool     `json:",omitempty"`
	}{clip(m.Text), m.Meta, m.Calls, clip(m.Output), m.Error})
	return string(b)
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}

func callString(id, name string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return id + " " + name + " " + string(b)
}

// importView reads the decoded events of each line of the file as
// messages, in order: a prompt or a compaction summary is a user message;
// a line's responses, thinking and tool calls are one assistant message,
// merged with an earlier one of the same message id (texts joined by a
// blank line, as the replay joins streamed parts; an unknown block is the
// note "[type block]"); a tool result is a tool result message.
func importView(t *testing.T, b []byte, decode func([]byte) ([]events.Event, error), seen func(events.Event) string) []*viewMessage {
	var out []*viewMessage
	byMsg := map[string]*viewMessage{}
	texts := map[*viewMessage][]string{}
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		evs, err := decode(line)
		if err != nil {
			t.Fatal(err)
		}
		var cur *viewMessage // the line's assistant message
		assistant := func(id string) *viewMessage {
			if cur != nil {
				return cur
			}
			if m, ok := byMsg[id]; ok && id != "" {
				cur = m
				return m
			}
			cur = &viewMessage{Key: "assistant " + id}
			out = append(out, cur)
			byMsg[id] = cur
			return cur
		}
		for _, e := range evs {
			switch {
			case e.Type == events.Prompt || e.Type == events.System && e.Subtype == events.SubtypeCompactionSummary:
				out = append(out, &viewMessage{Key: "user " + e.ID, Text: seen(e), Meta: e.Meta || (e.Type == events.Prompt && e.Source != "user")})
			case e.Type == events.Response:
				m := assistant(e.MessageID)
				texts[m] = append(texts[m], e.Text)
			case e.Type == events.Thinking:
				assistant(e.MessageID)
			case e.Type == events.ToolCall:
				m := assistant(e.MessageID)
				m.Calls = append(m.Calls, callString(e.Tool.ID, e.Tool.Name, e.Tool.Input))
			case e.Type == events.Output && strings.HasPrefix(e.Subtype, "block/") && e.Source == "assistant":
				m := assistant(e.MessageID)
				texts[m] = append(texts[m], "["+strings.TrimPrefix(e.Subtype, "block/")+" block]")
			case e.Type == events.Error && e.Subtype == "synthetic":
				// A message Claude Code wrote itself ("<synthetic>"): an
				// error event to import, an assistant message (without
				// usage) to the replay, which sends what the harness sent.
				m := assistant(e.MessageID)
				texts[m] = append(texts[m], e.Text)
			case e.Type == events.Error && (e.Subtype == "aborted" || e.Subtype == "error"):
				// Pi's aborted or errored response: the replay keeps it
				// without its text and tool calls, as Pi leaves them out
				// of later contexts.
				if cur != nil {
					cur.Calls, texts[cur] = nil, nil
				}
			case e.Type == events.ToolResult:
				m := &viewMessage{Key: "result " + e.Tool.ID}
				if e.Result != nil {
					m.Output, m.Error = e.Result.Content, e.Result.IsError
				}
				out = append(out, m)
			}
		}
	}
	for m, parts := range texts {
		var keep []string
		for _, p := range parts {
			if p != "" {
				keep = append(keep, p)
			}
		}
		m.Text = strings.Join(keep, "\n\n")
	}
	return out
}

func replayMessage(m conversation.Message) viewMessage {
	switch m.Role {
	case conversation.RoleUser:
		return viewMessage{Key: "user " + m.ID, Text: m.Text, Meta: m.Meta}
	case conversation.RoleAssistant:
		v := viewMessage{Key: "assistant " + m.ID, Text: m.Text}
		for _, c := range m.ToolCalls {
			v.Calls = append(v.Calls, callString(c.ID, c.Name, c.Args))
		}
		return v
	default:
		return viewMessage{Key: "result " + m.ToolCallID, Output: m.Output, Error: m.IsError}
	}
}

// disagreements lists the replay's messages that are not, in order, in
// the import view: each must be equal to an import message of the same key
// that comes after the one the message before it matched.
func disagreements(msgs []conversation.Message, imp []*viewMessage) []string {
	var out []string
	p := 0
	for i, m := range msgs {
		r := replayMessage(m)
		got := r.String()
		found, near := -1, -1
		for j := p; j < len(imp); j++ {
			if imp[j].Key != r.Key {
				continue
			}
			if near < 0 {
				near = j
			}
			if imp[j].String() == got {
				found = j
				break
			}
		}
		switch {
		case found >= 0:
			p = found + 1
		case near >= 0:
			out = append(out, fmt.Sprintf("message %d (%s):\n  replay %s\n  import %s", i, r.Key, got, imp[near]))
		default:
			out = append(out, fmt.Sprintf("message %d (%s): not in the import view after message %d of it", i, r.Key, p))
		}
	}
	return out
}

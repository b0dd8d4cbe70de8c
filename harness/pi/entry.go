package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/harness"
)

// Types are the Pi session entry types the reader knows.
var Types = map[string]harness.Kind{
	"session":               harness.KindSpecial, // the header
	"message":               harness.KindMessage,
	"compaction":            harness.KindSpecial,
	"branch_summary":        harness.KindSpecial,
	"custom_message":        harness.KindMessage, // extension messages the model sees
	"model_change":          harness.KindSkip,
	"thinking_level_change": harness.KindSkip,
	"custom":                harness.KindSkip, // extension state, not in context
	"label":                 harness.KindSkip,
	"session_info":          harness.KindSkip,
	// context_edit (Pi 0.87 and later): a message replaced or omitted in
	// future model context, history untouched.
	"context_edit": harness.KindSpecial,
}

// Entry is one entry of a Pi session file, decoded: the one reading of a
// line's JSON object in this package. The replay's thread ([Read]), the
// commit codec's events ([Decode]) and the importer's heads ([ReadHead])
// are all made from Entries, so they cannot read an entry two ways.
type Entry struct {
	Type      harness.Str     `json:"type"`
	ID        harness.Str     `json:"id"`
	ParentID  harness.OptStr  `json:"parentId"`
	Timestamp harness.Str     `json:"timestamp"`
	Message   json.RawMessage `json:"message"`
	// The header's fields.
	Version       harness.Num `json:"version"`
	Cwd           harness.Str `json:"cwd"`
	ModelID       harness.Str `json:"modelId"`
	Provider      harness.Str `json:"provider"`
	ThinkingLevel harness.Str `json:"thinkingLevel"`
	BranchedFrom  harness.Str `json:"branchedFrom"`
	// Compaction, branch summary and custom message entries.
	Summary          harness.Str     `json:"summary"`
	Content          json.RawMessage `json:"content"`
	CustomType       harness.Str     `json:"customType"`
	Display          json.RawMessage `json:"display"`
	FirstKeptEntryID harness.Str     `json:"firstKeptEntryId"`
	TokensBefore     harness.Num     `json:"tokensBefore"`
	FromID           harness.Str     `json:"fromId"`
	// A context_edit entry (Pi's ContextEditEntry): the entry whose
	// message it edits, and {"content": ...}, the content that replaces
	// the message's own (its role, tool call id and other fields stay),
	// or JSON null: the message is omitted.
	TargetID    harness.Str     `json:"targetId"`
	Replacement json.RawMessage `json:"replacement"`

	// Line is the entry's line in its file or artifact; Data its JSON.
	Line int             `json:"-"`
	Data json.RawMessage `json:"-"`
	// Msg is a message entry's agent message; MsgErr says why there is
	// none (not an object, or it does not decode).
	Msg    *Message `json:"-"`
	MsgErr error    `json:"-"`
}

var errNoMessage = errors.New("message entry without a message object")

// DecodeEntry decodes one entry. It fails only when rc is not a JSON
// object; a message entry whose message does not decode has MsgErr.
func DecodeEntry(rc harness.Record) (*Entry, error) {
	e := &Entry{Line: rc.Line, Data: rc.Data}
	if err := json.Unmarshal(rc.Data, e); err != nil {
		return nil, err
	}
	if e.Type != "message" {
		return e, nil
	}
	raw := bytes.TrimSpace(e.Message)
	if len(raw) == 0 || raw[0] != '{' {
		e.MsgErr = errNoMessage
		return e, nil
	}
	m := &Message{}
	if err := json.Unmarshal(raw, m); err != nil {
		e.MsgErr = fmt.Errorf("message does not decode: %w", err)
		return e, nil
	}
	e.Msg = m
	return e, nil
}

// AgentMessage is the agent message Pi makes of the entry when it loads a
// session: a message entry's own; compaction, branch summary and custom
// message entries as compactionSummary, branchSummary and custom
// messages. Other entries have none.
func (e *Entry) AgentMessage() (Message, bool) {
	switch e.Type {
	case "message":
		if e.Msg == nil {
			return Message{}, false
		}
		return *e.Msg, true
	case "compaction":
		return Message{Role: "compactionSummary", Summary: e.Summary}, true
	case "branch_summary":
		return Message{Role: "branchSummary", Summary: e.Summary}, true
	case "custom_message":
		return Message{Role: "custom", Content: e.Content}, true
	}
	return Message{}, false
}

// known tells the entry types of the format, for reading past damage.
func known(t string) bool { _, ok := Types[t]; return ok }

// Edit is what a context_edit entry says: the entry whose message it
// edits (Target), and either that the message is left out of future
// context (Omit) or the content that takes the place of the message's own
// (Content: a string or a list of blocks, as a message's content).
type Edit struct {
	Target  string
	Omit    bool
	Content json.RawMessage
}

// Edit returns a context_edit entry's edit; ok is false for any other
// entry, and for an edit that names no entry. A replacement that is not
// an object with a content (Pi never writes one) is taken for an
// omission, so the edited message stays out rather than coming back.
func (e *Entry) Edit() (Edit, bool) {
	if e.Type != "context_edit" || e.TargetID == "" {
		return Edit{}, false
	}
	ed := Edit{Target: string(e.TargetID)}
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	var c []byte
	if raw := bytes.TrimSpace(e.Replacement); len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &r) == nil {
		c = bytes.TrimSpace(r.Content)
	}
	if len(c) == 0 || (c[0] != '"' && c[0] != '[') {
		ed.Omit = true
		return ed, true
	}
	ed.Content = c
	return ed, true
}

// Edits returns the context edits of entries, the last one per target.
func Edits(entries []*Entry) map[string]Edit {
	var out map[string]Edit
	for _, e := range entries {
		if e == nil {
			continue
		}
		if ed, ok := e.Edit(); ok {
			if out == nil {
				out = map[string]Edit{}
			}
			out[ed.Target] = ed
		}
	}
	return out
}

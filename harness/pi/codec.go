package pi

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// Codec is the Pi format (harness.Codec): its commit format pi-v3 holds
// complete lines of a Pi session file (any version: the header says
// which); Decode reads them as neutral events, entry by entry, with no
// context beyond the artifact; Encode (SessionFile) writes events as a Pi
// v3 session file the real Pi resumes with --session FILE; ForSession
// names the session in its header.
type Codec struct{}

var _ harness.LineReader = Codec{}

// Format is harness.FormatPi.
func (Codec) Format() harness.Format { return harness.FormatPi }

// CommitFormat is pi-v3.
func (Codec) CommitFormat() string { return commits.FormatPi }

// Commit gives pi-v3 Decode, Encode and ForSession.
func (Codec) Commit(f *commits.Format) {
	f.Decode, f.Encode, f.ForSession = Decode, SessionFile, SetSessionID
}

// Head is what the importer needs of a Pi entry to cut a session file into
// commits.
type Head struct {
	Type      string
	ID        string
	ParentID  string
	HasParent bool // the entry has a parentId field (null included)
	Timestamp string
	Version   int64
	Cwd       string
	Model     string // an assistant message's model, the header's modelId
	Provider  string
	// Role is a message entry's role.
	Role string
	// Text is a user message's text (the commit summary).
	Text string
	// ToolCalls counts an assistant message's toolCall blocks.
	ToolCalls int
	// Summary is a compaction's summary.
	Summary string
	// BranchedFrom is the header's branchedFrom (the file this session
	// was branched from).
	BranchedFrom string
}

// ReadHead reads an entry's head.
func ReadHead(data []byte) (Head, bool) {
	e, err := DecodeEntry(harness.Record{Data: data})
	if err != nil {
		return Head{}, false
	}
	return e.Head(), true
}

// Head is what the importer needs of the entry.
func (e *Entry) Head() Head {
	h := Head{Type: string(e.Type), ID: string(e.ID), ParentID: e.ParentID.Value, HasParent: e.ParentID.Set,
		Timestamp: string(e.Timestamp), Version: int64(e.Version), Cwd: string(e.Cwd), Model: string(e.ModelID),
		Provider: string(e.Provider), Summary: string(e.Summary), BranchedFrom: string(e.BranchedFrom)}
	m := e.Msg
	if m == nil {
		return h
	}
	h.Role = string(m.Role)
	if m.Model != "" {
		h.Model = string(m.Model)
	}
	switch h.Role {
	case "user":
		c := Converter{Report: &harness.Report{}}
		h.Text = c.content(m.Content, 0, "\n\n")
	case "assistant":
		c := Converter{Report: &harness.Report{}}
		blocks, _ := c.blocks(m.Content, 0)
		for _, b := range blocks {
			if b.Type == "toolCall" {
				h.ToolCalls++
			}
		}
	}
	return h
}

// Decode reads a pi-v3 artifact as neutral events (docs/import.md
// "Events"): the header is system/init; user messages are prompts (Source
// "user"); assistant messages one event per block (thinking, response,
// tool_call) sharing the entry id as message id, the usage on the first,
// an aborted or errored response also an error event; toolResult messages
// are tool results; bashExecution (a "!" command) a prompt with Source
// "bash"; custom_message entries prompts with Source "extension" and the
// custom type as Subtype; compaction entries system/compaction_summary;
// branch_summary system/branch_summary; model and thinking-level changes
// system events; context_edit entries system/context_edit events (Metadata
// "target" and "action", omit or replace; a replacement's text in Text);
// other known entries output events; unknown entries output
// events with the entry in Raw. Damaged lines give output/damaged events.
func Decode(b []byte) ([]events.Event, error) {
	var out []events.Event
	harness.EachRecord(b, known, func(rc harness.Record) {
		e, err := DecodeEntry(rc)
		if err != nil {
			out = append(out, events.Event{Type: events.Output, Subtype: "damaged", Text: "entry does not decode: " + err.Error(), Raw: rc.Data})
			return
		}
		out = entryEvents(out, e)
	}, func(p harness.Problem) {
		out = append(out, events.Event{Type: events.Output, Subtype: "damaged", Text: p.String()})
	})
	if out == nil {
		out = []events.Event{}
	}
	return sanitize(out), nil
}

// entryEvents appends the events of one entry.
func entryEvents(out []events.Event, e *Entry) []events.Event {
	data := e.Data
	base := events.Event{ID: string(e.ID), ParentID: e.ParentID.Value, Time: harness.ParseTime(string(e.Timestamp))}
	ev := func(x events.Event) events.Event {
		x.ID, x.ParentID = base.ID, base.ParentID
		if x.Time.IsZero() {
			x.Time = base.Time
		}
		return x
	}
	switch string(e.Type) {
	case "session":
		md := map[string]any{"version": int64(e.Version)}
		for k, v := range map[string]string{"session": string(e.ID), "cwd": string(e.Cwd), "provider": string(e.Provider),
			"model": string(e.ModelID), "thinking_level": string(e.ThinkingLevel), "branched_from": string(e.BranchedFrom)} {
			if v != "" {
				md[k] = v
			}
		}
		return append(out, ev(events.Event{Type: events.System, Subtype: "init", Model: string(e.ModelID), Metadata: md}))
	case "message":
		if e.Msg == nil {
			return append(out, ev(events.Event{Type: events.Output, Subtype: "damaged", Text: "message entry without a message object", Raw: data}))
		}
		m := *e.Msg
		t := base.Time
		if m.Timestamp > 0 {
			t = time.UnixMilli(int64(m.Timestamp)).UTC()
		}
		c := Converter{Report: &harness.Report{}}
		switch string(m.Role) {
		case "user":
			return append(out, ev(events.Event{Type: events.Prompt, Source: "user", Time: t, Text: c.content(m.Content, 0, "\n\n")}))
		case "assistant":
			return decodeAssistant(out, ev, m, string(e.ID), t)
		case "toolResult":
			return append(out, ev(events.Event{Type: events.ToolResult, Time: t, Tool: &events.Tool{ID: string(m.ToolCallID), Name: string(m.ToolName)},
				Result: &events.Result{Content: c.content(m.Content, 0, "\n"), IsError: bool(m.IsError)}}))
		case "bashExecution":
			x := events.Event{Type: events.Prompt, Subtype: "bash_execution", Source: "bash", Time: t, Text: BashText(m), Meta: true}
			if m.ExcludeFromContext {
				x.Metadata = map[string]any{"exclude_from_context": true}
			}
			return append(out, ev(x))
		case "custom", "hookMessage":
			return append(out, ev(events.Event{Type: events.Prompt, Subtype: "custom", Source: "extension", Time: t, Text: c.content(m.Content, 0, "\n\n"), Meta: true}))
		case "compactionSummary", "branchSummary":
			sub := events.SubtypeCompactionSummary
			if m.Role == "branchSummary" {
				sub = "branch_summary"
			}
			return append(out, ev(events.Event{Type: events.System, Subtype: sub, Time: t, Text: string(m.Summary), Meta: true}))
		}
		return append(out, ev(events.Event{Type: events.Output, Subtype: "message/" + string(m.Role), Time: t, Raw: data}))
	case "compaction":
		md := map[string]any{}
		if e.FirstKeptEntryID != "" {
			md["first_kept_entry"] = string(e.FirstKeptEntryID)
		}
		if e.TokensBefore > 0 {
			md["tokens_before"] = int64(e.TokensBefore)
		}
		return append(out, ev(events.Event{Type: events.System, Subtype: events.SubtypeCompactionSummary, Text: string(e.Summary), Meta: true, Metadata: md}))
	case "branch_summary":
		md := map[string]any{}
		if e.FromID != "" {
			md["from"] = string(e.FromID)
		}
		return append(out, ev(events.Event{Type: events.System, Subtype: "branch_summary", Text: string(e.Summary), Meta: true, Metadata: md}))
	case "custom_message":
		c := Converter{Report: &harness.Report{}}
		x := events.Event{Type: events.Prompt, Subtype: string(e.CustomType), Source: "extension", Text: c.content(e.Content, 0, "\n\n"), Meta: true}
		if string(bytes.TrimSpace(e.Display)) == "false" {
			x.Metadata = map[string]any{"display": false}
		}
		return append(out, ev(x))
	case "context_edit":
		ed, ok := e.Edit()
		if !ok {
			return append(out, ev(events.Event{Type: events.Output, Subtype: "context_edit", Raw: data}))
		}
		md := map[string]any{"target": ed.Target, "action": "omit"}
		x := events.Event{Type: events.System, Subtype: events.SubtypeContextEdit, Meta: true, Metadata: md}
		if !ed.Omit {
			c := Converter{Report: &harness.Report{}}
			md["action"] = "replace"
			x.Text = c.content(ed.Content, 0, "\n\n")
		}
		return append(out, ev(x))
	case "model_change", "thinking_level_change":
		md := map[string]any{}
		if e.Provider != "" {
			md["provider"] = string(e.Provider)
		}
		if e.ThinkingLevel != "" {
			md["thinking_level"] = string(e.ThinkingLevel)
		}
		return append(out, ev(events.Event{Type: events.System, Subtype: string(e.Type), Model: string(e.ModelID), Metadata: md}))
	}
	if _, known := Types[string(e.Type)]; known {
		return append(out, ev(events.Event{Type: events.Output, Subtype: string(e.Type)}))
	}
	return append(out, ev(events.Event{Type: events.Output, Subtype: "unknown/" + string(e.Type), Raw: data}))
}

func decodeAssistant(out []events.Event, ev func(events.Event) events.Event, m Message, id string, t time.Time) []events.Event {
	var u *conversation.Usage
	if len(m.Usage) > 0 && m.Usage[0] == '{' {
		var x usage
		if json.Unmarshal(m.Usage, &x) == nil {
			u = &conversation.Usage{Input: int64(x.Input), Output: int64(x.Output), CacheRead: int64(x.CacheRead), CacheWrite: int64(x.CacheWrite)}
		}
	}
	first := true
	add := func(x events.Event) {
		x.Source, x.Model, x.MessageID, x.Time = "assistant", string(m.Model), id, t
		if first {
			x.Usage = u
			x.Metadata = map[string]any{}
			if m.Provider != "" {
				x.Metadata["provider"] = string(m.Provider)
			}
			if m.StopReason != "" {
				x.Metadata["stop_reason"] = string(m.StopReason)
			}
			if len(x.Metadata) == 0 {
				x.Metadata = nil
			}
		}
		first = false
		out = append(out, ev(x))
	}
	var raws []json.RawMessage
	_ = json.Unmarshal(m.Content, &raws)
	var text string
	if json.Unmarshal(m.Content, &text) == nil && text != "" {
		add(events.Event{Type: events.Response, Text: text})
	}
	for _, raw := range raws {
		var b Block
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch b.Type {
		case "text":
			add(events.Event{Type: events.Response, Text: string(b.Text)})
		case "thinking":
			add(events.Event{Type: events.Thinking, Text: string(b.Thinking), Signature: string(b.ThinkingSignature)})
		case "toolCall":
			add(events.Event{Type: events.ToolCall, Tool: &events.Tool{ID: string(b.ID), Name: string(b.Name), Input: harness.Args(b.Arguments)}})
		default:
			add(events.Event{Type: events.Output, Subtype: "block/" + string(b.Type), Raw: raw})
		}
	}
	if first {
		add(events.Event{Type: events.Response})
	}
	if m.StopReason == "aborted" || m.StopReason == "error" {
		out = append(out, ev(events.Event{Type: events.Error, Subtype: string(m.StopReason), Time: t, Text: strings.TrimSpace(string(m.ErrorMessage))}))
	}
	return out
}

// sanitize turns events that would not validate (a tool call or result
// without its id) into output events that keep what they said, so that a
// decoded artifact always encodes.
func sanitize(evs []events.Event) []events.Event {
	for i, e := range evs {
		if err := e.Validate(); err != nil {
			md := map[string]any{"invalid": err.Error(), "type": string(e.Type)}
			if e.Tool != nil && e.Tool.Name != "" {
				md["tool"] = e.Tool.Name
			}
			text := e.Text
			if e.Result != nil {
				text = e.Result.Content
			}
			evs[i] = events.Event{Type: events.Output, Subtype: "invalid", ID: e.ID, ParentID: e.ParentID, Time: e.Time, Text: text, Metadata: md}
		}
	}
	return evs
}

// Known reports whether t is a Pi entry type.
func (Codec) Known(t string) bool { return known(t) }

// Claim: a "message" entry is surely Pi's; another Pi entry type may be.
func (Codec) Claim(rc harness.Record) harness.Claim {
	var h struct {
		Type string `json:"type"`
	}
	switch {
	case json.Unmarshal(rc.Data, &h) != nil:
		return harness.ClaimNone
	case h.Type == "message":
		return harness.ClaimSure
	case Types[h.Type] != harness.KindUnknown:
		return harness.ClaimMaybe
	}
	return harness.ClaimNone
}

// Read is the package's Read.
func (Codec) Read(s *harness.Session, recs []harness.Record) { Read(s, recs) }

// ReadAll reads the file's one conversation: a Pi file is one session
// (its header), whose tree branches are set aside.
func (Codec) ReadAll(recs []harness.Record, new func() *harness.Session) []*harness.Session {
	s := new()
	Read(s, recs)
	return []*harness.Session{s}
}

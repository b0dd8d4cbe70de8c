package session

import (
	"encoding/json"
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// The session object's fields (kept in the object's Extra).
const (
	fieldSessionID    = "session_id"
	fieldChatRef      = "chat_ref"
	fieldSystemPrompt = "system_prompt_ref"
	fieldHarness      = "harness"
	fieldIndex        = "session_index"
	fieldPool         = "metadata_pool"
	fieldActive       = "active_set"
	fieldPinned       = "pinned_set"
	fieldTurn         = "turn"
	fieldSeq          = "seq"
	fieldToolcalls    = "toolcalls"
)

// encode builds the session object document.
func encode(info Info, s *State) (store.Doc, error) {
	tcs := make([]any, len(s.Toolcalls))
	for i, t := range s.Toolcalls {
		m := map[string]any{"id": t.ID, "turn": int64(t.Turn), "seq": t.Seq}
		if t.Management {
			m["management"] = true
		}
		tcs[i] = m
	}
	fields := map[string]any{
		fieldSessionID:    info.ID,
		fieldChatRef:      info.ChatID,
		fieldSystemPrompt: info.SystemPromptID,
		fieldIndex:        strs(s.Index),
		fieldPool:         strs(s.Pool),
		fieldActive:       strs(s.Active),
		fieldPinned:       strs(s.Pinned),
		fieldTurn:         int64(s.Turn),
		fieldSeq:          s.Seq,
		fieldToolcalls:    tcs,
	}
	if info.Harness != "" {
		fields[fieldHarness] = info.Harness
	}
	o, err := objects.NewSession(info.ID, fields)
	if err != nil {
		return nil, fmt.Errorf("session %s: session object: %w", info.ID, err)
	}
	doc, err := o.Doc()
	if err != nil {
		return nil, fmt.Errorf("session %s: session document: %w", info.ID, err)
	}
	return doc, nil
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// decode reads a stored session document.
func decode(doc store.Doc) (Info, State, error) {
	o, err := objects.FromDoc(doc)
	if err != nil {
		return Info{}, State{}, fmt.Errorf("decoding session object: %w", err)
	}
	if o.Kind() != objects.KindSession {
		return Info{}, State{}, fmt.Errorf("object %s is a %s, not a session", o.ID(), o.Kind())
	}
	// Round-trip the fields through JSON into a typed struct.
	raw, err := json.Marshal(o.Extra)
	if err != nil {
		return Info{}, State{}, fmt.Errorf("session fields: %w", err)
	}
	var f struct {
		SessionID    string     `json:"session_id"`
		ChatRef      string     `json:"chat_ref"`
		SystemPrompt string     `json:"system_prompt_ref"`
		Harness      string     `json:"harness"`
		Index        []string   `json:"session_index"`
		Pool         []string   `json:"metadata_pool"`
		Active       []string   `json:"active_set"`
		Pinned       []string   `json:"pinned_set"`
		Turn         int        `json:"turn"`
		Seq          int64      `json:"seq"`
		Toolcalls    []Toolcall `json:"toolcalls"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return Info{}, State{}, fmt.Errorf("session fields: %w", err)
	}
	if f.SessionID == "" || f.ChatRef == "" || f.SystemPrompt == "" {
		return Info{}, State{}, fmt.Errorf("session object %s lacks session_id, chat_ref or system_prompt_ref", o.ID())
	}
	info := Info{ID: f.SessionID, ChatID: f.ChatRef, SystemPromptID: f.SystemPrompt, Harness: f.Harness}
	st := State{Index: nilIfEmpty(f.Index), Pool: nilIfEmpty(f.Pool), Active: nilIfEmpty(f.Active),
		Pinned: nilIfEmpty(f.Pinned), Turn: f.Turn, Seq: f.Seq, Toolcalls: nilIfEmpty(f.Toolcalls)}
	return info, st, nil
}

// nilIfEmpty makes a decoded empty list nil, as in a fresh State, so that
// a resumed state equals the one that was saved.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

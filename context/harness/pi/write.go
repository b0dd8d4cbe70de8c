package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// The pi-v3 codec this package gives context commits (docs/commits.md):
// Encode writes neutral events as a Pi v3 session file that the real Pi
// resumes with --session FILE; ForSession names the session in its header.
// Decoding Pi files into events (and byte-faithful import) is issue 13's.
func init() {
	f, ok := commits.DefaultRegistry.Lookup(commits.FormatPi)
	if !ok {
		panic("pi: no pi-v3 format to give a codec")
	}
	g := *f
	g.Encode = SessionFile
	g.ForSession = SetSessionID
	if err := commits.DefaultRegistry.Register(&g); err != nil {
		panic(err)
	}
}

// epoch stands in for unknown times (Pi shows them; nothing depends on them).
var epoch = time.Unix(0, 0).UTC()

// SessionFile writes events as a Pi v3 session file: a header (version 3,
// no cwd: Pi then uses its working directory; the id is derived from the
// content until ForSession names the session) and one "message" entry per
// harness-neutral message (events.ToMessages), each the child of the one
// before. User messages (summaries and narratives included) become Pi user
// messages, assistant messages carry their text and tool calls (api and
// provider "ctxstore", stopReason toolUse or stop, zero usage unless
// recorded), tool results become toolResult messages.
func SessionFile(evs []events.Event) ([]byte, error) {
	msgs := events.ToMessages(evs)
	var b bytes.Buffer
	line := func(v any) error {
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	body, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	id := commits.ContentHash(body)
	first := epoch
	if len(msgs) > 0 && !msgs[0].Time.IsZero() {
		first = msgs[0].Time
	}
	if err := line(map[string]any{"type": "session", "version": 3,
		"id":        fmt.Sprintf("%s-%s-%s-%s-%s", id[0:8], id[8:12], id[12:16], id[16:20], id[20:32]),
		"timestamp": first.UTC().Format("2006-01-02T15:04:05.000Z")}); err != nil {
		return nil, err
	}
	parent := any(nil)
	for i, m := range msgs {
		t := m.Time
		if t.IsZero() {
			t = epoch
		}
		entry := fmt.Sprintf("%08x", i+1)
		msg, err := piMessage(m, t)
		if err != nil {
			return nil, err
		}
		if err := line(map[string]any{"type": "message", "id": entry, "parentId": parent,
			"timestamp": t.UTC().Format("2006-01-02T15:04:05.000Z"), "message": msg}); err != nil {
			return nil, err
		}
		parent = entry
	}
	return b.Bytes(), nil
}

func piMessage(m conversation.Message, t time.Time) (map[string]any, error) {
	ms := t.UnixMilli()
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	switch m.Role {
	case conversation.RoleUser:
		return map[string]any{"role": "user", "content": text(m.Text), "timestamp": ms}, nil
	case conversation.RoleToolResult:
		return map[string]any{"role": "toolResult", "toolCallId": m.ToolCallID, "toolName": m.ToolName,
			"content": text(m.Output), "isError": m.IsError, "timestamp": ms}, nil
	case conversation.RoleAssistant:
		content := []any{}
		if m.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": m.Text})
		}
		for _, tc := range m.ToolCalls {
			args := tc.Args
			if args == nil {
				args = map[string]any{}
			}
			content = append(content, map[string]any{"type": "toolCall", "id": tc.ID, "name": tc.Name, "arguments": args})
		}
		stop := "stop"
		if len(m.ToolCalls) > 0 {
			stop = "toolUse"
		}
		u := conversation.Usage{}
		if m.Usage != nil {
			u = *m.Usage
		}
		model := m.Model
		if model == "" {
			model = "unknown"
		}
		return map[string]any{"role": "assistant", "content": content, "api": "ctxstore", "provider": "ctxstore", "model": model,
			"usage": map[string]any{"input": u.Input, "output": u.Output, "cacheRead": u.CacheRead, "cacheWrite": u.CacheWrite,
				"totalTokens": u.Input + u.Output + u.CacheRead + u.CacheWrite,
				"cost":        map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
			"stopReason": stop, "timestamp": ms}, nil
	}
	return nil, fmt.Errorf("pi: message role %q has no Pi form", m.Role)
}

// SetSessionID returns a Pi session file whose header names session.
func SetSessionID(file []byte, session string) ([]byte, error) {
	i := bytes.IndexByte(file, '\n')
	if i < 0 {
		i = len(file)
	}
	var h map[string]any
	if err := json.Unmarshal(file[:i], &h); err != nil || h["type"] != "session" {
		return nil, fmt.Errorf("pi: the first line is not a session header")
	}
	h["id"] = session
	nb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return append(nb, file[i:]...), nil
}

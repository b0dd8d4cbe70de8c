package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// scriptedMessages is an offline model behind Anthropic's Messages API
// (POST /v1/messages, streamed as server-sent events): each request is
// answered with the next step of a script, and appended, as sent, to a
// JSON Lines log. Pi reaches it through pi-ai's own anthropic-messages
// provider (tests/testdata/pi/scripted-model.ts registers it), so the log
// holds exactly what a real provider would have been sent, cache_control
// breakpoints included.
type scriptedMessages struct {
	t      testing.TB
	srv    *httptest.Server
	log    string
	mu     sync.Mutex
	script []piStep
	next   int
	// respond, when set, chooses each answer from the request instead of
	// the script (for harnesses that make model calls of their own).
	respond func(req messagesRequest) piStep
	// usage, when set, gives an answer's usage and fields of its message
	// to add or replace (a model, diagnostics); nil usage keeps the
	// default (the request's bytes / 4 uncached input, nothing cached).
	usage func(req messagesRequest) (usage, message map[string]any)
}

func startScriptedMessages(t testing.TB, script []piStep, log string, respond func(messagesRequest) piStep) *scriptedMessages {
	t.Helper()
	m := &scriptedMessages{t: t, log: log, script: script, respond: respond}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *scriptedMessages) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	n := m.next
	m.next++
	if m.log != "" {
		f, err := os.OpenFile(m.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			var compact bytes.Buffer
			if err = json.Compact(&compact, body); err == nil {
				_, err = f.Write(append(compact.Bytes(), '\n'))
			}
			f.Close()
		}
		if err != nil {
			m.t.Errorf("scripted model log: %v", err)
		}
	}
	m.mu.Unlock()
	var step piStep
	if m.respond != nil {
		var req messagesRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		step = m.respond(req)
	} else {
		if n >= len(m.script) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"the script has no step %d"}}`, n)
			return
		}
		step = m.script[n]
	}
	if step.Error != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": step.Error}})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	usage := map[string]any{"input_tokens": len(body) / 4, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
	msg := map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "scripted-1",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil}
	if m.usage != nil {
		var req messagesRequest
		if json.Unmarshal(body, &req) == nil {
			u, extra := m.usage(req)
			if u != nil {
				usage = u
			}
			for k, v := range extra {
				msg[k] = v
			}
		}
	}
	msg["usage"] = usage
	send("message_start", map[string]any{"type": "message_start", "message": msg})
	stop := "end_turn"
	if step.Tool != "" {
		id := step.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", n)
		}
		args := step.Args
		if args == nil {
			args = map[string]any{}
		}
		a, _ := json.Marshal(args)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": step.Tool, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(a)}})
		stop = "tool_use"
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": step.Text}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// messagesRequest is the part of a Messages API request the tests read.
type messagesRequest struct {
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name         string          `json:"name"`
		CacheControl json.RawMessage `json:"cache_control"`
	} `json:"tools"`
}

// messagesBlock is a content block of a Messages API request.
type messagesBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        map[string]any  `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	CacheControl json.RawMessage `json:"cache_control"`
}

func messagesBlocks(raw json.RawMessage) ([]messagesBlock, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []messagesBlock{{Type: "text", Text: s}}, nil
	}
	var bs []messagesBlock
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

// toPiContext reads a logged Messages API request as the context the
// model was given, in Pi's message shape: a user message's tool_result
// blocks become toolResult messages, tool_use blocks toolCall blocks;
// cache_control is left out (breakpoints are read by cacheBreakpoints).
func toPiContext(n int, line []byte) (piContext, error) {
	var req messagesRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return piContext{}, err
	}
	c := piContext{Call: n}
	if len(req.System) > 0 {
		bs, err := messagesBlocks(req.System)
		if err != nil {
			return c, fmt.Errorf("system: %w", err)
		}
		var parts []string
		for _, b := range bs {
			parts = append(parts, b.Text)
		}
		c.SystemPrompt = strings.Join(parts, "\n\n")
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, t.Name)
	}
	for i, m := range req.Messages {
		bs, err := messagesBlocks(m.Content)
		if err != nil {
			return c, fmt.Errorf("messages[%d]: %w", i, err)
		}
		var cur *piMessage
		for _, b := range bs {
			switch b.Type {
			case "tool_result":
				cur = nil
				tb, err := messagesBlocks(b.Content)
				if err != nil {
					return c, fmt.Errorf("messages[%d] tool_result: %w", i, err)
				}
				pm := piMessage{Role: "toolResult", ToolCallID: b.ToolUseID}
				for _, x := range tb {
					pm.Content = append(pm.Content, piBlock{Type: x.Type, Text: x.Text})
				}
				c.Messages = append(c.Messages, pm)
			case "tool_use":
				if cur == nil {
					c.Messages = append(c.Messages, piMessage{Role: m.Role})
					cur = &c.Messages[len(c.Messages)-1]
				}
				cur.Content = append(cur.Content, piBlock{Type: "toolCall", ID: b.ID, Name: b.Name, Arguments: b.Input})
			default:
				if cur == nil {
					c.Messages = append(c.Messages, piMessage{Role: m.Role})
					cur = &c.Messages[len(c.Messages)-1]
				}
				cur.Content = append(cur.Content, piBlock{Type: b.Type, Text: b.Text})
			}
		}
	}
	return c, nil
}

// breakpoint is where a request carries cache_control: "system" (index
// of the system block), "tools" (index of the tool), or a message's block.
type breakpoint struct {
	Where        string // "system", "tools", "message"
	Msg, Block   int
	Text, ToolID string // the block's text or tool id (for messages)
	TTL          string // cache_control's ttl ("" for the default, 5 minutes)
}

// ttlOf returns a cache_control's ttl, "" when it has none.
func ttlOf(cc json.RawMessage) string {
	var c struct {
		TTL string `json:"ttl"`
	}
	_ = json.Unmarshal(cc, &c)
	return c.TTL
}

// cacheBreakpoints lists the cache_control breakpoints of a logged request.
func cacheBreakpoints(line []byte) ([]breakpoint, error) {
	var req messagesRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	var out []breakpoint
	if len(req.System) > 0 {
		bs, err := messagesBlocks(req.System)
		if err != nil {
			return nil, err
		}
		for i, b := range bs {
			if len(b.CacheControl) > 0 {
				out = append(out, breakpoint{Where: "system", Block: i, TTL: ttlOf(b.CacheControl)})
			}
		}
	}
	for i, t := range req.Tools {
		if len(t.CacheControl) > 0 {
			out = append(out, breakpoint{Where: "tools", Block: i, TTL: ttlOf(t.CacheControl)})
		}
	}
	for i, m := range req.Messages {
		bs, err := messagesBlocks(m.Content)
		if err != nil {
			return nil, err
		}
		for j, b := range bs {
			if len(b.CacheControl) > 0 {
				out = append(out, breakpoint{Where: "message", Msg: i, Block: j, Text: b.Text, ToolID: b.ID + b.ToolUseID, TTL: ttlOf(b.CacheControl)})
			}
		}
	}
	return out, nil
}

package ccproxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/internal/jsontext"
)

// SessionHeader is the header by which Claude Code names its session in
// every Messages request (2.1.330); the request's metadata.user_id, a JSON
// object with "session_id", says it too.
const SessionHeader = "X-Claude-Code-Session-Id"

// LongTTLBeta is the Anthropic beta that a one-hour cache_control "ttl"
// needs; Claude Code sends it when it asks for the hour itself.
const LongTTLBeta = "extended-cache-ttl-2025-04-11"

// request is what the proxy reads of a Messages request.
type request struct {
	MaxTokens int               `json:"max_tokens"`
	Tools     []json.RawMessage `json:"tools"`
	Messages  []json.RawMessage `json:"messages"`
	System    json.RawMessage   `json:"system"`
	Thinking  *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	Metadata *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
	// Thread is set on a message-thread request: only the new messages,
	// the rest of the conversation held by the API under the thread.
	Thread json.RawMessage `json:"thread"`
}

// threaded tells whether the request is in thread form (a thread field
// that is not null): its messages are not the whole conversation.
func (r *request) threaded() bool {
	t := bytes.TrimSpace(r.Thread)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// parseRequest reads a Messages request body.
func parseRequest(body []byte) (*request, error) {
	var r request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("the request body is not a Messages request: %w", err)
	}
	return &r, nil
}

// sessionOf returns the Claude Code session a request belongs to: the
// session header, else metadata.user_id's session_id; "" when neither
// names one.
func sessionOf(h http.Header, r *request) string {
	if s := strings.TrimSpace(h.Get(SessionHeader)); s != "" {
		return s
	}
	if r.Metadata == nil || r.Metadata.UserID == "" {
		return ""
	}
	var u struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(r.Metadata.UserID), &u) != nil {
		return ""
	}
	return u.SessionID
}

// conversation names the conversation of a session a request continues:
// a hash of its first message without breakpoints. Claude Code's main
// thread keeps its first message for the whole session (until a
// compaction rewrites it); each subagent begins with its own task. So a
// subagent's requests do not stop the warming of the parent's last
// request, which waits on the subagent (the Agent tool) and whose cache
// would otherwise expire during a long subagent run.
func (r *request) conversation() string {
	if len(r.Messages) == 0 {
		return ""
	}
	var m any
	if json.Unmarshal(r.Messages[0], &m) != nil {
		return ""
	}
	if msg, ok := m.(map[string]any); ok {
		if blocks, ok := msg["content"].([]any); ok {
			for _, b := range blocks {
				if block, ok := b.(map[string]any); ok {
					delete(block, "cache_control")
				}
			}
		}
	}
	b, err := jsontext.Marshal(m) // map keys sorted: the same message hashes alike
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// ttl is the lifetime of the cache entry a request leaves: the hour when
// its last message breakpoint asks for it (Claude Code does with
// ENABLE_PROMPT_CACHING_1H), else def. Messages are read from the last
// back to the first that carries a breakpoint: usually only the last one.
func (r *request) ttl(def time.Duration) time.Duration {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		var msg struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(r.Messages[i], &msg) != nil || len(msg.Content) == 0 || msg.Content[0] != '[' {
			continue
		}
		var blocks []struct {
			CacheControl *cacheControl `json:"cache_control"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for j := len(blocks) - 1; j >= 0; j-- {
			if cc := blocks[j].CacheControl; cc != nil {
				if cc.TTL == "1h" {
					return time.Hour
				}
				return def
			}
		}
	}
	return def
}

// agent tells whether a request is one of the agent loop's (it offers
// tools): the prompt the session's next call extends. Claude Code's side
// requests (a session title, a prompt suggestion) offer none; they pass
// through without touching the session's state.
func (r *request) agent() bool { return len(r.Tools) > 0 && r.MaxTokens > 1 }

// replayable tells whether the request can be sent again with a one-token
// output cap and read the same cache entry: not with budget-based thinking
// ("enabled", whose budget must stay under max_tokens and which Anthropic
// keys the message cache on), as Pi's cache warmer decides.
func (r *request) replayable() bool { return r.Thinking == nil || r.Thinking.Type != "enabled" }

// cacheControl is a block's cache_control.
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// longHead returns the body with every cache_control of the system prompt
// asking for the hour ("ttl": "1h"), and whether it changed anything. The
// system prompt and the tools before it are then one entry that lives an
// hour, refreshed at every read. It changes nothing when a tool carries a
// breakpoint of a shorter lifetime: Anthropic refuses a longer lifetime
// after a shorter one, and tools come before the system prompt.
func longHead(body []byte, r *request) ([]byte, bool, error) {
	if len(r.System) == 0 || r.System[0] != '[' {
		return body, false, nil // a string system prompt carries no breakpoint
	}
	for _, t := range r.Tools {
		var tool struct {
			CacheControl *cacheControl `json:"cache_control"`
		}
		if json.Unmarshal(t, &tool) == nil && tool.CacheControl != nil && tool.CacheControl.TTL != "1h" {
			return body, false, nil
		}
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(r.System, &blocks); err != nil {
		return nil, false, fmt.Errorf("system: %w", err)
	}
	changed := false
	for _, b := range blocks {
		raw, ok := b["cache_control"]
		if !ok || bytes.Equal(raw, []byte("null")) {
			continue
		}
		var cc cacheControl
		if err := json.Unmarshal(raw, &cc); err != nil {
			return nil, false, fmt.Errorf("system: cache_control: %w", err)
		}
		if cc.TTL == "1h" {
			continue
		}
		cc.TTL = "1h"
		b["cache_control"], _ = json.Marshal(cc)
		changed = true
	}
	if !changed {
		return body, false, nil
	}
	sys, err := jsontext.Marshal(blocks)
	if err != nil {
		return nil, false, err
	}
	out, err := setField(body, "system", sys)
	return out, err == nil, err
}

// warmBody returns the body of a warm request for a request: the same
// prompt with its output capped at one token.
func warmBody(body []byte) ([]byte, error) { return setField(body, "max_tokens", []byte("1")) }

// setField returns body with its top-level field name set to raw; every
// other field's value is kept byte for byte (the order of the top-level
// fields is not: it carries no meaning).
func setField(body []byte, name string, raw json.RawMessage) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("the body is null, not a JSON object")
	}
	top[name] = raw
	return jsontext.Marshal(top)
}

// withBeta returns an anthropic-beta header value that includes beta.
func withBeta(v, beta string) string {
	for _, b := range strings.Split(v, ",") {
		if strings.TrimSpace(b) == beta {
			return v
		}
	}
	if strings.TrimSpace(v) == "" {
		return beta
	}
	return v + "," + beta
}

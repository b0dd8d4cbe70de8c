package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The service says what it does: a line per session
// created or resumed and per context call with its session, call, tokens,
// cached share and rebase; failed requests name the session; at warn
// level the per-call lines are gone.
func TestLogLines(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		var buf syncBuffer
		e := newEnv(t, func(o *Options) { o.Log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})) })
		e.check = false
		if code, eb := e.do("PUT", "/v1/sessions/s1", map[string]any{"cwd": e.dir, "harness": "test"}, nil); code != 200 {
			t.Fatalf("open: %d %+v", code, eb)
		}
		log := []conversation.Message{{Role: conversation.RoleUser, Text: "hello"}}
		for i := 0; i < 2; i++ {
			if code, eb := e.do("POST", "/v1/sessions/s1/context", ContextRequest{Log: log}, nil); code != 200 {
				t.Fatalf("context: %d %+v", code, eb)
			}
			log = append(log, conversation.Message{Role: conversation.RoleAssistant, Text: "hi"}, conversation.Message{Role: conversation.RoleUser, Text: "more"})
		}
		if code, _ := e.do("POST", "/v1/sessions/s2/context", ContextRequest{Log: log}, nil); code != 409 {
			t.Fatalf("context of a session not open: %d", code)
		}
		out := buf.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		has := func(parts ...string) bool {
			for _, l := range lines {
				ok := true
				for _, p := range parts {
					ok = ok && strings.Contains(l, p)
				}
				if ok {
					return true
				}
			}
			return false
		}
		if !has("level=WARN", "request failed", "session=s2", "status=409") {
			t.Fatalf("level %v: the failure does not name its session:\n%s", level, out)
		}
		if level == slog.LevelWarn {
			if has("context call") || has("session created") {
				t.Fatalf("warn level logs calls:\n%s", out)
			}
			continue
		}
		if !has("level=INFO", `msg="session created"`, "session=s1", "harness=test") {
			t.Fatalf("no line for the session created:\n%s", out)
		}
		if !has(`msg="context call"`, "session=s1", "call=1", "tokens=", "cached_share=0 ") ||
			!has(`msg="context call"`, "session=s1", "call=2", "cached_share=0.") {
			t.Fatalf("no line per call with its cached share:\n%s", out)
		}
	}
}

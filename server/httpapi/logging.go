package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
)

// What the server says it does: one line per session
// opened, created or resumed and per context call at Info, failed requests
// at Warn (the client's mistake) or Error (the server's), each naming the
// session. The level is the Logger's (serve --log-level).

// logOpen logs a session opened in this server.
func (s *Server) logOpen(sid, state string, req OpenRequest, calls int) {
	if state == "open" {
		s.log.Debug("session already open", "session", sid, "calls", calls)
		return
	}
	s.log.Info("session "+state, "session", sid, "harness", req.Harness, "cwd", req.Cwd, "calls", calls)
}

// logCall logs a context call: its size, the share of it a warm prompt
// cache serves (the prefix shared with the previous call, none after a gap
// longer than the cache's lifetime), and its rebase.
func (s *Server) logCall(sid string, c *assemble.Assembled, took time.Duration) {
	if !s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	ttl := s.o.Rebase.CacheTTL
	if ttl <= 0 {
		ttl = assemble.DefaultPolicy().CacheTTL
	}
	cached := max(c.PrefixTokens, 0)
	if c.N == 1 || c.Idle >= ttl {
		cached = 0
	}
	share := 0.0
	if c.Tokens > 0 {
		share = float64(min(cached, c.Tokens)) / float64(c.Tokens)
	}
	attrs := []any{"session", sid, "call", c.N, "tokens", c.Tokens, "cached_share", round3(share), "stale_tokens", c.StaleTokens}
	if c.Rebased {
		attrs = append(attrs, "rebase", c.Reason)
	}
	if c.HeadTTL > 0 {
		attrs = append(attrs, "head_ttl_s", int(c.HeadTTL.Seconds()))
	}
	attrs = append(attrs, "ms", took.Milliseconds())
	s.log.Info("context call", attrs...)
}

// logFailure logs a failed request, naming its session.
func (s *Server) logFailure(r *http.Request, sid string, status int, code, msg string) {
	level := slog.LevelWarn
	if status >= 500 {
		level = slog.LevelError
	}
	attrs := []any{"method", r.Method, "path", r.URL.Path, "status", status, "code", code, "err", msg}
	if sid != "" {
		attrs = append([]any{"session", sid}, attrs...)
	}
	s.log.Log(r.Context(), level, "request failed", attrs...)
}

func round3(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }

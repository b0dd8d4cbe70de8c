package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ctxstore/ctxstore/explain/stats"
)

// stats is GET /v1/stats: session analytics from the context commits
// (docs/stats.md). Any valid token: a token limited to sessions sees only
// its sessions (all of them when none is asked for; asking for another is
// refused), and no other session's commit is read.
func (s *Server) stats(q *request) (any, error) {
	g, err := s.auth.check(q.r)
	if err != nil {
		return nil, err
	}
	v := q.r.URL.Query()
	o := stats.Options{Sessions: v["session"]}
	for _, sid := range o.Sessions {
		if err := checkSessionID(sid); err != nil {
			return nil, badRequest("session: %v", err)
		}
		if !g.session(sid) {
			return nil, errorf(http.StatusForbidden, CodeForbidden, "the token does not grant session %s", sid)
		}
	}
	if !g.all && len(o.Sessions) == 0 {
		o.Sessions = g.sessions
	}
	for name, dst := range map[string]*time.Time{"from": &o.From, "to": &o.To} {
		if x := v.Get(name); x != "" {
			t, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return nil, badRequest("%s: not an RFC 3339 time: %q", name, x)
			}
			*dst = t
		}
	}
	if x := v.Get("idle_gap"); x != "" {
		d, err := time.ParseDuration(x)
		if err != nil || d <= 0 {
			return nil, badRequest("idle_gap: not a positive duration: %q", x)
		}
		o.IdleGap = d
	}
	if x := v.Get("bins"); x != "" {
		n, err := strconv.Atoi(x)
		if err != nil || n < 1 || n > 1000 {
			return nil, badRequest("bins: not between 1 and 1000: %q", x)
		}
		o.Bins = n
	}
	if x := v.Get("tz"); x != "" {
		loc, err := time.LoadLocation(x)
		if err != nil || x == "Local" {
			return nil, badRequest("tz: not a time zone name: %q", x)
		}
		o.Location = loc
	}
	return stats.Compute(q.ctx, s.commits(), o)
}

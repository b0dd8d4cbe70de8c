package ccproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
)

// Store keeps managed mode's decisions, by conversation, and its calls.
// The proxy calls it outside its lock, one request of a conversation at a
// time.
type Store interface {
	// LoadConversation returns what SaveConversation kept for
	// conversation conv of session sid; nil when nothing.
	LoadConversation(ctx context.Context, sid, conv string) ([]byte, error)
	// SaveConversation keeps a conversation's decisions (JSON).
	SaveConversation(ctx context.Context, sid, conv string, state []byte) error
	// RecordCall records one managed call.
	RecordCall(ctx context.Context, c Call) error
}

// Call is one managed call, as recorded.
type Call struct {
	Session      string `json:"session_id"`
	Conversation string `json:"conversation"`
	// N counts the conversation's managed calls from 1.
	N    int       `json:"call"`
	Time time.Time `json:"time"`
	// Body is the request as sent upstream: what the model saw.
	Body []byte `json:"-"`
	// Asked is the SHA-256 (hex) of the request Claude Code sent, and
	// AskedBytes its size.
	Asked      string `json:"asked_sha256"`
	AskedBytes int    `json:"asked_bytes"`
	// What managed mode did.
	Collapsed   int    `json:"collapsed"`
	New         int    `json:"new_collapses,omitempty"`
	Previews    int    `json:"previews,omitempty"`
	Rebase      string `json:"rebase,omitempty"`
	Breakpoints int    `json:"breakpoints,omitempty"`
	Pending     int    `json:"pending_tokens,omitempty"`
}

// managedConv is a conversation's managed state, loaded once.
type managedConv struct {
	mu     sync.Mutex
	loaded bool
	st     convState
}

// conv returns the managed state of conversation s (made once).
func (p *Proxy) conv(s *session) *managedConv {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.managed == nil {
		s.managed = &managedConv{}
	}
	return s.managed
}

// once says msg once per proxy under key: in the log for a request not
// understood, through Notice (the person's terminal) for a failure.
func (p *Proxy) once(key string, notice bool, format string, args ...any) {
	p.mu.Lock()
	if p.said == nil {
		p.said = map[string]bool{}
	}
	first := !p.said[key]
	p.said[key] = true
	p.mu.Unlock()
	if !first {
		return
	}
	msg := fmt.Sprintf(format, args...)
	p.c.Log("%s", msg)
	if notice && p.c.Notice != nil {
		p.c.Notice(msg)
	}
}

// managedBody returns the managed body for an agent request of
// conversation s, or body itself whenever managed mode cannot manage it:
// a request not understood (said in the log once), an internal failure or
// a managed request the Messages API's rules refuse (said once on the
// person's terminal too). The session goes on either way.
func (p *Proxy) managedBody(s *session, body []byte, now time.Time, ttl time.Duration) (out []byte) {
	mc := p.c.Managed
	c := p.conv(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			p.once("panic", true, "ctxstore claude-code proxy: managed mode failed (%v): requests pass through unchanged where it fails; the session goes on", r)
			p.count(func(st *Stats) { st.Unmanaged++ })
			out = body
		}
	}()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if !c.loaded && mc.Store != nil {
		b, err := mc.Store.LoadConversation(ctx, s.id, s.conv)
		if err != nil {
			p.once("load", true, "ctxstore claude-code proxy: reading managed decisions: %v (conversations start afresh)", err)
		} else if b != nil {
			var st convState
			if err := json.Unmarshal(b, &st); err != nil {
				p.once("load", true, "ctxstore claude-code proxy: reading managed decisions: %v (conversations start afresh)", err)
			} else {
				c.st = st
			}
		}
	}
	c.loaded = true
	st := c.st
	st.Shown = maps.Clone(c.st.Shown)
	p.mu.Lock()
	if s.warmed.After(st.Renewed) {
		st.Renewed = s.warmed // the pause was kept warm: the entry of the last request lives
	}
	p.mu.Unlock()
	nb, ap, err := mc.manage(s.id, &st, body, now, ttl)
	if err != nil {
		var u errUnknown
		if errors.As(err, &u) {
			p.once("unknown:"+u.Why, false, "session %s: a request managed mode does not understand (%s): passed on unchanged; said once", s.name(), u.Why)
		} else {
			p.once("fail", true, "ctxstore claude-code proxy: managed mode failed (%v): the request passed on unchanged; the session goes on", err)
		}
		p.count(func(st *Stats) { st.Unmanaged++ })
		return body
	}
	if errs := apicheck.Check(nb); len(errs) > 0 && len(apicheck.Check(body)) == 0 {
		p.once("check", true, "ctxstore claude-code proxy: a managed request broke a Messages API rule (%v): passed on unchanged; the session goes on", errs[0])
		p.count(func(st *Stats) { st.Unmanaged++ })
		return body
	}
	if err := apicheck.Preserved(body, nb); err != nil {
		// Managed mode may change tool_result contents and breakpoints
		// only; anything else changed is a defect, and the request goes
		// as Claude Code wrote it.
		p.once("preserve", true, "ctxstore claude-code proxy: a managed request changed more than tool results and breakpoints (%v): passed on unchanged; the session goes on", err)
		p.count(func(st *Stats) { st.Unmanaged++ })
		return body
	}
	c.st = st
	p.count(func(x *Stats) {
		x.Managed++
		x.Collapsed += ap.New
		if ap.Rebase != "" {
			x.Rebases++
		}
	})
	if ap.Rebase != "" {
		p.c.Log("session %s: rebase (%s): %d more outputs collapsed, %d shown collapsed", s.name(), ap.Rebase, ap.New, ap.Collapsed)
	}
	if mc.Store != nil {
		if b, err := json.Marshal(st); err == nil {
			if err := mc.Store.SaveConversation(ctx, s.id, s.conv, b); err != nil {
				p.once("save", true, "ctxstore claude-code proxy: keeping managed decisions: %v (they are kept in memory)", err)
			}
		}
		sum := sha256.Sum256(body)
		call := Call{Session: s.id, Conversation: s.conv, N: st.Calls, Time: now, Body: nb, Asked: hex.EncodeToString(sum[:]), AskedBytes: len(body),
			Collapsed: ap.Collapsed, New: ap.New, Previews: ap.Previews, Rebase: ap.Rebase, Breakpoints: ap.Breakpoints, Pending: ap.Pending}
		if err := mc.Store.RecordCall(ctx, call); err != nil {
			p.once("record", true, "ctxstore claude-code proxy: recording a managed call: %v", err)
		}
	}
	return nb
}

// count changes the stats under the lock.
func (p *Proxy) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// Manage is managed mode as a function (ccmanaged.Config.Manage, the
// code the replay runs): it returns the body sent for a request of
// conversation state (what the previous call returned; nil for a
// conversation's first request) of session sid, sent at now with cache
// lifetime ttl, and the state after it. An error says the request passes
// through unchanged. Spill files are written as the proxy writes them;
// nothing is recorded.
func (mc *ManagedConfig) Manage(sid string, state, body []byte, now time.Time, ttl time.Duration) ([]byte, []byte, error) {
	return mc.core().Manage(sid, state, body, now, ttl)
}

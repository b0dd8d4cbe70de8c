package httpapi

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/context/runtime"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// live is a session open in this server. Its mutex serializes every request
// of the session; the fields are set by open and cleared by close.
type live struct {
	mu    sync.Mutex
	id    string
	cwd   string
	sess  *session.Session
	tools *tools.Tools
	asm   *assemble.Assembler
	in    *ingest.Ingester
	rt    *runtime.Runtime // the above, as context/runtime opened them
	pi    piState          // the Pi log and last answer, for deltas
	// spillDue are outputs a bare head's context named whose spill files
	// could not be written yet (spill.go).
	spillDue []assemble.SpillFile
	// edited are the outputs of this session's toolcalls the harness
	// edited after they were recorded, as the store now holds them (nil:
	// omitted), by toolcall id (edits.go).
	edited map[string]*string
	// req, roots and sc are what the session was opened with (to reopen
	// it when another server or process took it over).
	req   OpenRequest
	roots *tools.Roots
	sc    recall.Scope
}

func (l *live) isOpen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess != nil
}

// close writes the chat turn in progress and forgets the session.
func (l *live) close(ctx context.Context, s *Server) error {
	err := l.rt.Close(ctx)
	s.removeSpill(l)
	l.sess, l.tools, l.asm, l.in, l.rt, l.pi, l.spillDue, l.edited = nil, nil, nil, nil, nil, piState{}, nil, nil
	return err
}

// lock returns session sid locked, or a session_not_open error. The caller
// unlocks it.
func (s *Server) lock(sid string) (*live, error) {
	s.mu.Lock()
	l := s.sessions[sid]
	s.mu.Unlock()
	if l != nil {
		l.mu.Lock()
		if l.sess != nil {
			return l, nil
		}
		l.mu.Unlock()
	}
	return nil, errorf(http.StatusConflict, CodeNotOpen, "session %s is not open in this server: open it with PUT /v1/sessions/%s", sid, sid)
}

// OpenRequest is the body of PUT /v1/sessions/{sid}.
type OpenRequest struct {
	// Cwd is the harness's working directory (absolute, inside the
	// server's roots): tool paths are relative to it.
	Cwd string `json:"cwd"`
	// SystemPrompt is the harness's system prompt, used when the session is
	// created (the guide is appended); an existing session keeps its own.
	SystemPrompt string `json:"system_prompt"`
	// Harness names the harness ("pi"), recorded at creation.
	Harness string `json:"harness,omitempty"`
	// Tools is the tool list offered to the model, fixed at creation (it is
	// part of the assembled bytes).
	Tools []assemble.ToolSpec `json:"tools,omitempty"`
	// Roots are the directories (absolute) the session's tools may read and
	// index files in; default the cwd. Each, and the cwd, must lie inside
	// the server's roots (serve --root, default the directory serve was
	// started in); re-opening an open session may narrow them, not widen
	// them.
	Roots []string `json:"roots,omitempty"`
	// Provenance is what the harness knows for the session's conversation
	// commits (template, principal, machine, harness, ticket, thread).
	Provenance *commits.Provenance `json:"provenance,omitempty"`
	// LeanHead says the harness sends each call's head as the context
	// answer gives it (its system_prompt, and the tools less its
	// withheld_tools): a new session then starts without ctxstore's guide
	// and management tools, offered from the first call whose context has
	// something to manage (assemble.LeanHead). Used at creation only.
	LeanHead bool `json:"lean_head,omitempty"`
	// BareHead says the harness sends each call's head as the context
	// answer gives it, and its model loads a collapsed or previewed output
	// with ctxstore's read of the output's spill file
	// (OpenResponse.Spill/<call id>.txt): a new session then never gets
	// ctxstore's guide or management tools, and its head never changes
	// (assemble.LeanHead.Bare; docs/service.md, "Bare head"). It wins over
	// LeanHead. Used at creation only.
	BareHead bool `json:"bare_head,omitempty"`
}

// OpenResponse is the answer of PUT /v1/sessions/{sid}.
type OpenResponse struct {
	SessionID string `json:"session_id"`
	// State is "created" (a new session), "resumed" (loaded from the store
	// into this server) or "open" (it already was).
	State string `json:"state"`
	// SystemPrompt is the session's system prompt object: the harness's
	// prompt with ctxstore's guide, or without it for a lean head (whose
	// context answers carry the prompt each call must send).
	SystemPrompt string `json:"system_prompt"`
	Turn         int    `json:"turn"`
	// Calls is the number of context calls assembled so far.
	Calls int `json:"calls"`
	// Spill is a bare head's spill directory: the server writes there each
	// output the context names by file, and removes it when the session
	// closes. Absent for other heads.
	Spill string `json:"spill,omitempty"`
}

func (s *Server) open(q *request) (any, error) {
	var req OpenRequest
	if err := q.decode(&req); err != nil {
		return nil, err
	}
	if req.Cwd == "" || !filepath.IsAbs(req.Cwd) {
		return nil, badRequest("cwd must be an absolute path")
	}
	own, roots, err := s.sessionRoots(req)
	if err != nil {
		return nil, err
	}
	// The conversation commits are by whoever the request's token is, not
	// by a principal the body names.
	prov := commits.Provenance{}
	if req.Provenance != nil {
		prov = *req.Provenance
	}
	prov.Principal = q.principal
	req.Provenance = &prov
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	l := s.sessions[q.sid]
	if l == nil {
		l = &live{id: q.sid}
		s.sessions[q.sid] = l
	}
	s.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Re-opening a session, open or closed since, in this server or
	// another on the same store, before or after a restart, may narrow its
	// roots, never widen them.
	if err := s.recordRoots(q.ctx, q.sid, own); err != nil {
		return nil, err
	}
	state := "open"
	if l.sess == nil {
		sc, err := s.grantScope(q.r)
		if err != nil {
			return nil, err
		}
		if state, err = s.start(q.ctx, l, req, roots, sc); err != nil {
			return nil, err
		}
	} else {
		// Narrower or the same (checked above).
		l.req, l.roots = req, roots
		l.tools.SetRoots(roots)
	}
	sys, err := s.systemPrompt(q, l.sess)
	if err != nil {
		return nil, err
	}
	calls, err := assemble.Calls(q.ctx, s.st, q.sid)
	if err != nil {
		return nil, err
	}
	s.logOpen(q.sid, state, req, calls)
	return OpenResponse{SessionID: q.sid, State: state, SystemPrompt: sys, Turn: l.sess.State().Turn, Calls: calls, Spill: l.asm.SpillDir()}, nil
}

// start opens session l (created or resumed from the store) for req; l is
// locked and not open.
func (s *Server) start(ctx context.Context, l *live, req OpenRequest, roots *tools.Roots, sc recall.Scope) (string, error) {
	prompt := req.SystemPrompt
	var lean *assemble.LeanHead
	switch {
	case req.BareHead:
		// Never the guide or the management tools: the model reads
		// outputs back from their spill files (spill.go).
		lean = &assemble.LeanHead{Bare: true, Spill: tools.SpillDir(s.o.Spill, l.id), Withheld: managementTools(req.Tools)}
	case req.LeanHead:
		// The guide joins the prompt, and the management tools the
		// request, once something collapses (assemble.LeanHead).
		lean = &assemble.LeanHead{Withheld: managementTools(req.Tools)}
		if s.o.Guide != "-" {
			lean.Guide = s.o.Guide
		}
	case s.o.Guide != "-":
		if prompt != "" {
			prompt += "\n\n"
		}
		prompt += s.o.Guide
	}
	pol := s.o.Rebase
	if pol.Breakpoints == "" {
		// ctxstore's Pi and OpenClaw extensions put the message breakpoints
		// at the end of the stable messages (Assembled.Stable).
		pol.Breakpoints = assemble.BreakpointsStable
	}
	rt, err := runtime.Open(ctx, s.st, l.id, runtime.Options{
		Create:  session.CreateOptions{SystemPrompt: prompt, Harness: req.Harness},
		Indexer: s.ix,
		Tools:   tools.Options{Policy: s.o.Policy, Tracker: s.tr, Roots: roots, Notes: s.notes, Spill: tools.Spill{Root: s.o.Spill}},
		Assemble: assemble.Options{Layout: s.o.Layout, Tools: req.Tools, Lean: lean,
			Policy: pol, Tokenizer: s.o.Tokenizer, Now: s.o.Now, Render: renderFor(req.Harness)},
		Ingest: ingest.Options{Cwd: req.Cwd, OnUser: s.onUser(ctx, l.id, sc), Commits: s.commitOptions(req)}, // recall.go: @@ references
	})
	if err != nil {
		return "", err
	}
	if rt.ResumeFiles != nil {
		s.log.Warn("resuming session files", "session", l.id, "err", rt.ResumeFiles)
	}
	l.sess, l.tools, l.asm, l.in, l.rt, l.cwd = rt.Session, rt.Tools, rt.Assembler, rt.Ingester, rt, req.Cwd
	l.req, l.roots, l.sc = req, roots, sc
	return string(rt.State), nil
}

// managementTools names the management tools among a session's tools,
// which a lean or bare head withholds.
func managementTools(specs []assemble.ToolSpec) []string {
	var out []string
	for _, d := range tools.Management() {
		for _, t := range specs {
			if t.Name == d.Name {
				out = append(out, t.Name)
			}
		}
	}
	return out
}

// takeOver reopens session sid from the store after another writer (a
// second server or process on the same store) changed it: what this server
// held in memory is dropped (not flushed: the store is ahead of it) and the
// session resumes from its latest commits, so the request that met the
// conflict can run again (a second server does not leave the first
// answering 409 until reopened). It reports whether it reopened.
func (s *Server) takeOver(ctx context.Context, sid string) bool {
	s.mu.Lock()
	l := s.sessions[sid]
	s.mu.Unlock()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil {
		return false
	}
	req, roots, sc := l.req, l.roots, l.sc
	// Not flushed: the store is ahead of this server.
	l.sess, l.tools, l.asm, l.in, l.rt, l.pi = nil, nil, nil, nil, nil, piState{}
	if _, err := s.start(ctx, l, req, roots, sc); err != nil {
		s.log.Warn("taking over session", "session", sid, "err", err)
		return false
	}
	return true
}

// sessionRoots returns the roots of a session being opened: own, the
// session's (req.Roots, or its cwd), and roots, own with the server's note
// roots, which its tools get. The cwd and each root must lie inside the
// server's roots (serve --root, default the directory serve was started
// in), symlinks resolved: a client's cwd never widens what the server
// reads.
func (s *Server) sessionRoots(req OpenRequest) (own, roots *tools.Roots, err error) {
	dirs := req.Roots
	if len(dirs) == 0 {
		dirs = []string{req.Cwd}
	}
	own, err = tools.NewRoots(dirs...)
	if err != nil {
		return nil, nil, badRequest("roots: %v", err)
	}
	if err := s.roots.Check(req.Cwd); err != nil {
		return nil, nil, errorf(http.StatusForbidden, CodeForbidden, "cwd %s is outside the server's roots (%s): a session's cwd must lie inside them (serve --root, default the directory serve was started in)", req.Cwd, strings.Join(s.roots.Dirs(), ", "))
	}
	if err := s.roots.Within(own); err != nil {
		return nil, nil, errorf(http.StatusForbidden, CodeForbidden, "roots: %v: a session's roots must lie inside the server's roots (serve --root, default the directory serve was started in)", err)
	}
	// The operator's note roots (serve --notes) are readable by every
	// session: notes are shared knowledge, indexed by the server's own
	// indexer (docs/security.md). They are the server's, so a session's
	// recorded roots never hold them.
	roots = own
	if s.o.Notes != nil {
		if roots, err = tools.NewRoots(append(own.Dirs(), s.o.Notes.Roots()...)...); err != nil {
			return nil, nil, errorf(http.StatusInternalServerError, CodeInternal, "note roots: %v", err)
		}
	}
	return own, roots, nil
}

// recordRoots checks that own, the roots session sid is being opened
// with, lie within those recorded for it in the store (session.ReadRoots:
// the roots of its last opening by any server on the store, kept across
// restarts), and records own when they differ. A session without recorded
// roots (never opened since roots were recorded, or imported from a
// bundle, which never carries them) takes own. The check is on the
// recorded paths as they were resolved then, not resolved again: a
// recorded directory since replaced by a symbolic link widens nothing.
func (s *Server) recordRoots(ctx context.Context, sid string, own *tools.Roots) error {
	dirs := own.Dirs()
	for attempt := 0; ; attempt++ {
		was, err := session.ReadRoots(ctx, s.st, sid)
		if err != nil {
			return err
		}
		if was.Dirs != nil {
			for _, d := range dirs {
				if !underAny(d, was.Dirs) {
					return errorf(http.StatusForbidden, CodeForbidden, "roots: %s is outside the session's roots (%s): re-opening a session never widens its roots", d, strings.Join(was.Dirs, ", "))
				}
			}
			if slices.Equal(was.Dirs, dirs) {
				return nil
			}
		}
		_, err = session.WriteRoots(ctx, s.st, sid, was, dirs)
		if errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue // another server recorded roots since: check again
		}
		return err
	}
}

// underAny reports whether the directory d (resolved) is one of dirs or
// inside one.
func underAny(d string, dirs []string) bool {
	for _, r := range dirs {
		if d == r || r == string(filepath.Separator) || strings.HasPrefix(d, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func (s *Server) systemPrompt(q *request, sess *session.Session) (string, error) {
	o, _, err := expand.Resolve(q.ctx, s.st, objects.DynamicRef(sess.Info().SystemPromptID))
	if err != nil {
		return "", err
	}
	if o.Content == nil {
		return "", nil
	}
	return *o.Content, nil
}

func (s *Server) closeSession(q *request) (any, error) {
	s.mu.Lock()
	l := s.sessions[q.sid]
	delete(s.sessions, q.sid)
	s.mu.Unlock()
	was := false
	if l != nil {
		l.mu.Lock()
		was = l.sess != nil
		err := l.close(q.ctx, s)
		l.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return CloseResponse{SessionID: q.sid, Closed: was}, nil
}

// CloseResponse is the answer of POST /v1/sessions/{sid}/close.
type CloseResponse struct {
	SessionID string `json:"session_id"`
	// Closed is false when the session was not open.
	Closed bool `json:"closed"`
}

// SessionInfo is GET /v1/sessions/{sid}: the session's state as stored.
type SessionInfo struct {
	SessionID    string   `json:"session_id"`
	Open         bool     `json:"open"`
	Harness      string   `json:"harness,omitempty"`
	Turn         int      `json:"turn"`
	Tx           int64    `json:"tx"`
	Calls        int      `json:"calls"`
	SystemPrompt string   `json:"system_prompt"`
	Index        []string `json:"index"`
	Pool         []string `json:"pool"`
	Active       []string `json:"active"`
	Pinned       []string `json:"pinned"`
}

func (s *Server) sessionInfo(q *request) (any, error) {
	var sess *session.Session
	open := false
	if l, err := s.lock(q.sid); err == nil {
		sess, open = l.sess, true
		defer l.mu.Unlock()
	} else {
		if sess, err = session.Open(q.ctx, s.st, q.sid); err != nil {
			return nil, err
		}
	}
	sys, err := s.systemPrompt(q, sess)
	if err != nil {
		return nil, err
	}
	calls, err := assemble.Calls(q.ctx, s.st, q.sid)
	if err != nil {
		return nil, err
	}
	st := sess.State()
	return SessionInfo{SessionID: q.sid, Open: open, Harness: sess.Info().Harness, Turn: st.Turn, Tx: sess.Tx(),
		Calls: calls, SystemPrompt: sys, Index: nonNil(st.Index), Pool: nonNil(st.Pool), Active: nonNil(st.Active),
		Pinned: nonNil(st.Pinned)}, nil
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// Package httpapi is ctxstore's HTTP JSON API over the context manager
// (docs/service.md, docs/openapi.yaml): sessions keyed to a
// harness's session id, the context call (a harness's messages in, the
// assembled context and system prompt out), the agent tools, observation of
// the tools the harness runs, and reads of the store.
//
// Every request naming a session is serialized with the others of that
// session (one mutex per session); sessions run in parallel. Errors are
// JSON bodies {code, message} with an HTTP status mapped from the store's,
// the session's and the tools' errors in one place (classify).
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/notes"
	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/store"
)

// Options configure a Server.
type Options struct {
	// Store is the store every session lives in; the caller closes it after
	// the server has shut down.
	Store store.Store
	// Resolver gives files their filesystem ids (with the mount mappings
	// and device detection); required.
	Resolver *files.Resolver
	// Notes, when set, makes Markdown files under its roots note objects
	// (title, tags, links, backlinks), and read and activate on a note list
	// where its links lead and which notes link to it.
	Notes *notes.Notes
	// Track watches every file the sessions read or touch (fsnotify), so
	// that edits made on disk become new versions without a read.
	Track bool
	// Tokens are the accepted bearer tokens; none means no authentication
	// (CheckBind allows that on loopback only).
	Tokens []Token
	// Principal is who the server records as the author of what requests
	// write (commit provenance, imports) when there are no Tokens: the
	// user who started the server (default: the process's user name). With
	// tokens each token's name is recorded (Token.Name). A principal a
	// client sends is never recorded.
	Principal string
	// Policy is the auto-collapse window; zero means collapse.Default().
	Policy collapse.Config
	// Layout, Rebase and Tokenizer configure each session's assembler.
	Layout    assemble.Layout
	Rebase    assemble.Policy
	Tokenizer assemble.Tokenizer
	// CommitEvery chooses when sessions write conversation commits
	// (docs/commits.md "Live sessions"): "call" (default: every context
	// call with new messages), "turn" (when a user prompt begins a turn) or
	// "off".
	CommitEvery string
	// Guide is appended to the harness's system prompt when a session is
	// created; empty means DefaultGuide, "-" nothing.
	Guide string
	// Roots are the directories sessions may read and index files in
	// (every path, symlinks resolved, must lie inside one), and path
	// imports may read: a session's cwd and its own roots
	// (OpenRequest.Roots, default its cwd) must lie inside them. None
	// means the process's working directory (where serve was started):
	// what a server reads is decided by whoever started it, never by a
	// client's cwd alone.
	Roots []string
	// MaxBody caps request bodies (default 64 MiB); MaxImport caps what an
	// imported bundle decompresses to (default 1 GiB).
	MaxBody   int64
	MaxImport int64
	// MaxImportLines caps the lines (records) of one uploaded session file
	// (POST /v1/import with a body; default 20,000): an import costs about
	// a millisecond of CPU per record, so a request is bounded in time by
	// its count, not its bytes (a 1.75 MB gzip upload of 10^5 records
	// took 77 s of CPU). A larger upload is refused with 413 before
	// anything is written.
	MaxImportLines int
	// BodyBudget bounds the bytes of large request bodies held at once,
	// server-wide: each body's bytes beyond its first MiB, what a gzip
	// body decompresses to included (default 256 MiB). A request that does
	// not fit is answered 503 with Retry-After; one alone always fits.
	BodyBudget int64
	// ReadTimeout bounds reading a whole request, body included (default
	// 2 min); IdleTimeout closes idle keep-alive connections (default
	// 2 min). Serve uses them.
	ReadTimeout, IdleTimeout time.Duration
	// Limits bound the work of one context request (zero fields: defaults).
	Limits Limits
	// Log receives one line per failed request (default: discard).
	Log *slog.Logger
	// Now is the clock of the assemblers (default time.Now).
	Now func() time.Time
	// Recall configures the session index and query_session (nil: the
	// offline generator; see context/recall and docs/recall.md).
	Recall *recall.Settings
	// Spill holds the spill directories of bare-head sessions
	// (OpenRequest.BareHead, spill.go), one per session; default
	// ctxstore/spill in the user's cache directory. No session reads
	// another's, and no file in it is indexed as a file.
	Spill string
}

// DefaultGuide tells the model how its context works; it is appended to the
// harness's system prompt of a new session (tools.Guide, beside the tools'
// definitions).
const DefaultGuide = tools.Guide

// Server is the HTTP API. Create it with New, serve Handler (or call
// Serve), and Close it after the HTTP server has shut down.
type Server struct {
	o    Options
	st   store.Store
	ix   *files.Indexer
	tr   *files.Tracker
	auth *auth
	// roots are Options.Roots resolved (never nil).
	roots *tools.Roots
	// notes resolves notes' links for the tools (nil: no note roots).
	notes tools.NoteLinks
	mux   *http.ServeMux
	log   *slog.Logger
	// bodies is the budget of large request bodies (budget.go).
	bodies *bodyBudget

	mu       sync.Mutex
	sessions map[string]*live
	closed   bool
	rc       recallState // recall.go
}

// New returns a Server over o.Store.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Resolver == nil {
		return nil, errors.New("httpapi: Store and Resolver are required")
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 64 << 20
	}
	if o.MaxImport <= 0 {
		o.MaxImport = 1 << 30
	}
	if o.MaxImportLines <= 0 {
		o.MaxImportLines = 20000
	}
	if o.BodyBudget <= 0 {
		o.BodyBudget = 256 << 20
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 2 * time.Minute
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	o.Limits = o.Limits.withDefaults()
	if o.Guide == "" {
		o.Guide = DefaultGuide
	}
	if o.Spill == "" {
		o.Spill = defaultSpillRoot()
	}
	if abs, err := filepath.Abs(o.Spill); err != nil {
		return nil, fmt.Errorf("httpapi: spill directory: %w", err)
	} else {
		o.Spill = abs
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch o.CommitEvery {
	case "":
		o.CommitEvery = ingest.EveryCall
	case ingest.EveryCall, ingest.EveryTurn, "off":
	default:
		return nil, fmt.Errorf("httpapi: CommitEvery %q: want call, turn or off", o.CommitEvery)
	}
	if len(o.Roots) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("httpapi: no roots given, and no working directory to take: %w", err)
		}
		o.Roots = []string{wd}
	}
	roots, err := tools.NewRoots(o.Roots...)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	if o.Principal == "" {
		o.Principal = localUser()
	}
	s := &Server{roots: roots, o: o, st: o.Store, ix: files.NewIndexer(o.Store, o.Resolver, 0), auth: newAuth(o.Tokens, o.Principal),
		log: o.Log, sessions: map[string]*live{}, bodies: &bodyBudget{max: o.BodyBudget}}
	if o.Notes != nil {
		s.ix = o.Notes.Indexer(s.ix)
		s.notes = o.Notes
		// Every note under the roots is a note object from the start, so
		// links and backlinks resolve before the agent reads any.
		n, err := o.Notes.IndexAll(context.Background(), s.ix)
		if err != nil {
			s.log.Warn("indexing notes", "err", err)
		}
		s.log.Info("notes indexed", "notes", n)
	}
	if o.Track {
		tr, err := files.NewTracker(s.ix, files.TrackerOptions{
			OnError: func(err error) { s.log.Warn("file tracker", "err", err) },
		})
		if err != nil {
			return nil, fmt.Errorf("httpapi: file tracker: %w", err)
		}
		s.tr = tr
	}
	s.mux = http.NewServeMux()
	allow := map[string][]string{}
	for _, rt := range s.routes() {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
		allow[rt.path] = append(allow[rt.path], rt.method)
	}
	for path, methods := range allow {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(methods, ", "))
			writeError(w, errorf(http.StatusMethodNotAllowed, CodeNotAllowed, "%s %s: allowed: %s", r.Method, r.URL.Path, strings.Join(methods, ", ")))
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return s, nil
}

// localUser is the name of the user running the process ("local" when
// there is none to find).
func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if n := os.Getenv("USER"); n != "" {
		return n
	}
	return "local"
}

// Handler returns the API's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// route is one endpoint.
type route struct {
	method, path string
	// scope says what a token must grant: a session named by {sid}, all
	// (the store reads), or nothing (health).
	scope scope
	h     func(*request) (any, error)
	// raw, instead of h, writes a successful answer itself (a stream).
	raw func(http.ResponseWriter, *request) error
	// bodyTypes are the content types the route reads; nil means JSON.
	bodyTypes []string
	// retake: a conflict (another server or process wrote the session)
	// reopens the session from the store and runs the request once more.
	retake bool
}

type scope int

const (
	scopeSession scope = iota
	scopeAll
	scopePublic
)

// routes is the route table; docs/openapi.yaml documents exactly these
// (a test checks both ways).
func (s *Server) routes() []route {
	return append([]route{
		{method: "GET", path: "/v1/health", scope: scopePublic, h: s.health},
		{method: "GET", path: "/v1/status", scope: scopeAll, h: s.status},
		{method: "GET", path: "/v1/tools", scope: scopePublic, h: s.toolDefinitions},
		{method: "PUT", path: "/v1/sessions/{sid}", scope: scopeSession, h: s.open},
		{method: "GET", path: "/v1/sessions/{sid}", scope: scopeSession, h: s.sessionInfo},
		{method: "POST", path: "/v1/sessions/{sid}/close", scope: scopeSession, h: s.closeSession},
		{method: "POST", path: "/v1/sessions/{sid}/context", scope: scopeSession, h: s.context, retake: true},
		{method: "POST", path: "/v1/sessions/{sid}/tools/{tool}", scope: scopeSession, h: s.tool, retake: true},
		{method: "POST", path: "/v1/sessions/{sid}/observe", scope: scopeSession, h: s.observe, retake: true},
		{method: "GET", path: "/v1/sessions/{sid}/export", scope: scopeSession, raw: s.exportSession},
		{method: "POST", path: "/v1/sessions/{sid}/import", scope: scopeSession, h: s.importSession, bodyTypes: bundleTypes},
		{method: "GET", path: "/v1/objects/{id...}", scope: scopeAll, h: s.object},
		{method: "GET", path: "/v1/history/{id...}", scope: scopeAll, h: s.history},
		{method: "POST", path: "/v1/query", scope: scopeAll, h: s.query},
		{method: "POST", path: "/v1/search", scope: scopeAll, h: s.search},
		{method: "POST", path: "/v1/sessions/{sid}/index", scope: scopeSession, h: s.indexSession},
		{method: "GET", path: "/v1/sessions/{sid}/meta", scope: scopeSession, h: s.sessionMeta},
		{method: "GET", path: "/v1/stats", scope: scopePublic, h: s.stats}, // any token: the handler scopes it
	}, s.commitRoutes()...)
}

// request is what a handler gets.
type request struct {
	ctx context.Context
	r   *http.Request
	sid string
	// timing, if set, is sent as the Server-Timing header.
	timing string
	// lease is the request's share of the body budget: the body counts
	// into it as it is read, and spool counts what a gzip body decodes to.
	lease *lease
	// principal is who the request is (its token's name, or the server's
	// Options.Principal without tokens): what it writes is recorded as by
	// them, whatever the body says.
	principal string
	// body is the request's JSON body once read (readBody): read once,
	// into one buffer of its declared size, and decoded from there however
	// often the request runs (a retake decodes it again).
	body    []byte
	hasBody bool
}

// readBody reads the request's body once: into a buffer of the declared
// length when there is one (no growing copies), else grown as it comes.
func (q *request) readBody() ([]byte, error) {
	if q.hasBody {
		return q.body, nil
	}
	var buf bytes.Buffer
	if n := q.r.ContentLength; n > 0 {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(q.r.Body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || (q.lease != nil && q.lease.refused) {
			return nil, err
		}
		// A body cut short is the client's fault.
		return nil, badRequest("reading the request body: %v", err)
	}
	q.body, q.hasBody = buf.Bytes(), true
	return q.body, nil
}

// decode reads the JSON body into v. Unknown fields are ignored: Pi's
// messages carry more than ctxstore reads.
func (q *request) decode(v any) error {
	body, err := q.jsonBody()
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return badRequest("the request needs a JSON body")
		}
		return badRequest("request body: %v", err)
	}
	// Nothing but white space after the value: dec.More alone would pass
	// a stray ']' or '}'.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body: more than one JSON value")
	}
	return noRepeatedKey(body)
}

// noRepeatedKey refuses a body that repeats a key in an object, checked
// once it decoded: a repeated key would silently keep its last value.
func noRepeatedKey(body []byte) error {
	if err := store.CheckDuplicateKeys(body); err != nil {
		return badRequest("request body: %v", err)
	}
	return nil
}

// jsonBody reads the body (readBody) and checks what every JSON body must
// be before it is decoded: nested at most jsonlimit.MaxDepth deep, and
// valid UTF-8.
func (q *request) jsonBody() ([]byte, error) {
	body, err := q.readBody()
	if err != nil {
		return nil, err
	}
	if err := jsonlimit.Depth(body, jsonlimit.MaxDepth); err != nil {
		return nil, badRequest("request body: %v", err)
	}
	if !utf8.Valid(body) {
		at := 0
		for at < len(body) {
			r, n := utf8.DecodeRune(body[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return nil, badRequest("request body: invalid UTF-8 at byte %d (JSON text is UTF-8; encoding/json would turn it into U+FFFD)", at)
	}
	return body, nil
}

// readHeaderTimeout bounds reading a request's headers (Serve).
const readHeaderTimeout = 10 * time.Second

// maxSessionID is the longest session id, in bytes.
const maxSessionID = 128

var sessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,` + strconv.Itoa(maxSessionID-1) + `}$`)

func checkSessionID(id string) error {
	if !sessionIDRe.MatchString(id) {
		return fmt.Errorf("session id %q: want 1-128 characters of letters, digits and . _ : - (starting with a letter or digit)", id)
	}
	return nil
}

// wrap runs a route: authentication and scope, body limit, the handler,
// the JSON answer or error.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &request{r: r, sid: r.PathValue("sid")}
		// A request that has started runs to its end even if the client
		// goes away: its store writes must not stop half-way.
		q.ctx = context.WithoutCancel(r.Context())
		err := s.guard(r, rt)
		if err == nil {
			err = s.authorize(q, rt.scope)
		}
		var v any
		if err == nil {
			q.lease = s.bodies.lease()
			defer q.lease.release()
			if r.ContentLength > 0 && r.ContentLength <= s.o.MaxBody && !q.lease.need(r.ContentLength) {
				err = q.lease.busy() // refused before reading a byte
			}
		}
		if err == nil {
			mbr := http.MaxBytesReader(w, r.Body, s.o.MaxBody)
			r.Body = struct {
				io.Reader
				io.Closer
			}{&counted{r: mbr, l: q.lease}, mbr}
			if rt.retake {
				// The whole body before the session is touched: a retake
				// decodes it again from q.body.
				_, err = q.readBody()
			}
			if err == nil && rt.raw != nil {
				err = rt.raw(w, q)
			} else if err == nil {
				v, err = rt.h(q)
				if rt.retake && store.KindOf(err) == store.ErrConflict && s.takeOver(q.ctx, q.sid) {
					v, err = rt.h(q)
				}
			}
		}
		if err != nil && q.lease != nil && q.lease.refused {
			// However the handler wrapped it, the budget refused the body.
			err = q.lease.busy()
			w.Header().Set("Retry-After", retryAfter)
		}
		if err != nil {
			ae := classify(err)
			s.logFailure(r, q.sid, ae.status, ae.code, ae.msg)
			writeError(w, ae)
			return
		}
		if rt.raw != nil {
			return // answered
		}
		if q.timing != "" {
			w.Header().Set("Server-Timing", q.timing)
		}
		writeJSON(w, http.StatusOK, v)
	})
}

func (s *Server) authorize(q *request, sc scope) error {
	r, sid := q.r, q.sid
	if sc == scopePublic {
		return nil
	}
	g, err := s.auth.check(r)
	if err != nil {
		return err
	}
	q.principal = g.principal
	switch sc {
	case scopeSession:
		if err := checkSessionID(sid); err != nil {
			return badRequest("%v", err)
		}
		if !g.session(sid) {
			return errorf(http.StatusForbidden, CodeForbidden, "the token does not grant session %s", sid)
		}
	case scopeAll:
		if !g.all {
			return errorf(http.StatusForbidden, CodeForbidden, "the token is limited to sessions; store reads need an unrestricted token")
		}
	}
	return nil
}

// Serve serves the API on ln until ctx is done, then shuts down gracefully:
// it stops accepting connections, lets requests in flight finish (waiting at
// most grace; 0 means 30 s), and closes the sessions. The store is left
// open for the caller to close.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	if grace <= 0 {
		grace = 30 * time.Second
	}
	hs := &http.Server{
		Handler: s.Handler(),
		// Slow or idle clients cannot hold connections: headers
		// within 10 s, a whole body within ReadTimeout, an idle keep-alive
		// connection closed after IdleTimeout.
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       s.o.ReadTimeout,
		IdleTimeout:       s.o.IdleTimeout,
		// Handlers must not see the shutdown signal: they finish their work.
		BaseContext: func(net.Listener) context.Context { return context.Background() },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("shutdown: requests still running after %s", grace)
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes every open session (after waiting for the requests holding
// them) and the file tracker. It does not close the store.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ls := make([]*live, 0, len(s.sessions))
	for _, l := range s.sessions {
		ls = append(ls, l)
	}
	s.sessions = map[string]*live{}
	s.mu.Unlock()
	var errs []error
	for _, l := range ls {
		l.mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := l.close(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("closing session %s: %w", l.id, err))
		}
		cancel()
		l.mu.Unlock()
	}
	s.waitRecall()
	if s.tr != nil {
		errs = append(errs, s.tr.Close())
	}
	return errors.Join(errs...)
}

func (s *Server) health(*request) (any, error) {
	return map[string]any{"ok": true}, nil
}

// StatusResponse is GET /v1/status.
type StatusResponse struct {
	Store    store.Status `json:"store"`
	Sessions []string     `json:"open_sessions"`
}

func (s *Server) status(q *request) (any, error) {
	st, err := s.st.Status(q.ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	open := make([]string, 0, len(s.sessions))
	for id, l := range s.sessions {
		if l.isOpen() {
			open = append(open, id)
		}
	}
	s.mu.Unlock()
	slices.Sort(open)
	return StatusResponse{Store: st, Sessions: open}, nil
}

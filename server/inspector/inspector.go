// Package inspector is the web inspector (docs/inspector.md): read-only HTML pages over explain/inspect, served by
// `ctxstore serve` on the API's address under /inspect/. Sessions with
// their names; a session's timeline of calls as an SVG chart; a call's
// exact context block by block and its diff against any other call; the
// cache-break attribution; an object's history on both time axes; the
// chain of call records with its branches.
//
// Everything it sends is rendered on the server from embedded templates
// and one embedded style sheet: no script, no CDN, no network. The pages
// follow the API's token rules: a request carries the bearer token in its
// Authorization header, or in a cookie set by the login form (a browser
// cannot send a header on a link), and a token limited to some sessions
// sees only those (any other is "not found").
package inspector

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/store"
)

//go:embed assets
var assets embed.FS

// Grant is what a request may read: everything, or some sessions.
type Grant struct {
	All      bool
	Sessions []string
}

// Options configure the inspector.
type Options struct {
	Store store.Store
	// Authorize checks a request's bearer token (the Authorization header,
	// set from the login cookie when absent) and returns its grant; an
	// error answers 401 with the login form. Nil grants everything (for a
	// server without tokens, which CheckBind keeps on loopback).
	Authorize func(*http.Request) (Grant, error)
	// Prices and TTL are the cost model (explain/inspect).
	Prices inspect.Prices
	TTL    time.Duration
	// Prefix is where the pages live (default "/inspect").
	Prefix string
	// PageSize is the number of calls on a session page (default 100).
	PageSize int
	// SessionsPerPage is the number of sessions on the sessions page
	// (default 100).
	SessionsPerPage int
	// BlocksPerPage is the number of a call's blocks its page shows, the
	// newest first page (default 200; ?page= shows earlier ones).
	BlocksPerPage int
	// Log receives one line per failed request (default: discard).
	Log *slog.Logger
}

// CookieName is the cookie the login form sets.
const CookieName = "ctxstore_token"

// Handler serves the inspector.
type Handler struct {
	o   Options
	mux *http.ServeMux
	t   *template.Template
	// faultCache keeps recorded sessions' fault replays (faults.go).
	faultCache faultCache
}

// New returns the inspector's handler; mount it at Options.Prefix + "/".
func New(o Options) (*Handler, error) {
	if o.Store == nil {
		return nil, errors.New("inspector: Store is required")
	}
	if o.Prefix == "" {
		o.Prefix = "/inspect"
	}
	o.Prefix = strings.TrimRight(o.Prefix, "/")
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.SessionsPerPage <= 0 {
		o.SessionsPerPage = 100
	}
	if o.BlocksPerPage <= 0 {
		o.BlocksPerPage = 200
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{o: o, mux: http.NewServeMux()}
	t, err := template.New("").Funcs(h.funcs()).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("inspector: templates: %w", err)
	}
	h.t = t
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	p := o.Prefix
	h.mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET "+p+"/login", h.loginForm)
	h.mux.HandleFunc("POST "+p+"/login", h.login)
	h.mux.HandleFunc("POST "+p+"/logout", h.logout)
	h.page("GET "+p+"/{$}", h.sessions)
	h.page("GET "+p+"/s/{sid}", h.session)
	h.page("GET "+p+"/s/{sid}/paging", h.paging)
	h.page("GET "+p+"/s/{sid}/c/{n}", h.call)
	h.page("GET "+p+"/s/{sid}/c/{n}/diff/{m}", h.diff)
	h.page("GET "+p+"/s/{sid}/c/{n}/faults", h.faults)
	h.mux.HandleFunc("GET "+p+"/s/{sid}/c/{n}/raw", h.guard(h.raw))
	h.page("GET "+p+"/o/{id...}", h.object)
	h.mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET")
			h.fail(w, r, http.StatusMethodNotAllowed, "the inspector is read-only")
			return
		}
		h.fail(w, r, http.StatusNotFound, "no page "+r.URL.Path)
	})
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin") // "no-referrer" would make a form POST send "Origin: null", which the guard refuses
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// req is what a page handler gets.
type req struct {
	ctx context.Context
	r   *http.Request
	in  *inspect.Inspector
	g   Grant
}

// pageData is what every template gets.
type pageData struct {
	Prefix string
	Title  string
	Crumbs []crumb
	Body   any
}

type crumb struct{ Label, Href string }

// page registers a handler rendering the template it names.
func (h *Handler) page(pattern string, fn func(*req) (string, pageData, error)) {
	h.mux.HandleFunc(pattern, h.guard(func(w http.ResponseWriter, q *req) {
		name, d, err := fn(q)
		var rd redirect
		if errors.As(err, &rd) {
			http.Redirect(w, q.r, rd.to, http.StatusSeeOther)
			return
		}
		if err != nil {
			h.error(w, q.r, err)
			return
		}
		d.Prefix = h.o.Prefix
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := h.t.ExecuteTemplate(w, name, d); err != nil {
			h.o.Log.Error("inspector: rendering", "path", q.r.URL.Path, "err", err)
		}
	}))
}

// guard authenticates a request and builds its Inspector, limited to what
// its token grants.
func (h *Handler) guard(fn func(http.ResponseWriter, *req)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g := Grant{All: true}
		if h.o.Authorize != nil {
			if r.Header.Get("Authorization") == "" {
				if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
					r.Header.Set("Authorization", "Bearer "+c.Value)
				}
			}
			var err error
			if g, err = h.o.Authorize(r); err != nil {
				w.WriteHeader(http.StatusUnauthorized)
				h.render(w, "login.html", pageData{Title: "Log in", Body: loginBody{Next: r.URL.Path, Error: err.Error()}})
				return
			}
		}
		// The formats decode recorded sessions' commits: their calls are
		// derived from them when the import's stored ones are missing,
		// and a call's request is rebuilt from them.
		o := inspect.Options{Prices: h.o.Prices, TTL: h.o.TTL, Formats: formats.Commits()}
		if !g.All {
			allowed := map[string]bool{}
			for _, s := range g.Sessions {
				allowed[s] = true
			}
			o.Allowed = func(id string) bool { return allowed[id] }
		}
		fn(w, &req{ctx: r.Context(), r: r, in: inspect.New(h.o.Store, o), g: g})
	}
}

func (h *Handler) render(w http.ResponseWriter, name string, d pageData) {
	d.Prefix = h.o.Prefix
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := h.t.ExecuteTemplate(w, name, d); err != nil {
		h.o.Log.Error("inspector: rendering", "template", name, "err", err)
	}
}

// error answers an error from the read model: 404 for what does not exist
// (or is not granted), 410 for a call whose context held a version a
// context edit evicted since (it can no longer be rebuilt), 400 for bad
// arguments, 500 otherwise.
func (h *Handler) error(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, assemble.ErrEvicted):
		h.fail(w, r, http.StatusGone, err.Error())
	case errors.Is(err, store.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, err.Error())
	case errors.Is(err, store.ErrInvalid), errors.Is(err, inspect.ErrInvalid), errors.Is(err, errBadRequest):
		h.fail(w, r, http.StatusBadRequest, err.Error())
	default:
		h.o.Log.Error("inspector: request failed", "path", r.URL.Path, "err", err)
		h.fail(w, r, http.StatusInternalServerError, err.Error())
	}
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.WriteHeader(status)
	h.render(w, "error.html", pageData{Title: http.StatusText(status), Body: errorBody{Status: status, Message: msg}})
}

type errorBody struct {
	Status  int
	Message string
}

var errBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// intArg parses a positive integer path or query value.
func intArg(name, s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, badRequest("%s %q: want a positive whole number", name, s)
	}
	return n, nil
}

type loginBody struct {
	Next  string
	Error string
}

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) {
	h.render(w, "login.html", pageData{Title: "Log in", Body: loginBody{Next: r.URL.Query().Get("next")}})
}

// login checks the token of the form and keeps it in an HttpOnly,
// SameSite=Strict cookie scoped to the inspector's pages.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	next := r.PostForm.Get("next")
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(next, h.o.Prefix+"/") {
		next = h.o.Prefix + "/"
	}
	if h.o.Authorize != nil {
		r.Header.Set("Authorization", "Bearer "+tok)
		if _, err := h.o.Authorize(r); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			h.render(w, "login.html", pageData{Title: "Log in", Body: loginBody{Next: next, Error: err.Error()}})
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: tok, Path: h.o.Prefix + "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: h.o.Prefix + "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, h.o.Prefix+"/login", http.StatusSeeOther)
}

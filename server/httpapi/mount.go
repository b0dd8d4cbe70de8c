package httpapi

import "net/http"

// Grant is what a request's bearer token allows: every session (All) or
// only Sessions.
type Grant struct {
	All      bool
	Sessions []string
}

// Authorize checks r's bearer token with the server's token rules (none
// configured: everything is granted) and returns what it grants; an error
// means no or an unknown token. Other faces mounted on the server (the web
// inspector) use it so that one token means the same everywhere.
func (s *Server) Authorize(r *http.Request) (Grant, error) {
	g, err := s.auth.check(r)
	if err != nil {
		return Grant{}, err
	}
	return Grant{All: g.all, Sessions: g.sessions}, nil
}

// Mount serves h under pattern (a net/http pattern such as "/inspect/") on
// the server's handler, next to the API routes, behind the same browser
// guard as the API (guard.go: a foreign Host without tokens, a foreign
// Origin, Sec-Fetch-Site: cross-site); bodies may be JSON or an HTML form.
// Authentication is h's, through Authorize. Call it before serving.
func (s *Server) Mount(pattern string, h http.Handler) {
	rt := route{bodyTypes: []string{"application/x-www-form-urlencoded", "application/json"}}
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.guard(r, rt); err != nil {
			writeError(w, classify(err))
			return
		}
		h.ServeHTTP(w, r)
	}))
}

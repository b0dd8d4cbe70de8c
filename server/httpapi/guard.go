package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Browser attacks (docs/security.md). A web page the
// user visits can make the browser send requests to the loopback server:
// by DNS rebinding (its own host name resolving to 127.0.0.1) or as
// cross-site requests with a "simple" content type (text/plain, forms),
// which need no CORS preflight. guard refuses, on every route:
//
//   - without tokens (loopback only), a Host header that is not a loopback
//     name or address (a rebound name);
//   - a request a browser marks as cross-origin: an Origin header other
//     than this server's own origin, or Sec-Fetch-Site: cross-site;
//   - on a method that changes something, a body whose content type is not
//     one the route reads (application/json, or the bundle types for
//     import), or a body without a content type.
//
// The server sends no CORS headers, so no other origin can read answers.

// CodeUnsupportedMedia is the code of 415 answers.
const CodeUnsupportedMedia = "unsupported_media_type"

// jsonTypes is what routes reading a JSON body accept.
var jsonTypes = []string{"application/json"}

// bundleTypes is what the import route accepts.
var bundleTypes = []string{"application/x-ndjson", "application/gzip", "application/octet-stream", "application/json"}

func (s *Server) guard(r *http.Request, rt route) error {
	if len(s.auth.tokens) == 0 {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if !IsLoopback(host) {
			return errorf(http.StatusForbidden, CodeForbidden,
				"Host %q is not a loopback address: refused (a server without tokens answers only http://127.0.0.1, [::1] or localhost; DNS rebinding)", r.Host)
		}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host != r.Host {
			return errorf(http.StatusForbidden, CodeForbidden, "cross-origin request from %q refused (only this server's own origin may call it)", o)
		}
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return errorf(http.StatusForbidden, CodeForbidden, "cross-site request refused (Sec-Fetch-Site: cross-site)")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil // no body
	}
	want := jsonTypes
	if rt.bodyTypes != nil {
		want = rt.bodyTypes
	}
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || !slices.Contains(want, mt) {
		return errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "Content-Type %q: want %s", ct, strings.Join(want, " or "))
	}
	return nil
}

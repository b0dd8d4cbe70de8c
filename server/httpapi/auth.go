package httpapi

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
)

// Token is a bearer token the server accepts. A token with no Sessions
// grants every session and the store reads; one with Sessions grants only
// those sessions (a request for any other session, or for a store read, is
// refused with 403). Name is the principal the server records for what
// the token's requests write (commit provenance, imports); empty means
// "token-" and the first 8 hex digits of the secret's SHA-256.
type Token struct {
	Secret   string
	Sessions []string
	Name     string
}

// principal is the name recorded for t's requests.
func (t Token) principal() string {
	if t.Name != "" {
		return t.Name
	}
	sum := sha256.Sum256([]byte(t.Secret))
	return "token-" + hex.EncodeToString(sum[:4])
}

// ParseTokens reads a token file: one token per line, optionally followed
// by the session ids it is limited to and name=NAME (the principal its
// requests are recorded under), separated by white space; blank lines and
// lines starting with # are ignored.
func ParseTokens(r io.Reader) ([]Token, error) {
	var out []Token
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f[0]) < 16 {
			return nil, fmt.Errorf("token file line %d: a token must have at least 16 characters", n)
		}
		t := Token{Secret: f[0]}
		for _, s := range f[1:] {
			if name, ok := strings.CutPrefix(s, "name="); ok {
				if name == "" || t.Name != "" {
					return nil, fmt.Errorf("token file line %d: name= takes one non-empty name", n)
				}
				t.Name = name
				continue
			}
			if err := checkSessionID(s); err != nil {
				return nil, fmt.Errorf("token file line %d: %v", n, err)
			}
			t.Sessions = append(t.Sessions, s)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckBind refuses to serve on a non-loopback address without a token:
// addr is host:port as given to net.Listen. An empty host, 0.0.0.0 and ::
// listen on every interface and are not loopback; a host name counts as
// loopback only if it is "localhost".
func CheckBind(addr string, tokens []Token) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if len(tokens) > 0 || IsLoopback(host) {
		return nil
	}
	return fmt.Errorf("address %q is not loopback: a bearer token is required (CTXSTORE_TOKEN or --token-file)", addr)
}

// IsLoopback reports whether host names the loopback interface only.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// auth holds the accepted tokens, by SHA-256 of their secret, so that the
// lookup compares fixed-size digests in constant time.
type auth struct {
	tokens []authToken
	// local is the principal of every request when there are no tokens.
	local string
}

type authToken struct {
	sum       [32]byte
	sessions  []string // nil: all
	principal string
}

func newAuth(ts []Token, local string) *auth {
	a := &auth{local: local}
	for _, t := range ts {
		a.tokens = append(a.tokens, authToken{sum: sha256.Sum256([]byte(t.Secret)), sessions: t.Sessions, principal: t.principal()})
	}
	return a
}

// grant is what a request's token allows, and who it is.
type grant struct {
	all       bool
	sessions  []string
	principal string
}

func (g grant) session(id string) bool { return g.all || slices.Contains(g.sessions, id) }

// check returns the grant of r's bearer token. Without configured tokens
// everything is granted (the server is then bound to loopback).
func (a *auth) check(r *http.Request) (grant, error) {
	if len(a.tokens) == 0 {
		return grant{all: true, principal: a.local}, nil
	}
	h := r.Header.Get("Authorization")
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || secret == "" {
		return grant{}, errorf(http.StatusUnauthorized, CodeUnauthorized, "a bearer token is required (Authorization: Bearer TOKEN)")
	}
	sum := sha256.Sum256([]byte(secret))
	var found *authToken
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].sum[:]) == 1 {
			found = &a.tokens[i]
		}
	}
	if found == nil {
		return grant{}, errorf(http.StatusUnauthorized, CodeUnauthorized, "unknown bearer token")
	}
	return grant{all: len(found.sessions) == 0, sessions: found.sessions, principal: found.principal}, nil
}

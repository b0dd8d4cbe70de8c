package httpapi

import (
	"io"
	"net/http"
	"sync"
)

// smallBody is how much of a request's body (and, for a gzip upload, of
// what it decompresses to) is not counted against the server's body
// budget: small requests always pass.
const smallBody = 1 << 20

// budgetStep is the granularity in which a body read without a declared
// length takes from the budget.
const budgetStep = 1 << 20

// retryAfter is the Retry-After (seconds) of a request refused for the
// budget.
const retryAfter = "2"

// bodyBudget bounds the bytes of large request bodies the server holds at
// once, server-wide (Options.BodyBudget): the bytes of each body beyond
// its first smallBody, gzip-decoded bytes included. Memory per request
// grows with its body, so concurrent large bodies are what would grow the
// server without bound; a request that does not fit is answered 503 with
// Retry-After instead. A request alone (nothing else held) always fits,
// up to its own limits (MaxBody, MaxImport).
type bodyBudget struct {
	mu        sync.Mutex
	max, used int64
}

// lease is one request's share of the budget, returned by release when
// the request ends.
type lease struct {
	b       *bodyBudget
	held    int64
	read    int64 // bytes read through counted readers
	refused bool
}

func (b *bodyBudget) lease() *lease { return &lease{b: b} }

// need makes the lease hold at least n bytes (counted: beyond smallBody),
// and says false, marking the lease refused, when the budget cannot give
// them.
func (l *lease) need(n int64) bool {
	if l.refused {
		return false
	}
	n -= smallBody
	if n <= l.held {
		return true
	}
	n = (n + budgetStep - 1) / budgetStep * budgetStep
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if l.b.used-l.held > 0 && l.b.used-l.held+n > l.b.max {
		l.refused = true
		return false
	}
	l.b.used += n - l.held
	l.held = n
	return true
}

// release gives the lease's bytes back.
func (l *lease) release() {
	l.b.mu.Lock()
	l.b.used -= l.held
	l.b.mu.Unlock()
	l.held = 0
}

// busy is the error of a request refused for the budget.
func (l *lease) busy() error {
	return errorf(http.StatusServiceUnavailable, CodeUnavailable,
		"the server holds %d bytes of large request bodies, its budget: try again shortly", l.b.max)
}

// counted reads r, counting every byte read into the lease: a request's
// body, and what a gzip body decompresses to, add up.
type counted struct {
	r io.Reader
	l *lease
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.l.read += int64(n)
	if !c.l.need(c.l.read) {
		return n, c.l.busy()
	}
	return n, err
}

// Package xtdb is the XTDB 1.x backend of ctxstore: a store.Store over an
// XTDB 1.24.5 node's HTTP API, the reference semantics.
//
// Writes go as JSON; queries as EDN text built with escaped literals;
// everything that carries times is read as EDN, which keeps milliseconds
// (XTDB's JSON cuts them to whole seconds); the basis is always a tx id.
// Reads retry transient failures with backoff. A submit whose outcome is
// unknown (the connection broke after the request was sent) is resolved by
// looking for the transaction in the log before it is sent again, so a
// transaction is neither lost nor applied twice.
package xtdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// Options configure Open.
type Options struct {
	// HTTPClient sends the requests (nil: a client with sane timeouts).
	HTTPClient *http.Client
	// AwaitTimeout bounds AwaitTx when the caller gives none (default 30s).
	AwaitTimeout time.Duration
	// RequestTimeout bounds each request, from sending it to reading the
	// whole answer (default DefaultRequestTimeout), so a node that stops
	// answering gives ErrUnavailable instead of a call that never returns.
	// AwaitTx, a long poll, is bounded by its own timeout plus this.
	RequestTimeout time.Duration
	// Retries is how many times a read, or a submit known not to have
	// reached the server, is retried on a transient failure (default 5).
	Retries int
	// Backoff is the first retry's delay, doubled each time (default 50ms).
	Backoff time.Duration
	// IDCache is how many entity ids the client keeps to name the entities
	// that XTDB's tx log gives only by hash (default DefaultIDCache); ids it
	// does not keep are looked up on the node.
	IDCache int
}

// DefaultRequestTimeout is Options.RequestTimeout's default: far above
// any answer a healthy node gives, well below "for ever".
const DefaultRequestTimeout = 60 * time.Second

// Store is a store.Store over an XTDB 1.x HTTP server.
type Store struct {
	base   string
	hc     *http.Client
	o      Options
	closed atomic.Bool
	// lastSeen is the latest tx id this client has seen (-1: none); a
	// submit with an unknown outcome looks for itself after it.
	lastSeen atomic.Int64
	ids      *ids
}

// seen records that tx id exists.
func (s *Store) seen(id int64) {
	for {
		cur := s.lastSeen.Load()
		if id <= cur || s.lastSeen.CompareAndSwap(cur, id) {
			return
		}
	}
}

var _ store.Store = (*Store)(nil)

// Open connects to the XTDB node at baseURL (for example
// http://127.0.0.1:3000) and checks that it answers.
func Open(ctx context.Context, baseURL string, o Options) (*Store, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("XTDB URL %q must be http(s)://host:port", baseURL)}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	if o.AwaitTimeout <= 0 {
		o.AwaitTimeout = 30 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Retries <= 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 50 * time.Millisecond
	}
	s := &Store{base: strings.TrimRight(baseURL, "/"), hc: o.HTTPClient, o: o, ids: newIDs(o.IDCache)}
	s.lastSeen.Store(-1)
	latest, err := s.latestSubmitted(ctx)
	if err != nil {
		return nil, err
	}
	s.seen(latest)
	return s, nil
}

// URL returns the server's base URL.
func (s *Store) URL() string { return s.base }

// Close implements store.Store.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.hc.CloseIdleConnections()
	return nil
}

// request describes one HTTP call to the node.
type request struct {
	op     string // store operation, for errors
	id     string // entity involved, for errors
	method string
	path   string // under /_xtdb
	query  url.Values
	body   []byte
	ctype  string
	accept string
	// wait is how long the server may take on purpose (a long poll); the
	// request's bound is wait + Options.RequestTimeout.
	wait time.Duration
	// stream, when set, receives the body of a 2xx answer unread (the
	// caller closes it) instead of do reading it whole.
	stream *io.ReadCloser
}

// httpError is a non-2xx answer from the server.
type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string {
	msg := strings.TrimSpace(e.body)
	var j struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(msg), &j) == nil && (j.Error != "" || j.Message != "") {
		msg = strings.TrimSpace(j.Error + " " + j.Message)
	}
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	return fmt.Sprintf("XTDB answered %d: %s", e.status, msg)
}

// errNotSent marks a failure that happened before the request could have
// reached the server (so a retry cannot duplicate a write).
var errNotSent = errors.New("request not sent")

// do sends r once and returns the body of a 2xx answer.
func (s *Store) do(ctx context.Context, r request) ([]byte, error) {
	if s.closed.Load() {
		return nil, store.Errorf(r.op, store.ErrUnavailable, r.id, "store is closed")
	}
	u := s.base + "/_xtdb" + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	limit := r.wait + s.o.RequestTimeout
	rctx, cancel := context.WithTimeout(ctx, limit)
	streaming := false
	defer func() {
		if !streaming {
			cancel()
		}
	}()
	req, err := http.NewRequestWithContext(rctx, r.method, u, body)
	if err != nil {
		return nil, &store.Error{Op: r.op, Kind: store.ErrInvalid, ID: r.id, Err: err}
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	req.Header.Set("Accept", r.accept)
	resp, err := s.hc.Do(req)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return nil, &store.Error{Op: r.op, Kind: store.ErrUnavailable, ID: r.id, Msg: fmt.Sprintf("XTDB at %s did not answer within %s", s.base, limit), Err: err}
	}
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			err = errors.Join(errNotSent, err)
		}
		return nil, &store.Error{Op: r.op, Kind: store.ErrUnavailable, ID: r.id, Msg: "XTDB at " + s.base + " unreachable", Err: err}
	}
	if r.stream != nil && resp.StatusCode/100 == 2 {
		// The caller reads the body, within the same bound; Close ends it.
		streaming = true
		*r.stream = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
		return nil, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return nil, &store.Error{Op: r.op, Kind: store.ErrUnavailable, ID: r.id, Msg: fmt.Sprintf("XTDB at %s did not finish its answer within %s", s.base, limit), Err: err}
	}
	if err != nil {
		return nil, &store.Error{Op: r.op, Kind: store.ErrUnavailable, ID: r.id, Msg: "reading XTDB's answer", Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return data, s.statusErr(r, resp.StatusCode, data)
	}
	return data, nil
}

// statusErr maps an HTTP status to the store's sentinels, keeping the
// server's message.
func (s *Store) statusErr(r request, status int, body []byte) error {
	he := &httpError{status: status, body: string(body)}
	kind := store.ErrUnavailable
	switch {
	case status == http.StatusNotFound:
		kind = store.ErrNotFound
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		kind = store.ErrInvalid
	case status == http.StatusForbidden:
		kind = store.ErrInvalid
	}
	return &store.Error{Op: r.op, Kind: kind, ID: r.id, Err: he}
}

// transient reports whether a failed call may succeed if tried again.
func transient(err error) bool {
	var he *httpError
	if errors.As(err, &he) {
		return he.status == http.StatusServiceUnavailable || he.status == http.StatusBadGateway || he.status == http.StatusGatewayTimeout
	}
	return errors.Is(err, store.ErrUnavailable) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// read sends an idempotent request, retrying transient failures with
// exponential backoff.
func (s *Store) read(ctx context.Context, r request) ([]byte, error) {
	delay := s.o.Backoff
	for attempt := 0; ; attempt++ {
		data, err := s.do(ctx, r)
		if err == nil || !transient(err) || attempt >= s.o.Retries || s.closed.Load() {
			return data, err
		}
		select {
		case <-ctx.Done():
			return nil, &store.Error{Op: r.op, Kind: store.ErrUnavailable, ID: r.id, Err: ctx.Err()}
		case <-time.After(delay):
		}
		delay *= 2
	}
}

func (s *Store) readEDN(ctx context.Context, r request) (any, error) {
	r.accept = "application/edn"
	data, err := s.read(ctx, r)
	if err != nil {
		return nil, err
	}
	v, err := decodeEDN(data)
	if err != nil {
		return nil, &store.Error{Op: r.op, Kind: store.ErrUnavailable, ID: r.id, Msg: "unexpected answer", Err: err}
	}
	return v, nil
}

// cancelBody is a streamed answer whose request context ends with Close.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Package ccproxy is ctxstore's Claude Code proxy: an HTTP server that
// Claude Code reaches at ANTHROPIC_BASE_URL and that passes every request
// on to the Anthropic API (or any server that speaks its Messages API),
// and every answer back as it streams (docs/claude-code.md, "The proxy").
// In managed mode (Config.Managed, managed.go) it sends the model
// ctxstore's managed context for each conversation: old tool outputs
// collapsed to a line naming their spill file, in batches the rebase cost
// model prices, with ctxstore's breakpoints. Either way it changes two
// things about the prompt cache:
//
//   - once a session has paused past the cache's lifetime (a request found
//     the cache cold, after the first), its system prompt's breakpoints
//     ask for the hour ("ttl": "1h"), so that the system prompt and the
//     tools, most of a Claude Code prompt, are read after later pauses
//     instead of written again;
//   - while a tool runs (the answer asked for one; by default, as Pi's
//     cache warmer) or also while Claude Code waits for the person (idle),
//     it sends the session's last request again with its output capped at
//     one token before the cache entry expires (a warm request), while the
//     warms of that pause cost no more than the rewrite they save (package
//     cachewarm: ski rental), at most an hour while a tool runs, 30
//     minutes idle.
//
// Each conversation of a session (its main thread, each subagent: known by
// its first message) is kept apart. Requests that name no session, side
// requests (they offer no tools) and every other path pass through
// untouched.
package ccproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/context/cachewarm"
)

// DefaultUpstream is where the proxy sends requests by default.
const DefaultUpstream = "https://api.anthropic.com"

// MaxBody is the largest request body the proxy reads (the Messages API's
// own limit is 32 MB).
const MaxBody = 32 << 20

// The prices the warm budget weighs, per token in base-input tokens:
// Anthropic's cache write (five-minute lifetime) and cache read.
const (
	writePrice = 1.25
	readPrice  = 0.1
)

// Config configures a Proxy.
type Config struct {
	// Upstream is the API the requests go to (DefaultUpstream when nil).
	Upstream *url.URL
	// CacheTTL is the prompt cache's lifetime (default 5 minutes); a
	// request whose message breakpoint asks for the hour itself (Claude
	// Code's ENABLE_PROMPT_CACHING_1H) lives an hour.
	CacheTTL time.Duration
	// HeadTTL is the lifetime the system prompt's breakpoints ask for once
	// the session has paused: an hour (the default) or, negative, never
	// (Anthropic offers five minutes and an hour only).
	HeadTTL time.Duration
	// Warm is the warming mode (cachewarm: "off", "running", "idle"; ""
	// means running).
	Warm string
	// LoopbackOnly refuses (403) a request whose Host is not a loopback
	// name or address: a web page's DNS rebinding cannot use the proxy.
	LoopbackOnly bool
	// AddressHostsOnly, for a proxy listening off loopback, refuses (403)
	// a request whose Host is a name other than a loopback one: an IP
	// address (the listener's) passes, and no DNS name can be rebound to
	// the proxy.
	AddressHostsOnly bool
	// Transport sends the requests (http.DefaultTransport when nil).
	Transport http.RoundTripper
	// Log, when set, is told of each conversation's first long head and
	// of each warm request (one line each; never a header or a prompt).
	// It is never called with the proxy's lock held.
	Log func(format string, args ...any)
	// Notice, when set, tells the person of a failure of managed mode
	// (once each; the request passed on unchanged).
	Notice func(msg string)
	// Managed, when set, turns managed mode on: each conversation's
	// requests are sent as ctxstore manages them (managed.go).
	Managed *ManagedConfig
}

// Stats count what a Proxy did.
type Stats struct {
	Requests    int `json:"requests"`     // agent requests of Claude Code sessions passed on
	LongHeads   int `json:"long_heads"`   // of them, sent with the system prompt cached for the hour
	Warms       int `json:"warms"`        // warm requests answered
	WarmsFailed int `json:"warms_failed"` // warm requests refused or lost (the pause stops warming)
	Threads     int `json:"threads"`      // thread-form requests, passed on untouched
	Managed     int `json:"managed"`      // agent requests sent as managed mode assembled them
	Unmanaged   int `json:"unmanaged"`    // agent requests managed mode passed on unchanged (not understood, or a failure)
	Collapsed   int `json:"collapsed"`    // outputs collapsed by rebases
	Rebases     int `json:"rebases"`      // managed requests that rebased
}

// Proxy is the Claude Code proxy; it is an http.Handler.
type Proxy struct {
	c     Config
	rp    *httputil.ReverseProxy
	ctx   context.Context
	stop  context.CancelFunc
	limit func(running bool) time.Duration // cachewarm.Limit; shorter in tests

	mu       sync.Mutex
	sessions map[string]*session
	// threaded holds the sessions that sent a thread-form request: the
	// proxy leaves every request of theirs alone from then on.
	threaded map[string]bool
	saidOdd  bool            // a request not understood was said in the log
	said     map[string]bool // what managed mode said once
	pruned   time.Time
	stats    Stats
	wg       sync.WaitGroup
}

// session is what the proxy keeps of one conversation of a Claude Code
// session (its main thread, or a subagent: request.conversation).
type session struct {
	id     string // the session's id and the conversation's
	conv   string
	gen    int           // counts the agent requests begun; a warm or an answer of an older one acts on nothing
	last   time.Time     // when the last request the provider read (an agent request, a warm) was sent: the cache entry dates from it
	ttl    time.Duration // the cache entry's lifetime (the last request's)
	called time.Time     // when the last answered agent request was sent
	warmed time.Time     // when the last answered warm request of the last agent request was sent (managed mode's Renewed)
	paused bool          // a request found the cache cold after the first: the head asks for the hour
	logged bool          // the head's hour was said in the log

	body    []byte      // the last agent request as sent upstream, while its pause may warm
	path    string      // its path and query
	header  http.Header // its headers, while its pause may warm
	long    int         // the tokens cached for the hour (the head), once written
	running bool        // its answer asked for a tool
	warms   int         // warm requests sent in this pause
	budget  int         // and how many it may send
	timer   *time.Timer
	managed *managedConv // managed mode's state, when on
}

// New returns a proxy; Close stops its warming.
func New(c Config) (*Proxy, error) {
	if c.Upstream == nil {
		u, _ := url.Parse(DefaultUpstream)
		c.Upstream = u
	}
	if c.Upstream.Scheme != "http" && c.Upstream.Scheme != "https" || c.Upstream.Host == "" {
		return nil, fmt.Errorf("ccproxy: upstream %q: want an http or https URL with a host", c.Upstream.String())
	}
	if c.CacheTTL <= 0 {
		c.CacheTTL = 5 * time.Minute
	}
	switch {
	case c.HeadTTL == 0:
		c.HeadTTL = time.Hour
	case c.HeadTTL > 0 && c.HeadTTL != time.Hour:
		return nil, fmt.Errorf("ccproxy: head lifetime %v: Anthropic's cache lives 5 minutes or 1 hour (1h, or negative for never)", c.HeadTTL)
	}
	if c.Warm == "" {
		c.Warm = cachewarm.Running
	}
	w, err := cachewarm.Check(c.Warm)
	if err != nil {
		return nil, fmt.Errorf("ccproxy: %w", err)
	}
	c.Warm = w
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	p := &Proxy{c: c, sessions: map[string]*session{}, threaded: map[string]bool{}, limit: cachewarm.Limit}
	p.ctx, p.stop = context.WithCancel(context.Background())
	up := c.Upstream
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(up)
			r.Out.Host = up.Host
			// Answers come back uncompressed (the transport asks for gzip
			// and inflates it), so their usage can be read on the way.
			r.Out.Header.Del("Accept-Encoding")
		},
		Transport:     c.Transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, http.StatusBadGateway, "api_error", fmt.Sprintf("ctxstore claude-code proxy: upstream %s: %v", up.Host, err))
		},
	}
	return p, nil
}

// Close stops every pending warm request and waits for those in flight.
func (p *Proxy) Close() error {
	p.stop()
	p.mu.Lock()
	for _, s := range p.sessions {
		if s.timer != nil {
			s.timer.Stop()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// Stats returns what the proxy did so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// loopbackHost tells whether a request's Host names this machine's
// loopback ("localhost" or a loopback address).
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// addressHost tells whether a request's Host is an IP address.
func addressHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return net.ParseIP(strings.Trim(host, "[]")) != nil
}

// ServeHTTP passes a request on; a Messages request of a Claude Code
// session's agent loop is read (and its head's lifetime set) first.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.c.LoopbackOnly && !loopbackHost(r.Host) {
		writeError(w, http.StatusForbidden, "permission_error", fmt.Sprintf("ctxstore claude-code proxy: host %q is not this machine's loopback", r.Host))
		return
	}
	if p.c.AddressHostsOnly && !loopbackHost(r.Host) && !addressHost(r.Host) {
		writeError(w, http.StatusForbidden, "permission_error", fmt.Sprintf("ctxstore claude-code proxy: host %q is a name; this proxy answers requests to its IP address only", r.Host))
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		p.rp.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("ctxstore claude-code proxy: the request body is over %d bytes", MaxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "ctxstore claude-code proxy: reading the request body: "+err.Error())
		return
	}
	req, err := parseRequest(body)
	sid := ""
	if err == nil {
		sid = sessionOf(r.Header, req)
	}
	if err == nil && req.threaded() {
		p.thread(sid)
		p.forward(w, r, body, nil, nil)
		return
	}
	if sid == "" || !req.agent() || p.isThreaded(sid) {
		// Not a session's agent request (or not JSON: the API answers
		// that), or a session in thread form: passed on as it came.
		p.forward(w, r, body, nil, nil)
		return
	}
	sent := time.Now()
	ttl := req.ttl(p.c.CacheTTL)
	s, gen, long, paused := p.begin(sid, req.conversation(), sent)
	if paused != "" {
		p.c.Log("%s", paused)
	}
	if long {
		nb, changed, err := longHead(body, req)
		if err != nil {
			// Not understood: the request goes on as Claude Code wrote it
			// (the API judges it), and the log says why, once.
			p.mu.Lock()
			say := !p.saidOdd
			p.saidOdd = true
			p.mu.Unlock()
			if say {
				p.c.Log("session %s: a system prompt the proxy does not understand (%v): passed on unchanged; said once", s.name(), err)
			}
			changed = false
		}
		if changed {
			body = nb
			beta := strings.Join(r.Header.Values("anthropic-beta"), ",")
			r.Header.Set("anthropic-beta", withBeta(beta, LongTTLBeta))
			p.mu.Lock()
			p.stats.LongHeads++
			say := !s.logged
			s.logged = true
			p.mu.Unlock()
			if say {
				p.c.Log("session %s: its system prompt and tools are cached for the hour from now on", s.name())
			}
		}
	}
	if p.c.Managed != nil {
		body = p.managedBody(s, body, sent, ttl)
	}
	header := r.Header.Clone()
	path := r.URL.RequestURI()
	replayable := req.replayable()
	p.forward(w, r, body, func() { p.touched(s, sent) }, func(o outcome) {
		p.answered(s, gen, sent, ttl, o, body, path, header, replayable)
	})
}

// maxThreaded bounds the sessions remembered as threaded (a long-running
// proxy forgets them all past it, and the next thread request of each is
// noted again).
const maxThreaded = 10000

// thread notes a thread-form request of session sid (any session when sid
// is ""): its messages are not the conversation, so nothing the proxy does
// for whole requests applies. The session's warming stops at once (a warm
// would send the thread's last new messages again, and its previous whole
// request's warms would run on past the turn), and every later request of
// the session passes untouched: never warmed, the head never asked for
// the hour. Said in the log the first time only.
func (p *Proxy) thread(sid string) {
	p.mu.Lock()
	p.stats.Threads++
	first := p.stats.Threads == 1
	if sid != "" {
		if len(p.threaded) >= maxThreaded {
			clear(p.threaded)
		}
		p.threaded[sid] = true
	}
	for k, s := range p.sessions {
		if sid == "" || s.id == sid {
			if s.timer != nil {
				s.timer.Stop()
				s.timer = nil
			}
			s.gen++
			s.body, s.header = nil, nil
			delete(p.sessions, k)
		}
	}
	p.mu.Unlock()
	if first {
		p.c.Log("a request in message-thread form (a thread field): passed on untouched, never warmed; the sessions that send them are left alone (Claude Code sends them to Anthropic's own address only, or with CLAUDE_CODE_TETHER_LIVE=1)")
	}
}

// isThreaded tells whether session sid has sent a thread-form request.
func (p *Proxy) isThreaded(sid string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.threaded[sid]
}

// forward passes the request on with body; read, when set, is told that
// the provider read the prompt (the answer began), done what the answer
// said once it has passed through.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, read func(), done func(outcome)) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	if done == nil {
		p.rp.ServeHTTP(w, r)
		return
	}
	rp := *p.rp
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode/100 != 2 {
			done(outcome{})
			return nil
		}
		resp.Body = newSniffer(resp.Body, resp.Header.Get("Content-Type"), read, done)
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		done(outcome{})
		p.rp.ErrorHandler(w, r, err)
	}
	rp.ServeHTTP(w, r)
}

// begin notes that an agent request of conversation conv of session sid
// begins at now: the conversation's warming stops, and a request that
// finds the cache cold (after the first) makes its head ask for the hour
// from now on. It returns the conversation, the request's generation,
// whether its head asks for the hour, and a log line to write.
func (p *Proxy) begin(sid, conv string, now time.Time) (*session, int, bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	p.prune(now)
	key := sid + "/" + conv
	s := p.sessions[key]
	if s == nil {
		s = &session{id: sid, conv: conv}
		p.sessions[key] = s
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.gen++
	line := ""
	ttl := s.ttl
	if ttl == 0 {
		ttl = p.c.CacheTTL // no answer yet (its first request was cut off)
	}
	if !s.last.IsZero() && now.Sub(s.last) > ttl && !s.paused && p.c.HeadTTL > p.c.CacheTTL {
		s.paused = true
		line = fmt.Sprintf("session %s: paused %s, past its %s cache", s.name(), now.Sub(s.last).Round(time.Second), ttl)
	}
	return s, s.gen, s.paused, line
}

// forgetAfter is how long a conversation nobody sends a request for is
// kept: past the head's hour and the longest warming, the next request is
// cold whatever the proxy keeps.
const forgetAfter = 2 * time.Hour

// prune forgets conversations silent for forgetAfter, at most once a
// minute. Called with p.mu held.
func (p *Proxy) prune(now time.Time) {
	if now.Sub(p.pruned) < time.Minute {
		return
	}
	p.pruned = now
	for k, s := range p.sessions {
		if s.timer == nil && now.Sub(s.last) > forgetAfter {
			delete(p.sessions, k)
		}
	}
}

// touched records that the provider read a request of the conversation
// sent at sent (its answer began): the cache entry dates from it, even if
// the answer is cut off.
func (p *Proxy) touched(s *session, sent time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sent.After(s.last) {
		s.last = sent
	}
}

// answered records the answer to an agent request sent at sent and, when
// it completed and no later request began, starts warming its cache entry.
// The entry dates from the request, not from the end of its answer: the
// provider reads and writes the prompt before it answers.
func (p *Proxy) answered(s *session, gen int, sent time.Time, ttl time.Duration, o outcome, body []byte, path string, header http.Header, replayable bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen != s.gen || !o.Complete {
		return
	}
	s.last, s.called, s.ttl = sent, sent, ttl
	s.body, s.path, s.header = body, path, header
	if l := o.Usage.long(); l > 0 {
		s.long = l
	}
	s.running = o.Stop == "tool_use"
	s.warms, s.budget = 0, 0
	if !replayable || p.c.Warm == cachewarm.Off || p.c.Warm == cachewarm.Running && !s.running || p.ctx.Err() != nil {
		s.body, s.header = nil, nil // nothing to send again: the request and its key are not kept
		return
	}
	kept := 0
	if s.paused {
		kept = s.long // the head, cached for the hour, is read after the pause all the same
	}
	prompt := o.Usage.prompt()
	s.budget = cachewarm.Budget(prompt, prompt-kept, kept, writePrice, readPrice)
	p.schedule(s)
}

// schedule arms the conversation's next warm request, if its pause may
// send one more; else it drops the request and its headers. Called with
// p.mu held.
func (p *Proxy) schedule(s *session) {
	d := cachewarm.Delay(s.ttl)
	if d == 0 || s.warms >= s.budget || s.last.Add(d).Sub(s.called) > p.limit(s.running) || p.ctx.Err() != nil {
		s.body, s.header = nil, nil // the pause warms no more: nothing to send again
		return
	}
	gen := s.gen
	// Due d after the entry's last read; at once if a long answer (or a
	// slow warm) took longer than that.
	s.timer = time.AfterFunc(max(time.Until(s.last.Add(d)), 0), func() { p.warm(s, gen) })
}

// warm sends the conversation's last agent request again with its output
// capped at one token; an answer renews the cache entry and arms the next
// warm, a refusal ends the pause's warming.
func (p *Proxy) warm(s *session, gen int) {
	p.mu.Lock()
	if gen != s.gen || p.ctx.Err() != nil || s.body == nil {
		p.mu.Unlock()
		return
	}
	body, path, header := s.body, s.path, s.header.Clone()
	sent := time.Now()
	s.warms++
	n, budget := s.warms, s.budget
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()

	o, err := p.send(body, path, header)
	p.mu.Lock()
	if err != nil {
		p.stats.WarmsFailed++
		if gen == s.gen {
			s.body, s.header = nil, nil
		}
		p.mu.Unlock()
		p.c.Log("session %s: warm request %d of %d failed, warming stops until its next request: %v", s.name(), n, budget, err)
		return
	}
	p.stats.Warms++
	if gen == s.gen {
		if sent.After(s.last) {
			s.last = sent
		}
		s.warmed = sent
		p.schedule(s)
	}
	p.mu.Unlock()
	p.c.Log("session %s: warm request %d of %d: %d prompt tokens, %d read from the cache", s.name(), n, budget, o.Usage.prompt(), o.Usage.CacheRead)
}

// target is the upstream URL of a request's path and query, as the
// reverse proxy forms it (httputil.ProxyRequest.SetURL).
func (p *Proxy) target(pathQuery string) (string, error) {
	ref, err := url.Parse(pathQuery)
	if err != nil {
		return "", err
	}
	u := *p.c.Upstream
	u.Path = singleJoin(u.Path, ref.Path)
	u.RawPath = ""
	switch {
	case u.RawQuery == "":
		u.RawQuery = ref.RawQuery
	case ref.RawQuery != "":
		u.RawQuery += "&" + ref.RawQuery
	}
	return u.String(), nil
}

// send sends a warm request for body and reads its answer.
func (p *Proxy) send(body []byte, path string, header http.Header) (outcome, error) {
	wb, err := warmBody(body)
	if err != nil {
		return outcome{}, err
	}
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	target, err := p.target(path)
	if err != nil {
		return outcome{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(wb))
	if err != nil {
		return outcome{}, err
	}
	req.Header = header
	req.Header.Del("Accept-Encoding")
	req.Header.Del("Content-Length")
	req.ContentLength = int64(len(wb))
	resp, err := p.c.Transport.RoundTrip(req)
	if err != nil {
		return outcome{}, err
	}
	defer resp.Body.Close()
	var o outcome
	sn := newSniffer(resp.Body, resp.Header.Get("Content-Type"), nil, func(x outcome) { o = x })
	if _, err := io.Copy(io.Discard, sn); err != nil {
		return outcome{}, err
	}
	sn.Close()
	if resp.StatusCode/100 != 2 {
		return outcome{}, fmt.Errorf("upstream answered %s", resp.Status)
	}
	if !o.Complete {
		return outcome{}, errors.New("upstream's answer ended early")
	}
	return o, nil
}

// singleJoin joins two URL paths with one slash between them.
func singleJoin(a, b string) string {
	switch {
	case a == "":
		return b
	case strings.HasSuffix(a, "/") && strings.HasPrefix(b, "/"):
		return a + b[1:]
	case !strings.HasSuffix(a, "/") && !strings.HasPrefix(b, "/"):
		return a + "/" + b
	}
	return a + b
}

// writeError answers with an error in the Messages API's shape.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	w.Write(b)
}

// name is how log lines name a conversation: the session id's first eight
// characters and the conversation's hash.
func (s *session) name() string { return short(s.id) + "/" + s.conv[:min(len(s.conv), 6)] }

// short is a session id's first eight characters, for log lines.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

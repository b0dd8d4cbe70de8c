package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/server/httpapi/apispec"
	"github.com/ctxstore/ctxstore/store"
)

const specPath = "../../docs/openapi.yaml"

var (
	specOnce sync.Once
	spec     *apispec.Spec
	specErr  error
)

func loadSpec(tb testing.TB) *apispec.Spec {
	tb.Helper()
	specOnce.Do(func() { spec, specErr = apispec.Load(specPath) })
	if specErr != nil {
		tb.Fatal(specErr)
	}
	return spec
}

// env is a Server over a fresh SQLite store, behind an httptest server;
// every exchange of do is checked against the OpenAPI document.
type env struct {
	tb    testing.TB
	db    string
	st    store.Store
	srv   *Server
	ts    *httptest.Server
	dir   string // the harness's cwd
	token string
	spec  *apispec.Spec
	check bool
}

func newEnv(tb testing.TB, mod func(*Options)) *env {
	tb.Helper()
	ctx := context.Background()
	db := filepath.Join(tb.TempDir(), "s.db")
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	// The server's roots: the test's temporary directory, which holds
	// every directory tb.TempDir gives it (the harness's cwd among them).
	o := Options{Store: st, Resolver: newResolver(tb), Roots: []string{filepath.Dir(dir)}}
	if mod != nil {
		mod(&o)
	}
	srv, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{tb: tb, db: db, st: st, srv: srv, ts: httptest.NewServer(srv.Handler()), dir: dir,
		spec: loadSpec(tb), check: true}
	tb.Cleanup(func() {
		e.ts.Close()
		srv.Close()
		st.Close()
	})
	return e
}

// second returns an env for another server over e's store (and working
// directory), closed when the test ends.
func (e *env) second() *env {
	e.tb.Helper()
	srv, err := New(Options{Store: e.st, Resolver: newResolver(e.tb), Roots: e.srv.o.Roots})
	if err != nil {
		e.tb.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	e.tb.Cleanup(func() { ts.Close(); srv.Close() })
	return &env{tb: e.tb, db: e.db, st: e.st, srv: srv, ts: ts, dir: e.dir, spec: e.spec, check: true}
}

func newResolver(tb testing.TB) *files.Resolver {
	tb.Helper()
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-test"})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

func (e *env) file(name, content string) string {
	e.tb.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.tb.Fatal(err)
	}
	return p
}

// do sends a request with a JSON body (nil: none), checks the exchange
// against the document, decodes a 200 answer into out and returns the
// status and the error body of any other.
func (e *env) do(method, path string, body, out any) (int, ErrorBody) {
	e.tb.Helper()
	var rb []byte
	if body != nil {
		var err error
		if s, ok := body.(string); ok {
			rb = []byte(s)
		} else if rb, err = json.Marshal(body); err != nil {
			e.tb.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, e.ts.URL+path, bytes.NewReader(rb))
	if err != nil {
		e.tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.tb.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		e.tb.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.tb.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	if e.check {
		if err := e.spec.Check(req, rb, resp.StatusCode, resp.Header, b); err != nil {
			e.tb.Errorf("OpenAPI: %v\nbody: %s", err, truncate(b))
		}
	}
	if resp.StatusCode != http.StatusOK {
		var eb ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil {
			e.tb.Fatalf("%s %s: %d with a body that is not an error: %s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, eb
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			e.tb.Fatalf("%s %s: decoding %s: %v", method, path, truncate(b), err)
		}
	}
	return resp.StatusCode, ErrorBody{}
}

// ok is do expecting 200.
func (e *env) ok(method, path string, body, out any) {
	e.tb.Helper()
	if st, eb := e.do(method, path, body, out); st != http.StatusOK {
		e.tb.Fatalf("%s %s: %d %s: %s", method, path, st, eb.Code, eb.Message)
	}
}

// fails is do expecting status and code.
func (e *env) fails(status int, code, method, path string, body any) ErrorBody {
	e.tb.Helper()
	st, eb := e.do(method, path, body, nil)
	if st != status || eb.Code != code {
		e.tb.Errorf("%s %s: %d %q (%s), want %d %q", method, path, st, eb.Code, eb.Message, status, code)
	}
	return eb
}

func (e *env) open(sid string) OpenResponse {
	e.tb.Helper()
	var r OpenResponse
	e.ok("PUT", "/v1/sessions/"+sid, OpenRequest{Cwd: e.dir, SystemPrompt: "You are a test agent.", Harness: "pi"}, &r)
	return r
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// piLogBuilder builds a Pi message log the way Pi's context event hands it.
type piLogBuilder struct {
	msgs []map[string]any
	enc  []json.RawMessage
	n    int
}

func (p *piLogBuilder) user(text string) {
	p.n++
	p.msgs = append(p.msgs, map[string]any{"role": "user", "content": text, "timestamp": p.n})
}

func (p *piLogBuilder) call(id, tool string, args map[string]any) {
	p.n++
	p.msgs = append(p.msgs, map[string]any{"role": "assistant", "api": "faux", "provider": "scripted", "model": "m1",
		"stopReason": "toolUse", "timestamp": p.n, "usage": map[string]any{"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12},
		"content": []any{map[string]any{"type": "toolCall", "id": id, "name": tool, "arguments": args}}})
}

func (p *piLogBuilder) result(id, tool, out string, isErr bool) {
	p.n++
	p.msgs = append(p.msgs, map[string]any{"role": "toolResult", "toolCallId": id, "toolName": tool, "isError": isErr,
		"timestamp": p.n, "content": []any{map[string]any{"type": "text", "text": out}}})
}

func (p *piLogBuilder) say(text string) {
	p.n++
	p.msgs = append(p.msgs, map[string]any{"role": "assistant", "api": "faux", "provider": "scripted", "model": "m1",
		"stopReason": "stop", "timestamp": p.n, "content": []any{map[string]any{"type": "text", "text": text}}})
}

func (p *piLogBuilder) body() map[string]any { return map[string]any{"messages": p.msgs} }

// piAnswer is a context answer decoded with its messages.
type piAnswer struct {
	ContextResponse
	Messages []PiOutMessage `json:"messages"`
}

// flat renders Pi messages as text with no closing markers, so that a
// context extending the previous one renders as an extension of its text.
func flat(ms []PiOutMessage) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("\x00" + m.Role + " " + m.ToolCallID + "\n")
		for _, c := range m.Content {
			j, _ := json.Marshal(c)
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// raws returns the log's messages encoded, encoding each message once (the
// builder only appends).
func (p *piLogBuilder) raws() []json.RawMessage {
	for len(p.enc) < len(p.msgs) {
		b, err := json.Marshal(p.msgs[len(p.enc)])
		if err != nil {
			panic(err)
		}
		p.enc = append(p.enc, b)
	}
	return p.enc[:len(p.msgs):len(p.msgs)]
}

// deltaClient makes context calls as the Pi extension does: the log as a
// delta over what the server holds, the answer as a delta over the last
// one (docs/service.md).
type deltaClient struct {
	url, sid string
	client   *http.Client
	sent     []json.RawMessage
	sums     []string
	h        hash.Hash
	held     []json.RawMessage
	heldCall int
	// check, if set, is told of every exchange (for the OpenAPI check).
	check func(req *http.Request, reqBody []byte, status int, h http.Header, body []byte)
	// mismatches counts the log_mismatch answers call met and answered
	// with the whole log.
	mismatches int
}

func newDeltaClient(url, sid string) *deltaClient {
	return &deltaClient{url: url, sid: sid, client: &http.Client{}, h: sha256.New()}
}

// deltaResult is one call's outcome.
type deltaResult struct {
	status   int
	code     string
	resp     ContextResponse
	messages []json.RawMessage // the whole context
	reqBytes int
	cm       time.Duration // Server-Timing
}

// call sends log (base: the messages the server holds, -1 to compute it
// by comparing with the last log sent; sum overrides the base's digest).
// With a computed base, a log_mismatch answer is followed by the whole
// log, as the Pi extension does.
func (d *deltaClient) call(log []json.RawMessage, base int, sum string) deltaResult {
	auto := base < 0
	r := d.call1(log, base, sum)
	if auto && r.status == http.StatusConflict && r.code == CodeLogMismatch {
		d.mismatches++
		r = d.call1(log, 0, "")
	}
	return r
}

func (d *deltaClient) call1(log []json.RawMessage, base int, sum string) deltaResult {
	if base < 0 {
		base = 0
		for base < min(len(log), len(d.sent)) && bytes.Equal(log[base], d.sent[base]) {
			base++
		}
	}
	var body bytes.Buffer
	body.WriteByte('{')
	if base > 0 {
		if sum == "" {
			sum = d.sums[base-1]
		}
		fmt.Fprintf(&body, `"base":%d,"base_sha256":%q,`, base, sum)
	}
	if d.heldCall > 0 {
		fmt.Fprintf(&body, `"have_call":%d,`, d.heldCall)
	}
	body.WriteString(`"messages":[`)
	for i, m := range log[min(base, len(log)):] {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(m)
	}
	body.WriteString("]}")
	r := deltaResult{reqBytes: body.Len()}
	reqBody := body.Bytes()
	req, err := http.NewRequest("POST", d.url+"/v1/sessions/"+d.sid+"/context", bytes.NewReader(reqBody))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		panic(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		panic(err)
	}
	if d.check != nil {
		d.check(req, reqBody, resp.StatusCode, resp.Header, raw)
	}
	r.status = resp.StatusCode
	if r.status != 200 {
		var eb ErrorBody
		_ = json.Unmarshal(raw, &eb)
		r.code = eb.Code
		d.sent, d.sums, d.h, d.held, d.heldCall = nil, nil, sha256.New(), nil, 0
		return r
	}
	if err := json.Unmarshal(raw, &r.resp); err != nil {
		panic(err)
	}
	if m := serverTiming.FindStringSubmatch(resp.Header.Get("Server-Timing")); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		r.cm = time.Duration(ms * float64(time.Millisecond))
	}
	if base < len(d.sent) {
		d.h, d.sums = sha256.New(), nil
		for _, m := range log[:base] {
			d.push(m)
		}
	}
	for _, m := range log[base:] {
		d.push(m)
	}
	d.sent = log
	r.messages = append(append([]json.RawMessage(nil), d.held[:r.resp.Keep]...), r.resp.Messages...)
	d.held, d.heldCall = r.messages, r.resp.Call
	return r
}

func (d *deltaClient) push(m json.RawMessage) {
	d.h.Write(m)
	d.h.Write([]byte{'\n'})
	d.sums = append(d.sums, hex.EncodeToString(d.h.Sum(nil)))
}

package ccproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

var _ http.Handler = (*Proxy)(nil)

// upstream is a local server that speaks the Messages API's wire format:
// it answers every request with one text block, streamed when the request
// asks, and the usage answer gives for it. It records what it received.
type upstream struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(body map[string]any) (usage, string) // the usage and stop reason of an answer
	slow   time.Duration                             // how long an answer (not a warm's) takes to finish
}

type received struct {
	path   string
	header http.Header
	body   []byte
	at     time.Time
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{t: t, answer: func(map[string]any) (usage, string) { return usage{Input: 1000}, "end_turn" }}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.got = append(u.got, received{path: r.URL.RequestURI(), header: r.Header.Clone(), body: body, at: time.Now()})
	u.mu.Unlock()
	if r.URL.Path != "/v1/messages" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "not JSON")
		return
	}
	us, stop := u.answer(req)
	if req["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(ev string, data any) {
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev, b)
			w.(http.Flusher).Flush()
		}
		send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "content": []any{}, "usage": us}})
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "ok"}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 1}})
		if req["max_tokens"] != float64(1) {
			time.Sleep(u.slow)
		}
		send("message_stop", map[string]any{"type": "message_stop"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": "ok"}}, "stop_reason": stop, "usage": us})
}

func (u *upstream) received() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]received(nil), u.got...)
}

// warms returns the warm requests received: max_tokens 1.
func (u *upstream) warms() []received {
	var out []received
	for _, r := range u.received() {
		var b struct {
			MaxTokens int `json:"max_tokens"`
		}
		if json.Unmarshal(r.body, &b) == nil && b.MaxTokens == 1 {
			out = append(out, r)
		}
	}
	return out
}

// conversationOf returns the one conversation the proxy keeps of session
// sid (nil if none; called with p.mu held).
func (p *Proxy) conversationOf(sid string) *session {
	for _, s := range p.sessions {
		if s.id == sid {
			return s
		}
	}
	return nil
}

func newProxy(t *testing.T, up *upstream, c Config) *httptest.Server {
	t.Helper()
	u, _ := url.Parse(up.srv.URL)
	c.Upstream = u
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.Close() })
	return srv
}

// agentBody is a Claude Code agent request: tools, a system prompt whose
// blocks carry breakpoints, a message with one.
func agentBody(session string, stream bool, extra string) string {
	return fmt.Sprintf(`{"model":"claude-x","max_tokens":32000,"stream":%t,`+
		`"system":[{"type":"text","text":"You are <Claude Code> & more."},{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],`+
		`"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],`+
		`"metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"%s\"}"},`+
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]%s}`, stream, session, extra)
}

func post(t *testing.T, url, path, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "sk-ant-test")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// systemTTLs returns the ttl of each system block's cache_control ("-"
// for none, "5m" for the default).
func systemTTLs(t *testing.T, body []byte) string {
	t.Helper()
	var b struct {
		System []struct {
			CacheControl *cacheControl `json:"cache_control"`
		} `json:"system"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range b.System {
		switch {
		case s.CacheControl == nil:
			out = append(out, "-")
		case s.CacheControl.TTL == "":
			out = append(out, "5m")
		default:
			out = append(out, s.CacheControl.TTL)
		}
	}
	return strings.Join(out, ",")
}

func TestPassThrough(t *testing.T) {
	up := newUpstream(t)
	px := newProxy(t, up, Config{Warm: "idle"})
	for _, tc := range []struct{ name, path, body string }{
		{"another path", "/v1/messages/count_tokens", agentBody("s1", false, "")},
		{"no session", "/v1/messages", strings.Replace(agentBody("", true, ""), `\"session_id\":\"\"`, `\"x\":1`, 1)},
		{"a side request: no tools", "/v1/messages?beta=true", `{"model":"claude-x","max_tokens":512,"messages":[{"role":"user","content":"title?"}],"metadata":{"user_id":"{\"session_id\":\"s1\"}"}}`},
		{"not JSON", "/v1/messages", `{"model":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(up.received())
			status, answer, _ := post(t, px.URL, tc.path, tc.body, nil)
			got := up.received()
			if len(got) != n+1 {
				t.Fatalf("upstream received %d requests, want 1", len(got)-n)
			}
			r := got[n]
			if r.path != tc.path || string(r.body) != tc.body || r.header.Get("X-Api-Key") != "sk-ant-test" {
				t.Errorf("upstream got %s %q (key %q), want %s %q as sent", r.path, r.body, r.header.Get("X-Api-Key"), tc.path, tc.body)
			}
			if tc.name == "not JSON" {
				if status != http.StatusBadRequest || !strings.Contains(answer, "not JSON") {
					t.Errorf("answer %d %s, want the upstream's 400", status, answer)
				}
			} else if status != 200 {
				t.Errorf("status %d: %s", status, answer)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if w := up.warms(); len(w) != 0 {
		t.Errorf("%d warm requests for requests that are not a session's agent loop", len(w))
	}
}

// TestStreamPassesThrough checks that a streamed answer reaches the client
// whole, event by event, and that the proxy read its usage.
func TestStreamPassesThrough(t *testing.T) {
	up := newUpstream(t)
	up.answer = func(map[string]any) (usage, string) {
		return usage{Input: 7, CacheRead: 900, CacheWrite: 93}, "tool_use"
	}
	u, _ := url.Parse(up.srv.URL)
	p, err := New(Config{Upstream: u}) // warming while a tool runs: the budget is read from the usage
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	px := httptest.NewServer(p)
	defer px.Close()
	_, answer, h := post(t, px.URL, "/v1/messages", agentBody("s1", true, ""), map[string]string{SessionHeader: "s1"})
	for _, ev := range []string{"message_start", "content_block_delta", `"stop_reason":"tool_use"`, "message_stop"} {
		if !strings.Contains(answer, ev) {
			t.Errorf("the answer lacks %s:\n%s", ev, answer)
		}
	}
	if ct := h.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	time.Sleep(20 * time.Millisecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.conversationOf("s1")
	// A prompt of 7 + 900 + 93 tokens: (1.25 - 0.1) * 1000 / 105 warms.
	if s == nil || s.budget != 10 || !s.running {
		t.Fatalf("session state %+v, want a budget of 10 warms, running", s)
	}
}

// TestLongHead checks the head's lifetime: five minutes (as Claude Code
// asks) until a request of the session finds the cache cold, the hour from
// that request on, with the beta it needs; another session keeps its own.
func TestLongHead(t *testing.T) {
	up := newUpstream(t)
	const ttl = time.Second // too short to warm (cachewarm.Delay): only the head is tested
	px := newProxy(t, up, Config{CacheTTL: ttl})
	call := func(session string) received {
		t.Helper()
		n := len(up.received())
		if status, answer, _ := post(t, px.URL, "/v1/messages?beta=true", agentBody(session, true, ""), map[string]string{"anthropic-beta": "claude-code-20250219"}); status != 200 {
			t.Fatalf("status %d: %s", status, answer)
		}
		time.Sleep(10 * time.Millisecond) // the answer is recorded after it passed through
		return up.received()[n]
	}
	steps := []struct {
		session string
		pause   time.Duration
		want    string
	}{
		{"a", 0, "-,5m"},
		{"a", 0, "-,5m"},       // warm
		{"a", 2 * ttl, "-,1h"}, // cold: the hour from this request on
		{"b", 0, "-,5m"},       // another session: its own
		{"a", 0, "-,1h"},       // warm, and still the hour
		{"b", 2 * ttl, "-,1h"}, // b pauses too
		{"a", 2 * ttl, "-,1h"}, // a pause again
	}
	for i, st := range steps {
		time.Sleep(st.pause)
		r := call(st.session)
		if got := systemTTLs(t, r.body); got != st.want {
			t.Errorf("step %d (session %s): system breakpoints %s, want %s", i, st.session, got, st.want)
		}
		beta := r.header.Get("anthropic-beta")
		if long := st.want == "-,1h"; long != strings.Contains(beta, LongTTLBeta) || !strings.HasPrefix(beta, "claude-code-20250219") {
			t.Errorf("step %d: anthropic-beta %q", i, beta)
		}
		var b map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatal(err)
		}
		var want map[string]json.RawMessage
		json.Unmarshal([]byte(agentBody(st.session, true, "")), &want)
		for k, v := range want {
			if k != "system" && !bytes.Equal(b[k], v) {
				t.Errorf("step %d: %s changed: %s, sent %s", i, k, b[k], v)
			}
		}
		if !strings.Contains(string(b["system"]), "You are <Claude Code> & more.") {
			t.Errorf("step %d: the system prompt's text changed: %s", i, b["system"])
		}
	}
}

func TestLongHeadNotAfterShorterToolBreakpoint(t *testing.T) {
	body := []byte(`{"max_tokens":10,"tools":[{"name":"A","cache_control":{"type":"ephemeral"}}],"system":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}`)
	r, err := parseRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	out, changed, err := longHead(body, r)
	if err != nil || changed || !bytes.Equal(out, body) {
		t.Errorf("longHead changed a request whose tool has a five-minute breakpoint: %s (%v, %v)", out, changed, err)
	}
	body = []byte(`{"max_tokens":10,"tools":[{"name":"A"}],"system":"a string"}`)
	r, _ = parseRequest(body)
	if out, changed, err := longHead(body, r); err != nil || changed || !bytes.Equal(out, body) {
		t.Errorf("longHead changed a string system prompt: %s", out)
	}
}

// TestWarm checks warming: after an answer, the same request with its
// output capped at one token, every cachewarm.Delay (2 s for a 12 s
// cache), as many as ski rental allows, none once the next request
// begins; none for budget-based thinking; none while idle in running mode.
func TestWarm(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for warm requests (seconds)")
	}
	const ttl = 12 * time.Second // a warm every 2 s
	t.Run("budget", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t)
		// A prompt of 1,000 tokens, 780 of them the head cached for the
		// hour once paused: ski rental allows (1.25*1000 - 100)/105 = 10
		// warms before, (1.25*220 - 100)/105 = 1 after.
		up.answer = func(map[string]any) (usage, string) { return usage{Input: 1000}, "end_turn" }
		px := newProxy(t, up, Config{CacheTTL: ttl, Warm: "idle"})
		start := time.Now()
		post(t, px.URL, "/v1/messages", agentBody("w", true, ""), map[string]string{"x-api-key": "sk-ant-warm"})
		time.Sleep(4500 * time.Millisecond)
		ws := up.warms()
		if len(ws) != 2 {
			t.Fatalf("%d warm requests in 4.5 s, want 2 (one every 2 s)", len(ws))
		}
		sent := up.received()[0]
		for i, w := range ws {
			if d := w.at.Sub(start); d < time.Duration(i+1)*2*time.Second-200*time.Millisecond || d > time.Duration(i+1)*2*time.Second+time.Second {
				t.Errorf("warm %d at %v, want about %v", i+1, d, time.Duration(i+1)*2*time.Second)
			}
			if w.header.Get("X-Api-Key") != "sk-ant-warm" || w.path != sent.path {
				t.Errorf("warm %d: path %s key %q, want the request's", i+1, w.path, w.header.Get("X-Api-Key"))
			}
			var a, b map[string]json.RawMessage
			json.Unmarshal(w.body, &a)
			json.Unmarshal(sent.body, &b)
			if string(a["max_tokens"]) != "1" || len(a) != len(b) {
				t.Errorf("warm %d: max_tokens %s, %d fields", i+1, a["max_tokens"], len(a))
			}
			for k, v := range b {
				if k != "max_tokens" && !bytes.Equal(a[k], v) {
					t.Errorf("warm %d: %s differs from the request's: %s, want %s", i+1, k, a[k], v)
				}
			}
		}
		// The next request stops them; the answer starts its own.
		post(t, px.URL, "/v1/messages", agentBody("w", true, ""), nil)
		n := len(up.warms())
		time.Sleep(1500 * time.Millisecond)
		if got := len(up.warms()); got != n {
			t.Errorf("%d warm requests within 1.5 s of a new request", got-n)
		}
	})
	t.Run("the head cached for the hour", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t)
		up.answer = func(req map[string]any) (usage, string) {
			if strings.Contains(fmt.Sprint(req["system"]), "1h") {
				return usage{Input: 220, CacheWrite: 780, CacheCreation: &struct {
					Long  int `json:"ephemeral_1h_input_tokens"`
					Short int `json:"ephemeral_5m_input_tokens"`
				}{Long: 780}}, "end_turn"
			}
			return usage{Input: 1000}, "end_turn"
		}
		u, _ := url.Parse(up.srv.URL)
		p, err := New(Config{Upstream: u, CacheTTL: ttl, Warm: "off"})
		if err != nil {
			t.Fatal(err)
		}
		px := httptest.NewServer(p)
		defer func() { px.Close(); p.Close() }()
		post(t, px.URL, "/v1/messages", agentBody("h", true, ""), nil)
		// A pause past the cache: the proxy backdates the session's last
		// request rather than the test waiting 12 s.
		p.mu.Lock()
		p.conversationOf("h").last = time.Now().Add(-ttl - time.Second)
		p.c.Warm = "idle"
		p.mu.Unlock()
		post(t, px.URL, "/v1/messages", agentBody("h", true, ""), nil)
		time.Sleep(4500 * time.Millisecond)
		// 2 warms by 4.5 s: (1.25 - 0.1) * 220 / 105; without the head
		// taken off, 10 (two by 4.5 s as well, and the rest after): so the
		// test waits for the budget to end.
		time.Sleep(2500 * time.Millisecond)
		if ws := up.warms(); len(ws) != 2 {
			t.Errorf("%d warm requests in 7 s, want 2: the head read after the pause leaves 220 tokens to save", len(ws))
		}
	})
	t.Run("a slow answer", func(t *testing.T) {
		t.Parallel()
		// The cache entry dates from the request, not the end of its
		// answer: the first warm is due 2 s after the request, however
		// long the answer took.
		up := newUpstream(t)
		up.slow = 1500 * time.Millisecond
		px := newProxy(t, up, Config{CacheTTL: ttl, Warm: "idle"})
		start := time.Now()
		post(t, px.URL, "/v1/messages", agentBody("s", true, ""), nil)
		time.Sleep(time.Until(start.Add(2600 * time.Millisecond)))
		ws := up.warms()
		if len(ws) != 1 {
			t.Fatalf("%d warm requests 2.6 s after a request answered in 1.5 s, want 1", len(ws))
		}
		if d := ws[0].at.Sub(start); d < 1800*time.Millisecond || d > 2600*time.Millisecond {
			t.Errorf("the first warm %v after the request, want about 2 s", d)
		}
	})
	// The modes and the requests that are not warmed: one wait for all.
	cases := []struct {
		name, mode, extra, stop string
		want                    int
		up                      *upstream
	}{
		{name: "budget-based thinking", mode: "idle", extra: `,"thinking":{"type":"enabled","budget_tokens":2000}`, stop: "end_turn", want: 0},
		{name: "adaptive thinking", mode: "idle", extra: `,"thinking":{"type":"adaptive"}`, stop: "end_turn", want: 1},
		{name: "running, idle", mode: "running", stop: "end_turn", want: 0},
		{name: "running, a tool runs", mode: "running", stop: "tool_use", want: 1},
		{name: "the default: running", mode: "", stop: "end_turn", want: 0},
		{name: "the default, a tool runs", mode: "", stop: "tool_use", want: 1},
		{name: "off", mode: "off", stop: "tool_use", want: 0},
	}
	for i := range cases {
		tc := &cases[i]
		tc.up = newUpstream(t)
		tc.up.answer = func(map[string]any) (usage, string) { return usage{Input: 1000}, tc.stop }
		px := newProxy(t, tc.up, Config{CacheTTL: ttl, Warm: tc.mode})
		post(t, px.URL, "/v1/messages", agentBody("m", true, tc.extra), nil)
	}
	time.Sleep(2500 * time.Millisecond)
	for _, tc := range cases {
		if got := len(tc.up.warms()); got != tc.want {
			t.Errorf("%s: %d warm requests in 2.5 s, want %d", tc.name, got, tc.want)
		}
	}
}

// TestConversations checks that a session's conversations (its main
// thread, a subagent) warm apart: a subagent's requests do not stop the
// warming of the parent's request that waits on it; the parent's next
// request, whose first message is the same but for its breakpoint, does.
func TestConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for warm requests (seconds)")
	}
	up := newUpstream(t)
	up.answer = func(req map[string]any) (usage, string) {
		if strings.Contains(fmt.Sprint(req["messages"]), "subtask") {
			return usage{Input: 1000}, "end_turn"
		}
		return usage{Input: 1000}, "tool_use" // the parent calls the Agent tool
	}
	px := newProxy(t, up, Config{CacheTTL: 12 * time.Second}) // running: warms while a tool runs
	with := func(messages string) string {
		return strings.Replace(agentBody("c", true, ""), `"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]`, `"messages":`+messages, 1)
	}
	start := time.Now()
	post(t, px.URL, "/v1/messages", with(`[{"role":"user","content":[{"type":"text","text":"fix it","cache_control":{"type":"ephemeral"}}]}]`), nil)
	time.Sleep(500 * time.Millisecond)
	post(t, px.URL, "/v1/messages", with(`[{"role":"user","content":[{"type":"text","text":"subtask: read the logs","cache_control":{"type":"ephemeral"}}]}]`), nil)
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	ws := up.warms()
	if len(ws) != 1 || !strings.Contains(string(ws[0].body), "fix it") {
		t.Fatalf("%d warm requests 2.5 s after the parent's request, want 1 of the parent's (the subagent's answer ended its turn)", len(ws))
	}
	// The parent goes on: the same first message, its breakpoint moved to
	// the last: the same conversation, whose warms restart from it.
	next := time.Now()
	post(t, px.URL, "/v1/messages", with(`[{"role":"user","content":[{"type":"text","text":"fix it"}]},`+
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Agent","input":{}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done","cache_control":{"type":"ephemeral"}}]}]`), nil)
	time.Sleep(time.Until(next.Add(1500 * time.Millisecond)))
	if n := len(up.warms()); n != 1 {
		t.Errorf("%d warm requests: the parent's first request was still warmed after its next began", n)
	}
	time.Sleep(time.Until(next.Add(2500 * time.Millisecond)))
	ws = up.warms()
	if len(ws) != 2 || !strings.Contains(string(ws[1].body), `"tool_use_id":"t1"`) {
		t.Errorf("%d warm requests, want the parent's next request warmed", len(ws))
	}
}

func TestConversationOf(t *testing.T) {
	conv := func(messages string) string {
		r, err := parseRequest([]byte(`{"max_tokens":5,"messages":` + messages + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return r.conversation()
	}
	a := conv(`[{"role":"user","content":[{"type":"text","text":"fix it","cache_control":{"type":"ephemeral"}}]}]`)
	b := conv(`[{"content":[{"text":"fix it","type":"text"}],"role":"user"},{"role":"assistant","content":"ok"}]`)
	c := conv(`[{"role":"user","content":[{"type":"text","text":"subtask"}]}]`)
	d := conv(`[{"role":"user","content":"fix it"}]`)
	if a == "" || a != b || a == c || a == d || conv(`[]`) != "" {
		t.Errorf("conversations: %q %q %q %q", a, b, c, d)
	}
}

// TestWarmFailureStops checks that a refused warm request ends the pause's
// warming (and is counted).
func TestWarmFailureStops(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for warm requests (seconds)")
	}
	up := newUpstream(t)
	var mu sync.Mutex
	refuse := false
	base := up.srv.Config.Handler
	up.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		no := refuse
		mu.Unlock()
		if no {
			up.mu.Lock()
			up.got = append(up.got, received{path: r.URL.Path, body: []byte(`{"max_tokens":1}`), at: time.Now()})
			up.mu.Unlock()
			writeError(w, http.StatusTooManyRequests, "rate_limit_error", "slow down")
			return
		}
		base.ServeHTTP(w, r)
	})
	u, _ := url.Parse(up.srv.URL)
	var logged []string
	var lmu sync.Mutex
	p, err := New(Config{Upstream: u, CacheTTL: 12 * time.Second, Warm: "idle", Log: func(f string, a ...any) {
		lmu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		lmu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	px := httptest.NewServer(p)
	defer func() { px.Close(); p.Close() }()
	post(t, px.URL, "/v1/messages", agentBody("f", true, ""), nil)
	mu.Lock()
	refuse = true
	mu.Unlock()
	time.Sleep(4500 * time.Millisecond)
	if n := len(up.warms()); n != 1 {
		t.Errorf("%d warm requests, want 1: a refusal stops the pause's warming", n)
	}
	if st := p.Stats(); st.WarmsFailed != 1 || st.Warms != 0 || st.Requests != 1 {
		t.Errorf("stats %+v", st)
	}
	lmu.Lock()
	defer lmu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "warm request 1 of 10 failed") || !strings.Contains(logged[0], "429") {
		t.Errorf("log %q", logged)
	}
}

func TestErrors(t *testing.T) {
	// An upstream that is not there: 502 in the API's error shape, naming it.
	dead := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(dead.URL)
	dead.Close()
	p, err := New(Config{Upstream: u})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	px := httptest.NewServer(p)
	defer px.Close()
	status, answer, _ := post(t, px.URL, "/v1/messages", agentBody("e", true, ""), nil)
	if status != http.StatusBadGateway || !strings.Contains(answer, `"type":"error"`) || !strings.Contains(answer, u.Host) {
		t.Errorf("dead upstream: %d %s", status, answer)
	}
	big := `{"x":"` + strings.Repeat("a", MaxBody) + `"}`
	status, answer, _ = post(t, px.URL, "/v1/messages", big, nil)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(answer, "request_too_large") {
		t.Errorf("a body over the limit: %d %s", status, answer)
	}
	for _, c := range []Config{
		{Upstream: &url.URL{Scheme: "ftp", Host: "x"}},
		{Upstream: &url.URL{Path: "/relative"}},
		{HeadTTL: 30 * time.Minute},
		{Warm: "always"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestSessionOf(t *testing.T) {
	for _, tc := range []struct {
		header, userID, want string
	}{
		{"h1", `{"session_id":"m1"}`, "h1"},
		{"", `{"device_id":"d","session_id":"m1"}`, "m1"},
		{"", `user_abc_account__session_x`, ""},
		{"", "", ""},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(SessionHeader, tc.header)
		}
		b, _ := json.Marshal(map[string]any{"max_tokens": 5, "metadata": map[string]string{"user_id": tc.userID}})
		r, err := parseRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := sessionOf(h, r); got != tc.want {
			t.Errorf("sessionOf(%q, %q) = %q, want %q", tc.header, tc.userID, got, tc.want)
		}
	}
}

func TestSnifferJSON(t *testing.T) {
	var got outcome
	body := `{"type":"message","stop_reason":"tool_use","usage":{"input_tokens":3,"cache_read_input_tokens":40,"cache_creation_input_tokens":5,"cache_creation":{"ephemeral_1h_input_tokens":5}}}`
	s := newSniffer(io.NopCloser(strings.NewReader(body)), "application/json", nil, func(o outcome) { got = o })
	out, _ := io.ReadAll(s)
	s.Close()
	if string(out) != body || !got.Complete || got.Stop != "tool_use" || got.Usage.prompt() != 48 || got.Usage.long() != 5 {
		t.Errorf("sniffer: %+v (passed %d bytes)", got, len(out))
	}
	// A stream cut before message_stop is not complete.
	s = newSniffer(io.NopCloser(strings.NewReader("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9}}}\n\n")), "text/event-stream", nil, func(o outcome) { got = o })
	io.ReadAll(s)
	if got.Complete || got.Usage.Input != 9 {
		t.Errorf("a cut stream: %+v", got)
	}
}

// TestKeptState checks what the proxy keeps: a pause that will not warm
// drops the request and its key; Close stops pending warms; the warming
// limit ends a pause; a conversation silent past forgetAfter is forgotten.
func TestKeptState(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for warm requests (seconds)")
	}
	const ttl = 12 * time.Second
	state := func(p *Proxy, sid string) (body []byte, header http.Header, ok bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		s := p.conversationOf(sid)
		if s == nil {
			return nil, nil, false
		}
		return s.body, s.header, true
	}
	start := func(t *testing.T, c Config) (*Proxy, *upstream, string) {
		up := newUpstream(t)
		u, _ := url.Parse(up.srv.URL)
		c.Upstream, c.CacheTTL = u, ttl
		p, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		t.Cleanup(func() { srv.Close(); p.Close() })
		return p, up, srv.URL
	}
	t.Run("no warm, nothing kept", func(t *testing.T) {
		t.Parallel()
		p, _, px := start(t, Config{}) // running: an answer that ends the turn does not warm
		post(t, px, "/v1/messages", agentBody("k", true, ""), nil)
		time.Sleep(20 * time.Millisecond)
		if body, header, ok := state(p, "k"); !ok || body != nil || header != nil {
			t.Errorf("kept %d bytes and %d headers of a request that will not be warmed", len(body), len(header))
		}
	})
	t.Run("close", func(t *testing.T) {
		t.Parallel()
		p, up, px := start(t, Config{Warm: "idle"})
		post(t, px, "/v1/messages", agentBody("c", true, ""), nil)
		p.Close()
		time.Sleep(2500 * time.Millisecond)
		if n := len(up.warms()); n != 0 {
			t.Errorf("%d warm requests after Close", n)
		}
	})
	t.Run("the limit", func(t *testing.T) {
		t.Parallel()
		p, up, px := start(t, Config{Warm: "idle"})
		p.mu.Lock()
		p.limit = func(bool) time.Duration { return 3 * time.Second } // a warm at 2 s, none at 4 s
		p.mu.Unlock()
		post(t, px, "/v1/messages", agentBody("l", true, ""), nil)
		time.Sleep(4500 * time.Millisecond)
		if n := len(up.warms()); n != 1 {
			t.Errorf("%d warm requests within a 3 s limit, want 1", n)
		}
		if body, header, _ := state(p, "l"); body != nil || header != nil {
			t.Errorf("the request is still kept after its pause's last warm")
		}
	})
	t.Run("forgotten", func(t *testing.T) {
		t.Parallel()
		p, _, px := start(t, Config{})
		post(t, px, "/v1/messages", agentBody("old", true, ""), nil)
		time.Sleep(20 * time.Millisecond)
		p.mu.Lock()
		p.conversationOf("old").last = time.Now().Add(-forgetAfter - time.Minute)
		p.pruned = time.Time{}
		p.mu.Unlock()
		post(t, px, "/v1/messages", agentBody("new", true, ""), nil)
		if _, _, ok := state(p, "old"); ok {
			t.Errorf("a conversation silent for over %v is still kept", forgetAfter)
		}
		if _, _, ok := state(p, "new"); !ok {
			t.Errorf("the new conversation is not kept")
		}
	})
}

// TestHourLongMessages: a request whose message breakpoint asks for the
// hour itself (Claude Code's ENABLE_PROMPT_CACHING_1H) leaves an entry
// that lives an hour: no warm within seconds, and a pause past --cache-ttl
// is not a cold cache.
func TestHourLongMessages(t *testing.T) {
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	p, err := New(Config{Upstream: u, CacheTTL: time.Second, Warm: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	px := httptest.NewServer(p)
	defer func() { px.Close(); p.Close() }()
	body := strings.Replace(agentBody("h1", true, ""), `"text":"hi","cache_control":{"type":"ephemeral"}`, `"text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}`, 1)
	post(t, px.URL, "/v1/messages", body, nil)
	time.Sleep(2 * time.Second)
	post(t, px.URL, "/v1/messages", body, nil)
	got := up.received()
	if len(got) != 2 || systemTTLs(t, got[1].body) != "-,5m" {
		t.Errorf("%d requests; the second's system breakpoints %s: a pause within the hour taken for a cold cache", len(got), systemTTLs(t, got[len(got)-1].body))
	}
}

// TestLoopbackOnly: with LoopbackOnly, a request naming another host (a
// web page's DNS rebinding) is refused; loopback names pass.
func TestLoopbackOnly(t *testing.T) {
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	p, err := New(Config{Upstream: u, LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct {
		host string
		want int
	}{
		{"evil.example:8788", http.StatusForbidden},
		{"10.1.2.3:8788", http.StatusForbidden},
		{"localhost:8788", http.StatusOK},
		{"127.0.0.1:8788", http.StatusOK},
		{"[::1]:8788", http.StatusOK},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/messages/count_tokens", strings.NewReader(`{}`))
		r.Host = tc.host
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("Host %s: %d %s, want %d", tc.host, w.Code, w.Body, tc.want)
		}
	}
}

// TestAddressHostsOnly: a proxy off loopback answers requests naming it
// by an IP address (or a loopback name), never by another name, which a
// web page's DNS rebinding could point at it.
func TestAddressHostsOnly(t *testing.T) {
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	p, err := New(Config{Upstream: u, AddressHostsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct {
		host string
		want int
	}{
		{"evil.example:8788", http.StatusForbidden},
		{"proxy.internal", http.StatusForbidden},
		{"10.1.2.3:8788", http.StatusOK},
		{"[fd00::1]:8788", http.StatusOK},
		{"localhost:8788", http.StatusOK},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/messages/count_tokens", strings.NewReader(`{}`))
		r.Host = tc.host
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("Host %s: %d %s, want %d", tc.host, w.Code, w.Body, tc.want)
		}
	}
}

// TestCutOff: an answer the client stops reading still counts as a read
// of the prompt: the next request within the cache's lifetime is warm.
func TestCutOff(t *testing.T) {
	up := newUpstream(t)
	up.slow = 3 * time.Second
	u, _ := url.Parse(up.srv.URL)
	p, err := New(Config{Upstream: u, CacheTTL: 2 * time.Second, Warm: "off"})
	if err != nil {
		t.Fatal(err)
	}
	px := httptest.NewServer(p)
	defer func() { px.Close(); p.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, px.URL+"/v1/messages", strings.NewReader(agentBody("x", true, "")))
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	resp.Body.Read(buf) // message_start arrived
	time.Sleep(100 * time.Millisecond)
	cancel() // Esc
	resp.Body.Close()
	time.Sleep(50 * time.Millisecond)
	p.mu.Lock()
	last := p.conversationOf("x").last
	p.mu.Unlock()
	if last.IsZero() || last.Sub(sent) > time.Second || sent.Sub(last) > time.Second {
		t.Errorf("the cut-off request's read at %v, sent at %v", last, sent)
	}
}

func TestRequestTTL(t *testing.T) {
	const def = 5 * time.Minute
	for _, tc := range []struct {
		messages string
		want     time.Duration
	}{
		{`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]`, time.Hour},
		{`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}]},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"}]}]`, time.Hour},
		{`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}]},{"role":"user","content":[{"type":"text","text":"c","cache_control":{"type":"ephemeral"}}]}]`, def},
		{`[{"role":"user","content":"a"}]`, def},
		{`[]`, def},
	} {
		r, err := parseRequest([]byte(`{"max_tokens":5,"messages":` + tc.messages + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.ttl(def); got != tc.want {
			t.Errorf("ttl(%s) = %v, want %v", tc.messages, got, tc.want)
		}
	}
}

// A request in message-thread form (only the new messages and a thread
// field) passes byte for byte and is never warmed; it stops its session's
// warming at once, and the session's later requests pass untouched too.
// Another session's warming goes on. The log says so once.
func TestThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for warm requests (seconds)")
	}
	up := newUpstream(t)
	up.answer = func(map[string]any) (usage, string) { return usage{Input: 1000}, "end_turn" }
	var logged []string
	var mu sync.Mutex
	px := newProxy(t, up, Config{CacheTTL: 12 * time.Second, Warm: "idle", Log: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	post(t, px.URL, "/v1/messages", agentBody("t", true, ""), nil)
	post(t, px.URL, "/v1/messages", agentBody("other", true, ""), nil)
	thread := agentBody("t", true, `,"thread":{"id":"thr_1"}`)
	post(t, px.URL, "/v1/messages", thread, nil)
	post(t, px.URL, "/v1/messages", thread, nil)
	time.Sleep(2500 * time.Millisecond)
	got := up.received()
	var tWarms, otherWarms int
	for _, r := range got {
		if !bytes.Contains(r.body, []byte(`"max_tokens":1,`)) && !bytes.HasSuffix(r.body, []byte(`"max_tokens":1}`)) {
			continue
		}
		if bytes.Contains(r.body, []byte(`session_id\":\"t\"`)) {
			tWarms++
		} else {
			otherWarms++
		}
	}
	if tWarms != 0 || otherWarms != 1 {
		t.Errorf("warm requests: %d of the threaded session (want 0), %d of the other (want 1)", tWarms, otherWarms)
	}
	if len(got) < 4 || string(got[2].body) != thread || string(got[3].body) != thread {
		t.Errorf("the thread requests did not pass byte for byte")
	}
	// The session's next whole request, after a pause past the cache:
	// untouched (no hour), not warmed.
	n := len(up.received())
	post(t, px.URL, "/v1/messages", agentBody("t", true, ""), nil)
	time.Sleep(2500 * time.Millisecond)
	after := up.received()[n:]
	for _, r := range after {
		if bytes.Contains(r.body, []byte(`session_id\":\"t\"`)) && (string(r.body) != agentBody("t", true, "")) {
			t.Errorf("a request of the threaded session was changed or warmed: %.200s", r.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	said := 0
	for _, l := range logged {
		if strings.Contains(l, "message-thread form") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the log said %d times that thread requests pass untouched, want once: %q", said, logged)
	}
}

// A request the proxy does not understand where it would change it (a
// system breakpoint that is not an object, once the session has paused)
// goes on unchanged; the log says so once.
func TestNotUnderstoodPassesOn(t *testing.T) {
	up := newUpstream(t)
	up.answer = func(map[string]any) (usage, string) { return usage{Input: 10}, "end_turn" }
	var logged []string
	var mu sync.Mutex
	px := newProxy(t, up, Config{CacheTTL: 300 * time.Millisecond, Warm: "off", Log: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	odd := strings.Replace(agentBody("odd", false, ""), `"cache_control":{"type":"ephemeral"}}],"tools"`, `"cache_control":"ephemeral"}],"tools"`, 1)
	for i := 0; i < 3; i++ {
		if code, body, _ := post(t, px.URL, "/v1/messages", odd, nil); code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
		time.Sleep(400 * time.Millisecond) // past the cache: the next one would ask for the hour
	}
	for i, r := range up.received() {
		if string(r.body) != odd {
			t.Errorf("request %d was changed: %.300s", i, r.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logged {
		if strings.Contains(l, "does not understand") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("said %d times, want once: %q", n, logged)
	}
}

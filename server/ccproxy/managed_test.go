package ccproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/integrations/claudecode/hooks"
	"github.com/ctxstore/ctxstore/internal/jsontext"
)

// conv builds a Claude Code conversation as its requests carry it: each
// request holds the whole history, its last block with a breakpoint, the
// system prompt's last block with one.
type conv struct {
	session string
	msgs    []map[string]any
	n       int
}

func (c *conv) user(text string) {
	c.msgs = append(c.msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}})
}

// call appends an assistant message (thinking, then the tool use) and the
// user message with its result.
func (c *conv) call(tool string, input map[string]any, output string) string {
	c.n++
	id := fmt.Sprintf("toolu_%s_%02d", tool, c.n)
	c.msgs = append(c.msgs,
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "thinking", "thinking": "I will run it.", "signature": "sig-" + id},
			map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input},
		}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": output}}})
	return id
}

// body is the request for the conversation so far.
func (c *conv) body(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(c.msgs)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	json.Unmarshal(b, &msgs)
	last := msgs[len(msgs)-1]["content"].([]any)
	last[len(last)-1].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
	body := map[string]any{
		"model": "claude-x", "max_tokens": 32000, "stream": true,
		"system": []any{map[string]any{"type": "text", "text": "You are Claude Code."},
			map[string]any{"type": "text", "text": "Be brief.", "cache_control": map[string]any{"type": "ephemeral"}}},
		"tools": []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}},
			map[string]any{"name": "Read", "input_schema": map[string]any{"type": "object"}}},
		"thinking":           map[string]any{"type": "adaptive"},
		"context_management": map[string]any{"edits": []any{map[string]any{"type": "clear_thinking_20251015", "keep": "all"}}},
		"metadata":           map[string]any{"user_id": `{"session_id":"` + c.session + `"}`},
		"messages":           msgs,
	}
	out, err := jsontext.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// output is a command's output of n lines.
func output(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s line %d of the output\n", tag, i)
	}
	return b.String()
}

// sent is one request as the upstream saw it.
type sent struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type sentBlock struct {
	Type         string          `json:"type"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	CacheControl *cacheControl   `json:"cache_control"`
}

func (s sent) blocks(i int) []sentBlock {
	var bs []sentBlock
	json.Unmarshal(s.Messages[i].Content, &bs)
	return bs
}

// result returns the text tool call id's result was sent as.
func (s sent) result(id string) string {
	for i := range s.Messages {
		for _, b := range s.blocks(i) {
			if b.Type == "tool_result" && b.ToolUseID == id {
				var t string
				json.Unmarshal(b.Content, &t)
				return t
			}
		}
	}
	return ""
}

// raw returns tool call id's result content as sent.
func (s sent) raw(id string) json.RawMessage {
	for i := range s.Messages {
		for _, b := range s.blocks(i) {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return b.Content
			}
		}
	}
	return nil
}

// breakpoints returns the messages whose blocks carry a breakpoint.
func (s sent) breakpoints() []int {
	var out []int
	for i := range s.Messages {
		for _, b := range s.blocks(i) {
			if b.CacheControl != nil {
				out = append(out, i)
			}
		}
	}
	return out
}

// managedProxy is a proxy in managed mode in front of up, spilling to a
// temporary directory.
func managedProxy(t *testing.T, up *upstream, st Store, c Config) (string, string, *Proxy) {
	t.Helper()
	root := t.TempDir()
	u, _ := url.Parse(up.srv.URL)
	c.Upstream = u
	c.Warm = "off"
	c.Managed = &ManagedConfig{Spill: hooks.Spill{Root: root}, Store: st}
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, p)
	return srv, root, p
}

func newServer(t *testing.T, p *Proxy) string {
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.Close() })
	return srv.URL
}

// send posts the conversation's request and returns what the upstream
// got, checked against the Messages API's rules and against what Claude
// Code sent (nothing but tool results and breakpoints changed).
func send(t *testing.T, px string, up *upstream, c *conv) sent {
	t.Helper()
	body := c.body(t)
	n := len(up.received())
	if status, answer, _ := post(t, px, "/v1/messages", string(body), nil); status != 200 {
		t.Fatalf("status %d: %s", status, answer)
	}
	got := up.received()[n]
	if errs := apicheck.Check(got.body); len(errs) > 0 {
		t.Fatalf("the managed request breaks the API's rules: %v", errs)
	}
	if err := apicheck.Preserved(body, got.body); err != nil {
		t.Fatalf("the managed request changed more than it may: %v", err)
	}
	var s sent
	if err := json.Unmarshal(got.body, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// memStore is a Store in memory.
type memStore struct {
	mu    sync.Mutex
	convs map[string][]byte
	calls []Call
}

func (m *memStore) LoadConversation(_ context.Context, sid, conv string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.convs[sid+"/"+conv], nil
}

func (m *memStore) SaveConversation(_ context.Context, sid, conv string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.convs == nil {
		m.convs = map[string][]byte{}
	}
	m.convs[sid+"/"+conv] = b
	return nil
}

func (m *memStore) RecordCall(_ context.Context, c Call) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, c)
	return nil
}

// TestManagedCollapse: a turn of tool calls with outputs of 6,000 chars.
// While the cache is warm, outputs the policy no longer keeps wait (the
// prefix stays what the previous request sent, each request extending the
// last); once their saving pays for the rebase they collapse together,
// each to one line naming its spill file, which holds the output whole.
// Decisions are sticky: a collapsed output stays collapsed.
func TestManagedCollapse(t *testing.T) {
	up := newUpstream(t)
	st := &memStore{}
	px, root, _ := managedProxy(t, up, st, Config{CacheTTL: time.Hour})
	c := &conv{session: "sess-1"}
	c.user("Build it.")
	var ids []string
	outs := map[string]string{}
	var prev sent
	rebased := -1
	for i := range 24 {
		out := output(fmt.Sprintf("build%d", i), 150) // about 6,000 chars
		id := c.call("Bash", map[string]any{"command": fmt.Sprintf("make step%d", i)}, out)
		ids = append(ids, id)
		outs[id] = out
		s := send(t, px, up, c)
		collapsed := 0
		for _, id := range ids {
			r := s.result(id)
			if strings.HasPrefix(r, "[ctxstore] output collapsed") {
				collapsed++
				file := filepath.Join(root, "sess-1", id+".txt")
				if !strings.Contains(r, "Read "+file+" for it whole") {
					t.Fatalf("request %d: %s collapsed to %q, naming no spill file %s", i, id, r, file)
				}
				if b, err := os.ReadFile(file); err != nil || string(b) != outs[id] {
					t.Fatalf("request %d: the spill file of %s does not hold the output whole: %v", i, id, err)
				}
			} else if r != outs[id] {
				t.Fatalf("request %d: %s sent as %.80q, neither whole nor collapsed", i, id, r)
			}
		}
		if prev.Messages != nil {
			// Sticky: what was collapsed stays so.
			for _, id := range ids[:len(ids)-1] {
				if strings.HasPrefix(prev.result(id), "[ctxstore]") && !strings.HasPrefix(s.result(id), "[ctxstore]") {
					t.Fatalf("request %d: %s was collapsed and came back whole", i, id)
				}
			}
			// Between rebases, each request extends the previous one.
			same := true
			for k := range prev.Messages {
				if string(stripCC(prev.Messages[k].Content)) != string(stripCC(s.Messages[k].Content)) {
					same = false
				}
			}
			newly := 0
			for _, id := range ids[:len(ids)-1] {
				if !strings.HasPrefix(prev.result(id), "[ctxstore]") && strings.HasPrefix(s.result(id), "[ctxstore]") {
					newly++
				}
			}
			switch {
			case !same && newly == 0:
				t.Fatalf("request %d changed the prefix without a collapse", i)
			case newly > 0 && newly < 2:
				t.Fatalf("request %d collapsed %d output alone: collapses come in batches", i, newly)
			case newly > 0 && rebased < 0:
				rebased = i
			}
		}
		// Breakpoints: the end of the request and, without a rebase, where
		// the previous request ended.
		bp := s.breakpoints()
		if len(bp) == 0 || bp[len(bp)-1] != len(s.Messages)-1 || len(bp) > 2 {
			t.Fatalf("request %d: breakpoints in messages %v of %d", i, bp, len(s.Messages))
		}
		prev = s
	}
	if rebased < 0 {
		t.Fatal("no rebase in 24 calls of 6,000-char outputs")
	}
	t.Logf("first rebase at request %d; the last request showed %d outputs collapsed", rebased, st.calls[23].Collapsed)
	if len(st.calls) != 24 || st.calls[23].Collapsed == 0 || len(st.calls[23].Body) == 0 {
		t.Fatalf("recorded %d calls (want 24), the last: %+v", len(st.calls), st.calls[len(st.calls)-1].Collapsed)
	}
	if len(st.convs) != 1 {
		t.Fatalf("%d conversations kept, want 1", len(st.convs))
	}

	// A restarted proxy reading the same store sends the same managed
	// stream: the next request extends the last one sent.
	up2 := newUpstream(t)
	u2, _ := url.Parse(up2.srv.URL)
	p2, err := New(Config{Upstream: u2, Warm: "off", CacheTTL: time.Hour, Managed: &ManagedConfig{Spill: hooks.Spill{Root: root}, Store: st}})
	if err != nil {
		t.Fatal(err)
	}
	px2 := newServer(t, p2)
	c.call("Bash", map[string]any{"command": "make last"}, "done\n")
	s := send(t, px2, up2, c)
	for k := range prev.Messages {
		if string(stripCC(prev.Messages[k].Content)) != string(stripCC(s.Messages[k].Content)) {
			t.Fatalf("after a restart, message %d differs from what the last request sent", k)
		}
	}
}

// stripCC removes the cache_control fields of a message's blocks.
func stripCC(raw json.RawMessage) []byte {
	var bs []map[string]any
	if json.Unmarshal(raw, &bs) != nil {
		return raw
	}
	for _, b := range bs {
		delete(b, "cache_control")
	}
	out, _ := json.Marshal(bs)
	return out
}

// TestManagedColdAndPreviews: the first request of a conversation (and
// one after the cache's lifetime) collapses at once; an output past the
// preview size enters as a preview naming its spill file; a whole read
// superseded by a later read of the file collapses to a line naming the
// spill file of the earlier read; a Read of a spill file is collapsed to
// a line naming that file, not a copy.
func TestManagedColdAndPreviews(t *testing.T) {
	up := newUpstream(t)
	px, root, _ := managedProxy(t, up, nil, Config{CacheTTL: 250 * time.Millisecond})
	c := &conv{session: "sess-2"}
	c.user("Look.")
	big := output("big", 600) // about 21,000 chars: past the preview size
	bigID := c.call("Bash", map[string]any{"command": "seq"}, big)
	file1 := output("file v1", 100)
	read1 := c.call("Read", map[string]any{"file_path": "/w/main.go"}, file1)
	file2 := output("file v2", 100)
	read2 := c.call("Read", map[string]any{"file_path": "/w/main.go"}, file2)
	s := send(t, px, up, c)
	spill := filepath.Join(root, "sess-2")
	if r := s.result(bigID); !strings.Contains(r, "[ctxstore] ") || !strings.Contains(r, "Read "+filepath.Join(spill, bigID+".txt")+" for the output whole") || len(r) > 5000 {
		t.Errorf("the large output was sent as %.200q, not a preview", r)
	}
	if b, _ := os.ReadFile(filepath.Join(spill, bigID+".txt")); string(b) != big {
		t.Error("the preview's spill file does not hold the output whole")
	}
	if r := s.result(read1); !strings.HasPrefix(r, "[ctxstore] this read of /w/main.go was superseded") || !strings.Contains(r, filepath.Join(spill, read1+".txt")) {
		t.Errorf("the superseded read was sent as %.200q", r)
	}
	if r := s.result(read2); r != file2 {
		t.Errorf("the latest read was sent as %.200q", r)
	}
	// The model reads the preview's spill file back: its result is whole
	// while recent; once old, it collapses to a line naming that file.
	back := c.call("Read", map[string]any{"file_path": filepath.Join(spill, bigID+".txt")}, big)
	s = send(t, px, up, c)
	if r := s.result(back); r != big {
		t.Errorf("the Read of the spill file was not sent whole (%d chars)", len(r))
	}
	for i := range 3 {
		c.user(fmt.Sprintf("Next %d.", i))
		c.call("Bash", map[string]any{"command": "true"}, "ok\n")
		c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Done."}}})
	}
	c.user("And now?")
	time.Sleep(300 * time.Millisecond) // past the cache's lifetime: the rebase is free
	s = send(t, px, up, c)
	if r := s.result(back); !strings.HasPrefix(r, "[ctxstore] output collapsed") || !strings.Contains(r, filepath.Join(spill, bigID+".txt")) {
		t.Errorf("the old Read of the spill file was sent as %.200q", r)
	}
	if _, err := os.Stat(filepath.Join(spill, back+".txt")); err == nil {
		t.Error("the Read of a spill file was copied to a spill file of its own")
	}
}

// TestManagedPassThrough: a request with a block managed mode does not
// know passes on byte for byte, and the log says so once; so does a
// thread-form request, never warmed.
func TestManagedPassThrough(t *testing.T) {
	up := newUpstream(t)
	var mu sync.Mutex
	var lines []string
	px, _, p := managedProxy(t, up, nil, Config{Log: func(f string, a ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	c := &conv{session: "sess-3"}
	c.user("Go.")
	c.call("Bash", map[string]any{"command": "x"}, output("x", 200))
	c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "novel_block", "x": 1}}})
	c.user("Again.")
	for range 2 {
		body := c.body(t)
		n := len(up.received())
		post(t, px, "/v1/messages", string(body), nil)
		if got := up.received()[n].body; string(got) != string(body) {
			t.Fatal("a request with an unknown block was changed")
		}
	}
	mu.Lock()
	said := 0
	for _, l := range lines {
		if strings.Contains(l, `a block of type "novel_block"`) {
			said++
		}
	}
	mu.Unlock()
	if said != 1 {
		t.Errorf("the log said the unknown block %d times, want once: %q", said, lines)
	}
	if st := p.Stats(); st.Unmanaged != 2 || st.Managed != 0 {
		t.Errorf("stats %+v", st)
	}
	// A thread-form request: untouched.
	c2 := &conv{session: "sess-4"}
	c2.user("Go.")
	c2.call("Bash", map[string]any{"command": "x"}, output("x", 500))
	body := strings.Replace(string(c2.body(t)), `"max_tokens"`, `"thread":{"id":"th_1"},"max_tokens"`, 1)
	n := len(up.received())
	post(t, px, "/v1/messages", body, nil)
	if got := up.received(); len(got) != n+1 || string(got[n].body) != body {
		t.Error("a thread-form request was changed or multiplied")
	}
}

// TestManagedBreakpointLimit: with Claude Code's own breakpoints on the
// tools and the system prompt using three of the four, ctxstore places
// one, at the end; with none asked in the messages (caching off), none.
func TestManagedBreakpointLimit(t *testing.T) {
	up := newUpstream(t)
	px, _, _ := managedProxy(t, up, nil, Config{})
	c := &conv{session: "sess-5"}
	c.user("Go.")
	c.call("Bash", map[string]any{"command": "x"}, "ok\n")
	body := c.body(t)
	var top map[string]any
	json.Unmarshal(body, &top)
	tools := top["tools"].([]any)
	tools[0].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
	tools[1].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
	b, _ := json.Marshal(top)
	n := len(up.received())
	post(t, px, "/v1/messages", string(b), nil)
	got := up.received()[n].body
	if errs := apicheck.Check(got); len(errs) > 0 {
		t.Fatal(errs)
	}
	var s sent
	json.Unmarshal(got, &s)
	if bp := s.breakpoints(); len(bp) != 1 {
		t.Errorf("breakpoints in messages %v, want the last only", bp)
	}
}

// TestManagedHookPreview: an output the hook made a preview (its spill
// file written by the hook) collapses to a line naming the hook's file,
// which the proxy leaves as it is.
func TestManagedHookPreview(t *testing.T) {
	up := newUpstream(t)
	px, _, _ := managedProxy(t, up, nil, Config{CacheTTL: 200 * time.Millisecond})
	hookRoot := t.TempDir() // the hooks' spill directory may be another than the proxy's
	c := &conv{session: "sess-6"}
	c.user("Go.")
	whole := output("hooked", 800)
	id := "toolu_hooked_1"
	file := filepath.Join(hookRoot, "sess-6", id+".txt")
	os.MkdirAll(filepath.Dir(file), 0o700)
	if err := os.WriteFile(file, []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	c.msgs = append(c.msgs,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "seq"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": assemble.PreviewText(whole, "Read "+file+" for the output whole")}}})
	s := send(t, px, up, c)
	if r := s.result(id); !strings.Contains(r, "left out here; Read "+file) {
		t.Fatalf("the hook's preview was sent as %.200q", r)
	}
	for i := range 4 {
		c.user(fmt.Sprintf("Next %d.", i))
		c.call("Bash", map[string]any{"command": "true"}, "ok\n")
		c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Done."}}})
	}
	c.user("And now?")
	time.Sleep(250 * time.Millisecond)
	s = send(t, px, up, c)
	if r := s.result(id); !strings.HasPrefix(r, "[ctxstore] output collapsed") || !strings.Contains(r, "Read "+file+" for it whole") {
		t.Errorf("the old preview was sent as %.200q", r)
	}
	if b, _ := os.ReadFile(file); string(b) != whole {
		t.Error("the hook's spill file was changed")
	}
}

// TestManagedConversations: a session's main thread and its subagent
// (another first message) are managed apart: each has its own decisions
// and call numbers, and a cold start of one does not rebase the other.
// Neither the log, the recorded calls nor the kept decisions hold the API
// key.
func TestManagedConversations(t *testing.T) {
	up := newUpstream(t)
	st := &memStore{}
	var mu sync.Mutex
	var lines []string
	px, _, _ := managedProxy(t, up, st, Config{CacheTTL: time.Hour, Log: func(f string, a ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	main := &conv{session: "sess-7"}
	main.user("Main task.")
	sub := &conv{session: "sess-7"}
	sub.user("Subagent task: look around.")
	for i := range 9 {
		main.call("Bash", map[string]any{"command": fmt.Sprint("m", i)}, output(fmt.Sprint("main", i), 150))
		send(t, px, up, main)
		sub.call("Bash", map[string]any{"command": fmt.Sprint("s", i)}, output(fmt.Sprint("sub", i), 150))
		send(t, px, up, sub)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.convs) != 2 {
		t.Fatalf("%d conversations kept, want 2", len(st.convs))
	}
	n := map[string]int{}
	for _, c := range st.calls {
		n[c.Conversation]++
		if c.N != n[c.Conversation] {
			t.Fatalf("conversation %s: call %d numbered %d", c.Conversation, n[c.Conversation], c.N)
		}
		if strings.Contains(string(c.Body), "sk-ant-test") {
			t.Fatal("a recorded call holds the API key")
		}
	}
	if len(n) != 2 || n[st.calls[0].Conversation] != 9 {
		t.Errorf("calls per conversation: %v", n)
	}
	for k, b := range st.convs {
		if strings.Contains(string(b), "sk-ant-test") {
			t.Fatalf("%s: the kept decisions hold the API key", k)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, "sk-ant-test") {
			t.Fatalf("the log holds the API key: %s", l)
		}
	}
}

// TestManagedKeepsBlocks: redacted thinking, server tools, a system-role
// message, a document and an image pass as they came (send checks every
// request against the API's rules and Claude Code's), and an output
// holding an image never collapses.
func TestManagedKeepsBlocks(t *testing.T) {
	up := newUpstream(t)
	px, _, _ := managedProxy(t, up, nil, Config{CacheTTL: 100 * time.Millisecond})
	c := &conv{session: "sess-8"}
	c.msgs = append(c.msgs, map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "document", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "spec"}},
		map[string]any{"type": "text", "text": "Read the spec."}}})
	c.msgs = append(c.msgs,
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "redacted_thinking", "data": "opaque"},
			map[string]any{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": map[string]any{"query": "x"}},
			map[string]any{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []any{}},
			map[string]any{"type": "tool_use", "id": "toolu_img_1", "name": "Read", "input": map[string]any{"file_path": "/a.png"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_img_1", "content": []any{
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": strings.Repeat("QUJD", 2000)}}}}}},
		map[string]any{"role": "system", "content": "A note from Claude Code."})
	for i := range 8 {
		c.call("Bash", map[string]any{"command": fmt.Sprint(i)}, output(fmt.Sprint(i), 150))
		time.Sleep(120 * time.Millisecond) // each request cold: collapses apply at once
		s := send(t, px, up, c)
		if r := s.raw("toolu_img_1"); !strings.Contains(string(r), `"type":"image"`) {
			t.Fatalf("an image output was sent as %.100s", r)
		}
	}
	s := send(t, px, up, c)
	if r := s.result("toolu_Bash_01"); !strings.HasPrefix(r, "[ctxstore] output collapsed") {
		t.Errorf("the oldest output was sent as %.100q", r)
	}
}

// failingStore fails every way it can: its loads panic or fail.
type failingStore struct{ panics bool }

func (f failingStore) LoadConversation(context.Context, string, string) ([]byte, error) {
	if f.panics {
		panic("the store fell over")
	}
	return nil, fmt.Errorf("the store is locked")
}
func (failingStore) SaveConversation(context.Context, string, string, []byte) error {
	return fmt.Errorf("the store is locked")
}
func (failingStore) RecordCall(context.Context, Call) error { return fmt.Errorf("the store is locked") }

// TestManagedFailurePassesOn: a failure inside managed mode (here a
// store that panics) sends Claude Code's request as it came and tells
// the person once; a store that only fails leaves managed mode working
// from memory, told once.
func TestManagedFailurePassesOn(t *testing.T) {
	for _, panics := range []bool{true, false} {
		up := newUpstream(t)
		var mu sync.Mutex
		var notices []string
		px, _, p := managedProxy(t, up, failingStore{panics}, Config{Notice: func(m string) {
			mu.Lock()
			notices = append(notices, m)
			mu.Unlock()
		}})
		c := &conv{session: "sess-9"}
		c.user("Go.")
		for i := range 3 {
			c.call("Bash", map[string]any{"command": fmt.Sprint(i)}, output(fmt.Sprint(i), 150))
			body := c.body(t)
			n := len(up.received())
			if status, _, _ := post(t, px, "/v1/messages", string(body), nil); status != 200 {
				t.Fatalf("status %d", status)
			}
			got := up.received()[n].body
			if panics && string(got) != string(body) {
				t.Fatal("after a failure the request was not passed on as it came")
			}
			if !panics && apicheck.Preserved(body, got) != nil {
				t.Fatal("the managed request changed more than it may")
			}
		}
		mu.Lock()
		if panics && (len(notices) != 1 || !strings.Contains(notices[0], "managed mode failed")) {
			t.Errorf("panicking store: notices %q, want one", notices)
		}
		if !panics && len(notices) != 3 { // load, save, record: each once
			t.Errorf("failing store: notices %q, want each failure once", notices)
		}
		mu.Unlock()
		if st := p.Stats(); panics && (st.Managed != 0 || st.Unmanaged != 3) || !panics && st.Managed != 3 {
			t.Errorf("panics %v: stats %+v", panics, st)
		}
	}
}

// TestManage: the function the replay can call gives, request after
// request with the state it returns, the bodies the proxy sends.
func TestManage(t *testing.T) {
	up := newUpstream(t)
	px, _, _ := managedProxy(t, up, nil, Config{CacheTTL: time.Hour})
	mc := &ManagedConfig{Spill: hooks.Spill{Root: t.TempDir()}}
	c := &conv{session: "sess-10"}
	c.user("Go.")
	var state []byte
	now := time.Now()
	for i := range 14 {
		c.call("Bash", map[string]any{"command": fmt.Sprint(i)}, output(fmt.Sprint(i), 150))
		out, ns, err := mc.Manage("sess-10", state, c.body(t), now.Add(time.Duration(i)*time.Second), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		state = ns
		s := send(t, px, up, c)
		var got sent
		json.Unmarshal(out, &got)
		for k := range s.Messages {
			a := strings.ReplaceAll(string(stripCC(s.Messages[k].Content)), "sess-10", "")
			b := strings.ReplaceAll(string(stripCC(got.Messages[k].Content)), "sess-10", "")
			if collapsedPaths.ReplaceAllString(a, "") != collapsedPaths.ReplaceAllString(b, "") {
				t.Fatalf("request %d, message %d: Manage and the proxy differ:\n%.300s\n%.300s", i, k, a, b)
			}
		}
	}
}

// collapsedPaths matches the spill directory a line names (the two
// runs spill to different roots).
var collapsedPaths = regexp.MustCompile(`Read [^ ]+ for`)

// TestManagedRenewed: a pause longer than the cache's lifetime that a
// warm request kept warm is no cold start: the collapses waiting stay
// waiting (the cost model prices them against a warm cache), where the
// same pause unwarmed rebases them at once, for free.
func TestManagedRenewed(t *testing.T) {
	mc := &ManagedConfig{Spill: hooks.Spill{Root: t.TempDir()}}
	const ttl = 5 * time.Minute
	c := &conv{session: "sess-11"}
	for i := range 4 {
		c.user(fmt.Sprintf("Turn %d.", i))
		c.call("Bash", map[string]any{"command": fmt.Sprint(i)}, output(fmt.Sprint(i), 80))
	}
	start := time.Now()
	var st convState
	if _, _, err := mc.manage("sess-11", &st, c.body(t), start, ttl); err != nil {
		t.Fatal(err)
	}
	// The next turn pushes the first turn's output out of the window: its
	// collapse waits, the cache being warm.
	c.user("Turn 4.")
	c.call("Bash", map[string]any{"command": "4"}, output("4", 80))
	if _, ap, err := mc.manage("sess-11", &st, c.body(t), start.Add(time.Minute), ttl); err != nil || ap.Rebase != "" || ap.Pending == 0 {
		t.Fatalf("the warm request: %+v, %v (a collapse should wait)", ap, err)
	}
	c.call("Bash", map[string]any{"command": "5"}, "ok\n")
	body := c.body(t)
	after := start.Add(time.Minute + 2*ttl) // the pause: twice the lifetime
	cold := st
	cold.Shown = maps.Clone(st.Shown)
	if _, ap, err := mc.manage("sess-11", &cold, body, after, ttl); err != nil || ap.Rebase != "expired" {
		t.Errorf("after a pause nobody warmed: %+v, %v (want the free rebase)", ap, err)
	}
	warm := st
	warm.Shown = maps.Clone(st.Shown)
	warm.Renewed = after.Add(-ttl / 2) // the proxy's last warm request
	_, ap, err := mc.manage("sess-11", &warm, body, after, ttl)
	if err != nil || ap.Rebase != "" || ap.Pending == 0 {
		t.Errorf("after a pause the proxy kept warm: %+v, %v (want the collapse still waiting)", ap, err)
	}
}

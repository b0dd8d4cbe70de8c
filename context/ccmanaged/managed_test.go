package ccmanaged

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/tools"
)

// dirSpill keeps spill files in one directory per session under root, as
// the hooks' spill does.
type dirSpill struct{ root string }

func (d dirSpill) File(session, id string) (string, bool) {
	return filepath.Join(d.root, session, tools.SpillName(id)), true
}

func (d dirSpill) Keep(session, id, whole string) (string, error) {
	f, _ := d.File(session, id)
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return "", err
	}
	return f, os.WriteFile(f, []byte(whole), 0o600)
}

// conv is a Claude Code conversation as its requests carry it: the whole
// history each time, Claude Code's breakpoint on the last block.
type conv struct {
	msgs []any
	n    int
	bp   bool // Claude Code places breakpoints
}

func (c *conv) user(text string) {
	c.msgs = append(c.msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}})
}

// call appends a tool call and its result, and returns the call's id.
func (c *conv) call(tool string, input map[string]any, out string) string {
	c.n++
	id := fmt.Sprintf("toolu_%02d", c.n)
	c.msgs = append(c.msgs,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": out}}})
	return id
}

func (c *conv) body(t *testing.T) []byte {
	t.Helper()
	b, _ := json.Marshal(c.msgs)
	var msgs []map[string]any
	json.Unmarshal(b, &msgs)
	if c.bp {
		last := msgs[len(msgs)-1]["content"].([]any)
		last[len(last)-1].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
	}
	out, err := json.Marshal(map[string]any{"model": "claude-x", "max_tokens": 1000,
		"system":   []any{map[string]any{"type": "text", "text": "You are Claude Code.", "cache_control": map[string]any{"type": "ephemeral"}}},
		"tools":    []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}, map[string]any{"name": "Read", "input_schema": map[string]any{"type": "object"}}},
		"messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func text(tag string, n int) string {
	return strings.Repeat(tag+" some output line\n", n/(len(tag)+18)+1)
}

// managed is a request's managed body, read back.
type managed struct {
	Messages []struct {
		Content []struct {
			Type         string          `json:"type"`
			ID           string          `json:"tool_use_id"`
			Content      json.RawMessage `json:"content"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"content"`
	} `json:"messages"`
}

// apply runs one request through Apply and checks what managed mode
// promises of every request: the Messages API's rules kept, nothing but
// tool results and breakpoints changed.
func apply(t *testing.T, mc *Config, st *State, body []byte, now time.Time) (managed, Applied) {
	t.Helper()
	out, ap, err := mc.Apply("s1", st, body, now, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if errs := apicheck.Check(out); len(errs) > 0 {
		t.Fatalf("the managed request breaks the API's rules: %v", errs)
	}
	if err := apicheck.Preserved(body, out); err != nil {
		t.Fatalf("the managed request changed more than it may: %v", err)
	}
	var m managed
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m, ap
}

// result is the text tool call id's result was sent as.
func (m managed) result(t *testing.T, id string) string {
	t.Helper()
	for _, msg := range m.Messages {
		for _, b := range msg.Content {
			if b.Type == "tool_result" && b.ID == id {
				var s string
				if err := json.Unmarshal(b.Content, &s); err != nil {
					t.Fatalf("%s's content: %v", id, err)
				}
				return s
			}
		}
	}
	t.Fatalf("no result of %s", id)
	return ""
}

// breakpoints are the messages with a breakpoint.
func (m managed) breakpoints() []int {
	var out []int
	for i, msg := range m.Messages {
		for _, b := range msg.Content {
			if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
				out = append(out, i)
			}
		}
	}
	return out
}

func newConfig(t *testing.T) (*Config, string) {
	root := t.TempDir()
	return &Config{Spill: dirSpill{root}, PreviewChars: 4000, MinChars: 200,
		Collapse: collapse.Config{PerTurn: 1, TurnsBack: 1}}, root
}

// TestApplyForms: what the model was shown of an output is sticky. A new
// output past the preview size enters as a preview whose spill file holds
// it whole; one the policy stops keeping while the cache is warm stays as
// it was sent (collapsing it would rewrite the cached prefix for a small
// saving); once the cache is cold the waiting collapses are applied
// together, each output becoming one line naming its spill file, and they
// stay collapsed.
func TestApplyForms(t *testing.T) {
	mc, root := newConfig(t)
	var st State
	c := &conv{bp: true}
	c.user(text("the task", 40000)) // a long prompt: rewriting the prefix is dear
	a := c.call("Bash", map[string]any{"command": "make"}, text("make", 1500))
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	m, ap := apply(t, mc, &st, c.body(t), t0)
	if got := m.result(t, a); got != text("make", 1500) || ap.Collapsed+ap.Previews != 0 {
		t.Fatalf("a new short output: shown %q, applied %+v", got, ap)
	}

	big := text("log", 9000)
	b := c.call("Bash", map[string]any{"command": "cat log"}, big)
	m, ap = apply(t, mc, &st, c.body(t), t0.Add(10*time.Second))
	spilled := filepath.Join(root, "s1", tools.SpillName(b))
	if got := m.result(t, b); !strings.Contains(got, "Read "+spilled+" for the output whole") || len(got) >= len(big) || ap.Previews != 1 {
		t.Fatalf("a new long output is not a preview naming its spill file: %d chars, applied %+v", len(got), ap)
	}
	if whole, err := os.ReadFile(spilled); err != nil || string(whole) != big {
		t.Fatalf("the spill file does not hold the output whole: %v", err)
	}
	if got := m.result(t, a); got != text("make", 1500) || ap.Rebase != "" || ap.Pending == 0 {
		t.Fatalf("warm: the output the policy no longer keeps was rewritten (%q, applied %+v)", got[:min(len(got), 80)], ap)
	}

	c.user("and now?") // a new turn, two hours later: the cache is cold
	m, ap = apply(t, mc, &st, c.body(t), t0.Add(2*time.Hour))
	if ap.Rebase == "" || ap.New != 2 || ap.Collapsed != 2 {
		t.Fatalf("cold: applied %+v, want a rebase collapsing both outputs", ap)
	}
	for _, id := range []string{a, b} {
		got := m.result(t, id)
		file := filepath.Join(root, "s1", tools.SpillName(id))
		if !strings.HasPrefix(got, "[ctxstore] output collapsed (") || !strings.HasSuffix(got, "Read "+file+" for it whole") {
			t.Fatalf("%s collapsed to %q", id, got)
		}
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("%s's spill file: %v", id, err)
		}
	}

	c.call("Bash", map[string]any{"command": "ls"}, "a\nb\n")
	prev := m
	m, ap = apply(t, mc, &st, c.body(t), t0.Add(2*time.Hour+5*time.Second))
	if ap.Collapsed != 2 || st.Shown[a] != formCollapsed || st.Shown[b] != formCollapsed {
		t.Fatalf("collapses are not sticky: applied %+v, shown %v", ap, st.Shown)
	}
	for _, id := range []string{a, b} {
		if m.result(t, id) != prev.result(t, id) {
			t.Fatalf("%s's collapsed line changed between requests", id)
		}
	}
}

// TestApplyStaleRead: a whole Read superseded by a later whole Read of the
// same file says so in one line; a Read with an offset supersedes nothing.
func TestApplyStaleRead(t *testing.T) {
	mc, _ := newConfig(t)
	mc.Collapse = collapse.Config{PerTurn: 10, TurnsBack: 3}
	var st State
	c := &conv{bp: true}
	c.user("fix main.go")
	first := c.call("Read", map[string]any{"file_path": "/w/main.go"}, text("v1", 1200))
	part := c.call("Read", map[string]any{"file_path": "/w/main.go", "offset": 10, "limit": 5}, text("v1 part", 300))
	second := c.call("Read", map[string]any{"file_path": "/w/main.go"}, text("v2", 1200))
	m, _ := apply(t, mc, &st, c.body(t), time.Unix(1e9, 0))
	if got := m.result(t, first); !strings.Contains(got, "this read of /w/main.go was superseded by a later read of the file") {
		t.Fatalf("the superseded read is shown as %q", got[:min(len(got), 120)])
	}
	if got := m.result(t, part); got != text("v1 part", 300) {
		t.Fatalf("the partial read changed: %q", got)
	}
	if got := m.result(t, second); got != text("v2", 1200) {
		t.Fatal("the latest read changed")
	}
}

// TestApplyBreakpoints: Claude Code's breakpoints in the messages make way
// for ctxstore's: one at the end, and one where the previous request ended
// while no rebase happened; none when Claude Code placed none.
func TestApplyBreakpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		bp   bool
		want [][]int // by request
	}{
		{"caching on", true, [][]int{{2}, {2, 4}, {4, 6}}},
		{"caching off", false, [][]int{nil, nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc, _ := newConfig(t)
			var st State
			c := &conv{bp: tc.bp}
			c.user("go")
			now := time.Unix(1e9, 0)
			for i, want := range tc.want {
				c.call("Bash", map[string]any{"command": "true"}, "ok")
				m, ap := apply(t, mc, &st, c.body(t), now.Add(time.Duration(i)*time.Second))
				if got := m.breakpoints(); fmt.Sprint(got) != fmt.Sprint(want) || ap.Breakpoints != len(want) {
					t.Fatalf("request %d: breakpoints on messages %v (applied %d), want %v", i, got, ap.Breakpoints, want)
				}
			}
		})
	}
}

// TestApplyRewind: a request with fewer messages than the last (Claude
// Code rewound) is where the stream now ends, and the outputs keep their
// forms; the previous request's end is not in it, so only the end gets a
// breakpoint.
func TestApplyRewind(t *testing.T) {
	mc, _ := newConfig(t)
	var st State
	c := &conv{bp: true}
	c.user("go")
	c.call("Bash", map[string]any{"command": "a"}, "1")
	long := c.call("Bash", map[string]any{"command": "b"}, text("b", 5000))
	apply(t, mc, &st, c.body(t), time.Unix(1e9, 0))
	if st.Len != 5 || st.Shown[long] != formPreview {
		t.Fatalf("after the first request: len %d, shown %v", st.Len, st.Shown)
	}
	c.msgs = c.msgs[:3]
	c.user("no, do something else")
	m, _ := apply(t, mc, &st, c.body(t), time.Unix(1e9+5, 0))
	if st.Len != 4 || st.Shown[long] != formPreview || len(m.breakpoints()) != 1 {
		t.Fatalf("after the rewind: len %d, shown %v, breakpoints %v", st.Len, st.Shown, m.breakpoints())
	}
}

// TestApplyUnknown: a request managed mode does not understand is an
// Unknown error naming what, and leaves the state as it was.
func TestApplyUnknown(t *testing.T) {
	for _, tc := range []struct{ body, why string }{
		{`[1]`, "not a JSON object"},
		{`{"model":"m"}`, "no messages list"},
		{`{"messages":[]}`, "no messages list"},
		{`{"messages":[{"role":"tool","content":"x"}]}`, `messages[0]: role "tool"`},
		{`{"messages":[{"role":"user","content":[{"type":"hologram"}]}]}`, `messages[0]: content[0]: a block of type "hologram"`},
		{`{"messages":[{"role":"user","content":7}]}`, "messages[0]: content neither a string nor a list of blocks"},
	} {
		mc, _ := newConfig(t)
		st := State{Len: 3, Calls: 2}
		_, _, err := mc.Apply("s1", &st, []byte(tc.body), time.Unix(1e9, 0), time.Minute)
		var u Unknown
		if !errors.As(err, &u) || !strings.Contains(u.Why, tc.why) {
			t.Errorf("%s: error %v, want Unknown saying %q", tc.body, err, tc.why)
		}
		if st.Len != 3 || st.Calls != 2 || st.Shown != nil {
			t.Errorf("%s: the state changed: %+v", tc.body, st)
		}
	}
}

// TestManageContinues: Manage's state, handed back, continues the stream
// Apply would: the second request's forms follow the first's.
func TestManageContinues(t *testing.T) {
	mc, _ := newConfig(t)
	c := &conv{bp: true}
	c.user("go")
	long := c.call("Bash", map[string]any{"command": "b"}, text("b", 5000))
	now := time.Unix(1e9, 0)
	out1, state, err := mc.Manage("s1", nil, c.body(t), now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.call("Bash", map[string]any{"command": "c"}, "ok")
	out2, state2, err := mc.Manage("s1", state, c.body(t), now.Add(time.Second), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var m1, m2 managed
	json.Unmarshal(out1, &m1)
	json.Unmarshal(out2, &m2)
	if m1.result(t, long) != m2.result(t, long) || !strings.Contains(m2.result(t, long), "for the output whole") {
		t.Fatal("the preview is not the same bytes in the next request")
	}
	var st State
	if err := json.Unmarshal(state2, &st); err != nil || st.Calls != 2 || st.Len != 5 {
		t.Fatalf("state after two requests: %+v (%v)", st, err)
	}
	if _, _, err := mc.Manage("s1", []byte("{"), c.body(t), now, time.Minute); err == nil || !strings.Contains(err.Error(), "managed state") {
		t.Fatalf("a damaged state: %v", err)
	}
}

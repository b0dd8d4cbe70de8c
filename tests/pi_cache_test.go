package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkBreakpoints reads the scripted model's request log and checks where
// the prompt-cache breakpoints (cache_control) are, as ctxstore's extension
// places them in before_provider_request: on the system prompt; on the last
// block of ctxstore's answer (the last message of the request, or the one
// before the reminder another extension appends per call); and on the last
// block before the first content block (<<content …>>, the first thing a
// rebase could rewrite), when there is one. Nowhere else: Pi's own rolling
// breakpoint on the request's last message is gone when that message is a
// reminder. It returns how many requests had the stable-prefix breakpoint
// apart from the end one.
func checkBreakpoints(t *testing.T, log string, reminder bool) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	split := 0
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var req messagesRequest
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		type pos struct{ m, b int }
		var flat []pos
		var texts []string
		firstContent := -1
		for mi, m := range req.Messages {
			bs, err := messagesBlocks(m.Content)
			if err != nil {
				t.Fatalf("request %d, message %d: %v", i, mi, err)
			}
			for bi, blk := range bs {
				// What a rebase can rewrite: a content block, or (rendering
				// 3) a tool result that is its call's live output.
				if firstContent < 0 && (strings.HasPrefix(blk.Text, "<<content ") || blk.Type == "tool_result" && liveResult(blk)) {
					firstContent = len(flat)
				}
				flat = append(flat, pos{mi, bi})
				texts = append(texts, blk.Text)
			}
		}
		bps, err := cacheBreakpoints(line)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want := map[pos]bool{}
		end := len(flat) - 1
		if reminder {
			if !strings.HasPrefix(texts[end], "[reminder ") {
				t.Fatalf("request %d does not end with the reminder: %.100q", i, texts[end])
			}
			end--
		}
		want[flat[end]] = true
		if firstContent > 0 {
			// The boundary is the end of the message before the one holding
			// the first content block.
			start := firstContent
			for start > 0 && flat[start-1].m == flat[firstContent].m {
				start--
			}
			if start > 0 && flat[start-1] != flat[end] {
				want[flat[start-1]] = true
				split++
			}
		}
		var system bool
		got := map[pos]bool{}
		for _, bp := range bps {
			switch bp.Where {
			case "system":
				system = true
			case "message":
				got[pos{bp.Msg, bp.Block}] = true
			}
		}
		if !system {
			t.Errorf("request %d: no breakpoint on the system prompt: %v", i, bps)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("request %d: message breakpoints at %v, want %v (first content block at %d of %d blocks)", i, got, want, firstContent, len(flat))
		}
	}
	return split
}

// liveResult reports whether a tool_result block holds its call's live
// output rather than ctxstore's one-line reference ("status=…", or
// "[ctxstore] collapsed: …" once collapsed).
func liveResult(b messagesBlock) bool {
	tb, err := messagesBlocks(b.Content)
	if err != nil || len(tb) == 0 {
		return false
	}
	return !strings.HasPrefix(tb[0].Text, "status=") && !strings.HasPrefix(tb[0].Text, "[ctxstore] collapsed: ")
}

// TestPiCacheBreakpoints: with another extension appending a reminder to
// every request, the breakpoints stay on ctxstore's stable prefix and the
// end of its answer, never on the reminder.
func TestPiCacheBreakpoints(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	e.exts = []string{"tests/testdata/pi/reminder.ts"}
	e.write(t, "a.txt", "alpha\n")
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	pi := startPi(t, e, srv.pxURL, []piStep{
		{Tool: "bash", Args: map[string]any{"command": "echo one"}, ID: "call_1"},
		{Tool: "read", Args: map[string]any{"path": "a.txt"}, ID: "call_read"},
		{Text: "Read."},
		{Tool: "bash", Args: map[string]any{"command": "echo two"}, ID: "call_2"},
		{Text: "Done."},
	})
	pi.prompt("Run and read.")
	pi.prompt("Again.")
	pi.quit()
	srv.Stop()
	if n := len(readContexts(t, e.ctxLog)); n != 5 {
		t.Fatalf("the model was called %d times, want 5", n)
	}
	if split := checkBreakpoints(t, e.ctxLog, true); split < 2 {
		t.Errorf("%d requests had a stable-prefix breakpoint before the end one, want at least 2", split)
	}
}

// TestPiLeanHead: with CTXSTORE_LEAN_HEAD=1 the extension opens sessions
// with a lean head. The provider is sent Pi's system prompt without
// ctxstore's guide and no management tools until the first call whose
// context collapses something; from that call on (a rebase, so the whole
// request is written again) it is sent the guide and every tool, and the
// breakpoints stay where ctxstore puts them.
func TestPiLeanHead(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	e.env = append(e.env, "CTXSTORE_HEAD=", "CTXSTORE_LEAN_HEAD=1") // the old switch still asks for it
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"), "--collapse-turns", "1", "--collapse-files=-1", "--stale-threshold", "1", "--breakpoints", "prefix")
	// An output large enough that collapsing it pays for writing the
	// whole request again.
	build := "for i in $(seq 1 2000); do echo build-output-line $i; done"
	pi := startPi(t, e, srv.pxURL, []piStep{
		{Tool: "bash", Args: map[string]any{"command": build}, ID: "call_1"},
		{Text: "Built."},
		{Tool: "bash", Args: map[string]any{"command": "echo two"}, ID: "call_2"},
		{Text: "Done."},
		{Text: "Still done."},
	})
	pi.prompt("Build.")
	pi.prompt("Again.")
	pi.prompt("And again.")
	pi.quit()
	srv.Stop()
	cs := readContexts(t, e.ctxLog)
	if len(cs) != 5 {
		t.Fatalf("the model was called %d times, want 5", len(cs))
	}
	managed := []string{"activate", "deactivate", "pin", "unpin"}
	switched := -1
	for i, c := range cs {
		guide := strings.Contains(c.SystemPrompt, "# Your context (ctxstore)")
		n := 0
		for _, tool := range managed {
			if slices.Contains(c.Tools, tool) {
				n++
			}
		}
		if !slices.Contains(c.Tools, "read") || !slices.Contains(c.Tools, "bash") {
			t.Errorf("request %d: the harness's tools are not all sent: %v", i, c.Tools)
		}
		switch {
		case switched < 0 && !guide && n == 0:
		case switched < 0 && guide && n == len(managed):
			switched = i
			text, _ := serialize(c.Messages)
			if !strings.Contains(text, "collapsed: ") {
				t.Errorf("request %d: the head switched but nothing is collapsed", i)
			}
		case switched >= 0 && guide && n == len(managed):
		default:
			t.Errorf("request %d: guide %v and %d of the management tools (switched at request %d): %v", i, guide, n, switched, c.Tools)
		}
	}
	if switched <= 0 {
		t.Fatalf("the head switched at request %d: want a lean first request and a switch later", switched)
	}
	checkBreakpoints(t, e.ctxLog, false)
}

// TestPiBareHead: the extension's default head is bare. The
// provider is sent Pi's system prompt and tools only, never ctxstore's
// guide or management tools, at every request; a large output enters as a
// preview naming its spill file, which the service has written; the
// scripted model reads it back with read, first a part (offset and limit)
// and then whole, as a model told where it is would; when Pi quits, the
// session's spill files are removed.
func TestPiBareHead(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	e.env = append(e.env, "CTXSTORE_HEAD=") // the default
	spill := t.TempDir()
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"), "--spill-dir", spill)
	build := "for i in $(seq 1 1500); do echo build-output-line $i; done"
	var whole, path string
	named := regexp.MustCompile(`read (/[^ "\\]+/call_1\.txt) for the output whole`)
	e.respond = func(req messagesRequest) piStep {
		b, _ := json.Marshal(req.Messages)
		switch strings.Count(string(b), `"tool_result"`) {
		case 0:
			return piStep{Tool: "bash", Args: map[string]any{"command": build}, ID: "call_1"}
		case 1:
			m := named.FindStringSubmatch(string(b))
			if m == nil {
				return piStep{Text: "No spill file is named."}
			}
			path = m[1]
			if f, err := os.ReadFile(path); err == nil {
				whole = string(f) // as the service wrote it, while the session is open
			}
			return piStep{Tool: "read", Args: map[string]any{"path": path, "offset": 1000, "limit": 2}, ID: "call_2"}
		case 2:
			return piStep{Tool: "read", Args: map[string]any{"path": path}, ID: "call_3"}
		}
		return piStep{Text: "Done."}
	}
	pi := startPi(t, e, srv.pxURL, nil)
	pi.prompt("Build.")
	pi.quit()
	srv.Stop()
	cs := readContexts(t, e.ctxLog)
	if len(cs) != 4 {
		t.Fatalf("the model was called %d times, want 4", len(cs))
	}
	for i, c := range cs {
		if strings.Contains(c.SystemPrompt, "# Your context (ctxstore)") {
			t.Errorf("request %d: the guide is sent", i)
		}
		for _, tool := range []string{"activate", "deactivate", "pin", "unpin"} {
			if slices.Contains(c.Tools, tool) {
				t.Errorf("request %d: %s is offered: %v", i, tool, c.Tools)
			}
		}
		if !slices.Contains(c.Tools, "read") || !slices.Contains(c.Tools, "bash") {
			t.Errorf("request %d: the harness's tools are not all sent: %v", i, c.Tools)
		}
		if i > 0 && cs[i-1].SystemPrompt != c.SystemPrompt {
			t.Errorf("request %d: the system prompt changed", i)
		}
	}
	if path == "" || !strings.HasPrefix(path, spill+"/") {
		t.Fatalf("the preview names %q, want a file in the spill directory %s", path, spill)
	}
	if !strings.HasPrefix(whole, "build-output-line 1\n") || !strings.HasSuffix(whole, "build-output-line 1500\n") {
		t.Fatalf("the spill file holds %d bytes, want the whole output", len(whole))
	}
	texts := func(c piContext) string {
		var b strings.Builder
		for _, m := range c.Messages {
			for _, bl := range m.Content {
				b.WriteString(bl.Text + "\n")
			}
		}
		return b.String()
	}
	if s := texts(cs[1]); strings.Contains(s, "build-output-line 1000\n") {
		t.Errorf("request 1: the output entered whole, not as a preview")
	}
	if s := texts(cs[2]); !strings.Contains(s, "lines 1000-1001 of 1500 of the output of call_1") || !strings.Contains(s, "build-output-line 1000\nbuild-output-line 1001\n") || strings.Contains(s, "build-output-line 1002\n") {
		t.Errorf("request 2: the part read is not lines 1000-1001: %.2000q", s)
	}
	if s := texts(cs[3]); !strings.Contains(s, whole) {
		t.Errorf("request 3: the output read back is not whole in the context")
	}
	if left, _ := os.ReadDir(spill); len(left) != 0 {
		t.Errorf("the spill directory after Pi quit holds %d entries", len(left))
	}
	checkBreakpoints(t, e.ctxLog, false)
}

// TestPiHeadTTL: once a session pauses longer than the cache
// lives (serve --cache-ttl, one second here), the extension asks for the
// hour on the head's breakpoints (the system prompt's, the tools'), so the
// next pause reads the head instead of writing it again; the messages'
// breakpoints keep the default, and before the pause nothing asks for the
// hour.
func TestPiHeadTTL(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"), "--cache-ttl", "1s")
	pi := startPi(t, e, srv.pxURL, []piStep{
		{Tool: "bash", Args: map[string]any{"command": "echo one"}, ID: "call_1"},
		{Text: "One."},
		{Tool: "bash", Args: map[string]any{"command": "echo two"}, ID: "call_2"},
		{Text: "Two."},
	})
	pi.prompt("First.")
	time.Sleep(1500 * time.Millisecond) // a pause past the cache's lifetime
	pi.prompt("Second.")
	pi.quit()
	srv.Stop()
	b, err := os.ReadFile(e.ctxLog)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) != 4 {
		t.Fatalf("the model was called %d times, want 4", len(lines))
	}
	for i, line := range lines {
		bps, err := cacheBreakpoints(line)
		if err != nil {
			t.Fatal(err)
		}
		head, msgs := 0, 0
		for _, bp := range bps {
			want := ""
			if bp.Where != "message" {
				head++
				if i >= 2 {
					want = "1h"
				}
			} else {
				msgs++
			}
			if bp.TTL != want {
				t.Errorf("request %d: %s breakpoint ttl %q, want %q", i, bp.Where, bp.TTL, want)
			}
		}
		if head == 0 || msgs == 0 {
			t.Errorf("request %d: %d head and %d message breakpoints: %v", i, head, msgs, bps)
		}
	}
	checkBreakpoints(t, e.ctxLog, false)
}

package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/server/httpapi"
)

// openclawInternal opens the runtime-context message OpenClaw appends after
// the turn's messages in every request and leaves out of the next turn's.
const openclawInternal = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"

// TestOpenClawStableTurns drives four turns of the real OpenClaw CLI
// (`openclaw agent --local`, the plugin's default head) against the service
// on SQLite and the scripted model, and compares each model request with
// the one before it. At the three turn boundaries the earlier request, but
// for the runtime-context message OpenClaw appends at its end, must be
// where the later one starts, byte for byte, although from then on all of
// it but the new prompt is ctxstore's answer. That holds because the
// service opens OpenClaw sessions with the user-first rendering (the
// turn's prompt a message of its own, before ctxstore's notes of the turn:
// assemble.RenderUserFirst) and the plugin gives the messages it returns
// their transcript timestamps, from which OpenClaw dates each user message
// (`[Sun 2026-12-06 09:00 UTC] …`): a timestamp of 0 dated the prompt
// 1970-01-01 from the turn after it was sent. The tool result of turn 1's
// read of notes.txt, OpenClaw's output where ctxstore writes a reference
// and a content block, stays OpenClaw's output in every later request (no
// rebase happens here): the service keeps a result in the form OpenClaw
// sent it until a rebase (docs/openclaw.md, "Byte-stable turns").
//
// Turn 2 appends to notes.txt, which is active: before the turn's second
// model call ctxstore's answer grows by its note of the new version, which
// OpenClaw places before the turn's prompt (within a turn, the answer
// extends the earlier one and the turn's messages follow it unchanged).
// From turn 3 on that prompt is ctxstore's to render: the previous
// rendering joined it to the note in one message.
//
// Compared are the requests' messages as the Messages API defines them,
// each serialized as canonical JSON, without what OpenClaw itself changes
// from one request to the next with any context engine (its built-in one
// too): the cache_control markers, which its transport moves to the last
// user text and tool result, and the form of a message of one text block
// (OpenClaw sends the turn's prompt as a list of one block, and the history
// as a string).
func TestOpenClawStableTurns(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	respond := func(req messagesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role != "user" {
				continue
			}
			bs, _ := messagesBlocks(req.Messages[i].Content)
			for j := len(bs) - 1; j >= 0; j-- {
				switch bl := bs[j]; {
				case bl.Type == "tool_result":
					switch bl.ToolUseID {
					case "callread":
						return piStep{Text: "turn one done"}
					case "callappend":
						return piStep{Text: "turn two done"}
					case "callecho":
						return piStep{Text: "turn three done"}
					}
					return piStep{Text: "unexpected tool result " + bl.ToolUseID}
				case bl.Type == "text" && !strings.Contains(bl.Text, openclawInternal):
					switch {
					case strings.HasSuffix(bl.Text, "read notes.txt"):
						return piStep{Tool: "read", Args: map[string]any{"path": "notes.txt"}, ID: "callread"}
					case strings.HasSuffix(bl.Text, "add to the notes"):
						return piStep{Tool: "exec", Args: map[string]any{"command": "echo the second word is saffron >> notes.txt"}, ID: "callappend"}
					case strings.HasSuffix(bl.Text, "say hello"):
						return piStep{Tool: "exec", Args: map[string]any{"command": "echo hello"}, ID: "callecho"}
					case strings.HasSuffix(bl.Text, "what now"):
						return piStep{Text: "turn four done"}
					}
				}
			}
		}
		return piStep{Text: "no turn recognized"}
	}
	h := newOpenClawHome(t, respond)
	h.head = "" // the plugin's default
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	h.serviceURL = srv.pxURL
	h.install()
	turns := []string{"read notes.txt", "add to the notes", "say hello", "what now"}
	for i, msg := range turns {
		out := h.run("agent", "--local", "--session-id", "oc-stable", "--message", msg)
		if want := fmt.Sprintf("turn %s done", []string{"one", "two", "three", "four"}[i]); !strings.Contains(out, want) {
			t.Fatalf("turn %d did not answer %q:\n%s", i+1, want, out)
		}
		if strings.Contains(out, "[ctxstore]") {
			t.Errorf("turn %d: the plugin warned or failed:\n%s", i+1, out)
		}
	}
	lines, _ := h.logged()
	// Two requests in each turn but the last: before and after its tool.
	if len(lines) != 7 {
		t.Fatalf("%d model requests, want 7", len(lines))
	}
	reqs := make([][]string, len(lines)) // each request's messages, canonical
	for i, l := range lines {
		if bytes.Contains(l, []byte("1970-01-01")) {
			t.Errorf("request %d dates a message 1970-01-01", i)
		}
		ms, err := canonicalMessages(l)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		reqs[i] = ms
	}
	// The turns' prompts, each a message of its own dated when it was
	// sent, are in the last request as their turns sent them.
	starts := []int{0, 2, 4, 6} // the first request of each turn
	for turn, at := range starts[:3] {
		sent, last := promptOf(t, reqs[at], turns[turn]), promptOf(t, reqs[6], turns[turn])
		if reqs[at][sent] != reqs[6][last] {
			t.Errorf("turn %d's prompt: %s in its turn, %s in request 6", turn+1, reqs[at][sent], reqs[6][last])
		}
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1], reqs[i]
		if n := len(prev); n > 0 && strings.Contains(prev[n-1], openclawInternal) {
			prev = prev[:n-1] // OpenClaw's, at the end of every request
		}
		if !slices.Contains(starts, i) {
			// Within a turn, ctxstore's answer comes before the turn's
			// messages and may grow at its end (notes.txt's new version,
			// after turn 2's append): the answer extends the earlier one,
			// and the turn's messages follow it as before.
			p, q := promptOf(t, prev, turns[turnOf(starts, i)]), promptOf(t, cur, turns[turnOf(starts, i)])
			if at := repeats(prev[:p], cur[:q]); at >= 0 {
				t.Errorf("request %d: ctxstore's answer does not extend request %d's: message %d differs:\n%.400s\nvs\n%.400s", i, i-1, at, excerptAt(prev, at), excerptAt(cur, at))
			}
			if at := repeats(prev[p:], cur[q:]); at >= 0 {
				t.Errorf("request %d: the turn's messages are not request %d's: message %d after the prompt differs", i, i-1, at)
			}
			t.Logf("request %d: ctxstore's answer %d messages (%d before), the turn's %d", i, q, p, len(cur)-q)
			continue
		}
		at := repeats(prev, cur)
		if at >= 0 {
			t.Errorf("request %d does not begin with request %d: message %d of %d differs:\n%.400s\nvs\n%.400s", i, i-1, at, len(prev), excerptAt(prev, at), excerptAt(cur, at))
		}
		t.Logf("request %d (turn %d): %d messages; request %d's %d repeated (up to message %d)", i, turnOf(starts, i)+1, len(cur), i-1, len(prev), at)
	}
	// Turn 1's read reached the model as OpenClaw's output (the file's
	// text) in its turn, and is that output still in the last request.
	for _, i := range []int{1, 6} {
		if k := slices.IndexFunc(reqs[i], func(m string) bool { return strings.Contains(m, `"tool_use_id":"callread"`) }); k < 0 || !strings.Contains(reqs[i][k], "heliotrope") || strings.Contains(reqs[i][k], "status=ok") {
			t.Errorf("request %d: turn 1's read is not OpenClaw's output: %.400s", i, excerptAt(reqs[i], k))
		}
	}
	// ctxstore's note of notes.txt's new version (the appended line) came
	// in turn 2, after its exec, right before turn 2's prompt: the case in
	// which the previous rendering joined the prompt to the note, once the
	// prompt was ctxstore's to render (turns 3 and 4).
	for _, i := range []int{4, 6} {
		if p := promptOf(t, reqs[i], turns[1]); p == 0 || !strings.Contains(reqs[i][p-1], "saffron") || !strings.Contains(reqs[i][p-1], "[ctxstore]") {
			t.Errorf("request %d: the message before turn 2's prompt is not ctxstore's note of notes.txt's new version: %.400s", i, reqs[i][max(p-1, 0)])
		}
	}
	// The service opened the session with the user-first rendering.
	var root httpapi.ObjectResponse
	srv.get("/v1/objects/"+assemble.CommitID("oc-stable", 1), &root)
	if fmt.Sprint(root.Doc["render"]) != fmt.Sprint(assemble.RenderUserFirst) {
		t.Errorf("the session's first context commit records rendering %v, want %d", root.Doc["render"], assemble.RenderUserFirst)
	}
}

// promptOf returns the index of the user message whose one text block is
// text with OpenClaw's date in front of it (not 1970-01-01).
func promptOf(t *testing.T, ms []string, text string) int {
	t.Helper()
	for i, m := range ms {
		var msg struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal([]byte(m), &msg) != nil || msg.Role != "user" || len(msg.Content) != 1 || !strings.HasSuffix(msg.Content[0].Text, "] "+text) {
			continue
		}
		if !dated.MatchString(msg.Content[0].Text) || strings.Contains(msg.Content[0].Text, "1970") {
			t.Errorf("the prompt %q is not dated as sent: %q", text, msg.Content[0].Text)
		}
		return i
	}
	t.Fatalf("no message of its own holds the prompt %q: %v", text, ms)
	return -1
}

// dated is OpenClaw's date envelope on a user message.
var dated = regexp.MustCompile(`^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2} [A-Z]+\] `)

// turnOf is the turn (0-based) of request i, from each turn's first request.
func turnOf(starts []int, i int) int {
	n := 0
	for k, s := range starts {
		if i >= s {
			n = k
		}
	}
	return n
}

// repeats returns the first message of prev that cur does not repeat at
// the same place, or -1 when cur begins with all of prev.
func repeats(prev, cur []string) int {
	for k, m := range prev {
		if k >= len(cur) || cur[k] != m {
			return k
		}
	}
	return -1
}

// canonicalMessages returns a Messages API request's messages, each as
// canonical JSON (sorted keys), its content a list of blocks (a string is
// one text block) without cache_control markers.
func canonicalMessages(line []byte) ([]string, error) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	out := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		var blocks []map[string]any
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []map[string]any{{"type": "text", "text": s}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		for _, b := range blocks {
			delete(b, "cache_control")
		}
		var j bytes.Buffer
		enc := json.NewEncoder(&j)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"role": m.Role, "content": blocks}); err != nil {
			return nil, err
		}
		out[i] = strings.TrimSuffix(j.String(), "\n")
	}
	return out, nil
}

// excerptAt is message k of ms, or "(none)".
func excerptAt(ms []string, k int) string {
	if k < 0 || k >= len(ms) {
		return "(none)"
	}
	return ms[k]
}

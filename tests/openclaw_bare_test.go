package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/server/httpapi"
)

// TestOpenClawBareHead runs the plugin's default head, bare, with the real
// OpenClaw CLI: the model is sent OpenClaw's system prompt and tools only,
// never ctxstore's guide or its management tools (activate, deactivate,
// pin, unpin: not offered, and a tool_call of activate fails), while
// search stays. A 1,500-line output of OpenClaw's exec enters the next
// turn's context as a preview naming its spill file (the service run with
// a stale threshold under the output's size, so that the call rebases the
// output OpenClaw sent whole), which the service has written (mode 0600,
// while the session is open). The scripted model reads it back with
// OpenClaw's own read: first two lines of it (offset and limit), which the
// next turn shows as OpenClaw sent them, the preview staying; then all of
// it, which the next turn shows as the output
// activated whole, the read itself a reference. Nothing under the spill
// root is indexed as a file. The files stay while the session is open
// (nothing ends it under --local) and go when the service stops.
func TestOpenClawBareHead(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	build := "for i in $(seq 1 1500); do echo build-output-line $i; done"
	named := regexp.MustCompile(`read (/[^ "\\\n]+/callbuild\.txt) for the output whole`)
	var found, foundWhole string
	var foundMode os.FileMode
	// The answers follow from the request's last message of the turn, not
	// from a count: the last tool result answered, else the turn's prompt
	// (OpenClaw may append its internal context after it).
	respond := func(req messagesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(req.Messages)
		if m := named.FindStringSubmatch(string(b)); m != nil && found == "" {
			found = m[1]
			if fi, err := os.Stat(found); err == nil {
				foundMode = fi.Mode().Perm()
			}
			if f, err := os.ReadFile(found); err == nil {
				foundWhole = string(f) // as the service wrote it, while the session is open
			}
		}
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role != "user" {
				continue
			}
			bs, _ := messagesBlocks(req.Messages[i].Content)
			for j := len(bs) - 1; j >= 0; j-- {
				switch bl := bs[j]; {
				case bl.Type == "tool_result":
					switch bl.ToolUseID {
					case "callbuild":
						return piStep{Text: "turn one done"}
					case "callpart":
						return piStep{Text: "turn two done"}
					case "callwhole":
						return piStep{Tool: "tool_call", Args: map[string]any{"id": "search", "args": map[string]any{"query": "build-output-line"}}, ID: "callsearch"}
					case "callsearch":
						return piStep{Tool: "tool_call", Args: map[string]any{"id": "activate", "args": map[string]any{"id": "callbuild"}}, ID: "callactivate"}
					case "callactivate":
						return piStep{Text: "turn three done"}
					}
					return piStep{Text: "unexpected tool result " + bl.ToolUseID}
				case bl.Type == "text" && !strings.Contains(bl.Text, "OPENCLAW_INTERNAL_CONTEXT"):
					switch {
					case strings.Contains(bl.Text, "run the build"):
						return piStep{Tool: "exec", Args: map[string]any{"command": build}, ID: "callbuild"}
					case strings.Contains(bl.Text, "read two lines of the build log"):
						if found == "" {
							return piStep{Text: "no spill file is named"}
						}
						return piStep{Tool: "read", Args: map[string]any{"path": found, "offset": 1000, "limit": 2}, ID: "callpart"}
					case strings.Contains(bl.Text, "read the whole build log"):
						return piStep{Tool: "read", Args: map[string]any{"path": found}, ID: "callwhole"}
					case strings.Contains(bl.Text, "check the context"):
						return piStep{Text: "turn four done"}
					}
				}
			}
		}
		return piStep{Text: "no turn recognized"}
	}
	h := newOpenClawHome(t, respond)
	h.head = "" // the default
	spill := t.TempDir()
	// OpenClaw's tool results stay as it sent them until a rebase, their
	// excess over ctxstore's form counted stale (docs/openclaw.md,
	// "Byte-stable turns"): under the default threshold (8,000 tokens) the
	// 1,500-line output would stay whole in turn 2. With 2,000 the call of
	// turn 2 rebases, and the output is a preview naming its spill file.
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"), "--spill-dir", spill, "--stale-threshold", "2000")
	h.serviceURL = srv.pxURL
	h.install()

	turns := []string{"run the build", "read two lines of the build log", "read the whole build log", "check the context"}
	for i, msg := range turns {
		out := h.run("agent", "--local", "--session-id", "oc-bare", "--message", msg)
		if want := fmt.Sprintf("turn %s done", []string{"one", "two", "three", "four"}[i]); !strings.Contains(out, want) {
			t.Fatalf("turn %d did not answer %q:\n%s", i+1, want, out)
		}
		if strings.Contains(out, "[ctxstore]") {
			t.Errorf("turn %d: the plugin warned or failed:\n%s", i+1, out)
		}
	}
	lines, reqs := h.logged()
	mu.Lock()
	path, whole, mode := found, foundWhole, foundMode
	mu.Unlock()

	// The head: OpenClaw's prompt and tools only, every request.
	texts := make([]string, len(reqs))
	results := make([]map[string]messagesBlock, len(reqs))
	turnOf := make([]int, len(reqs)) // the turn (1-based) of each request
	for i, r := range reqs {
		if strings.Contains(string(r.System), "Your context (ctxstore)") {
			t.Errorf("request %d: the system prompt holds ctxstore's guide", i)
		}
		if i > 0 && string(r.System) != string(reqs[0].System) {
			t.Errorf("request %d: the system prompt changed", i)
		}
		var names []string
		for _, tool := range r.Tools {
			names = append(names, tool.Name)
		}
		// Not offered, neither in the request's tools nor behind OpenClaw's
		// tool search, whose catalog in the system prompt lists each plugin
		// tool as "- name (plugin): description" (search is, as a check
		// that the catalog is where this looks).
		for _, d := range tools.Management() {
			if slices.Contains(names, d.Name) || strings.Contains(string(r.System), "- "+d.Name+" (ctxstore)") || strings.Contains(string(lines[i]), d.Description) {
				t.Errorf("request %d: the management tool %s is offered (tools %v)", i, d.Name, names)
			}
		}
		if !strings.Contains(string(r.System), "- search (ctxstore)") {
			t.Errorf("request %d: ctxstore's search is not in OpenClaw's tool catalog: %.300s", i, r.System)
		}
		if !slices.Contains(names, "read") || !slices.Contains(names, "exec") {
			t.Errorf("request %d: OpenClaw's read and exec are not offered: %v", i, names)
		}
		results[i] = map[string]messagesBlock{}
		var sb strings.Builder
		for _, m := range r.Messages {
			bs, _ := messagesBlocks(m.Content)
			for _, bl := range bs {
				switch bl.Type {
				case "text":
					sb.WriteString(bl.Text + "\n")
					for k, p := range turns {
						if m.Role == "user" && strings.Contains(bl.Text, p) {
							turnOf[i] = max(turnOf[i], k+1)
						}
					}
				case "tool_result":
					results[i][bl.ToolUseID] = bl
				}
			}
		}
		texts[i] = sb.String()
		if strings.Contains(texts[i], "message log was replaced") {
			t.Errorf("request %d: the service saw a replaced log (the plugin sent ctxstore's answer as the log): %.3000s", i, texts[i])
		}
		t.Logf("request %d (turn %d): %d bytes, tools %v", i, turnOf[i], len(lines[i]), names)
	}
	first := func(turn int) int { // the first request of a turn
		for i := range reqs {
			if turnOf[i] == turn {
				return i
			}
		}
		t.Fatalf("no request of turn %d", turn)
		return 0
	}
	resultText := func(bl messagesBlock) string {
		var s string
		if json.Unmarshal(bl.Content, &s) == nil {
			return s
		}
		bs, _ := messagesBlocks(bl.Content)
		var b strings.Builder
		for _, x := range bs {
			b.WriteString(x.Text)
		}
		return b.String()
	}

	// Turn 2: the output is a preview naming its spill file, which holds
	// the output whole, readable by the server's user only.
	if path == "" {
		t.Fatalf("no request names a spill file for callbuild; turn 2's context: %.3000s", texts[first(2)])
	}
	if want := filepath.Join(spill, "oc-bare") + "/"; !strings.HasPrefix(path, want) {
		t.Errorf("the preview names %s, want a file in %s", path, want)
	}
	if mode != 0o600 {
		t.Errorf("the spill file's mode is %v, want 0600", mode)
	}
	if !strings.Contains(whole, "build-output-line 1\n") || !strings.HasSuffix(strings.TrimSpace(whole), "build-output-line 1500") {
		t.Fatalf("the spill file holds %d bytes, want the whole output: %.300q", len(whole), whole)
	}
	if s := texts[first(2)]; strings.Contains(s, "build-output-line 700\n") {
		t.Errorf("turn 2: the output entered whole, not as a preview")
	}
	// OpenClaw's read answered from the file in the turn itself.
	var partSeen, wholeSeen bool
	for i := range reqs {
		if r, ok := results[i]["callpart"]; ok && turnOf[i] == 2 {
			partSeen = strings.Contains(resultText(r), "build-output-line 1000")
		}
		if r, ok := results[i]["callwhole"]; ok && turnOf[i] == 3 {
			wholeSeen = strings.Contains(resultText(r), "build-output-line 1500")
		}
	}
	if !partSeen || !wholeSeen {
		t.Errorf("OpenClaw's read of the spill file did not give the model the lines (part %v, whole %v)", partSeen, wholeSeen)
	}
	// Turn 3: the part read is the read's output as OpenClaw sent it (kept
	// until a rebase; recorded as those lines of the output), and the
	// output is not loaded whole.
	t3 := first(3)
	if r := resultText(results[t3]["callpart"]); !strings.Contains(r, "build-output-line 1000\nbuild-output-line 1001") ||
		strings.Contains(texts[t3], "build-output-line 700\n") {
		t.Errorf("turn 3: the part read is %q; want lines 1000-1001 of the output as sent, and the output not whole:\n%.3000s", r, texts[t3])
	}
	// Turn 4: the whole read activated the output: the read is a
	// reference, the output whole in the context.
	t4 := first(4)
	if r := resultText(results[t4]["callwhole"]); strings.Contains(r, "build-output-line 1000") {
		t.Errorf("turn 4: the whole read's result is the output again (%d bytes), want ctxstore's reference", len(r))
	}
	if !strings.Contains(texts[t4], whole) {
		t.Errorf("turn 4: the output read back is not whole in the context:\n%.3000s", texts[t4])
	}
	// The recall tool stays, the management tools are not there.
	for i := range reqs {
		if r, ok := results[i]["callsearch"]; ok && r.IsError {
			t.Errorf("request %d: search through tool_call failed: %s", i, resultText(r))
		}
		if r, ok := results[i]["callactivate"]; ok && !r.IsError && !strings.Contains(strings.ToLower(resultText(r)), "unknown") {
			t.Errorf("request %d: activate through tool_call answered %q, want an unknown tool", i, resultText(r))
		}
	}
	if _, ok := results[len(reqs)-1]["callactivate"]; !ok {
		t.Errorf("turn 3 did not try activate")
	}

	// search through tool_call is recorded once, under the tool_call's id:
	// the plugin's run of it, which the ingester then recognizes in the log
	// (not a second toolcall "tool_call" beside one under OpenClaw's inner id).
	var searched httpapi.ObjectResponse
	srv.get("/v1/objects/callsearch", &searched)
	if searched.Doc["tool"] != "search" {
		t.Errorf("the tool_call of search is recorded as %q, want the plugin's run of search under its id", searched.Doc["tool"])
	}
	// Nothing under the spill root was indexed as a file.
	var info httpapi.SessionInfo
	srv.get("/v1/sessions/oc-bare", &info)
	for _, id := range slices.Concat(info.Index, info.Pool, info.Active) {
		var obj httpapi.ObjectResponse
		srv.get("/v1/objects/"+id, &obj)
		src, _ := obj.Doc["source"].(map[string]any)
		if p, _ := src["path"].(string); p != "" && strings.HasPrefix(p, spill) {
			t.Errorf("object %s is the file %s, under the spill root", id, p)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("after turn 4, with the session open, the spill file: %v", err)
	}

	// Under `openclaw agent --local` nothing ends the session in OpenClaw
	// (2026.9.6 reports session_end from its Gateway only): the session
	// stays open in the service, with its files, until the service stops.
	if !info.Open {
		t.Errorf("after turn 4 the service does not hold oc-bare open")
	}
	srv.Stop()
	if left, _ := os.ReadDir(spill); len(left) != 0 {
		t.Errorf("the spill root after the service stopped holds %d entries", len(left))
	}
}

// TestOpenClawHeadConfig: the head follows OpenClaw's config. With
// tools.fs.workspaceOnly on, OpenClaw's read cannot reach the spill
// directory, so a new session gets the managed head (ctxstore's guide, and
// activate in OpenClaw's tool catalog) and the plugin says why in one line;
// the plugin config's head (plugins.entries.ctxstore.config.head) wins over
// that default, with a warning that read is confined.
func TestOpenClawHeadConfig(t *testing.T) {
	t.Parallel()
	h := newOpenClawHome(t, func(messagesRequest) piStep { return piStep{Text: "done"} })
	h.head = "" // the default
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	h.serviceURL = srv.pxURL
	h.install()
	h.editConfig(func(cfg map[string]any) {
		cfg["tools"] = map[string]any{"fs": map[string]any{"workspaceOnly": true}}
	})
	out := h.run("agent", "--local", "--session-id", "oc-confined", "--message", "hello")
	if !strings.Contains(out, "[ctxstore] tools.fs.workspaceOnly keeps OpenClaw's read out of ctxstore's spill directory") {
		t.Errorf("with tools.fs.workspaceOnly, the plugin did not say why the head is managed:\n%s", out)
	}

	h.editConfig(func(cfg map[string]any) {
		plugins := cfg["plugins"].(map[string]any)
		entries := plugins["entries"].(map[string]any)
		entry := entries["ctxstore"].(map[string]any)
		entry["config"] = map[string]any{"head": "bare"}
	})
	out = h.run("agent", "--local", "--session-id", "oc-asked-bare", "--message", "hello")
	if !strings.Contains(out, "[ctxstore] the bare head was asked for, but tools.fs.workspaceOnly confines OpenClaw's read") {
		t.Errorf("the bare head asked for with a confined read: no warning:\n%s", out)
	}

	_, reqs := h.logged()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2", len(reqs))
	}
	if s := string(reqs[0].System); !strings.Contains(s, "Your context (ctxstore)") || !strings.Contains(s, "- activate (ctxstore)") {
		t.Errorf("a confined read: the request lacks ctxstore's guide or activate in the tool catalog: %.300s", s)
	}
	if s := string(reqs[1].System); strings.Contains(s, "Your context (ctxstore)") || strings.Contains(s, "- activate (ctxstore)") || !strings.Contains(s, "- search (ctxstore)") {
		t.Errorf("head bare in the plugin config: the request holds the guide or activate, or lacks search: %.300s", s)
	}
	for sid, bare := range map[string]bool{"oc-confined": false, "oc-asked-bare": true} {
		var info httpapi.SessionInfo
		srv.get("/v1/sessions/"+sid, &info)
		if strings.Contains(info.SystemPrompt, "Your context (ctxstore)") == bare {
			t.Errorf("%s: the session's system prompt %.100q, want bare %v", sid, info.SystemPrompt, bare)
		}
	}
}

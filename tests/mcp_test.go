package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxstore/ctxstore/server/httpapi"
)

// mcpFixture is a store with one session written through `ctxstore serve`
// (a read, a context call with a harness event, a file edited on disk).
type mcpFixture struct {
	store, sid, fileID, dir string
	name                    string   // the session index's name of sid
	commits                 []string // two context commits of sid, root first
	srv                     *serveProc
}

func newMCPFixture(t *testing.T) *mcpFixture {
	t.Helper()
	f := &mcpFixture{store: "sqlite:" + filepath.Join(t.TempDir(), "store.db"), sid: "mcp-session-1", dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("alpha v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.srv = startServe(t, f.store)
	post := func(path string, body any) []byte {
		t.Helper()
		b, _ := json.Marshal(body)
		st, out := f.srv.fetch("POST", path, "application/json", b)
		if st != 200 {
			t.Fatalf("POST %s: %d %s", path, st, out)
		}
		return out
	}
	b, _ := json.Marshal(map[string]any{"cwd": f.dir, "system_prompt": "You are the fixture's agent.", "harness": "test"})
	if st, out := f.srv.fetch("PUT", "/v1/sessions/"+f.sid, "application/json", b); st != 200 {
		t.Fatalf("open: %d %s", st, out)
	}
	var read httpapi.ToolResponse
	if err := json.Unmarshal(post("/v1/sessions/"+f.sid+"/tools/read", map[string]any{"tool_call_id": "call_r", "args": map[string]any{"path": "a.txt"}}), &read); err != nil || !read.OK {
		t.Fatalf("read: %v %+v", err, read)
	}
	f.fileID = read.ID
	post("/v1/sessions/"+f.sid+"/context", map[string]any{
		"log": []map[string]any{
			{"role": "user", "text": "Read a.txt please."},
			{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_r", "name": "read", "args": map[string]any{"path": "a.txt"}}}},
			{"role": "tool_result", "tool_call_id": "call_r", "tool_name": "read", "output": "alpha v1"},
		},
		"events": []map[string]any{{"type": "fork", "parent_session_id": "mcp-session-0", "entry_id": "e1", "position": "before"}},
	})
	// The next prompt: the first turn is written to the chat.
	post("/v1/sessions/"+f.sid+"/context", map[string]any{
		"log": []map[string]any{
			{"role": "user", "text": "Read a.txt please."},
			{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_r", "name": "read", "args": map[string]any{"path": "a.txt"}}}},
			{"role": "tool_result", "tool_call_id": "call_r", "tool_name": "read", "output": "alpha v1"},
			{"role": "assistant", "text": "Done."},
			{"role": "user", "text": "Thanks."},
		},
	})
	// Index the session now (the offline generator): it gets a name.
	var meta struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(post("/v1/sessions/"+f.sid+"/index", map[string]any{}), &meta); err != nil || meta.Name == "" {
		t.Fatalf("index: %v %+v", err, meta)
	}
	f.name = meta.Name
	// Two context commits (session/commits) of the session.
	parent := ""
	for _, text := range []string{"Commit one.", "Commit two."} {
		content, _ := json.Marshal([]map[string]any{{"role": "user", "text": text}})
		var c struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(post("/v1/commits", map[string]any{"parent": parent, "format": "conversation-v1",
			"content": string(content), "session": f.sid, "trigger": "explicit"}), &c); err != nil || c.ID == "" {
			t.Fatalf("checkpoint: %v %+v", err, c)
		}
		f.commits = append(f.commits, c.ID)
		parent = c.ID
	}
	if err := os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("alpha v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitVersions(t, f.srv, f.fileID, 2)
	return f
}

// call calls an MCP tool and decodes its structured result into out; it
// returns the error text of a tool error ("" on success).
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return ""
}

// TestMCPStdio drives `ctxstore mcp` over stdio with the SDK's client: the
// tools an MCP host sees and what they answer about a real session, and
// activation through the service that has the session open.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	cmd := exec.Command(ctxstoreBin, "--store", f.store, "mcp", "--service", f.srv.url)
	cmd.Env = append(os.Environ(), "CTXSTORE_TOKEN=")
	client := sdk.NewClient(&sdk.Implementation{Name: "ctxstore-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s has no input schema or description", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"activate", "commit_history", "commit_materialize", "commit_show", "deactivate", "get_object", "get_session",
		"list_calls", "list_sessions", "materialize_call", "object_history", "pin", "query_session", "search", "show_call", "unpin"}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	mcpChecks(t, cs, f)

	// Activation goes through the service, in the session it has open.
	var out struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	if msg := call(t, cs, "deactivate", map[string]any{"session": f.sid, "id": f.fileID}, &out); msg != "" || !out.OK {
		t.Fatalf("deactivate: %q %+v", msg, out)
	}
	var info httpapi.SessionInfo
	f.srv.get("/v1/sessions/"+f.sid, &info)
	if slices.Contains(info.Active, f.fileID) {
		t.Errorf("after deactivate, %s is still active: %v", f.fileID, info.Active)
	}
	if msg := call(t, cs, "activate", map[string]any{"session": f.sid, "id": f.fileID}, &out); msg != "" || !out.OK {
		t.Fatalf("activate: %q %+v", msg, out)
	}
	f.srv.get("/v1/sessions/"+f.sid, &info)
	if !slices.Contains(info.Active, f.fileID) {
		t.Errorf("after activate, %s is not active: %v", f.fileID, info.Active)
	}
	if msg := call(t, cs, "activate", map[string]any{"session": "not-open", "id": f.fileID}, nil); !strings.Contains(msg, "not open in ctxstore serve") {
		t.Errorf("activate in a session the service does not have open: %q", msg)
	}
	cs.Close()
	f.srv.Stop()
}

// mcpChecks asks the read tools about the fixture's session.
func mcpChecks(t *testing.T, cs *sdk.ClientSession, f *mcpFixture) {
	t.Helper()
	var list struct {
		Sessions []struct {
			ID          string `json:"id"`
			Harness     string `json:"harness"`
			Calls       int    `json:"calls"`
			Active      int    `json:"active"`
			FirstPrompt string `json:"first_prompt"`
		} `json:"sessions"`
	}
	if msg := call(t, cs, "list_sessions", nil, &list); msg != "" {
		t.Fatal(msg)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].ID != f.sid || list.Sessions[0].Harness != "test" || list.Sessions[0].Calls != 2 ||
		list.Sessions[0].Active != 1 || list.Sessions[0].FirstPrompt != "Read a.txt please." {
		t.Errorf("list_sessions: %+v", list.Sessions)
	}
	var sess struct {
		ID        string   `json:"id"`
		Prompts   []string `json:"prompts"`
		ActiveIDs []string `json:"active_ids"`
	}
	if msg := call(t, cs, "get_session", map[string]any{"session": "mcp-sess"}, &sess); msg != "" {
		t.Fatal(msg)
	}
	if sess.ID != f.sid || !slices.Equal(sess.ActiveIDs, []string{f.fileID}) || !slices.Equal(sess.Prompts, []string{"Read a.txt please."}) {
		t.Errorf("get_session by prefix: %+v", sess)
	}
	if msg := call(t, cs, "get_session", map[string]any{"session": "nope"}, nil); !strings.Contains(msg, `session "nope": no session`) {
		t.Errorf("get_session of an unknown session: %q", msg)
	}
	// By its name in the session index, as an @@ reference.
	var named struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if msg := call(t, cs, "get_session", map[string]any{"session": "@@" + f.name}, &named); msg != "" || named.ID != f.sid || named.Name != f.name {
		t.Errorf("get_session @@%s: %q %+v", f.name, msg, named)
	}

	// Search (recall's full-text index) and query_session (offline: passages).
	var found struct {
		Hits []struct {
			ID      string `json:"id"`
			Session string `json:"session"`
			Kind    string `json:"kind"`
		} `json:"hits"`
	}
	if msg := call(t, cs, "search", map[string]any{"query": "please"}, &found); msg != "" {
		t.Fatal(msg)
	}
	if !slices.ContainsFunc(found.Hits, func(h struct {
		ID      string `json:"id"`
		Session string `json:"session"`
		Kind    string `json:"kind"`
	}) bool {
		return h.Session == f.sid && h.Kind == "chat"
	}) {
		t.Errorf("search please: %+v, want the session's chat", found.Hits)
	}
	var answer struct {
		Session string `json:"session"`
		Answer  string `json:"answer"`
	}
	if msg := call(t, cs, "query_session", map[string]any{"session": f.sid, "question": "which file was read?"}, &answer); msg != "" || answer.Session != f.sid || answer.Answer == "" {
		t.Errorf("query_session: %q %+v", msg, answer)
	}

	var hist struct {
		Versions []struct {
			TxID int64          `json:"tx_id"`
			Doc  map[string]any `json:"doc"`
		} `json:"versions"`
	}
	if msg := call(t, cs, "object_history", map[string]any{"id": f.fileID, "order": "asc", "with_docs": true}, &hist); msg != "" {
		t.Fatal(msg)
	}
	if len(hist.Versions) != 2 || !strings.Contains(hist.Versions[0].Doc["content"].(string), "alpha v1") || !strings.Contains(hist.Versions[1].Doc["content"].(string), "alpha v2") {
		t.Fatalf("object_history: %+v", hist.Versions)
	}
	// As of the first version's transaction, the file says v1; now, v2.
	var obj struct {
		Doc  map[string]any `json:"doc"`
		TxID int64          `json:"tx_id"`
	}
	if msg := call(t, cs, "get_object", map[string]any{"id": f.fileID, "tx_id": hist.Versions[0].TxID}, &obj); msg != "" {
		t.Fatal(msg)
	}
	if c, _ := obj.Doc["content"].(string); !strings.Contains(c, "alpha v1") || obj.TxID != hist.Versions[0].TxID {
		t.Errorf("get_object as of tx %d: %+v", hist.Versions[0].TxID, obj)
	}
	if msg := call(t, cs, "get_object", map[string]any{"id": f.fileID}, &obj); msg != "" {
		t.Fatal(msg)
	}
	if c, _ := obj.Doc["content"].(string); !strings.Contains(c, "alpha v2") {
		t.Errorf("get_object now: %+v", obj)
	}
	if msg := call(t, cs, "get_object", map[string]any{"id": f.fileID, "valid_time": "yesterday"}, nil); !strings.Contains(msg, "valid_time") {
		t.Errorf("get_object with a bad valid_time: %q", msg)
	}

	var calls struct {
		Calls []struct {
			N      int              `json:"n"`
			Events []map[string]any `json:"events"`
		} `json:"calls"`
	}
	if msg := call(t, cs, "list_calls", map[string]any{"session": f.sid}, &calls); msg != "" {
		t.Fatal(msg)
	}
	if len(calls.Calls) != 2 || len(calls.Calls[1].Events) != 0 || len(calls.Calls[0].Events) != 1 || calls.Calls[0].Events[0]["type"] != "fork" ||
		calls.Calls[0].Events[0]["parent_session_id"] != "mcp-session-0" {
		t.Errorf("list_calls: %+v", calls.Calls)
	}
	var mat struct {
		N        int    `json:"n"`
		System   string `json:"system"`
		Messages []struct {
			Role   string `json:"role"`
			Blocks []struct {
				Text string `json:"text"`
			} `json:"blocks"`
		} `json:"messages"`
	}
	if msg := call(t, cs, "materialize_call", map[string]any{"session": f.sid}, &mat); msg != "" {
		t.Fatal(msg)
	}
	b, _ := json.Marshal(mat.Messages)
	if mat.N != 2 || !strings.HasPrefix(mat.System, "You are the fixture's agent.") || !strings.Contains(string(b), "Read a.txt please.") || !strings.Contains(string(b), "alpha v1") {
		t.Errorf("materialize_call: n %d, system %.80q, messages %.300s", mat.N, mat.System, b)
	}
	if msg := call(t, cs, "show_call", map[string]any{"session": f.sid, "n": 7}, nil); !strings.Contains(msg, "has 2 calls") {
		t.Errorf("show_call of a call that does not exist: %q", msg)
	}

	// Context commits (session/commits): the session's tip, its history,
	// the conversation materialized from the root.
	var tip struct {
		ID      string `json:"id"`
		Parent  string `json:"parent"`
		Session string `json:"session"`
	}
	if msg := call(t, cs, "commit_show", map[string]any{"session": f.sid}, &tip); msg != "" {
		t.Fatal(msg)
	}
	if tip.ID != f.commits[1] || tip.Parent != f.commits[0] || tip.Session != f.sid {
		t.Errorf("commit_show of the session: %+v, want %v", tip, f.commits)
	}
	var hist2 struct {
		Commits []struct {
			ID string `json:"id"`
		} `json:"commits"`
	}
	if msg := call(t, cs, "commit_history", map[string]any{"id": f.commits[1]}, &hist2); msg != "" {
		t.Fatal(msg)
	}
	if len(hist2.Commits) != 2 || hist2.Commits[0].ID != f.commits[1] || hist2.Commits[1].ID != f.commits[0] {
		t.Errorf("commit_history: %+v", hist2.Commits)
	}
	var conv struct {
		Commits int    `json:"commits"`
		Format  string `json:"format"`
		Content string `json:"content"`
	}
	if msg := call(t, cs, "commit_materialize", map[string]any{"id": f.commits[1], "stop": "root"}, &conv); msg != "" {
		t.Fatal(msg)
	}
	if conv.Commits != 2 || conv.Format != "conversation-v1" || !strings.Contains(conv.Content, "Commit one.") || !strings.Contains(conv.Content, "Commit two.") {
		t.Errorf("commit_materialize: %+v", conv)
	}
	if msg := call(t, cs, "commit_show", map[string]any{"id": "ctx-0000"}, nil); msg == "" {
		t.Errorf("commit_show of a bad id answered")
	}
}

// TestMCPHTTP drives `ctxstore mcp --http` over streamable HTTP with the
// SDK's client; without --service there are no activation tools.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	cmd := exec.Command(ctxstoreBin, "--store", f.store, "mcp", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "CTXSTORE_SERVICE_URL=", "CTXSTORE_TOKEN=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { done <- cmd.Wait() }()
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("ctxstore mcp --http printed no URL: %v\n%s", err, stderr.String())
	}
	endpoint := strings.TrimSpace(line)
	if !strings.HasSuffix(endpoint, "/mcp") {
		t.Fatalf("endpoint %q", endpoint)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "ctxstore-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tl.Tools {
		if tool.Name == "activate" {
			t.Errorf("activate offered without --service")
		}
	}
	mcpChecks(t, cs, f)
	cs.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil || !strings.Contains(stderr.String(), "ctxstore: stopped") {
			t.Errorf("ctxstore mcp --http after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Errorf("ctxstore mcp --http did not stop within 20 s of SIGTERM")
	}
	f.srv.Stop()
}

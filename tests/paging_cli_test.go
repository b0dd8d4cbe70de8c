package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestPagingThroughService: `serve --preview-tokens` sets where outputs
// enter as a preview; a session whose model activates one preview and
// leaves another reports, in `session show`, 2 previews, 1 read back by
// activate, fault rate 50%, and the session's preview size doubled.
func TestPagingThroughService(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "store.db")
	srv := startServe(t, "sqlite:"+db, "--preview-tokens", "200")
	cwd := t.TempDir()
	post := func(method, path string, body any, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		code, resp := srv.fetch(method, path, "application/json", b)
		if code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, code, resp)
		}
		if out != nil {
			if err := json.Unmarshal(resp, out); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
	}
	post("PUT", "/v1/sessions/pg", map[string]any{"cwd": cwd, "system_prompt": "You are terse.", "harness": "test"}, nil)
	long := func(what string) string {
		var b strings.Builder
		for i := 0; b.Len() < 8000; i++ {
			fmt.Fprintf(&b, "%s line %d of a log nobody reads whole\n", what, i)
		}
		return b.String()
	}
	log := []map[string]any{
		{"role": "user", "text": "build and test"},
		{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_build", "name": "bash", "args": map[string]any{"command": "make"}}}},
		{"role": "tool_result", "tool_call_id": "call_build", "tool_name": "bash", "output": long("build")},
		{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_test", "name": "bash", "args": map[string]any{"command": "make test"}}}},
		{"role": "tool_result", "tool_call_id": "call_test", "tool_name": "bash", "output": long("test")},
	}
	var ctx struct {
		Assembled []struct {
			Blocks []struct {
				Text string `json:"text"`
			} `json:"blocks"`
		} `json:"assembled"`
	}
	post("POST", "/v1/sessions/pg/context", map[string]any{"log": log}, &ctx)
	previews := 0
	for _, m := range ctx.Assembled {
		for _, b := range m.Blocks {
			if strings.Contains(b.Text, "left out here") {
				previews++
			}
		}
	}
	if previews != 2 {
		t.Fatalf("%d previews in the context; want both outputs as previews at --preview-tokens 200", previews)
	}
	// The model activates the build's output.
	log = append(log, map[string]any{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_act", "name": "activate", "args": map[string]any{"id": "call_build"}}}})
	var tr struct {
		OK bool `json:"ok"`
	}
	post("POST", "/v1/sessions/pg/tools/activate", map[string]any{"tool_call_id": "call_act", "args": map[string]any{"id": "call_build"}}, &tr)
	if !tr.OK {
		t.Fatal("activate failed")
	}
	log = append(log, map[string]any{"role": "tool_result", "tool_call_id": "call_act", "tool_name": "activate", "output": "activated"})
	post("POST", "/v1/sessions/pg/context", map[string]any{"log": log}, nil)
	post("POST", "/v1/sessions/pg/close", map[string]any{}, nil)
	srv.Stop()

	c := newCLI(t)
	out := c.ok("", "--store", db, "session", "show", "pg")
	for _, want := range []string{"paging    2 outputs shown as a preview, 1 read back whole (fault rate 50.0%: 1 by activate, 0 by a spill-file read, 0 run again)",
		"the preview size doubled once (previews read back more often than 5%)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("session show lacks %q:\n%s", want, out)
		}
	}
}

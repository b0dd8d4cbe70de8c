package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/server/httpapi"
)

// TestPiMessageThreads measures Anthropic's message threads under Pi (pi-ai
// sends them by default to api.anthropic.com since Pi 1.5.1; the scripted
// provider "scripted-threads" turns them on for the local endpoint): a
// request is a `continue` of the thread (only the new messages) when its
// messages extend the previous request's and its reply, else it is sent
// whole and creates a new thread. The same three-turn script runs with Pi
// alone (the service unreachable: the extension fails open) and with
// ctxstore, whose service here rebases as soon as anything is stale (as in
// TestPiSQLite). Pi alone continues every request after the first; with
// ctxstore a request is whole exactly where ctxstore rebased (rewrote what
// it had sent: a cache rewrite anyway), and incremental everywhere else,
// since its answers keep every earlier message's bytes. The counts are in
// docs/pi.md ("Message threads").
func TestPiMessageThreads(t *testing.T) {
	t.Parallel()
	script := []piStep{
		{Tool: "bash", Args: map[string]any{"command": "seq 1 200"}, ID: "call_1"}, // turn 1
		{Tool: "bash", Args: map[string]any{"command": "echo two"}, ID: "call_2"},
		{Text: "Turn 1 done."},
		{Tool: "bash", Args: map[string]any{"command": "seq 1 300"}, ID: "call_3"}, // turn 2
		{Text: "Turn 2 done."},
		{Text: "Turn 3 done."}, // turn 3
	}
	// run returns the thread type of each request, and Pi's session id.
	run := func(serviceURL string) ([]string, string) {
		e := newPiEnv(t)
		e.env = append(e.env, "CTXSTORE_HEAD=") // the default, bare
		e.provider = "scripted-threads"
		pi := startPi(t, e, serviceURL, script)
		pi.prompt("Count.")
		pi.prompt("Count more.")
		pi.prompt("Done?")
		pi.quit()
		b, err := os.ReadFile(e.ctxLog)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
		if len(lines) != len(script) {
			t.Fatalf("%d requests, want %d", len(lines), len(script))
		}
		var kinds []string
		for i, l := range lines {
			var req struct {
				Thread *struct {
					Type string `json:"type"`
				} `json:"thread"`
				System json.RawMessage `json:"system"`
			}
			if err := json.Unmarshal(l, &req); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if req.Thread == nil {
				t.Fatalf("request %d carries no thread", i)
			}
			if req.Thread.Type == "continue" && len(req.System) > 0 {
				t.Errorf("request %d continues a thread but sends the system prompt again", i)
			}
			kinds = append(kinds, req.Thread.Type)
		}
		return kinds, piSessionID(t, piSessionFile(t, e.sessions))
	}
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"),
		"--collapse-turns", "1", "--collapse-files=-1", "--stale-threshold", "1", "--breakpoints", "prefix")
	with, sid := run(srv.pxURL)
	alone, _ := run("http://127.0.0.1:1")
	t.Logf("Pi alone: %s; with ctxstore: %s", strings.Join(alone, " "), strings.Join(with, " "))
	for i, k := range alone {
		if want := map[bool]string{true: "create", false: "continue"}[i == 0]; k != want {
			t.Errorf("Pi alone: request %d is a %s, want %s", i, k, want)
		}
	}
	rebases := 0
	for i, k := range with {
		var obj httpapi.ObjectResponse
		srv.get(fmt.Sprintf("/v1/objects/ctx-%s-%d", sid, i+1), &obj)
		_, rebased := obj.Doc["rebase_from"]
		if rebased {
			rebases++
		}
		if want := map[bool]string{true: "create", false: "continue"}[i == 0 || rebased]; k != want {
			t.Errorf("with ctxstore: request %d (rebased: %v) is a %s, want %s", i, rebased, k, want)
		}
	}
	if rebases == 0 {
		t.Errorf("ctxstore never rebased: the whole requests it causes are untested")
	}
}

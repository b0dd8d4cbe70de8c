package tests

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/server/httpapi"
)

// TestOpenClawSubagent drives OpenClaw's subagent lifecycle with ctxstore's
// engine: the scripted model spawns a subagent with context "fork"
// (sessions_spawn through tool_call). OpenClaw calls the engine's
// prepareSubagentSpawn, which forks the parent's ctxstore session into the
// child's (a commit branch: the fork commit's parent is the conversation
// commit of the parent's last context call). Under `openclaw agent --local`
// OpenClaw cannot start the child run (it needs the Gateway's published
// reply runtime: "published reply runtime missing"), so it rolls the
// preparation back; the parent's next context call records the spawn and
// its end as harness events. docs/openclaw.md says what is not tested.
func TestOpenClawSubagent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	step, child := 0, false
	respond := func(req messagesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range req.Messages {
			bs, _ := messagesBlocks(m.Content)
			for _, b := range bs {
				if strings.Contains(b.Text, "[Subagent Task]") {
					child = true
					return piStep{Text: "child done"}
				}
			}
		}
		step++
		switch step {
		case 1:
			return piStep{Text: "turn one done"}
		case 2:
			return piStep{Tool: "tool_call", Args: map[string]any{"id": "sessions_spawn", "args": map[string]any{"task": "check the notes", "context": "fork"}}, ID: "callspawn"}
		default:
			return piStep{Text: "turn two done"}
		}
	}
	h := newOpenClawHome(t, respond)
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	h.serviceURL = srv.pxURL
	h.install()
	for i, msg := range []string{"hello", "delegate the notes"} {
		if out := h.run("agent", "--local", "--session-id", "oc-sub", "--message", msg); !strings.Contains(out, fmt.Sprintf("turn %s done", []string{"one", "two"}[i])) {
			t.Fatalf("turn %d did not answer:\n%s", i+1, out)
		}
	}
	_, reqs := h.logged()
	var spawned messagesBlock
	for _, m := range reqs[len(reqs)-1].Messages {
		bs, _ := messagesBlocks(m.Content)
		for _, b := range bs {
			if b.ToolUseID == "callspawn" {
				spawned = b
			}
		}
	}
	t.Logf("sessions_spawn answered: %.400s", spawned.Content)
	if !spawned.IsError || !strings.Contains(string(spawned.Content), "published reply runtime missing") {
		t.Errorf("sessions_spawn under --local answered %.600s; want the error docs/openclaw.md names", spawned.Content)
	}
	if child {
		t.Errorf("the child ran under --local (OpenClaw changed): extend this test to check the child's context")
	}

	// The parent's context calls: one of them carries the spawn and its end.
	var info struct {
		Calls int `json:"calls"`
	}
	srv.get("/v1/sessions/oc-sub", &info)
	var spawnedEv, endedEv map[string]any
	for n := 1; n <= info.Calls; n++ {
		var obj httpapi.ObjectResponse
		srv.get(fmt.Sprintf("/v1/objects/ctx-oc-sub-%d", n), &obj)
		harness, _ := obj.Doc["harness"].(map[string]any)
		evs, _ := harness["events"].([]any)
		for _, e := range evs {
			e, _ := e.(map[string]any)
			switch e["type"] {
			case "subagent_spawned":
				spawnedEv = e
			case "subagent_ended":
				endedEv = e
			}
		}
	}
	if spawnedEv == nil || endedEv == nil {
		t.Fatalf("the parent's calls lack the subagent events: spawned %v, ended %v", spawnedEv, endedEv)
	}
	if spawnedEv["context_mode"] != "fork" || endedEv["reason"] != "spawn_failed" || endedEv["child_session_key"] != spawnedEv["child_session_key"] {
		t.Errorf("subagent events: %v, %v", spawnedEv, endedEv)
	}
	// The fork: a commit of the child's session whose parent is the
	// conversation commit of one of the parent's calls.
	forkID, _ := spawnedEv["fork_commit"].(string)
	if forkID == "" {
		t.Fatalf("no fork commit for the subagent: %v", spawnedEv)
	}
	var fork struct {
		Parent       string `json:"parent"`
		MessageCount int    `json:"message_count"`
	}
	srv.get("/v1/commits/"+forkID, &fork)
	parents := map[string]bool{}
	for n := 1; n <= info.Calls; n++ {
		var obj httpapi.ObjectResponse
		srv.get(fmt.Sprintf("/v1/objects/ctx-oc-sub-%d", n), &obj)
		if c, ok := obj.Doc["conversation_commit"].(string); ok {
			parents[c] = true
		}
	}
	if !parents[fork.Parent] {
		b, _ := json.Marshal(parents)
		t.Errorf("the fork commit's parent %q is not a conversation commit of the parent session (%s)", fork.Parent, b)
	}
	t.Logf("fork commit %s, parent %s, %d messages", forkID, fork.Parent, fork.MessageCount)
}

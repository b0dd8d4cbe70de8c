package recall_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// qualityQuestions are questions about the dataset sessions whose answers
// are known from the transcripts: the session that edited a file, or where
// the user asked for something. Each is the query an agent would send.
var qualityQuestions = []struct {
	question, query, want string
}{
	{"which session edited email-validation.ts?", "email-validation.ts", "attio-mcp-server__1ff6f4ee__c7428042"},
	{"where did the user ask to QA the Attio MCP tools?", "QA Attio MCP tools bugs", "attio-mcp-server__465eb442__8664c04e"},
	{"where was issue 364 triaged?", "issues/364", "attio-mcp-server__55acb2ec__9fa9888f"},
	{"which session set up the VS Code launch.json?", "launch.json", "attio-mcp-server__55acb2ec__9fa9888f"},
	{"where did the user want --dangerously-skip-permissions?", "dangerously-skip-permissions", "dmux__eef6c282__a9185eb7"},
	{"which session edited conflictResolutionPane.ts?", "conflictResolutionPane", "dmux__eef6c282__a9185eb7"},
	{"where did the user ask to solve backlog tasks?", "solve backlog tasks not marked as completed", "templar__35fb9f94__ee2ab929"},
	{"which session wrote enhanced_plugins.go?", "enhanced_plugins.go", "templar__577e2177__8f2aa855"},
	{"where did we talk about AgentSession and thinking levels?", "AgentSession thinking levels", "pi-mono__before-compaction"},
	{"where did the user ask for a branch called refactor?", "create a branch refactor", "pi-mono__before-compaction"},
	{"which session ported the theme to the selectors?", "theme.md selectors", "pi-mono__large-session"},
	{"which session edited the wrap-ansi test?", "wrap-ansi.test.ts", "pi-mono__large-session"},
}

// loadDataset writes the dataset transcripts into the store as sessions:
// the chat (user and assistant text, tool-call blocks) and a toolcall
// object per tool result with the fields context/tools gives it (written in
// batches, so that loading stays quick on XTDB).
func loadDataset(t *testing.T, e *storetestenv.Env) map[string]string {
	t.Helper()
	ctx := context.Background()
	dir := datasetdir.Dir(t)
	paths, _ := filepath.Glob(filepath.Join(dir, "claude-code", "*.jsonl"))
	more, _ := filepath.Glob(filepath.Join(dir, "pi", "*.jsonl"))
	paths = append(paths, more...)
	if len(paths) < 8 {
		t.Fatalf("expected the 8 dataset sessions under %s, found %d", dir, len(paths))
	}
	names := map[string]string{} // session id -> dataset name
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		tr, err := transcripttest.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sid := e.ID(name)
		names[sid] = name
		s, err := session.Create(ctx, e.Store, sid, session.CreateOptions{SystemPrompt: "sys"})
		if err != nil {
			t.Fatal(err)
		}
		var turns []objects.Turn
		var ops []store.Op // the toolcall objects as the tools write them, in batches
		for _, m := range tr.Messages {
			switch m.Role {
			case "user":
				turns = append(turns, objects.Turn{User: m.Text})
			case "assistant":
				if len(turns) == 0 {
					turns = append(turns, objects.Turn{})
				}
				t := &turns[len(turns)-1]
				if m.Text != "" {
					t.Assistant = append(t.Assistant, map[string]any{"type": "text", "text": m.Text})
				}
				for _, c := range m.ToolCalls {
					t.Assistant = append(t.Assistant, map[string]any{"type": "toolCall", "id": e.ID(c.ID), "name": c.Name})
				}
			case "tool_result":
				out := m.Output
				var args map[string]any
				for _, tm := range tr.Messages {
					for _, c := range tm.ToolCalls {
						if c.ID == m.ToolCallID {
							args = c.Args
						}
					}
				}
				status := objects.StatusOK
				if m.IsError {
					status = objects.StatusFail
				}
				if args == nil {
					args = map[string]any{}
				}
				o, err := objects.NewToolcall(e.ID(m.ToolCallID), objects.ToolcallFields{Tool: m.ToolName, Args: args,
					ArgsDisplay: objects.DefaultArgsDisplay(args), Status: status, ChatRef: objects.ChatObjectID(sid)}, &out)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				d, err := o.Doc()
				if err != nil {
					t.Fatal(err)
				}
				ops = append(ops, store.Put(d))
			}
		}
		for i := 0; i < len(ops); i += 200 {
			if _, err := store.SubmitWait(ctx, e.Store, ops[i:min(i+200, len(ops))]); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.AppendTurns(ctx, turns...); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestSearchQualityOnDatasets measures recall@5 of search on the dataset
// sessions: the share of questions whose session is among the sessions of
// the first five hits (docs/recall.md records it).
func TestSearchQualityOnDatasets(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every dataset session")
	}
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		names := loadDataset(t, e)
		ctx := context.Background()
		found := 0
		for _, q := range qualityQuestions {
			hits, err := recall.Search(ctx, e.Store, store.SearchQuery{Text: q.query, Limit: 5}, recall.Scope{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			ok := false
			for _, h := range hits {
				n := names[h.Session]
				got = append(got, fmt.Sprintf("%s/%s", h.Kind, n))
				if n == q.want {
					ok = true
				}
			}
			if ok {
				found++
			} else {
				t.Logf("miss: %q (%q): want %s, top 5 %v", q.question, q.query, q.want, got)
			}
		}
		r := float64(found) / float64(len(qualityQuestions))
		t.Logf("%s: recall@5 = %d/%d = %.2f", e.Backend, found, len(qualityQuestions), r)
		if r < 0.8 {
			t.Errorf("recall@5 %.2f below 0.8", r)
		}
	})
}

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaudeCodePreviews: with ctxstore's hooks installed (previews on by
// default), the real Claude Code CLI runs a Bash command whose output is
// past the preview size; the request that follows carries a preview naming
// the spill file, not the output; the scripted model reads the spill file
// with Claude Code's Read and gets the whole output (docs/claude-code.md,
// "Previews").
func TestClaudeCodePreviews(t *testing.T) {
	t.Parallel()
	e := newCCLive(t, "")
	const bashID, readID = "toolu_prev_bash", "toolu_prev_read"
	spillDir := filepath.Join(e.dir, ".ctxstore", "spill")
	result := func(req messagesRequest, id string) (string, bool) {
		for _, msg := range req.Messages {
			bs, _ := messagesBlocks(msg.Content)
			for _, b := range bs {
				if b.Type == "tool_result" && b.ToolUseID == id {
					var s string
					if json.Unmarshal(b.Content, &s) != nil {
						inner, _ := messagesBlocks(b.Content)
						for _, x := range inner {
							s += x.Text
						}
					}
					return s, true
				}
			}
		}
		return "", false
	}
	var spillFile string
	e.model = startScriptedMessages(t, nil, filepath.Join(t.TempDir(), "requests.jsonl"), func(req messagesRequest) piStep {
		if len(req.Tools) == 0 {
			return piStep{Text: "ok"} // Claude Code's side requests (titles)
		}
		if _, ok := result(req, readID); ok {
			return piStep{Text: "Done."}
		}
		if s, ok := result(req, bashID); ok {
			i := strings.Index(s, "Read "+spillDir+"/")
			if i < 0 {
				return piStep{Text: "no preview"}
			}
			f := strings.Fields(s[i+len("Read "):])[0]
			spillFile = f
			return piStep{Tool: "Read", Args: map[string]any{"file_path": f}, ID: readID}
		}
		return piStep{Tool: "Bash", Args: map[string]any{"command": "seq 1 5000", "description": "count"}, ID: bashID}
	})
	out := e.claude("Count to 5000.", "--allowedTools", "Read")
	if last := out[len(out)-1]; last["result"] != "Done." {
		t.Fatalf("claude's result: %v", last)
	}

	var whole strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&whole, "%d\n", i)
	}
	raw, err := os.ReadFile(e.model.log)
	if err != nil {
		t.Fatal(err)
	}
	var sawPreview, sawWhole bool
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var req messagesRequest
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatal(err)
		}
		if s, ok := result(req, bashID); ok {
			sawPreview = true
			if len(s) > 4500 || strings.Contains(s, "\n2500\n") || !strings.HasPrefix(s, "1\n2\n3\n") || !strings.HasSuffix(strings.TrimSpace(s), "4999\n5000") ||
				!strings.Contains(s, "left out here; Read "+filepath.Join(spillDir)) {
				t.Errorf("the Bash output the model was sent (%d bytes) is not a preview naming the spill file: %.300q…%.200q", len(s), s, s[max(0, len(s)-200):])
			}
		}
		if s, ok := result(req, readID); ok {
			// Claude Code's Read numbers the lines: "     N\tN".
			sawWhole = true
			for _, n := range []int{1, 2500, 4321, 5000} {
				if !strings.Contains(s, fmt.Sprintf("%d\t%d\n", n, n)) && !strings.HasSuffix(s, fmt.Sprintf("%d\t%d", n, n)) {
					t.Errorf("the Read of the spill file lacks line %d: %.200q", n, s)
					break
				}
			}
			if strings.Contains(s, "[ctxstore]") {
				t.Errorf("the Read of the spill file was cut again: %.300q", s)
			}
		}
	}
	if !sawPreview || !sawWhole {
		t.Fatalf("requests with the Bash result: %v; with the Read of %q: %v", sawPreview, spillFile, sawWhole)
	}
	// Claude Code gives Bash's stdout without its last newline.
	if b, err := os.ReadFile(spillFile); err != nil || string(b) != strings.TrimSuffix(whole.String(), "\n") {
		t.Errorf("the spill file %s: %v (%d bytes, want %d)", spillFile, err, len(b), whole.Len())
	}
	if !strings.HasPrefix(spillFile, spillDir+string(filepath.Separator)) || filepath.Base(spillFile) != bashID+".txt" {
		t.Errorf("spill file %s, want %s/<session>/%s.txt", spillFile, spillDir, bashID)
	}
	// The hook said the Read was the output's activation (its report is
	// in the transcript's hook attachments).
	sid, _ := out[len(out)-1]["session_id"].(string)
	transcript, _ := e.transcripts(sid)
	tb, _ := os.ReadFile(transcript)
	if !strings.Contains(string(tb), `\"activated\":\"`+bashID+`\"`) {
		t.Errorf("no hook reported the Read as the activation of %s", bashID)
	}
	// The transcript records the preview (what the model saw).
	if !strings.Contains(string(tb), "left out here; Read "+spillFile) {
		t.Error("the transcript does not record the preview")
	}
}

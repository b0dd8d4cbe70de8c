package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// importResult is what import --json prints, the fields read here.
type importResult struct {
	Files []struct {
		Harness  string `json:"harness"`
		Status   string `json:"status"`
		Offset   int64  `json:"offset"`
		NewLines int    `json:"new_lines"`
		Tip      string `json:"tip"`
		Commits  []string
		Sessions []struct {
			Session     string `json:"session"`
			Prompts     int    `json:"prompts"`
			ToolCalls   int    `json:"tool_calls"`
			ToolResults int    `json:"tool_results"`
		} `json:"sessions"`
	} `json:"files"`
}

// TestPiLiveImport imports the session file the real Pi CLI (offline,
// scripted model, a bash tool call) writes, while Pi runs: after the first
// turn, then after the second (the file grew: only its new lines are
// added). Each time the chain materializes to the file's bytes, and the
// events hold the turns' prompts, the tool call and its result.
func TestPiLiveImport(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	c := newCLI(t)
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "serve.db"))
	db := filepath.Join(t.TempDir(), "import.db")
	script := []piStep{{Tool: "bash", Args: map[string]any{"command": "echo imported"}, ID: "call_1"}, {Text: "Ran it."}, {Text: "Answer two."}}
	pi := startPi(t, e, srv.pxURL, script)
	pi.prompt("run echo")
	file := piSessionFile(t, e.sessions)

	check := func(wantStatus string) importResult {
		t.Helper()
		var res importResult
		r := c.run("", "--store", db, "--json", "import", file)
		if r.code != 0 {
			t.Fatalf("import: %s", r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Files) != 1 {
			t.Fatalf("import --json: %v %s", err, r.stdout)
		}
		f := res.Files[0]
		want, _ := os.ReadFile(file)
		if f.Harness != "pi" || f.Status != wantStatus || f.Offset != int64(len(want)) {
			t.Fatalf("import: %+v (file %d bytes)", f, len(want))
		}
		out := filepath.Join(t.TempDir(), "m.jsonl")
		if r := c.run("", "--store", db, "commit", "materialize", f.Tip, "--stop", "root", "-o", out); r.code != 0 {
			t.Fatal(r.stderr)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
			t.Fatalf("materialized %d bytes, want the file's %d", len(got), len(want))
		}
		return res
	}
	first := check("imported")
	if s := first.Files[0].Sessions; len(s) != 1 || s[0].Prompts != 1 || s[0].ToolCalls != 1 || s[0].ToolResults != 1 {
		t.Fatalf("first import: %+v", s)
	}
	pi.prompt("second question")
	second := check("grew")
	f := second.Files[0]
	if f.NewLines == 0 || len(f.Commits) == 0 || f.Sessions[0].Prompts != 1 {
		t.Fatalf("second import added %d lines, %d commits: %+v", f.NewLines, len(f.Commits), f.Sessions)
	}
	pi.quit()

	// The events of the whole chain.
	var m struct {
		Content string `json:"content"`
	}
	out := c.ok("", "--store", db, "--json", "commit", "materialize", f.Tip, "--stop", "root", "--format", "events-v1")
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	var evs []map[string]any
	if err := json.Unmarshal([]byte(m.Content), &evs); err != nil {
		t.Fatal(err)
	}
	var prompts, calls, results int
	for _, ev := range evs {
		switch ev["type"] {
		case "prompt":
			if ev["source"] == "user" {
				prompts++
			}
		case "tool_call":
			if tool, _ := ev["tool"].(map[string]any); tool["id"] == "call_1" && tool["name"] == "bash" {
				calls++
			}
		case "tool_result":
			if res, _ := ev["result"].(map[string]any); bytes.Contains([]byte(res["content"].(string)), []byte("imported")) {
				results++
			}
		}
	}
	if prompts != 2 || calls != 1 || results != 1 || evs[0]["subtype"] != "init" {
		t.Fatalf("events: %d prompts, %d bash calls, %d results; first %v", prompts, calls, results, evs[0])
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayCommand runs "ctxstore replay" on a small real transcript:
// --json on stdout, progress on stderr, a chart file, the per-call table.
func TestReplayCommand(t *testing.T) {
	path := filepath.Join(datasetdir.Dir(t), "claude-code", "raw", "claude-reliability__hello-world-script.jsonl")
	chart := filepath.Join(t.TempDir(), "c.png")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--chart", chart,
		"--strategies", "naive,recorded,ctxstore_stream", path}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got replayJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got.Sessions) != 1 || got.Sessions[0].Calls != 4 || len(got.Total) != 3 || got.Total[0].Strategy != "naive" {
		t.Fatalf("output %s", out.String())
	}
	if !strings.Contains(errb.String(), "ctxstore_stream 4/4 calls") {
		t.Fatalf("stderr %s", errb.String())
	}
	b, err := os.ReadFile(chart)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("chart: %v", err)
	}

	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"replay", "--per-call", "--tokenizer", "bytes", "--strategies", "naive,clear_tool_uses", path},
		strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "naive, per call") || !strings.Contains(out.String(), "cost/naive") {
		t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
	}
	if code := run(context.Background(), []string{"replay", "--strategies", "magic", path}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("unknown strategy: exit %d", code)
	}
}

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

// Issue 20, item 8: replay lists every damaged line of a transcript on
// stderr with its file and line (terminal escapes made harmless) and reads
// past them.
func TestReplayListsDamagedLines(t *testing.T) {
	src := filepath.Join(datasetdir.Dir(t), "claude-code", "raw", "claude-reliability__hello-world-script.jsonl")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	damaged := strings.Join(lines[:2], "") + "{\"type\":\"user\",\x1b[31m broken\n" + strings.Repeat("[", 500) + "\n" + strings.Join(lines[2:], "")
	path := filepath.Join(t.TempDir(), "damaged.jsonl")
	if err := os.WriteFile(path, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", path}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{path + ":3: invalid JSON", path + ":4: JSON nested too deeply", `\x1b`} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if strings.Contains(errb.String(), "\x1b") {
		t.Error("a raw terminal escape reached stderr")
	}
}

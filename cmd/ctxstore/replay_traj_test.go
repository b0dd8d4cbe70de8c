package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
)

// TestReplaySWEAgent: "ctxstore replay" reads a SWE-agent trajectory (one
// assistant call per action), and a truncated one with the damage named by
// file and line.
func TestReplaySWEAgent(t *testing.T) {
	path := filepath.Join(datasetdir.Dir(t), "swe-agent", "test__swe-agent__test-repo-i1__4da99171.traj")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", path},
		strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got replayJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 1 || got.Sessions[0].Calls != 5 || !strings.Contains(errb.String(), "swe-agent, 12 messages, 0 problems") {
		t.Fatalf("output %s\n%s", out.String(), errb.String())
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.traj")
	if err := os.WriteFile(cut, b[:len(b)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", cut},
		strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), cut+":") || !strings.Contains(errb.String(), "the document ends early") {
		t.Fatalf("stderr does not name the damage: %s", errb.String())
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalCommandErrors: `ctxstore eval` refuses an unknown arm and the
// Claude Code arms on an OpenAI endpoint before running anything, and
// stops on a task whose check passes before the agent runs (the harness
// is never started: --pi names a command that does not exist).
func TestEvalCommandErrors(t *testing.T) {
	suite := t.TempDir()
	dir := filepath.Join(suite, "easy")
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "task.json"), []byte(`{"prompt": "p", "check": "true"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"eval", "--suite", suite, "--endpoint", "http://127.0.0.1:1", "--model", "m", "--key-env", "none",
		"--pi", filepath.Join(t.TempDir(), "no-pi"), "--out", t.TempDir()}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--arms", "pi,emacs"}, exitUsage, `unknown arm "emacs"`},
		{[]string{"--arms", "claude-code", "--api", "openai"}, exitError, "Claude Code speaks only Anthropic's API"},
		{[]string{"--arms", "pi"}, exitError, "the check passes before the agent runs"},
		{[]string{"--arms", "pi", "--task", "hard"}, exitError, "no task hard"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append(append([]string{}, base...), c.args...), strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.want, errb.String())
		}
	}
}

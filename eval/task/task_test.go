package task

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShippedSuite: every task of eval/tasks loads, its check fails on
// its files and passes on its solution (so a run that leaves the files
// as they are is unsolved, and the task can be solved).
func TestShippedSuite(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the shipped tasks' checks run go test: %v", err)
	}
	tasks, err := LoadSuite("../tasks")
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 3 {
		t.Fatalf("%d tasks", len(tasks))
	}
	o := &Options{}
	for _, tk := range tasks {
		for _, side := range []string{"files", "solution"} {
			work := t.TempDir()
			if err := copyTree(filepath.Join(tk.Dir, side), work); err != nil {
				t.Fatal(err)
			}
			ok, out, err := o.runCheck(context.Background(), tk, work)
			if err != nil || ok != (side == "solution") {
				t.Errorf("%s, %s: check passed %v (%v)\n%s", tk.Name, side, ok, err, out)
			}
		}
		if tk.Timeout != 15*60e9 || !strings.Contains(tk.Prompt, "go test") {
			t.Errorf("%s: timeout %s, prompt %q", tk.Name, tk.Timeout, tk.Prompt)
		}
	}
}

// writeTask writes a task directory under root.
func writeTask(t *testing.T, root, name, taskJSON string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "task.json"), []byte(taskJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, "files", n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadSuite(t *testing.T) {
	root := t.TempDir()
	writeTask(t, root, "b", `{"prompt": "do b", "check": "test -f done"}`, nil)
	writeTask(t, root, "a", `{"prompt": "do a", "check": "test -f done", "timeout_seconds": 30}`, nil)
	writeTask(t, root, "c", `{"prompt": "do c", "check": "test -f done"}`, nil)
	if err := os.MkdirAll(filepath.Join(root, "not-a-task"), 0o755); err != nil {
		t.Fatal(err)
	}
	all, err := LoadSuite(root)
	if err != nil || len(all) != 3 || all[0].Name != "a" || all[0].Timeout != 30e9 || all[1].Timeout != DefaultTimeout {
		t.Fatalf("suite: %+v %v", all, err)
	}
	some, err := LoadSuite(root, "b")
	if err != nil || len(some) != 1 || some[0].Name != "b" {
		t.Fatalf("--task b: %+v %v", some, err)
	}
	if one, err := LoadSuite(filepath.Join(root, "c")); err != nil || len(one) != 1 || one[0].Prompt != "do c" {
		t.Fatalf("one task: %+v %v", one, err)
	}
	if _, err := LoadSuite(root, "b", "zz"); err == nil || !strings.Contains(err.Error(), "no task zz") {
		t.Errorf("an unknown task: %v", err)
	}
	if _, err := LoadSuite(t.TempDir()); !errors.Is(err, ErrNoTasks) {
		t.Errorf("an empty suite: %v", err)
	}
	bad := writeTask(t, t.TempDir(), "x", `{"prompt": "p", "check": "true", "extra": 1}`, nil)
	if _, err := Load(bad); err == nil {
		t.Errorf("an unknown field in task.json loads")
	}
	noCheck := writeTask(t, t.TempDir(), "x", `{"prompt": "p"}`, nil)
	if _, err := Load(noCheck); err == nil || !strings.Contains(err.Error(), "no check") {
		t.Errorf("a task without a check: %v", err)
	}
}

// fakePi writes a shell script standing in for Pi: it runs body in the
// work directory.
func fakePi(t *testing.T, body string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pi")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

func baseOptions(t *testing.T, tasks []Task, pi []string) Options {
	return Options{Tasks: tasks, Arms: []Arm{{Name: "plain"}}, Pi: pi, Out: t.TempDir(),
		Endpoint: Endpoint{URL: "http://127.0.0.1:1", API: APIAnthropic, Model: "m"}, Prices: Prices{Input: 3, Output: 15}}
}

// A task whose check passes before the agent runs proves nothing: the
// evaluation stops before starting the harness.
func TestCheckPassesBefore(t *testing.T) {
	dir := writeTask(t, t.TempDir(), "easy", `{"prompt": "p", "check": "true"}`, nil)
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "pi-ran")
	_, err = Run(context.Background(), baseOptions(t, []Task{tk}, fakePi(t, "touch "+marker)))
	if !errors.Is(err, ErrCheckPasses) {
		t.Fatalf("want ErrCheckPasses, got %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the harness ran")
	}
}

// The runner copies the files, gives the harness its prompt and models.json,
// runs the check after it: a harness that fixes the files solves the task,
// one that fails is reported unsolved with its exit status.
func TestRunWithFakeHarness(t *testing.T) {
	dir := writeTask(t, t.TempDir(), "touch", `{"prompt": "create the file done", "check": "test -f done && echo checked"}`,
		map[string]string{"README": "create done\n"})
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The fake harness: creates "done" when its last argument is the prompt
	// and models.json names the endpoint with the arm header.
	pi := fakePi(t, `for a; do last="$a"; done
grep -q '"X-Ctxstore-Eval-Arm": "plain"' "$PI_CODING_AGENT_DIR/models.json" || exit 3
grep -q '"baseUrl": "http://127.0.0.1:1"' "$PI_CODING_AGENT_DIR/models.json" || exit 4
[ "$last" = "create the file done" ] && test -f README && touch done`)
	o := baseOptions(t, []Task{tk}, pi)
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if !r.Solved || r.AgentExit != 0 || !strings.Contains(r.CheckOutput, "checked") || rep.Arms[0].Solved != 1 || rep.Arms[0].Tasks != 1 {
		t.Fatalf("result %+v, totals %+v", r, rep.Arms)
	}
	// No session file: said, and nothing measured.
	if !strings.Contains(r.Error, "0 session files") || r.Calls != 0 {
		t.Errorf("error %q, calls %d", r.Error, r.Calls)
	}
	o.Pi = fakePi(t, "exit 7")
	rep, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Solved || r.AgentExit != 7 || !strings.Contains(r.Error, "status 7") {
		t.Fatalf("a failing harness: %+v", r)
	}
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "plain     0/1") || !strings.Contains(b.String(), "touch  plain  no") {
		t.Errorf("text:\n%s", b.String())
	}
}

func TestOptionsCheck(t *testing.T) {
	tk := Task{Name: "x", Prompt: "p", Check: "true"}
	for name, mod := range map[string]func(*Options){
		"no endpoint":      func(o *Options) { o.Endpoint.URL = "" },
		"unknown api":      func(o *Options) { o.Endpoint.API = "grpc" },
		"no model":         func(o *Options) { o.Endpoint.Model = "" },
		"unset key":        func(o *Options) { o.Endpoint.KeyEnv = "CTXSTORE_EVAL_TEST_UNSET_KEY" },
		"same arm twice":   func(o *Options) { o.Arms = []Arm{{Name: "a"}, {Name: "a"}} },
		"ctxstore, no ext": func(o *Options) { o.Arms = []Arm{{Name: "c", Ctxstore: true}} },
		"no claude":        func(o *Options) { o.Arms = []Arm{{Name: "cc", Harness: HarnessClaudeCode}} },
		"claude on openai": func(o *Options) {
			o.Arms, o.Claude, o.Endpoint.API = []Arm{{Name: "cc", Harness: HarnessClaudeCode}}, "claude", APIOpenAI
		},
		"unknown harness": func(o *Options) { o.Arms = []Arm{{Name: "x", Harness: "vim"}} },
	} {
		o := baseOptions(t, []Task{tk}, []string{"pi"})
		mod(&o)
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPricesCost(t *testing.T) {
	p := Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	got := p.Cost(Tokens{Input: 1e6, Output: 1e5, CacheRead: 2e6, CacheWrite: 4e5})
	if want := 3 + 1.5 + 0.6 + 1.5; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("cost %v, want %v", got, want)
	}
}

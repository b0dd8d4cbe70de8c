// Package task runs a harness on a suite of coding tasks against a model
// endpoint, with and without ctxstore managing its context, and reports per
// arm what was solved and what it cost (docs/eval.md).
//
// A task is a directory: task.json (the prompt, the check command and a
// time limit), files/ (the project the agent starts from, copied afresh
// for every run) and, optionally, solution/ (the same files solved, for
// the suite's own tests; never shown to the agent). A run is solved when
// the check command, run in the work directory after the agent stops,
// exits 0; before the agent starts the check must fail, else the task
// proves nothing.
package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Task is one task of a suite.
type Task struct {
	// Name is the task's directory name.
	Name string `json:"name"`
	// Dir is the task's directory.
	Dir string `json:"-"`
	// Prompt is what the agent is asked.
	Prompt string `json:"prompt"`
	// Check is a shell command (sh -c) run in the work directory: exit 0
	// means solved.
	Check string `json:"check"`
	// Timeout bounds the agent's run (default DefaultTimeout).
	Timeout time.Duration `json:"-"`
}

// DefaultTimeout bounds an agent's run on a task that gives no limit.
const DefaultTimeout = 15 * time.Minute

// CheckTimeout bounds one run of a check command.
const CheckTimeout = 5 * time.Minute

// taskFile is task.json.
type taskFile struct {
	Prompt         string  `json:"prompt"`
	Check          string  `json:"check"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// ErrNoTasks: the suite directory holds no task.
var ErrNoTasks = errors.New("no task (a directory with task.json and files/)")

// Load reads one task directory.
func Load(dir string) (Task, error) {
	b, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if err != nil {
		return Task{}, fmt.Errorf("task %s: %w", dir, err)
	}
	var f taskFile
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Task{}, fmt.Errorf("task %s: task.json: %w", dir, err)
	}
	t := Task{Name: filepath.Base(dir), Dir: dir, Prompt: strings.TrimSpace(f.Prompt), Check: strings.TrimSpace(f.Check),
		Timeout: time.Duration(f.TimeoutSeconds * float64(time.Second))}
	switch {
	case t.Prompt == "":
		return Task{}, fmt.Errorf("task %s: task.json: no prompt", dir)
	case t.Check == "":
		return Task{}, fmt.Errorf("task %s: task.json: no check command", dir)
	case f.TimeoutSeconds < 0:
		return Task{}, fmt.Errorf("task %s: task.json: timeout_seconds %v is negative", dir, f.TimeoutSeconds)
	}
	if t.Timeout == 0 {
		t.Timeout = DefaultTimeout
	}
	if fi, err := os.Stat(filepath.Join(dir, "files")); err != nil || !fi.IsDir() {
		return Task{}, fmt.Errorf("task %s: no files/ directory", dir)
	}
	return t, nil
}

// LoadSuite reads a suite: dir is one task (it holds task.json) or a
// directory of tasks (each subdirectory with task.json), in name order.
// only, when not empty, keeps the tasks it names.
func LoadSuite(dir string, only ...string) ([]Task, error) {
	if _, err := os.Stat(filepath.Join(dir, "task.json")); err == nil {
		t, err := Load(dir)
		if err != nil {
			return nil, err
		}
		return []Task{t}, nil
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", dir, err)
	}
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var out []Task
	for _, e := range es {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "task.json")); err != nil {
			continue
		}
		if len(only) > 0 && !want[e.Name()] {
			continue
		}
		delete(want, e.Name())
		t, err := Load(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(want) > 0 {
		var missing []string
		for n := range want {
			missing = append(missing, n)
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("suite %s: no task %s", dir, strings.Join(missing, ", "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("suite %s: %w", dir, ErrNoTasks)
	}
	return out, nil
}

// copyTree copies the regular files and directories under src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, fi.Mode().Perm()|0o200)
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
	})
}

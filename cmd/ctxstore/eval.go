package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/eval/task"
)

// evalCmd runs a harness (Pi, Claude Code) on a task suite against a model
// endpoint, with and without ctxstore (docs/eval.md).
type evalCmd struct {
	Suite      string   `name:"suite" placeholder:"DIR" help:"The task suite: a directory of tasks (each with task.json and files/) or one task (default: eval/tasks of the ctxstore checkout, found from the working directory or the binary)."`
	Tasks      []string `name:"task" placeholder:"NAME" help:"Only this task of the suite (repeatable)."`
	Endpoint   string   `name:"endpoint" required:"" placeholder:"URL" help:"The model endpoint's base URL: https://api.anthropic.com (or any Anthropic-compatible server) with --api anthropic; the URL before /chat/completions (e.g. http://127.0.0.1:8080/v1) with --api openai."`
	API        string   `name:"api" default:"anthropic" enum:"anthropic,openai" help:"The endpoint's API: anthropic (Messages) or openai (chat completions)."`
	Model      string   `name:"model" required:"" placeholder:"ID" help:"The model id sent to the endpoint."`
	KeyEnv     string   `name:"key-env" default:"auto" placeholder:"NAME" help:"The environment variable holding the API key (Pi reads it; it is written nowhere): auto is ANTHROPIC_API_KEY or OPENAI_API_KEY by --api when set, else no key (a local server); none sends no key."`
	Arms       []string `name:"arms" sep:"," default:"pi,pi+ctxstore" placeholder:"ARM,..." help:"The arms to run, in order: pi (Pi alone), pi+ctxstore (Pi with ctxstore's extension and service), claude-code (Claude Code alone), claude-code+ctxstore (Claude Code through ctxstore claude-code run)."`
	Pi         string   `name:"pi" default:"pi" placeholder:"CMD" help:"Pi: its executable, or its cli.js (run with --node)."`
	Claude     string   `name:"claude" default:"claude" placeholder:"PATH" help:"The Claude Code executable, for the Claude Code arms."`
	Node       string   `name:"node" default:"node" placeholder:"PATH" help:"The node that runs Pi's cli.js (Pi 1.x needs Node >= 22.19)."`
	Extension  string   `name:"extension" placeholder:"FILE" help:"ctxstore's Pi extension, integrations/pi/index.ts of the checkout (default: found from the working directory or the binary)."`
	Out        string   `name:"out" placeholder:"DIR" help:"Where the runs are kept, OUT/TASK/ARM: work directory, Pi's session and output, the service's store (default .ctxstore/eval/TIME)."`
	ServeArgs  []string `name:"serve-arg" placeholder:"ARG" help:"One more argument for the ctxstore service of the ctxstore arm (repeatable, e.g. --serve-arg=--preview-tokens=400)."`
	Window     int      `name:"context-window" default:"200000" help:"The model's context window in tokens, as Pi is told."`
	MaxTokens  int      `name:"max-tokens" default:"8192" help:"The most output tokens per call, as Pi is told."`
	PriceIn    float64  `name:"price-input" default:"3" help:"Dollars per million uncached input tokens."`
	PriceOut   float64  `name:"price-output" default:"15" help:"Dollars per million output tokens."`
	PriceRead  float64  `name:"price-cache-read" default:"0.3" help:"Dollars per million tokens read from the prompt cache."`
	PriceWrite float64  `name:"price-cache-write" default:"3.75" help:"Dollars per million tokens written to the prompt cache."`
}

// Run implements eval.
func (c *evalCmd) Run(a *app) error {
	known := map[string]task.Arm{}
	var names []string
	for _, x := range task.AllArms() {
		known[x.Name] = x
		names = append(names, x.Name)
	}
	var arms []task.Arm
	for _, n := range c.Arms {
		x, ok := known[strings.TrimSpace(n)]
		if !ok {
			return usagef("--arms: unknown arm %q (known: %s)", n, strings.Join(names, ", "))
		}
		arms = append(arms, x)
	}
	suite := c.Suite
	if suite == "" {
		if suite = findInCheckout(filepath.Join("eval", "tasks")); suite == "" {
			return usagef("--suite: no eval/tasks found from the working directory or the binary; name the suite")
		}
	}
	tasks, err := task.LoadSuite(suite, c.Tasks...)
	if err != nil {
		return err
	}
	ext := c.Extension
	needExt := false
	for _, x := range arms {
		needExt = needExt || x.Ctxstore && x.Harness == task.HarnessPi
	}
	if ext == "" && needExt {
		if ext = findInCheckout(filepath.Join("integrations", "pi", "index.ts")); ext == "" {
			return usagef("--extension: integrations/pi/index.ts not found from the working directory or the binary; name it")
		}
	}
	keyEnv := c.KeyEnv
	switch keyEnv {
	case "none":
		keyEnv = ""
	case "auto":
		keyEnv = map[string]string{task.APIAnthropic: "ANTHROPIC_API_KEY", task.APIOpenAI: "OPENAI_API_KEY"}[c.API]
		if os.Getenv(keyEnv) == "" {
			fmt.Fprintf(a.stderr, "eval: %s is not set: the requests carry no key\n", keyEnv)
			keyEnv = ""
		}
	}
	pi := []string{c.Pi}
	if strings.HasSuffix(c.Pi, ".js") || strings.HasSuffix(c.Pi, ".mjs") {
		pi = []string{c.Node, c.Pi}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	out := c.Out
	if out == "" {
		out = filepath.Join(".ctxstore", "eval", time.Now().UTC().Format("20060102-150405"))
	}
	rep, err := task.Run(a.ctx, task.Options{
		Tasks: tasks, Arms: arms, Pi: pi, Extension: ext, Claude: c.Claude, Ctxstore: []string{self}, ServeArgs: c.ServeArgs, Out: out,
		Endpoint: task.Endpoint{URL: c.Endpoint, API: c.API, Model: c.Model, KeyEnv: keyEnv, ContextWindow: c.Window, MaxTokens: c.MaxTokens},
		Prices:   task.Prices{Input: c.PriceIn, Output: c.PriceOut, CacheRead: c.PriceRead, CacheWrite: c.PriceWrite},
		Progress: a.stderr,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "eval: runs kept in %s\n", out)
	if a.cli.JSON {
		return a.printJSON(rep)
	}
	return task.WriteText(a.stdout, rep)
}

// findInCheckout finds rel in the ctxstore checkout: under the working
// directory or one of its parents, else beside the binary's directory
// (bin/ctxstore of a checkout); "" when neither has it.
func findInCheckout(rel string) string {
	var roots []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			roots = append(roots, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		roots = append(roots, filepath.Dir(filepath.Dir(exe)))
	}
	for _, r := range roots {
		p := filepath.Join(r, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

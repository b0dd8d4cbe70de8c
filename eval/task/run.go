package task

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/eval/replay"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/store"
)

// Arm is one way of running a harness: without ctxstore (the harness's
// own context handling) or with ctxstore managing its context.
type Arm struct {
	Name string `json:"name"`
	// Harness is HarnessPi (the default) or HarnessClaudeCode.
	Harness  string `json:"harness"`
	Ctxstore bool   `json:"ctxstore"`
}

// Harnesses an arm runs.
const (
	HarnessPi         = "pi"
	HarnessClaudeCode = "claude-code"
)

func (a Arm) harness() string {
	if a.Harness == "" {
		return HarnessPi
	}
	return a.Harness
}

// DefaultArms are the two arms compared by default: "pi" (Pi alone) and
// "pi+ctxstore" (Pi with ctxstore's extension and a ctxstore service).
func DefaultArms() []Arm {
	return []Arm{{Name: "pi", Harness: HarnessPi}, {Name: "pi+ctxstore", Harness: HarnessPi, Ctxstore: true}}
}

// AllArms are DefaultArms and the Claude Code arms: "claude-code" (Claude
// Code alone) and "claude-code+ctxstore" (Claude Code through `ctxstore
// claude-code run`: the managed proxy and the hooks).
func AllArms() []Arm {
	return append(DefaultArms(), Arm{Name: "claude-code", Harness: HarnessClaudeCode},
		Arm{Name: "claude-code+ctxstore", Harness: HarnessClaudeCode, Ctxstore: true})
}

// API names of Endpoint.API.
const (
	APIAnthropic = "anthropic" // Anthropic's Messages API (POST {URL}/v1/messages)
	APIOpenAI    = "openai"    // OpenAI's chat completions (POST {URL}/chat/completions)
)

// ArmHeader is the request header naming the arm on every model request,
// so that a proxy or a log in front of the endpoint can tell the arms
// apart.
const ArmHeader = "X-Ctxstore-Eval-Arm"

// Endpoint is the model the harness is run against.
type Endpoint struct {
	// URL is the API's base URL: https://api.anthropic.com for Anthropic's
	// API, the URL before /chat/completions (ending in /v1) for an
	// OpenAI-compatible one.
	URL string `json:"url"`
	// API is APIAnthropic or APIOpenAI.
	API string `json:"api"`
	// Model is the model id sent.
	Model string `json:"model"`
	// KeyEnv names the environment variable holding the API key (the key
	// itself is never written anywhere: Pi reads the variable); "" sends a
	// placeholder key (a local server that needs none).
	KeyEnv string `json:"key_env,omitempty"`
	// ContextWindow and MaxTokens describe the model to the harness
	// (defaults 200,000 and 8,192).
	ContextWindow int `json:"context_window"`
	MaxTokens     int `json:"max_tokens"`
}

// Prices are the model's prices in dollars per million tokens.
type Prices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// Cost prices token counts.
func (p Prices) Cost(t Tokens) float64 {
	return (float64(t.Input)*p.Input + float64(t.Output)*p.Output + float64(t.CacheRead)*p.CacheRead + float64(t.CacheWrite)*p.CacheWrite) / 1e6
}

// Options configure Run.
type Options struct {
	Tasks    []Task
	Arms     []Arm // default DefaultArms()
	Endpoint Endpoint
	Prices   Prices
	// Pi is the command that runs Pi (its executable, or node and Pi's
	// cli.js).
	Pi []string
	// Extension is ctxstore's Pi extension (integrations/pi/index.ts),
	// loaded by the Pi arm with ctxstore.
	Extension string
	// Claude is the Claude Code executable, for the Claude Code arms.
	Claude string
	// Ctxstore is the command that runs ctxstore: the Pi arm with ctxstore
	// starts `Ctxstore --store sqlite:RUN/store.db serve --addr
	// 127.0.0.1:0 --root RUN` for each run, with ServeArgs after; the
	// Claude Code arm with ctxstore runs Claude Code through `Ctxstore
	// claude-code run`.
	Ctxstore  []string
	ServeArgs []string
	// Out is the directory the runs are kept in: OUT/TASK/ARM/ holds the
	// work directory, Pi's session, its output, the service's store.
	Out string
	// Env is more environment for Pi, the service and the checks.
	Env []string
	// Progress, when set, is told of each run as it starts and ends.
	Progress io.Writer
}

// Tokens are token counts as the endpoint reported them.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// Sent is the input tokens sent: uncached, read from the cache, written.
func (t Tokens) Sent() int64 { return t.Input + t.CacheRead + t.CacheWrite }

func (t *Tokens) add(o Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
}

// Result is one task run under one arm.
type Result struct {
	Task string `json:"task"`
	Arm  string `json:"arm"`
	// Solved: the check passed after the agent stopped.
	Solved bool `json:"solved"`
	// CheckOutput is the end of the check's output after the run.
	CheckOutput string `json:"check_output,omitempty"`
	// AgentExit is the harness's exit status; TimedOut says it was
	// stopped at the task's time limit.
	AgentExit int  `json:"agent_exit"`
	TimedOut  bool `json:"timed_out,omitempty"`
	// Calls counts the model calls the session recorded; Tokens sums
	// their usage and CostUSD prices it.
	Calls   int     `json:"calls"`
	Tokens  Tokens  `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	// FaultStrategy is what the fault rule replayed the session under
	// (what the arm's model was shown); Checked, Faults and FaultCalls
	// are its counts (docs/replay.md, "Faults").
	FaultStrategy string `json:"fault_strategy,omitempty"`
	Checked       int    `json:"checked"`
	Faults        int    `json:"faults"`
	FaultCalls    int    `json:"fault_calls"`
	// Dir is the run's directory; Session the harness's session file.
	Dir     string `json:"dir"`
	Session string `json:"session,omitempty"`
	// Error says what went wrong around the agent (the run counts as
	// unsolved).
	Error string `json:"error,omitempty"`
}

// Totals sum an arm's runs.
type Totals struct {
	Arm        string  `json:"arm"`
	Tasks      int     `json:"tasks"`
	Solved     int     `json:"solved"`
	Calls      int     `json:"calls"`
	Tokens     Tokens  `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	Checked    int     `json:"checked"`
	Faults     int     `json:"faults"`
	FaultCalls int     `json:"fault_calls"`
	// FaultRuns counts the runs whose faults were measured (Result.FaultStrategy set).
	FaultRuns int `json:"fault_runs"`
}

// Report is a whole evaluation.
type Report struct {
	Endpoint Endpoint  `json:"endpoint"`
	Prices   Prices    `json:"prices"`
	Started  time.Time `json:"started"`
	Results  []Result  `json:"results"`
	Arms     []Totals  `json:"arms"`
}

// ErrCheckPasses: a task's check passes on its files before the agent
// runs, so solving it would prove nothing.
var ErrCheckPasses = errors.New("the check passes before the agent runs")

// Run runs every task under every arm, one run at a time, and returns
// the report. An error around one run (the service not starting, no
// session written) is kept in its Result; a task whose check passes
// before the agent runs, or options that cannot work, end the whole run.
func Run(ctx context.Context, o Options) (*Report, error) {
	if len(o.Arms) == 0 {
		o.Arms = DefaultArms()
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	rep := &Report{Endpoint: o.Endpoint, Prices: o.Prices, Started: time.Now().UTC()}
	for _, t := range o.Tasks {
		for _, a := range o.Arms {
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "eval: %s under %s\n", t.Name, a.Name)
			}
			r, err := o.runOne(ctx, t, a)
			if err != nil {
				return rep, err
			}
			if o.Progress != nil {
				state := "unsolved"
				if r.Solved {
					state = "solved"
				}
				fmt.Fprintf(o.Progress, "eval: %s under %s: %s, %d calls, %d tokens sent, $%.4f, %d faults%s\n",
					t.Name, a.Name, state, r.Calls, r.Tokens.Sent(), r.CostUSD, r.Faults, map[bool]string{true: " (" + r.Error + ")"}[r.Error != ""])
			}
			rep.Results = append(rep.Results, r)
		}
	}
	rep.Arms = totals(o.Arms, rep.Results)
	return rep, nil
}

func (o *Options) check() error {
	e := &o.Endpoint
	switch {
	case len(o.Tasks) == 0:
		return ErrNoTasks
	case e.URL == "":
		return errors.New("eval: no endpoint URL")
	case e.API != APIAnthropic && e.API != APIOpenAI:
		return fmt.Errorf("eval: API %q: want %s or %s", e.API, APIAnthropic, APIOpenAI)
	case e.Model == "":
		return errors.New("eval: no model")
	case o.Out == "":
		return errors.New("eval: no output directory")
	}
	if e.ContextWindow <= 0 {
		e.ContextWindow = 200000
	}
	if e.MaxTokens <= 0 {
		e.MaxTokens = 8192
	}
	if e.KeyEnv != "" && os.Getenv(e.KeyEnv) == "" {
		return fmt.Errorf("eval: the key's variable %s is empty", e.KeyEnv)
	}
	seen := map[string]bool{}
	for _, a := range o.Arms {
		if a.Name == "" || strings.ContainsAny(a.Name, `/\`) || seen[a.Name] {
			return fmt.Errorf("eval: arm name %q: want a unique name without slashes", a.Name)
		}
		seen[a.Name] = true
		switch a.harness() {
		case HarnessPi:
			if len(o.Pi) == 0 {
				return fmt.Errorf("eval: arm %s: no command to run Pi", a.Name)
			}
			if a.Ctxstore && (o.Extension == "" || len(o.Ctxstore) == 0) {
				return fmt.Errorf("eval: arm %s runs with ctxstore: it needs the Pi extension and the ctxstore command", a.Name)
			}
		case HarnessClaudeCode:
			if o.Claude == "" {
				return fmt.Errorf("eval: arm %s: no Claude Code executable", a.Name)
			}
			if e.API != APIAnthropic {
				return fmt.Errorf("eval: arm %s: Claude Code speaks only Anthropic's API", a.Name)
			}
			if a.Ctxstore && len(o.Ctxstore) == 0 {
				return fmt.Errorf("eval: arm %s runs with ctxstore: it needs the ctxstore command", a.Name)
			}
		default:
			return fmt.Errorf("eval: arm %s: unknown harness %q", a.Name, a.Harness)
		}
	}
	if o.Extension != "" {
		if _, err := os.Stat(o.Extension); err != nil {
			return fmt.Errorf("eval: ctxstore's Pi extension: %w", err)
		}
	}
	return nil
}

// provider is the provider name the runs give the endpoint in Pi.
const provider = "ctxstore-eval"

// runOne runs task t under arm a in OUT/TASK/ARM.
func (o *Options) runOne(ctx context.Context, t Task, a Arm) (Result, error) {
	dir, err := filepath.Abs(filepath.Join(o.Out, t.Name, a.Name))
	if err != nil {
		return Result{}, err
	}
	r := Result{Task: t.Name, Arm: a.Name, Dir: dir}
	if err := os.RemoveAll(dir); err != nil {
		return r, err
	}
	work, agent, sessions := filepath.Join(dir, "work"), filepath.Join(dir, "agent"), filepath.Join(dir, "sessions")
	for _, d := range []string{work, agent, sessions} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return r, err
		}
	}
	if err := copyTree(filepath.Join(t.Dir, "files"), work); err != nil {
		return r, fmt.Errorf("task %s: %w", t.Name, err)
	}
	if ok, out, err := o.runCheck(ctx, t, work); err != nil {
		return r, fmt.Errorf("task %s: running its check: %w", t.Name, err)
	} else if ok {
		return r, fmt.Errorf("task %s: %w (%q)\n%s", t.Name, ErrCheckPasses, t.Check, out)
	}
	if a.harness() == HarnessClaudeCode {
		return o.runClaudeCode(ctx, t, a, r)
	}
	if err := o.writeModels(agent, a); err != nil {
		return r, err
	}
	env := append(os.Environ(), o.Env...)
	env = append(env, "PI_CODING_AGENT_DIR="+agent, "PI_OFFLINE=1", "CTXSTORE_TOKEN=")
	args := append([]string{}, o.Pi[1:]...)
	args = append(args, "--no-extensions")
	if a.Ctxstore {
		srv, err := o.startServe(ctx, dir)
		if err != nil {
			r.Error = err.Error()
			return r, nil
		}
		defer srv.stop()
		env = append(env, "CTXSTORE_SERVICE_URL="+srv.url)
		args = append(args, "-e", o.Extension)
	}
	args = append(args, "--provider", provider, "--model", o.Endpoint.Model, "--session-dir", sessions,
		"--no-context-files", "--no-skills", "--no-prompt-templates", "-p", "--", t.Prompt)
	r.AgentExit, r.TimedOut, err = o.runAgent(ctx, t, work, env, args, filepath.Join(dir, "pi.log"))
	if err != nil {
		r.Error = err.Error()
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	ok, out, err := o.runCheck(ctx, t, work)
	if err != nil {
		return r, fmt.Errorf("task %s: running its check: %w", t.Name, err)
	}
	r.Solved, r.CheckOutput = ok, out
	if err := o.measure(ctx, &r, a, filepath.Join(sessions, "*.jsonl")); err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	return r, nil
}

// writeModels writes the agent directory's models.json: the endpoint as
// provider "ctxstore-eval", with the arm named in a request header.
func (o *Options) writeModels(agent string, a Arm) error {
	e := o.Endpoint
	api := "anthropic-messages"
	if e.API == APIOpenAI {
		api = "openai-completions"
	}
	key := "none"
	if e.KeyEnv != "" {
		key = "$" + e.KeyEnv
	}
	m := map[string]any{"providers": map[string]any{provider: map[string]any{
		"baseUrl": e.URL, "api": api, "apiKey": key,
		"headers": map[string]any{ArmHeader: a.Name},
		"models": []any{map[string]any{
			"id": e.Model, "name": e.Model, "reasoning": false, "input": []string{"text"},
			"cost":          map[string]any{"input": o.Prices.Input, "output": o.Prices.Output, "cacheRead": o.Prices.CacheRead, "cacheWrite": o.Prices.CacheWrite},
			"contextWindow": e.ContextWindow, "maxTokens": e.MaxTokens,
		}},
	}}}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(agent, "models.json"), b, 0o600)
}

// runCheck runs the task's check in work: passed, the end of its output.
func (o *Options) runCheck(ctx context.Context, t Task, work string) (bool, string, error) {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", t.Check)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), o.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	tail := out.String()
	if len(tail) > 2000 {
		tail = "…" + strings.ToValidUTF8(tail[len(tail)-2000:], "")
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, tail, nil
	case ctx.Err() != nil:
		return false, tail + "\n(the check did not end within " + CheckTimeout.String() + ")", nil
	case errors.As(err, &ee):
		return false, tail, nil
	default:
		return false, tail, err
	}
}

// runAgent runs Pi in work until it exits or the task's time is up (then
// its process group is killed); its output goes to logFile.
func (o *Options) runAgent(ctx context.Context, t Task, work string, env, args []string, logFile string) (exit int, timedOut bool, err error) {
	return runHarness(ctx, t, work, env, o.Pi[0], args, logFile, "Pi")
}

// runHarness runs the harness command name args in work until it exits or
// the task's time is up (then its process group is killed); its output
// goes to logFile.
func runHarness(ctx context.Context, t Task, work string, env []string, name string, args []string, logFile, harness string) (exit int, timedOut bool, err error) {
	log, err := os.Create(logFile)
	if err != nil {
		return -1, false, err
	}
	defer log.Close()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return -1, false, fmt.Errorf("starting %s: %w", harness, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(t.Timeout)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
	}
	if timedOut || ctx.Err() != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, timedOut, nil
	case errors.As(err, &ee):
		if timedOut {
			return ee.ExitCode(), true, fmt.Errorf("%s did not finish within %s", harness, t.Timeout)
		}
		return ee.ExitCode(), false, fmt.Errorf("%s exited with status %d (see %s)", harness, ee.ExitCode(), logFile)
	default:
		return -1, timedOut, err
	}
}

// service is a running `ctxstore serve`.
type service struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

// startServe starts ctxstore's service for a run in dir, on a free
// loopback port, its store in dir.
func (o *Options) startServe(ctx context.Context, dir string) (*service, error) {
	args := append(append([]string{}, o.Ctxstore[1:]...), "--store", "sqlite:"+filepath.Join(dir, "store.db"),
		"serve", "--addr", "127.0.0.1:0", "--root", dir)
	args = append(args, o.ServeArgs...)
	cmd := exec.Command(o.Ctxstore[0], args...)
	cmd.Env = append(append(os.Environ(), o.Env...), "CTXSTORE_TOKEN=")
	log, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting ctxstore serve: %w", err)
	}
	s := &service{cmd: cmd, done: make(chan error, 1)}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(l)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		s.done <- cmd.Wait()
		log.Close()
	}()
	select {
	case s.url = <-line:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	if !strings.HasPrefix(s.url, "http") {
		s.stop()
		return nil, fmt.Errorf("ctxstore serve printed no URL (see %s)", filepath.Join(dir, "serve.log"))
	}
	return s, nil
}

// stop ends the service with SIGTERM (SIGKILL after 30 seconds).
func (s *service) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// measure reads the run's session file (the one file pattern matches):
// its calls, their usage and cost, and its faults under the strategy the
// arm's model was shown.
func (o *Options) measure(ctx context.Context, r *Result, a Arm, pattern string) error {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("the harness wrote %d session files (%s), want 1", len(files), pattern)
	}
	r.Session = files[0]
	f, err := os.Open(files[0])
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := transcript.Reader{Formats: formats.Registry()}.Read(f, transcript.FormatAuto)
	if err != nil {
		return fmt.Errorf("reading Pi's session: %w", err)
	}
	transcript.Named(s, files[0])
	for _, m := range s.Messages {
		if m.Usage == nil {
			continue
		}
		r.Calls++
		r.Tokens.add(Tokens{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite})
	}
	r.CostUSD = o.Prices.Cost(r.Tokens)
	if r.Calls == 0 {
		return nil
	}
	// The fault rule on the run's own transcript, under what its model was
	// shown: the whole history for a harness alone, ctxstore's stream with
	// the bare head (the Pi extension's default) for Pi with ctxstore, and
	// the proxy's managed mode (the replay runs its code) for Claude Code
	// through ctxstore claude-code run.
	var st replay.Strategy = &replay.Naive{}
	if a.Ctxstore {
		switch a.harness() {
		case HarnessPi:
			st = &replay.Ctxstore{Layout: assemble.LayoutStream, BareHead: true, Label: "ctxstore_stream_bare_head"}
		default:
			st = &replay.ClaudeCodeManaged{}
		}
	}
	rd := filepath.Join(r.Dir, "replay")
	if err := os.MkdirAll(rd, 0o755); err != nil {
		return err
	}
	rep, err := replay.Run(ctx, s, replay.Options{Strategies: []replay.Strategy{st}, Counter: replay.NewCounter(tokens.Default()), Dir: rd,
		OpenStore: func(ctx context.Context, dir string) (store.Store, error) {
			return bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
		}})
	if err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	for _, res := range rep.Results {
		if res.Strategy == st.Name() {
			r.FaultStrategy, r.Checked, r.Faults, r.FaultCalls = st.Name(), res.Totals.Checked, res.Totals.Faults, res.Totals.FaultCalls
		}
	}
	return nil
}

// totals sums the results per arm, in the arms' order.
func totals(arms []Arm, rs []Result) []Totals {
	var out []Totals
	for _, a := range arms {
		t := Totals{Arm: a.Name}
		for _, r := range rs {
			if r.Arm != a.Name {
				continue
			}
			t.Tasks++
			if r.Solved {
				t.Solved++
			}
			t.Calls += r.Calls
			t.Tokens.add(r.Tokens)
			t.CostUSD += r.CostUSD
			t.Checked += r.Checked
			t.Faults += r.Faults
			t.FaultCalls += r.FaultCalls
			if r.FaultStrategy != "" {
				t.FaultRuns++
			}
		}
		out = append(out, t)
	}
	return out
}

package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The inputs below are what Claude Code 2.1.330 sent its hooks in a real
// run (tests/claudecode_live_test.go drives the CLI itself), shortened.
const (
	transcript     = "/home/u/.claude/projects/-tmp-p/1b215f15-2004-4a60-8fdd-eb9990bef4fb.jsonl"
	inPostToolUse  = `{"session_id":"1b215f15-2004-4a60-8fdd-eb9990bef4fb","transcript_path":"` + transcript + `","cwd":"/tmp/p","prompt_id":"7df2529f","permission_mode":"default","effort":{"level":"medium"},"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"echo main","description":"echo"},"tool_response":{"stdout":"main","stderr":"","interrupted":false},"tool_use_id":"toolu_main_bash","duration_ms":46}`
	inSubagentTool = `{"session_id":"1b215f15-2004-4a60-8fdd-eb9990bef4fb","transcript_path":"` + transcript + `","cwd":"/tmp/p","agent_id":"a3c53bebb67c69172","agent_type":"general-purpose","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"echo sub"},"tool_use_id":"toolu_sub_bash"}`
	inSubagentStop = `{"session_id":"1b215f15-2004-4a60-8fdd-eb9990bef4fb","transcript_path":"` + transcript + `","cwd":"/tmp/p","agent_id":"a3c53bebb67c69172","agent_type":"general-purpose","hook_event_name":"SubagentStop","stop_hook_active":false,"agent_transcript_path":"/home/u/.claude/projects/-tmp-p/1b215f15-2004-4a60-8fdd-eb9990bef4fb/subagents/agent-a3c53bebb67c69172.jsonl","last_assistant_message":"SUB DONE"}`
	inPreCompact   = `{"session_id":"1b215f15-2004-4a60-8fdd-eb9990bef4fb","transcript_path":"` + transcript + `","cwd":"/tmp/p","hook_event_name":"PreCompact","trigger":"manual","custom_instructions":""}`
)

func TestPlan(t *testing.T) {
	sub := "/home/u/.claude/projects/-tmp-p/1b215f15-2004-4a60-8fdd-eb9990bef4fb/subagents/agent-a3c53bebb67c69172.jsonl"
	for _, tc := range []struct {
		in   string
		want Checkpoint
	}{
		{inPostToolUse, Checkpoint{Event: "PostToolUse", Session: "1b215f15-2004-4a60-8fdd-eb9990bef4fb", Transcript: transcript, Await: `"id":"toolu_main_bash"`, AwaitIn: transcript}},
		{inSubagentTool, Checkpoint{Event: "PostToolUse", Session: "1b215f15-2004-4a60-8fdd-eb9990bef4fb", Transcript: transcript, Agent: "a3c53bebb67c69172", AgentTranscript: sub, Await: `"id":"toolu_sub_bash"`, AwaitIn: sub}},
		{inSubagentStop, Checkpoint{Event: "SubagentStop", Session: "1b215f15-2004-4a60-8fdd-eb9990bef4fb", Transcript: transcript, Agent: "a3c53bebb67c69172", AgentTranscript: sub, Subagents: true, Await: "SUB DONE", AwaitIn: sub}},
		{inPreCompact, Checkpoint{Event: "PreCompact", Session: "1b215f15-2004-4a60-8fdd-eb9990bef4fb", Transcript: transcript, Compaction: "manual", Subagents: true, Await: `"content":"/compact`, AwaitIn: transcript}},
	} {
		in, err := ParseInput(strings.NewReader(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Plan(in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Plan(%.60s…) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{"session_id":"s1","transcript_path":"/t.jsonl"}`, "no hook_event_name"},
		{`{"hook_event_name":"Stop","session_id":"../../etc","transcript_path":"/t.jsonl"}`, `session_id "../../etc"`},
		{`{"hook_event_name":"Stop","session_id":"s1","transcript_path":"t.jsonl"}`, "not an absolute path"},
		{`{"hook_event_name":"Stop","session_id":"s1","transcript_path":"/t.jsonl","agent_id":"a/b"}`, `agent_id "a/b"`},
	} {
		in, err := ParseInput(strings.NewReader(tc.in))
		if err == nil {
			_, err = Plan(in)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := ParseInput(strings.NewReader(`{"session_id": `)); err == nil {
		t.Error("truncated input accepted")
	}
	if _, err := ParseInput(strings.NewReader(strings.Repeat("[", 200) + strings.Repeat("]", 200))); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("deep input: %v", err)
	}
}

type recorder struct {
	mu   sync.Mutex
	got  []Checkpoint
	fail error
}

func (r *recorder) Checkpoint(_ context.Context, c Checkpoint) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, c)
	if r.fail != nil {
		return Result{}, r.fail
	}
	return Result{Via: "recorder", Commits: 1}, nil
}

func TestRunSucceedsSilently(t *testing.T) {
	rec := &recorder{}
	r := Runner{Importer: rec, StateDir: t.TempDir()}
	o := r.Run(context.Background(), strings.NewReader(inPostToolUse))
	if o.Err != nil || o.Output != (Output{}) || o.Notified || len(rec.got) != 1 || o.Result.Commits != 1 {
		t.Fatalf("outcome %+v, recorded %+v", o, rec.got)
	}
	var b strings.Builder
	o.Output.Write(&b)
	if b.Len() != 0 {
		t.Errorf("a successful run printed %q (UserPromptSubmit and SessionStart stdout would reach the model)", b.String())
	}
}

// TestRunTellsOncePerSession: the first failing run of a session prints a
// systemMessage; later ones (in other processes: the mark is a file) print
// nothing; every failure is logged; another session is told again.
func TestRunTellsOncePerSession(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{fail: errors.New("store locked")}
	var told atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Runner{Importer: rec, StateDir: dir}
			o := r.Run(context.Background(), strings.NewReader(inPostToolUse))
			if o.Err == nil {
				t.Error("no error")
			}
			var b strings.Builder
			if err := o.Output.Write(&b); err != nil {
				t.Error(err)
			}
			if o.Notified {
				told.Add(1)
				var out Output
				if err := json.Unmarshal([]byte(b.String()), &out); err != nil || !strings.Contains(out.SystemMessage, "store locked") ||
					!strings.Contains(out.SystemMessage, "Claude Code is unaffected") || !out.SuppressOutput {
					t.Errorf("notice %q: %v", b.String(), err)
				}
			} else if b.Len() != 0 {
				t.Errorf("a later failing run printed %q", b.String())
			}
		}()
	}
	wg.Wait()
	if told.Load() != 1 {
		t.Errorf("told the user %d times, want once", told.Load())
	}
	log, err := os.ReadFile(filepath.Join(dir, "1b215f15-2004-4a60-8fdd-eb9990bef4fb.log"))
	if err != nil || strings.Count(string(log), "PostToolUse: store locked\n") != 8 {
		t.Errorf("log %q: %v", log, err)
	}
	other := strings.ReplaceAll(inPostToolUse, "1b215f15", "2c215f15")
	if o := (Runner{Importer: rec, StateDir: dir}).Run(context.Background(), strings.NewReader(other)); !o.Notified {
		t.Error("another session was not told")
	}
}

func TestRunNeverPanicsOrFailsOnBadInput(t *testing.T) {
	dir := t.TempDir()
	panicky := importerFunc(func(context.Context, Checkpoint) (Result, error) { panic("boom") })
	for i, in := range []string{"", "not json", `{"hook_event_name":"Stop"}`} {
		o := Runner{Importer: &recorder{}, StateDir: dir}.Run(context.Background(), strings.NewReader(in))
		if o.Err == nil {
			t.Errorf("%q: no error", in)
		}
		if (i == 0) != o.Notified { // one unknown-session mark for all three
			t.Errorf("%q: notified %v", in, o.Notified)
		}
	}
	o := Runner{Importer: panicky, StateDir: t.TempDir()}.Run(context.Background(), strings.NewReader(inPostToolUse))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "boom") || !o.Notified {
		t.Errorf("panicking importer: %+v", o)
	}
}

type importerFunc func(context.Context, Checkpoint) (Result, error)

func (f importerFunc) Checkpoint(ctx context.Context, c Checkpoint) (Result, error) { return f(ctx, c) }

func TestFallback(t *testing.T) {
	var calls []string
	down := importerFunc(func(context.Context, Checkpoint) (Result, error) {
		calls = append(calls, "service")
		return Result{}, fmt.Errorf("service: %w", ErrUnreachable)
	})
	broken := importerFunc(func(context.Context, Checkpoint) (Result, error) {
		calls = append(calls, "service")
		return Result{}, errors.New("500 Internal Server Error")
	})
	st := importerFunc(func(context.Context, Checkpoint) (Result, error) {
		calls = append(calls, "store")
		return Result{Via: "store"}, nil
	})
	if r, err := (Fallback{down, st}).Checkpoint(context.Background(), Checkpoint{}); err != nil || r.Via != "store" {
		t.Errorf("unreachable service: %v %v", r, err)
	}
	if _, err := (Fallback{broken, st}).Checkpoint(context.Background(), Checkpoint{}); err == nil {
		t.Error("a service that answers with an error fell back to the store")
	}
	if fmt.Sprint(calls) != "[service store service]" {
		t.Errorf("calls %v", calls)
	}
}

// TestRunSaysRecoveredOnce: after a failure the user was told of, the
// first successful run says the session is recorded again; later ones and
// sessions that never failed say nothing.
func TestRunSaysRecoveredOnce(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	if o := (Runner{Importer: rec, StateDir: dir}).Run(context.Background(), strings.NewReader(inPostToolUse)); o.Notified {
		t.Error("a session that never failed was told something")
	}
	rec.fail = errors.New("service down")
	for i := range 3 {
		if o := (Runner{Importer: rec, StateDir: dir}).Run(context.Background(), strings.NewReader(inPostToolUse)); o.Notified != (i == 0) {
			t.Errorf("failure %d: notified %v", i, o.Notified)
		}
	}
	rec.fail = nil
	for i := range 3 {
		o := (Runner{Importer: rec, StateDir: dir}).Run(context.Background(), strings.NewReader(inPostToolUse))
		if o.Notified != (i == 0) || (i == 0) != strings.Contains(o.Output.SystemMessage, "recording this session again") {
			t.Errorf("success %d after failures: %+v", i, o.Output)
		}
	}
}

func TestNeedle(t *testing.T) {
	for in, want := range map[string]string{
		"SUB DONE":                "SUB DONE",
		`He said "hi" \ bye`:      `He said \"hi\" \\ bye`,
		"first line\nsecond":      "first line",
		"Ünïcödé ok <b>":          "Ünïcödé ok ",
		strings.Repeat("x", 100):  strings.Repeat("x", 40),
		"\nstarts with a newline": "",
	} {
		if got := needle(in); got != want {
			t.Errorf("needle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAwaited(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(p, []byte(`{"a":1}`+"\n"), 0o644)
	go func() {
		time.Sleep(50 * time.Millisecond)
		f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(`{"text":"SUB DONE"}` + "\n")
		f.Close()
	}()
	start := time.Now()
	if !Awaited(context.Background(), p, "SUB DONE", time.Second) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("the line written after 50 ms was not awaited (%v)", time.Since(start))
	}
	start = time.Now()
	if Awaited(context.Background(), p, "never", 100*time.Millisecond) || time.Since(start) < 100*time.Millisecond {
		t.Error("a missing line was found, or the wait was cut short")
	}

	// A tool call's line 2 MiB before the end (background agents wrote
	// after it) is found at once, not after the whole limit.
	far := filepath.Join(t.TempDir(), "far.jsonl")
	os.WriteFile(far, append([]byte(`{"id":"toolu_far"}`+"\n"), bytes.Repeat([]byte(`{"x":"`+strings.Repeat("y", 1000)+`"}`+"\n"), 2100)...), 0o644)
	start = time.Now()
	if !Awaited(context.Background(), far, `"id":"toolu_far"`, time.Second) || time.Since(start) > 300*time.Millisecond {
		t.Errorf("a line 2 MiB before the end was not found at once (%v)", time.Since(start))
	}
	// A line written in two pieces, the second after the first look:
	// found across the boundary of what was already read.
	split := filepath.Join(t.TempDir(), "split.jsonl")
	os.WriteFile(split, []byte(`{"id":"toolu_sp`), 0o644)
	go func() {
		time.Sleep(50 * time.Millisecond)
		f, _ := os.OpenFile(split, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(`lit"}` + "\n")
		f.Close()
	}()
	if !Awaited(context.Background(), split, `"id":"toolu_split"`, time.Second) {
		t.Error("a line completed after the first look was not found")
	}
}

// stuck is an importer that ignores its context (a store lock waited for
// once per transaction).
type stuck struct{ d time.Duration }

func (s stuck) Checkpoint(context.Context, Checkpoint) (Result, error) {
	time.Sleep(s.d)
	return Result{}, nil
}

// The hook never runs past its timeout, whatever the importer does: a
// store locked for longer makes the run fail in time (the user told once),
// instead of overrunning the limit Claude Code gives the hook.
func TestRunKeepsItsTimeout(t *testing.T) {
	r := Runner{Importer: stuck{3 * time.Second}, StateDir: t.TempDir(), Timeout: 200 * time.Millisecond}
	start := time.Now()
	o := r.Run(context.Background(), strings.NewReader(inPostToolUse))
	if took := time.Since(start); took > time.Second || o.Err == nil || !strings.Contains(o.Err.Error(), "gave up") {
		t.Fatalf("a stuck importer: %v after %s", o.Err, took)
	}
}

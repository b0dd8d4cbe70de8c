// Package hooks is ctxstore's Claude Code integration (docs/claude-code.md):
// the hook configuration `ctxstore claude-code install` merges into Claude
// Code's settings and removes again (settings.go), and what one run of
// `ctxstore claude-code hook` does with the JSON Claude Code sends it
// (this file): checkpoint the session's transcript, and its subagent's,
// into ctxstore through an Importer, and when that fails say so to the user
// once per session, never breaking the session.
//
// It is harness code on the context floor: it reads Claude Code's files and
// hook input and imports nothing above it; the Importer (the transcript
// import into a store, or a running `ctxstore serve`) is given by the CLI.
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/internal/jsonlimit"
)

// Input is the part of a hook's stdin JSON the hook reads (Claude Code
// 2.1.330; docs/claude-code.md lists what each event sends). Unknown fields
// are ignored.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	Event          string `json:"hook_event_name"`
	// AgentID and AgentType are set in hooks that run inside a subagent
	// (PostToolUse of its tools, SubagentStop).
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
	// AgentTranscriptPath is SubagentStop's subagent transcript.
	AgentTranscriptPath string `json:"agent_transcript_path"`
	// Source is SessionStart's startup, resume, clear or compact.
	Source string `json:"source"`
	// Trigger is PreCompact's manual or auto.
	Trigger   string `json:"trigger"`
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`
	// ToolInput and ToolResponse are PostToolUse's call arguments and the
	// tool's output, in the tool's own shape (what a preview keeps).
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolResponse json.RawMessage `json:"tool_response"`
	// LastAssistantMessage is Stop's and SubagentStop's final answer.
	LastAssistantMessage string `json:"last_assistant_message"`
}

// maxInput bounds the hook's stdin: PostToolUse carries the tool's whole
// response (a file read, a command's output).
const maxInput = 256 << 20

// ParseInput reads one hook input from r.
func ParseInput(r io.Reader) (Input, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return Input{}, fmt.Errorf("reading the hook input: %w", err)
	}
	if len(b) > maxInput {
		return Input{}, fmt.Errorf("hook input: more than %d bytes", maxInput)
	}
	if err := jsonlimit.Depth(b, jsonlimit.MaxDepth); err != nil {
		return Input{}, fmt.Errorf("hook input: %w", err)
	}
	var in Input
	if err := json.Unmarshal(b, &in); err != nil {
		return Input{}, fmt.Errorf("hook input: %w", err)
	}
	return in, nil
}

// isID says whether s may be a session or agent id: Claude Code's are
// UUIDs and hex strings; the ids also name files here, so 1 to 128 of
// [A-Za-z0-9._-], starting with a letter or digit. (Not a regexp: the hook
// is a short-lived process, and compiling one at start costs.)
func isID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// Checkpoint is what one hook run asks the Importer to bring into the
// store: the session's transcript and, inside a subagent, the subagent's.
type Checkpoint struct {
	Event   string
	Session string
	// Transcript is the session's JSON Lines file (absolute).
	Transcript string
	// Agent and AgentTranscript name the subagent the hook ran in, if any:
	// Claude Code 2.1 writes its records to
	// <transcript without .jsonl>/subagents/agent-<agent>.jsonl.
	Agent, AgentTranscript string
	// Compaction is set by PreCompact (manual or auto): the transcript as
	// it was before Claude Code compacts it.
	Compaction string
	// Source is SessionStart's source (startup, resume, clear, compact).
	Source string
	// Subagents asks for every subagent transcript of the session too
	// (Stop, SubagentStop, SessionEnd, PreCompact): a catch-up for
	// subagents whose own hooks failed.
	Subagents bool
	// Await, on Stop and SubagentStop, is the start of the final answer
	// as it appears in the transcript's JSON, and AwaitIn that
	// transcript: Claude Code may run these hooks before it has written
	// the answer's line, so the checkpoint first waits for it (briefly;
	// see AwaitLimit).
	Await, AwaitIn string
	// SpillDir is the session's spill directory when previews are on:
	// the importer keeps there the outputs the preview step spilled as
	// toolcall objects in the store (KeepOutputs): Outputs, the call ids
	// spilled by this run, and on catch-up events (Subagents) every one
	// not yet kept.
	SpillDir string
	Outputs  []string
	// Activated is the call whose output the model read back whole from
	// its spill file with Claude Code's Read, ActivatedBy that Read's own
	// call id, and Time when the hook ran: recorded on the output's object.
	Activated, ActivatedBy string
	Time                   time.Time
}

// isToolUseID says id can stand in a JSON string as it is (letters,
// digits, '_' and '-', as the Messages API's tool-use ids).
func isToolUseID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// manualCompact is how a manual /compact command's line holds it.
const manualCompact = `"content":"/compact`

// AwaitLimit bounds the wait for a final answer's line: past it the
// checkpoint goes ahead, and the next hook brings the line in.
const AwaitLimit = 500 * time.Millisecond

// Plan validates in and says what to checkpoint.
func Plan(in Input) (Checkpoint, error) {
	if in.Event == "" {
		return Checkpoint{}, errors.New("hook input: no hook_event_name")
	}
	if !isID(in.SessionID) {
		return Checkpoint{}, fmt.Errorf("hook input (%s): session_id %q is not an id", in.Event, in.SessionID)
	}
	if in.TranscriptPath == "" || !filepath.IsAbs(in.TranscriptPath) {
		return Checkpoint{}, fmt.Errorf("hook input (%s): transcript_path %q is not an absolute path", in.Event, in.TranscriptPath)
	}
	c := Checkpoint{Event: in.Event, Session: in.SessionID, Transcript: filepath.Clean(in.TranscriptPath), Source: in.Source}
	switch in.Event {
	case "Stop", "SubagentStop", "SessionEnd", "PreCompact":
		c.Subagents = true
	}
	if in.Event == "PreCompact" {
		c.Compaction = in.Trigger
		if c.Compaction == "" {
			c.Compaction = "auto"
		}
		if c.Compaction == "manual" {
			// Claude Code records the /compact command line and runs
			// PreCompact beside writing it (seen once under load: the
			// hook read the file first): wait for it as for a final
			// answer's line.
			c.Await, c.AwaitIn = manualCompact, c.Transcript
		}
	}
	if in.AgentID != "" {
		if !isID(in.AgentID) {
			return Checkpoint{}, fmt.Errorf("hook input (%s): agent_id %q is not an id", in.Event, in.AgentID)
		}
		c.Agent = in.AgentID
		c.AgentTranscript = SubagentTranscript(c.Transcript, in.AgentID)
		if in.AgentTranscriptPath != "" {
			if !filepath.IsAbs(in.AgentTranscriptPath) {
				return Checkpoint{}, fmt.Errorf("hook input (%s): agent_transcript_path %q is not an absolute path", in.Event, in.AgentTranscriptPath)
			}
			c.AgentTranscript = filepath.Clean(in.AgentTranscriptPath)
		}
	}
	if in.Event == "PostToolUse" && isToolUseID(in.ToolUseID) {
		// The tool call's line is written before the hook runs, but not
		// always flushed (seen under load: an asynchronous Agent call's
		// hook, and a subagent's first tool, read the file first). Waiting
		// for it also brings in every line before it, such as an earlier
		// tool's result.
		c.Await = `"id":"` + in.ToolUseID + `"`
		c.AwaitIn = c.Transcript
		if c.AgentTranscript != "" {
			c.AwaitIn = c.AgentTranscript
		}
	}
	if in.LastAssistantMessage != "" && (in.Event == "Stop" || in.Event == "SubagentStop") {
		c.Await = needle(in.LastAssistantMessage)
		c.AwaitIn = c.Transcript
		if in.Event == "SubagentStop" {
			c.AwaitIn = c.AgentTranscript
		}
	}
	return c, nil
}

// needle is the start of text (up to 40 characters, before any character
// JSON encoders escape differently) as it appears inside a JSON string.
func needle(text string) string {
	var b strings.Builder
	n := 0
	for _, r := range text {
		if n == 40 || r < 0x20 || r == 0x2028 || r == 0x2029 || r == '<' || r == '>' || r == '&' || r == utf8.RuneError {
			break
		}
		b.WriteRune(r)
		n++
	}
	if b.Len() == 0 {
		return ""
	}
	enc, _ := json.Marshal(b.String())
	return string(enc[1 : len(enc)-1])
}

// awaitWindow bounds how far back from the end of the file Awaited looks
// for its line at first: a tool call's line is usually among the last, but
// a session whose background agents or parallel tools write in between can
// put it megabytes before the end (seen: 1.3 MB in a dataset session).
const awaitWindow = 16 << 20

// Awaited waits until the file at path holds s (in its last awaitWindow
// bytes at the first look, then in what the file gained), at most limit; it
// says whether it found it.
func Awaited(ctx context.Context, path, s string, limit time.Duration) bool {
	if s == "" || path == "" {
		return true
	}
	deadline := time.Now().Add(limit)
	var seen int64 = -1
	for {
		if found, size := holdsSince(path, s, seen); found {
			return true
		} else if size >= 0 {
			seen = size
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// holdsSince says whether the file at path holds s after offset from (the
// last awaitWindow bytes when from is negative; a match may begin up to
// len(s) before from), and the file's size (-1 when it cannot be read).
func holdsSince(path, s string, from int64) (bool, int64) {
	f, err := os.Open(path)
	if err != nil {
		return false, -1
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, -1
	}
	size := st.Size()
	off := max(size-awaitWindow, 0)
	if from >= 0 {
		off = max(from-int64(len(s)), 0)
	}
	if off >= size {
		return false, size
	}
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return false, -1
	}
	return strings.Contains(string(b), s), size
}

// SubagentDir is where Claude Code 2.1 writes the subagent transcripts of
// the session whose transcript is transcript.
func SubagentDir(transcript string) string {
	return filepath.Join(strings.TrimSuffix(transcript, ".jsonl"), "subagents")
}

// SubagentTranscript is where Claude Code 2.1 writes the records of
// subagent agent of the session whose transcript is transcript.
func SubagentTranscript(transcript, agent string) string {
	return filepath.Join(SubagentDir(transcript), "agent-"+agent+".jsonl")
}

// Importer brings a checkpoint into ctxstore. Implementations: the
// transcript import into a store, a running `ctxstore serve`, and
// Fallback of the two.
type Importer interface {
	Checkpoint(ctx context.Context, c Checkpoint) (Result, error)
}

// Result says what one checkpoint added.
type Result struct {
	// Via names where it went ("service http://…", "store sqlite:…").
	Via string `json:"via"`
	// Commits is the number of context commits written (0: nothing new).
	Commits int `json:"commits"`
	// Outputs is the number of spilled outputs and activations written
	// into the store (KeepOutputs).
	Outputs int `json:"outputs,omitempty"`
	// Detail is the importer's own summary, for the log.
	Detail string `json:"detail,omitempty"`
}

// ErrUnreachable marks an Importer error that means "not there" (no
// service listening), on which Fallback tries the next importer.
var ErrUnreachable = errors.New("unreachable")

// Fallback tries each importer in turn while they fail with ErrUnreachable.
type Fallback []Importer

// Checkpoint implements Importer.
func (f Fallback) Checkpoint(ctx context.Context, c Checkpoint) (Result, error) {
	var errs []error
	for _, im := range f {
		r, err := im.Checkpoint(ctx, c)
		if err == nil || !errors.Is(err, ErrUnreachable) {
			return r, err
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return Result{}, errors.New("no importer configured")
	}
	return Result{}, errors.Join(errs...)
}

// Runner runs the hook.
type Runner struct {
	Importer Importer
	// StateDir holds, per session, the failure log and the mark that the
	// user was told (created once; see Run).
	StateDir string
	// Timeout bounds one checkpoint (0: no bound of its own).
	Timeout time.Duration
	Now     func() time.Time
	// Spill, when its Root is set, makes PostToolUse answer a large
	// output's preview (preview.go).
	Spill Spill
}

// Output is what the hook prints on stdout for Claude Code: nothing on
// success; on the first failure of a session a systemMessage, which Claude
// Code shows the user ("<event> says: …") and does not send the model.
type Output struct {
	SystemMessage      string              `json:"systemMessage,omitempty"`
	SuppressOutput     bool                `json:"suppressOutput,omitempty"`
	HookSpecificOutput *HookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// HookSpecificOutput is PostToolUse's replacement of the tool's output.
type HookSpecificOutput struct {
	HookEventName     string          `json:"hookEventName"`
	UpdatedToolOutput json.RawMessage `json:"updatedToolOutput"`
}

// Outcome is one run's result: what to print, and what happened.
type Outcome struct {
	Output     Output
	Checkpoint Checkpoint
	Result     Result
	// Err is the failure (nil on success). The hook still exits 0: a
	// failed checkpoint never blocks Claude Code.
	Err error
	// Notified says the user was told in this run (the session's first
	// failure, or its first success after that).
	Notified bool
	// Preview is what the preview step did (PostToolUse with a Spill).
	Preview PreviewResult
	// PreviewErr is why no preview was made of a large output (the
	// output passed unchanged; logged, not told).
	PreviewErr error
	// AwaitMissed says the line the checkpoint waited for (Checkpoint.Await)
	// did not come within AwaitLimit: the run waited the whole limit.
	AwaitMissed bool
}

// Run reads one hook input from stdin and checkpoints it. It never fails:
// every error becomes the Outcome's Err, is appended to the session's log
// under StateDir, and is shown to the user by the first failing run of the
// session only (an exclusive-create mark file makes "first" hold across the
// hook's processes). A later run that succeeds catches up on everything the
// failed ones missed, since the import is incremental; the first such run
// says so, once per session too.
func (r Runner) Run(ctx context.Context, stdin io.Reader) (o Outcome) {
	defer func() {
		if p := recover(); p != nil {
			o.Err = fmt.Errorf("internal error: %v", p)
			o = r.fail(o)
		}
	}()
	in, err := ParseInput(stdin)
	if err != nil {
		o.Err = err
		return r.fail(o)
	}
	c, err := Plan(in)
	o.Checkpoint = c
	if err != nil {
		o.Checkpoint.Session = safeID(in.SessionID)
		o.Err = err
		return r.fail(o)
	}
	defer func() {
		// The preview goes out whatever the checkpoint did: the spill
		// file holds the output whole even when the store is unreachable.
		if o.Preview.Updated != nil {
			o.Output.HookSpecificOutput = &HookSpecificOutput{HookEventName: "PostToolUse", UpdatedToolOutput: o.Preview.Updated}
		}
		// A preview that failed is told once per session too (its own
		// mark): the output reached the model whole, which costs.
		if o.PreviewErr != nil && r.firstTime(c.Session, "preview-notified") {
			msg := fmt.Sprintf("ctxstore could not make a preview of a large tool output: %v. The output reached the model whole; Claude Code is unaffected. This is said once per session.", o.PreviewErr)
			if o.Output.SystemMessage != "" {
				msg = o.Output.SystemMessage + " " + msg
			}
			o.Output.SystemMessage, o.Output.SuppressOutput = msg, true
			o.Notified = true
		}
	}()
	o.Preview, o.PreviewErr = r.Spill.Preview(in)
	if o.PreviewErr != nil {
		r.log(c.Session, c.Event, fmt.Errorf("no preview (the output passed whole): %w", o.PreviewErr))
	}
	c.SpillDir = r.Spill.Dir(c.Session)
	if o.Preview.File != "" {
		c.Outputs = []string{in.ToolUseID}
	}
	if o.Preview.Activated != "" && isToolUseID(in.ToolUseID) {
		c.Activated, c.ActivatedBy = o.Preview.Activated, in.ToolUseID
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	c.Time = now()
	o.Checkpoint = c
	if r.Importer == nil {
		o.Err = errors.New("no importer configured")
		return r.fail(o)
	}
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	o.AwaitMissed = !Awaited(ctx, c.AwaitIn, c.Await, AwaitLimit)
	o.Result, o.Err = r.checkpoint(ctx, c)
	if o.Err != nil {
		return r.fail(o)
	}
	return r.recovered(o)
}

// checkpoint runs the importer, and gives up when ctx ends even if the
// importer does not (a store lock waited for once per transaction): the
// hook never runs past its timeout, which Claude Code's own limit is set
// a few seconds above. The process exits soon after; a transaction cut off
// is not committed, and the next hook's incremental import catches up.
func (r Runner) checkpoint(ctx context.Context, c Checkpoint) (Result, error) {
	if _, ok := ctx.Deadline(); !ok {
		return r.Importer.Checkpoint(ctx, c)
	}
	type answer struct {
		res Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- answer{err: fmt.Errorf("internal error: %v", p)}
			}
		}()
		res, err := r.Importer.Checkpoint(ctx, c)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return Result{}, fmt.Errorf("gave up after %s (--timeout): %w", r.Timeout, ctx.Err())
	}
}

// recovered tells the user, once per session, that a session whose
// failure they were told of is recorded again.
func (r Runner) recovered(o Outcome) Outcome {
	if r.StateDir == "" {
		return o
	}
	if _, err := os.Stat(filepath.Join(r.StateDir, o.Checkpoint.Session+".notified")); err != nil {
		return o
	}
	mark, err := os.OpenFile(filepath.Join(r.StateDir, o.Checkpoint.Session+".recovered"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return o
	}
	mark.Close()
	o.Output = Output{SystemMessage: "ctxstore is recording this session again: what the failed hooks missed is in the store now.", SuppressOutput: true}
	o.Notified = true
	return o
}

func safeID(s string) string {
	if isID(s) {
		return s
	}
	return "unknown-session"
}

// fail records o.Err in the session's log and, the first time for the
// session, sets the message for the user.
func (r Runner) fail(o Outcome) Outcome {
	session := o.Checkpoint.Session
	if session == "" {
		session = "unknown-session"
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	logPath := ""
	first := true
	if r.StateDir != "" {
		if err := os.MkdirAll(r.StateDir, 0o700); err == nil {
			logPath = filepath.Join(r.StateDir, session+".log")
			if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintf(f, "%s %s: %v\n", now().UTC().Format(time.RFC3339Nano), orUnknown(o.Checkpoint.Event), o.Err)
				f.Close()
			} else {
				logPath = ""
			}
			mark, err := os.OpenFile(filepath.Join(r.StateDir, session+".notified"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err == nil {
				mark.Close()
			} else {
				first = !errors.Is(err, os.ErrExist)
			}
		}
	}
	if !first {
		return o
	}
	msg := fmt.Sprintf("ctxstore is not recording this session: %v. Claude Code is unaffected; ctxstore retries at every hook and catches up when it can. This is said once per session", o.Err)
	if logPath != "" {
		msg += "; every failure is logged in " + logPath
	}
	o.Output = Output{SystemMessage: msg + ".", SuppressOutput: true}
	o.Notified = true
	return o
}

func orUnknown(s string) string {
	if s == "" {
		return "hook"
	}
	return s
}

// firstTime creates the session's mark file <session>.<mark> under
// StateDir and says whether this run made it (no StateDir: always).
func (r Runner) firstTime(session, mark string) bool {
	if r.StateDir == "" {
		return true
	}
	if !isID(session) || os.MkdirAll(r.StateDir, 0o700) != nil {
		return false
	}
	f, err := os.OpenFile(filepath.Join(r.StateDir, session+"."+mark), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// log appends err to session's log under StateDir, if any.
func (r Runner) log(session, event string, err error) {
	if r.StateDir == "" || !isID(session) || os.MkdirAll(r.StateDir, 0o700) != nil {
		return
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	if f, ferr := os.OpenFile(filepath.Join(r.StateDir, session+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); ferr == nil {
		fmt.Fprintf(f, "%s %s: %v\n", now().UTC().Format(time.RFC3339Nano), orUnknown(event), err)
		f.Close()
	}
}

// Write prints o for Claude Code: nothing, or one JSON object.
func (o Output) Write(w io.Writer) error {
	if o.SystemMessage == "" && o.HookSpecificOutput == nil {
		return nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

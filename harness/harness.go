// Package harness holds what every harness format shares: the transcript
// a reader produces ([Session]) and its [Report] of what was set aside,
// merged, skipped or damaged, JSON Lines reading that never stops at a
// damaged line ([ReadRecords], [EachRecord]), lenient JSON field types,
// the invariant every reader promises on tool results
// ([CheckToolResults]), and the [Codec] each format gives a [Registry].
//
// Each format is one package below this one, with one decoder: a type
// read once from a line's JSON (claudecode.Record, pi.Entry), from which
// the package makes both views of a file, the replay's messages and the
// import's neutral events (docs/replay.md, "Replay and import agree").
// harness/claudecode is Claude Code's session JSONL, harness/pi Pi's
// agent messages and session files, harness/codex the Codex CLI's
// rollouts, harness/sweagent SWE-agent trajectories (one JSON document
// each), harness/opencode opencode's SQLite sessions (a DatabaseReader:
// rows as JSON lines). harness/formats lists them;
// harness/transcript detects a file's format and dispatches;
// harness/importer cuts files into context commits.
package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Format is a transcript format.
type Format string

// The formats.
const (
	// FormatAuto detects the format from the records.
	FormatAuto Format = ""
	// FormatClaudeCode is Claude Code's session JSONL
	// (~/.claude/projects/<dir>/<session>.jsonl, or a Stop hook's dump of it
	// split back into lines).
	FormatClaudeCode Format = "claude-code"
	// FormatPi is the Pi coding agent's session JSONL, versions 1 (linear, no
	// ids), 2 and 3 (an id/parentId tree).
	FormatPi Format = "pi"
	// FormatSWEAgent is a SWE-agent trajectory (`.traj`): one JSON document
	// whose history is the message list sent to the model.
	FormatSWEAgent Format = "swe-agent"
	// FormatCodex is the Codex CLI's rollout JSONL
	// (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl).
	FormatCodex Format = "codex"
	// FormatOpencode is opencode's SQLite database (opencode.db: its
	// session, message and part tables), imported as rows.
	FormatOpencode Format = "opencode"
)

// Session is a transcript read into messages.
type Session struct {
	// Format is the format read.
	Format Format `json:"format"`
	// Path is the file read, when read by ReadFile.
	Path string `json:"path,omitempty"`
	// ID is the session id (Claude Code: the last sessionId on the thread;
	// Pi: the header's id).
	ID string `json:"id,omitempty"`
	// Cwd is the working directory the harness recorded (the last one on the
	// thread).
	Cwd string `json:"cwd,omitempty"`
	// Version is the harness version (Claude Code) or session format version
	// (Pi).
	Version string `json:"version,omitempty"`
	// SystemPrompt is the system prompt the transcript records (SWE-agent's
	// history holds it; Claude Code and Pi logs do not).
	SystemPrompt string `json:"system_prompt,omitempty"`
	// Messages are the main thread's messages, in order.
	Messages []conversation.Message `json:"messages"`
	// MessageLines holds, for each message, the line of the record it came
	// from (the first record, for merged assistant messages).
	MessageLines []int `json:"message_lines"`
	// CompactionAt holds the indexes in Messages of compaction summaries
	// (after them, the harness sent a compacted context, not the full
	// history).
	CompactionAt []int `json:"compaction_at,omitempty"`
	// Report says what was read, set aside and damaged.
	Report Report `json:"report"`

	compaction map[int]bool // message indexes of compaction summaries, before CheckToolResults
}

// MarkCompaction marks the last message added as a compaction summary.
func (s *Session) MarkCompaction() {
	if s.compaction == nil {
		s.compaction = map[int]bool{}
	}
	s.compaction[len(s.Messages)-1] = true
}

// Report describes what a reader did with a file.
type Report struct {
	// Lines is the number of lines read (a last line without a newline
	// counts); Records the JSON objects decoded from them.
	Lines   int `json:"lines"`
	Records int `json:"records"`
	// Types counts records by their "type" ("" when absent).
	Types map[string]int `json:"types"`
	// Skipped counts records of known types that carry nothing the model
	// sees (titles, file snapshots, hook notices, settings changes, ...).
	Skipped map[string]int `json:"skipped,omitempty"`
	// Unknown counts records of types the reader does not know; they are
	// skipped.
	Unknown map[string]int `json:"unknown,omitempty"`
	// Sidechain counts Claude Code sidechain (subagent) records, set aside.
	Sidechain int `json:"sidechain,omitempty"`
	// OffBranch counts records of the log's tree that are not on the thread
	// followed (abandoned branches, other sessions of the file).
	OffBranch int `json:"off_branch,omitempty"`
	// Attached counts records hanging off the thread that were taken in:
	// results of parallel tool calls and streamed parts of a response that
	// Claude Code writes as siblings rather than descendants.
	Attached int `json:"attached,omitempty"`
	// Merged counts streamed assistant records merged into an earlier
	// message with the same message id.
	Merged int `json:"merged,omitempty"`
	// Compactions counts compaction summaries (Meta user messages).
	Compactions int `json:"compactions,omitempty"`
	// Aborted counts responses the harness left out of later contexts
	// (Pi's aborted and errored responses): kept as assistant messages with
	// their usage, without their text and tool calls.
	Aborted int `json:"aborted,omitempty"`
	// Images counts images replaced by a note; Thinking the thinking blocks
	// left out.
	Images   int `json:"images,omitempty"`
	Thinking int `json:"thinking,omitempty"`
	// Orphans counts tool results whose call is not earlier on the thread
	// (dropped); Duplicates second results for one call (dropped);
	// Unanswered tool calls that never got a result (kept).
	Orphans    int `json:"orphans,omitempty"`
	Duplicates int `json:"duplicates,omitempty"`
	Unanswered int `json:"unanswered,omitempty"`
	// SessionIDs are the session ids on the thread, in order of first
	// appearance (Claude Code files can hold several).
	SessionIDs []string `json:"session_ids,omitempty"`
	// Problems are damaged lines and records, with their line numbers.
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is something wrong at a line of the input.
type Problem struct {
	// Line is the 1-based line number.
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Msg) }

// maxProblems bounds the problems kept; the rest are only counted in the
// last one.
const maxProblems = 1000

func (r *Report) Problem(line int, format string, args ...any) {
	switch {
	case len(r.Problems) < maxProblems:
		r.Problems = append(r.Problems, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
	case len(r.Problems) == maxProblems:
		r.Problems = append(r.Problems, Problem{Line: line, Msg: "more problems follow; not listed"})
	}
}

func Count(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

// CheckToolResults enforces the invariant every reader promises: a tool
// result follows the assistant message that made its call, once. Others are
// dropped and reported; calls without a result are counted.
func CheckToolResults(s *Session) {
	called := map[string]string{} // call id -> tool name
	answered := map[string]bool{}
	msgs := s.Messages[:0]
	lines := s.MessageLines[:0]
	for i, m := range s.Messages {
		line := s.MessageLines[i]
		switch m.Role {
		case conversation.RoleAssistant:
			for _, c := range m.ToolCalls {
				called[c.ID] = c.Name
			}
		case conversation.RoleToolResult:
			name, ok := called[m.ToolCallID]
			switch {
			case !ok:
				s.Report.Orphans++
				s.Report.Problem(line, "tool result %q has no earlier call on the thread; dropped", m.ToolCallID)
				continue
			case answered[m.ToolCallID]:
				s.Report.Duplicates++
				s.Report.Problem(line, "second result for tool call %q; dropped", m.ToolCallID)
				continue
			}
			answered[m.ToolCallID] = true
			if m.ToolName == "" {
				m.ToolName = name
			}
		}
		if s.compaction[i] {
			s.CompactionAt = append(s.CompactionAt, len(msgs))
		}
		msgs = append(msgs, m)
		lines = append(lines, line)
	}
	s.Messages, s.MessageLines = msgs, lines
	s.compaction = nil
	for id := range called {
		if !answered[id] {
			s.Report.Unanswered++
		}
	}
}

// Lenient JSON types: a field of an unexpected type becomes its zero value
// instead of failing the whole record.

// Num is an integer that also accepts floats (truncated), numeric strings
// and null; anything else is 0. Negative values become 0.
type Num int64

func (n *Num) UnmarshalJSON(b []byte) error {
	*n = 0
	s := string(bytes.TrimSpace(b))
	if u, err := strconv.Unquote(s); err == nil {
		s = u
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e15 {
		*n = Num(f)
	}
	return nil
}

// Flag is a bool that is false for anything but true.
type Flag bool

func (f *Flag) UnmarshalJSON(b []byte) error {
	*f = string(bytes.TrimSpace(b)) == "true"
	return nil
}

// Str is a string that is empty for anything but a string.
type Str string

func (s *Str) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = Str(v)
	} else {
		*s = ""
	}
	return nil
}

// OptStr is a string that tells null and absent (nil) from a value.
type OptStr struct {
	Set   bool
	Value string
}

func (o *OptStr) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*o = OptStr{Set: true, Value: v}
	} else {
		*o = OptStr{Set: true} // null or not a string: no parent
	}
	return nil
}

// ParseTime reads an RFC 3339 time; zero when it is not one.
func ParseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// Args turns a tool call's input into structured arguments: an object as
// is; anything else under the key "input"; nil when it is not JSON.
func Args(raw json.RawMessage) map[string]any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	// Numbers as written (json.Number), so tool arguments keep every
	// digit: ingestion turns those a store cannot hold exactly into
	// strings (conversation.Message.Exact) instead of refusing the call.
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{"input": v}
}

// ImageNote is the one-line note that replaces an image.
func ImageNote(mediaType string, base64Len int) string {
	if mediaType == "" {
		mediaType = "unknown type"
	}
	return fmt.Sprintf("[image: %s, %d bytes]", mediaType, base64Len*3/4)
}

// JoinNonEmpty joins the non-empty parts with sep.
func JoinNonEmpty(parts []string, sep string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// Kind is what a record type means to a reader.
type Kind int

const (
	KindUnknown Kind = iota
	KindMessage      // carries a message
	KindSkip         // known, nothing for the model
	KindSpecial      // handled by the reader (compaction, header, summary)
)

// Package transcript reads harness session logs (Claude Code JSONL, Pi
// JSONL v1 to v3, SWE-agent `.traj` trajectories) into the harness-neutral message stream ctxstore ingests
// ([conversation.Message]), with a report of everything that was set aside,
// merged, skipped or damaged (docs/replay.md).
//
// It is a dispatcher: it reads the records ([harness.ReadRecords]), detects
// the format and hands them to the format's one converter
// (harness/claudecode, harness/pi; the Pi converter is the
// live service's too). A SWE-agent trajectory is one JSON document, not
// JSON Lines: it is told from its first bytes (sweagent.Looks) and read
// whole by harness/sweagent. Then the dispatcher checks the tool-result invariant
// ([harness.CheckToolResults]).
//
// Readers never panic and never stop at a damaged line: a line holding two
// JSON objects gives both, a value that does not decode is reported with its
// line number and reading goes on, so the rest of the file is never lost.
// Only I/O errors are returned as errors.
//
// What comes out, for every format:
//
//   - the main thread only, as the model saw it: one branch of the log's tree
//     (Claude Code: the parent chain of the last record, crossing
//     compactions; Pi v2/v3: the path from the root to the last entry; Pi v1:
//     file order), sidechains (subagents) and other branches counted and
//     set aside;
//   - one assistant message per API response (Claude Code streams a response
//     as several records sharing message.id: they are merged, usage counted
//     once);
//   - one tool-result message per tool result, always after the assistant
//     message that made the call, with the tool's name; a result whose call
//     is not on the thread is dropped and reported;
//   - thinking blocks left out, images as a one-line note, compaction
//     summaries and harness-made prompts as Meta user messages.
package transcript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/pi"
	"github.com/ctxstore/ctxstore/harness/sweagent"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Format is a transcript format.
type Format = harness.Format

// The formats.
const (
	// FormatAuto detects the format from the records.
	FormatAuto = harness.FormatAuto
	// FormatClaudeCode is Claude Code's session JSONL.
	FormatClaudeCode = harness.FormatClaudeCode
	// FormatPi is the Pi coding agent's session JSONL.
	FormatPi = harness.FormatPi
	// FormatSWEAgent is a SWE-agent trajectory (one JSON document).
	FormatSWEAgent = harness.FormatSWEAgent
)

// Session is a transcript read into messages; Report says what a reader did
// with a file, and Problem is something wrong at one of its lines.
type (
	Session = harness.Session
	Report  = harness.Report
	Problem = harness.Problem
)

// Message is the harness-neutral message every reader produces.
type Message = conversation.Message

// known tells the record types of every format, for reading past damage.
func known(t string) bool {
	return claudecode.Types[t] != harness.KindUnknown || pi.Types[t] != harness.KindUnknown
}

// ReadFile reads the transcript at path, detecting its format.
func ReadFile(path string) (*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	s, err := Read(f, FormatAuto)
	if s != nil {
		s.Path = path
		if s.Format == FormatSWEAgent && s.ID == "" {
			// A trajectory has no session id; SWE-agent names the file
			// after the instance it ran.
			s.ID = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
	}
	if err != nil {
		return s, fmt.Errorf("transcript: %s: %w", path, err)
	}
	return s, nil
}

// Read reads a transcript in the given format (FormatAuto detects it). The
// error is an I/O error or an undetectable format; damaged content is only
// reported (Session.Report.Problems). On an I/O error the Session holds what
// was read before it.
func Read(r io.Reader, format Format) (*Session, error) {
	s := &Session{Report: Report{Types: map[string]int{}}}
	br := bufio.NewReaderSize(r, 1<<16)
	if format == FormatSWEAgent || format == FormatAuto && looksSWEAgent(br) {
		_, err := sweagent.ReadAll(s, br)
		harness.CheckToolResults(s)
		return s, err
	}
	recs, ioErr := harness.ReadRecords(br, &s.Report, known)
	if format == FormatAuto {
		format = Detect(recs)
		if format == FormatAuto {
			if len(recs) == 0 {
				format = FormatClaudeCode // empty: any reader gives nothing
			} else {
				return s, fmt.Errorf("transcript: not a Claude Code, Pi or SWE-agent session (first record: %.80s)", recs[0].Data)
			}
		}
	}
	s.Format = format
	switch format {
	case FormatClaudeCode:
		claudecode.Read(s, recs)
	case FormatPi:
		pi.Read(s, recs)
	default:
		return s, fmt.Errorf("transcript: unknown format %q", format)
	}
	harness.CheckToolResults(s)
	return s, ioErr
}

// ReadAllFile reads every conversation of the transcript at path, oldest
// first (ReadAll).
func ReadAllFile(path string) ([]*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	ss, err := ReadAll(f, FormatAuto)
	for _, s := range ss {
		s.Path = path
		if s.Format == FormatSWEAgent && s.ID == "" {
			s.ID = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
	}
	if err != nil {
		return ss, fmt.Errorf("transcript: %s: %w", path, err)
	}
	return ss, nil
}

// ReadAll reads every conversation of a transcript, oldest first. A Claude
// Code file can hold several: a /clear, or an unrelated session appended to
// the file, starts a new parent chain (claudecode.ReadAll; branches of a
// conversation are set aside, not conversations). A Pi file is one session
// (its header), whose tree branches are set aside: one conversation. The
// last conversation is the one Read returns. Every conversation's Report
// holds the whole file's problems and counts, except OffBranch: the
// records on no conversation.
func ReadAll(r io.Reader, format Format) ([]*Session, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if format == FormatSWEAgent || format == FormatAuto && looksSWEAgent(br) {
		// A trajectory is one run: one conversation.
		s, err := Read(br, FormatSWEAgent)
		return []*Session{s}, err
	}
	first := &Session{Report: Report{Types: map[string]int{}}}
	recs, ioErr := harness.ReadRecords(br, &first.Report, known)
	if format == FormatAuto {
		format = Detect(recs)
		if format == FormatAuto {
			if len(recs) == 0 {
				format = FormatClaudeCode
			} else {
				return []*Session{first}, fmt.Errorf("transcript: not a Claude Code, Pi or SWE-agent session (first record: %.80s)", recs[0].Data)
			}
		}
	}
	var out []*Session
	switch format {
	case FormatClaudeCode:
		base := first.Report
		n := 0
		out = claudecode.ReadAll(recs, func() *Session {
			n++
			if n == 1 {
				return first
			}
			rep := base
			rep.Types = map[string]int{}
			rep.Problems = append([]Problem(nil), base.Problems...)
			return &Session{Report: rep}
		})
	case FormatPi:
		pi.Read(first, recs)
		out = []*Session{first}
	default:
		return []*Session{first}, fmt.Errorf("transcript: unknown format %q", format)
	}
	for _, s := range out {
		s.Format = format
		harness.CheckToolResults(s)
	}
	return out, ioErr
}

// Detect guesses the format from the first records: Pi entries have a Pi
// entry type and no Claude Code threading fields; Claude Code records have
// uuid/sessionId/parentUuid or a Claude Code record type.
func Detect(recs []harness.Record) Format {
	for i, rc := range recs {
		if i >= 50 {
			break
		}
		var h struct {
			Type       string          `json:"type"`
			UUID       json.RawMessage `json:"uuid"`
			ParentUUID json.RawMessage `json:"parentUuid"`
			SessionID  json.RawMessage `json:"sessionId"`
			LeafUUID   json.RawMessage `json:"leafUuid"`
		}
		if json.Unmarshal(rc.Data, &h) != nil {
			continue
		}
		if h.UUID != nil || h.ParentUUID != nil || h.SessionID != nil || h.LeafUUID != nil {
			return FormatClaudeCode
		}
		if h.Type == "message" {
			return FormatPi
		}
		isPi, isCC := pi.Types[h.Type] != harness.KindUnknown, claudecode.Types[h.Type] != harness.KindUnknown
		if isPi && !isCC {
			return FormatPi
		}
		if isCC && !isPi {
			return FormatClaudeCode
		}
	}
	return FormatAuto
}

// looksSWEAgent peeks at the first bytes for a SWE-agent trajectory.
func looksSWEAgent(br *bufio.Reader) bool {
	head, _ := br.Peek(4096) // fewer bytes at the end of the input
	return sweagent.Looks(head)
}

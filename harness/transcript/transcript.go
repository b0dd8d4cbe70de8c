// Package transcript reads harness session logs (Claude Code JSONL, Pi
// JSONL v1 to v3, SWE-agent `.traj` trajectories) into the harness-neutral message stream ctxstore ingests
// ([conversation.Message]), with a report of everything that was set aside,
// merged, skipped or damaged (docs/replay.md).
//
// It is a dispatcher over the formats of a harness.Registry (the package
// functions read formats.Registry()): a document format (a SWE-agent
// trajectory, one JSON document) is told from its first bytes and read
// whole; otherwise it reads the records ([harness.ReadRecords]), detects
// the line format ([harness.Registry.Detect]) and hands them to the
// format's one reader (harness/claudecode, harness/pi; the Pi reader's
// converter is the live service's too). Then it checks the tool-result
// invariant ([harness.CheckToolResults]).
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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/formats"
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

// Reader reads transcripts of the formats of a registry.
type Reader struct {
	// Formats are the formats read (their LineReader and DocumentReader
	// codecs); ReadAllFile reads formats.Registry().
	Formats *harness.Registry
}

// ReadAllFile reads every conversation of the transcript at path.
func ReadAllFile(path string) ([]*Session, error) {
	return Reader{formats.Registry()}.ReadAllFile(path)
}

// Named sets the file a session was read from, and the id of a
// SWE-agent trajectory: it has none, and SWE-agent names the file after
// the instance it ran.
func Named(s *Session, path string) {
	s.Path = path
	if s.Format == FormatSWEAgent && s.ID == "" {
		s.ID = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
}

// Read reads a transcript in the given format (FormatAuto detects it). The
// error is an I/O error or an undetectable format; damaged content is only
// reported (Session.Report.Problems). On an I/O error the Session holds what
// was read before it.
func (rd Reader) Read(r io.Reader, format Format) (*Session, error) {
	s := &Session{Report: Report{Types: map[string]int{}}}
	br := bufio.NewReaderSize(r, 1<<16)
	if d, ok := rd.document(br, format); ok {
		s.Format = d.Format()
		err := d.ReadDocument(s, br)
		harness.CheckToolResults(s)
		return s, err
	}
	recs, ioErr := harness.ReadRecords(br, &s.Report, rd.Formats.Known)
	l, err := rd.lines(recs, format)
	if err != nil {
		return s, err
	}
	s.Format = l.Format()
	l.Read(s, recs)
	harness.CheckToolResults(s)
	return s, ioErr
}

// ReadAllFile reads every conversation of the transcript at path, oldest
// first (ReadAll).
func (rd Reader) ReadAllFile(path string) ([]*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	ss, err := rd.ReadAll(f, FormatAuto)
	for _, s := range ss {
		Named(s, path)
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
// (its header), whose tree branches are set aside: one conversation; so is
// a SWE-agent trajectory, one run. The last conversation is the one Read
// returns. Every conversation's Report holds the whole file's problems and
// counts, except OffBranch: the records on no conversation.
func (rd Reader) ReadAll(r io.Reader, format Format) ([]*Session, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if d, ok := rd.document(br, format); ok {
		s, err := rd.Read(br, d.Format())
		return []*Session{s}, err
	}
	first := &Session{Report: Report{Types: map[string]int{}}}
	recs, ioErr := harness.ReadRecords(br, &first.Report, rd.Formats.Known)
	l, err := rd.lines(recs, format)
	if err != nil {
		return []*Session{first}, err
	}
	base := first.Report
	n := 0
	out := l.ReadAll(recs, func() *Session {
		n++
		if n == 1 {
			return first
		}
		rep := base
		rep.Types = map[string]int{}
		rep.Problems = append([]Problem(nil), base.Problems...)
		return &Session{Report: rep}
	})
	for _, s := range out {
		s.Format = l.Format()
		harness.CheckToolResults(s)
	}
	return out, ioErr
}

// document returns the document format to read: the one asked for, or,
// for FormatAuto, the one whose first bytes br starts with.
func (rd Reader) document(br *bufio.Reader, format Format) (harness.DocumentReader, bool) {
	if format == FormatAuto {
		head, _ := br.Peek(4096) // fewer bytes at the end of the input
		return rd.Formats.Document(head)
	}
	c, ok := rd.Formats.Codec(format)
	if !ok {
		return nil, false
	}
	d, ok := c.(harness.DocumentReader)
	return d, ok
}

// lines returns the line format to read recs with: the one asked for, or,
// for FormatAuto, the one the records are of (the first line format for
// no records: any reader gives nothing).
func (rd Reader) lines(recs []harness.Record, format Format) (harness.LineReader, error) {
	if format == FormatAuto {
		format = rd.Formats.Detect(recs)
		if format == FormatAuto && len(recs) > 0 {
			return nil, fmt.Errorf("transcript: not a session of a known format (%s; first record: %.80s)", rd.names(), recs[0].Data)
		}
	}
	for _, c := range rd.Formats.Codecs() {
		if l, ok := c.(harness.LineReader); ok && (format == FormatAuto || c.Format() == format) {
			return l, nil
		}
	}
	return nil, fmt.Errorf("transcript: unknown format %q", format)
}

// names lists the formats read.
func (rd Reader) names() string {
	var names []string
	for _, c := range rd.Formats.Codecs() {
		names = append(names, string(c.Format()))
	}
	return strings.Join(names, ", ")
}

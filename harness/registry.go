package harness

import (
	"fmt"
	"io"
	"time"

	"github.com/ctxstore/ctxstore/session/commits"
)

// Codec is what one harness format's package gives the rest of ctxstore.
// Each format is one package with one decoder (a Record or Entry type
// read once from a line's JSON); the replay reader and the commit codec
// the package gives are both built from it.
type Codec interface {
	// Format names the harness format.
	Format() Format
	// CommitFormat names the commit format whose artifacts hold the
	// harness's own lines ("claude-code-v1"); "" when the format's
	// imports are stored as neutral events.
	CommitFormat() string
	// Commit gives the commit format what the package implements: Decode
	// (artifacts as neutral events), and Encode and ForSession when it
	// writes session files the harness resumes. For a commit format that
	// is not built in, f is new (only its Name set) and Commit also sets
	// at least its Concat.
	Commit(f *commits.Format)
}

// Registry is the harness formats a program knows, given explicitly to
// NewRegistry where the program is put together.
type Registry struct {
	codecs  []Codec
	commits *commits.Registry
}

// NewRegistry returns a registry of codecs, and the commit formats
// registry of the built-in formats with the codecs' Decode, Encode and
// ForSession in place (and the commit formats of codecs that are not
// built in). It panics when two codecs have one format or a codec's
// commit format does not register: both are mistakes in the program, not
// in its input.
func NewRegistry(codecs ...Codec) *Registry {
	r := &Registry{commits: commits.NewRegistry()}
	seen := map[Format]bool{}
	for _, c := range codecs {
		if seen[c.Format()] {
			panic(fmt.Sprintf("harness: two codecs of format %q", c.Format()))
		}
		seen[c.Format()] = true
		r.codecs = append(r.codecs, c)
		name := c.CommitFormat()
		if name == "" {
			continue
		}
		var err error
		if _, ok := r.commits.Lookup(name); ok {
			err = r.commits.Extend(name, c.Commit)
		} else {
			f := &commits.Format{Name: name}
			c.Commit(f)
			err = r.commits.Register(f)
		}
		if err != nil {
			panic(fmt.Sprintf("harness: codec of %q: %v", c.Format(), err))
		}
	}
	return r
}

// Codec returns the codec of format f.
func (r *Registry) Codec(f Format) (Codec, bool) {
	for _, c := range r.codecs {
		if c.Format() == f {
			return c, true
		}
	}
	return nil, false
}

// Codecs returns the codecs, in the order given.
func (r *Registry) Codecs() []Codec { return append([]Codec(nil), r.codecs...) }

// Commits returns the commit formats: the built-in ones, with the codecs'
// functions. A commits.Service that reads or writes harness files needs
// it (commits.Options.Registry).
func (r *Registry) Commits() *commits.Registry { return r.commits }

// Claim is how surely a record is of a format.
type Claim int

// The claims.
const (
	// ClaimNone: the record says nothing of the format.
	ClaimNone Claim = iota
	// ClaimMaybe: a record type of the format, which another may share.
	ClaimMaybe
	// ClaimSure: a field or type only the format has.
	ClaimSure
)

// LineReader is a Codec of a JSON Lines format: the transcript reader
// detects it by its records and reads them into the replay view.
type LineReader interface {
	Codec
	// Known reports whether t is one of the format's record types.
	Known(t string) bool
	// Claim says how surely rec is of the format.
	Claim(rec Record) Claim
	// Read reads the conversation the harness would resume (the file's
	// main thread) into s.
	Read(s *Session, recs []Record)
	// ReadAll reads every conversation of the records, oldest first, each
	// into a session new makes.
	ReadAll(recs []Record, new func() *Session) []*Session
}

// DocumentReader is a Codec of a format whose file is one JSON document.
type DocumentReader interface {
	Codec
	// Looks reports whether a file's first bytes are of the format.
	Looks(head []byte) bool
	// ReadDocument reads the document into s; only an I/O error fails.
	ReadDocument(s *Session, r io.Reader) error
}

// Known reports whether t is a record type of any line format, for
// reading past damage.
func (r *Registry) Known(t string) bool {
	for _, c := range r.codecs {
		if l, ok := c.(LineReader); ok && l.Known(t) {
			return true
		}
	}
	return false
}

// Detect returns the line format of the first records (FormatAuto when
// none tells): the first record that a format is sure of, or that only
// one format may be of, decides; when several formats are sure, the one
// given to NewRegistry first.
func (r *Registry) Detect(recs []Record) Format {
	for i, rc := range recs {
		if i >= 50 {
			break
		}
		var maybe []Format
		for _, c := range r.codecs {
			l, ok := c.(LineReader)
			if !ok {
				continue
			}
			switch l.Claim(rc) {
			case ClaimSure:
				return c.Format()
			case ClaimMaybe:
				maybe = append(maybe, c.Format())
			}
		}
		if len(maybe) == 1 {
			return maybe[0]
		}
	}
	return FormatAuto
}

// Document returns the document format whose first bytes head are.
func (r *Registry) Document(head []byte) (DocumentReader, bool) {
	for _, c := range r.codecs {
		if d, ok := c.(DocumentReader); ok && d.Looks(head) {
			return d, true
		}
	}
	return nil, false
}

// DatabaseReader is a Codec of a harness that keeps its sessions in a
// database rather than in files (opencode's SQLite). The importer reads
// it through this interface alone: each session's rows come as JSON
// lines of the codec's commit format, in the order the harness resumes
// them, each with a key (table and row id) and what the importer cuts
// commits at.
type DatabaseReader interface {
	Codec
	// LooksDB reports whether the file at path, whose first bytes are
	// head, is the harness's database.
	LooksDB(path string, head []byte) bool
	// ReadDB reads every session of the database at path, without
	// writing to it (the harness may be running).
	ReadDB(path string) ([]DBSession, error)
}

// DBSession is one session of a database, read by a DatabaseReader.
type DBSession struct {
	// ID is the session's id; Cwd, Version and Model what the harness
	// recorded; Parent the session it was spawned from (a sub-agent's).
	ID, Cwd, Version, Model, Parent string
	// Rows are the session's rows, in resume order; a row that is still
	// being written (a response in progress) is left out until it is
	// complete, and so are the rows after it.
	Rows []DBRow
	// Problems are damaged rows (kept in Rows as read).
	Problems []RowProblem
}

// DBRow is one row as a line of the codec's commit format.
type DBRow struct {
	// Key names the row ("message:msg_..."); Line is the row as one JSON
	// line (with its newline); the importer appends a row again when its
	// line changed.
	Key  string
	Line []byte
	// Update is the line that records a later version of the row (the
	// row changed after an import took it).
	Update []byte
	Time   time.Time
	// Group is the key of the row that groups it (a part's message): a
	// commit holds a group whole.
	Group string
	// Human marks a person's prompt (a turn starts at its group);
	// Compaction a compaction summary's group; Summary the text a
	// commit's summary takes; Model the model of a response.
	Human, Compaction bool
	Summary, Model    string
	// What the row holds, for the import's counts: model responses, tool
	// calls and their results, content the harness injected.
	Responses, ToolCalls, ToolResults, Injected int
	// Spawns are the ids of the sessions the row started as sub-agents
	// (an opencode task call's session).
	Spawns []string
}

// RowProblem is a damaged row: its table and id.
type RowProblem struct {
	Table, ID, Msg string
}

func (p RowProblem) String() string { return fmt.Sprintf("%s %s: %s", p.Table, p.ID, p.Msg) }

// CommitFormatOf returns the commit format a harness name stands for
// (the codec's CommitFormat: "opencode" -> "opencode-v1"), or name
// itself.
func (r *Registry) CommitFormatOf(name string) string {
	if c, ok := r.Codec(Format(name)); ok && c.CommitFormat() != "" {
		return c.CommitFormat()
	}
	return name
}

// Database returns the database format of the file at path.
func (r *Registry) Database(path string, head []byte) (DatabaseReader, bool) {
	for _, c := range r.codecs {
		if d, ok := c.(DatabaseReader); ok && d.LooksDB(path, head) {
			return d, true
		}
	}
	return nil, false
}

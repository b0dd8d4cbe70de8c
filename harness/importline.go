package harness

import "time"

// LineImporter is a LineReader whose files the importer cuts into
// commits (docs/import.md "Commits: the file chain"): for each line, the
// codec says where a turn, a compaction or a branch starts, what the
// line tells of the session, and what it holds, so that the importer
// itself knows no format.
type LineImporter interface {
	LineReader
	// ImportLine reads one line's records (line is its number), updating
	// st with what they tell of the session.
	ImportLine(st *ImportState, recs []Record, line int) LineInfo
}

// ImportState is what an import keeps of a file between its lines (and
// between imports: the importer's cursor holds it).
type ImportState struct {
	// Session, Cwd, Version and Model are the file's session id, working
	// directory, harness or format version and model, as far as read.
	Session string
	Version string
	Cwd     string
	Model   string
	// LaneOf maps a Claude Code sidechain record's uuid to its lane (the
	// importer keeps a Pi tree entry's place in it too).
	LaneOf map[string]string
	// Header: Pi's session header was read; Tree: the file is a Pi tree
	// (version 2 and later: entries with ids).
	Header bool
	Tree   bool
	// BranchedFrom is the file a Pi session was branched from (its
	// header's branchedFrom), for this import only.
	BranchedFrom string `json:"-"`
	// Turn: a Codex turn started (task_started) and its prompt is still
	// to come, for this import only.
	Turn bool `json:"-"`
	// SpawnedBy, set by a codec when the file's records name the session
	// that spawned this one (a Codex sub-agent's session_meta), makes the
	// importer fork the file's chain from the parent's commit that
	// spawned it, for this import only.
	SpawnedBy *Spawn `json:"-"`
	// Lane, set by the importer, places a tree entry (id, parent) on a
	// lane; Problem reports damage at a line.
	Lane    func(id, parent string) string          `json:"-"`
	Problem func(line int, format string, a ...any) `json:"-"`
}

// Spawn names a sub-agent's parent session: its id, the id the parent's
// records give the sub-agent (LineInfo.Results), and where the parent's
// file is (File, from the sub-agent's file path; "" when not found).
type Spawn struct {
	Parent string
	Agent  string
	File   func(path string) string
}

// LineInfo is what a line's records say about cutting the file into
// commits.
type LineInfo struct {
	// Human: a person's prompt, a turn starts at the line.
	Human bool
	// Compaction: "boundary" (more of the compaction may follow),
	// "summary" (the compaction is complete), or "".
	Compaction string
	// Lane is the line's branch ("" the main thread); Session its session.
	Lane    string
	Session string
	Time    time.Time
	// Summary is the text a commit's summary takes (a prompt, a
	// compaction's summary).
	Summary string
	// Content: the line holds a prompt or a response.
	Content bool
	Model   string
	// Entries are the ids of a Pi tree's entries on the line.
	Entries []string
	// Tasks are the ids of calls that start a sub-agent (Claude Code's
	// Task/Agent, Codex's spawn_agent); Results pairs (call id, agent id)
	// of their results naming the sub-agent.
	Tasks   []string
	Results [][2]string
	// Count adds what the line holds to a session's counts.
	Count func(*ImportCounts)
}

// ImportCounts are what an import counts of a session's records.
type ImportCounts struct {
	// Records imported as conversation (lines' records in its commits).
	Records int `json:"records"`
	// Prompts counts a person's prompts; Injected system-injected user
	// content; ToolCalls and ToolResults; Responses model answers (merged
	// by message id).
	Prompts     int `json:"prompts"`
	Injected    int `json:"injected"`
	ToolCalls   int `json:"tool_calls"`
	ToolResults int `json:"tool_results"`
	Responses   int `json:"responses"`
	// Skipped counts records of known types that carry no conversation
	// (kept in the commits' bytes, not counted above), by type.
	Skipped map[string]int `json:"skipped,omitempty"`
	// SetAside counts records kept but not on the session's main thread:
	// sidechain (sub-agent) records, records copied in from other
	// sessions, records of abandoned branches.
	SetAside map[string]int `json:"set_aside,omitempty"`
	// Unknown counts records of unknown types (kept raw).
	Unknown map[string]int `json:"unknown,omitempty"`
}

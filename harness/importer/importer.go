// Package importer imports agent sessions recorded by harnesses (Claude
// Code transcripts, Pi session files, SWE-agent trajectories) as chains of
// context commits (docs/import.md).
//
// A session file becomes a file chain: commits in file order, each holding
// a run of the file's complete lines, byte for byte, in the harness's own
// format (claude-code-v1, pi-v3), so that materializing the chain's tip to
// the root in that format gives the file's bytes back. Commits are cut at
// turns (a person's prompt), at compactions (the pre-compaction delta, then
// the compaction lines as a delta and as a compaction commit), where a
// sub-agent's records start or stop, and at a size bound. Branches (Claude
// Code sub-agents, Pi's abandoned branches) are also forks: commits tagged
// "branch" holding the same lines, parented at the commit where the branch
// left the conversation. A per-file cursor (byte offset and a hash of the
// prefix) makes importing a grown file add only its new complete lines.
package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// Harness names a source format.
type Harness string

// The harnesses the importer reads.
const (
	Auto       Harness = ""
	ClaudeCode Harness = "claude-code"
	Pi         Harness = "pi"
	SWEAgent   Harness = "swe-agent"
	Codex      Harness = "codex"
	Opencode   Harness = "opencode"
)

// Options configure an Importer.
type Options struct {
	// As forces a harness (default: detected per file from its records).
	As Harness
	// Principal and Machine go into every commit's provenance (optional;
	// a principal puts the commits on its timeline, commits.Resolve).
	Principal string
	Machine   string
	// Progress, when set, is called as files are read (at most a few
	// times a second per file, and at each file's end).
	Progress func(Progress)
	// MaxCommitBytes bounds one commit's content (default 1 MiB): a longer
	// turn is cut into several commits (trigger tool_call). It also bounds
	// the memory an import holds, whatever the file's size.
	MaxCommitBytes int
	// Formats are the harness formats the importer knows (default
	// formats.Registry()): a database format's codec
	// (harness.DatabaseReader) reads its sessions.
	Formats *harness.Registry
	// Registry is the commit format registry (default Formats.Commits(),
	// every harness format's codec).
	Registry *commits.Registry
	// Now is the clock of cursor documents (default time.Now).
	Now func() time.Time
	// Allow, when set, is asked about every file before it is opened (each
	// file of a folder, a sub-agent's parent and .meta.json), with its
	// absolute path: an error fails that file. The HTTP server confines
	// imports to its roots with it, symbolic links resolved.
	Allow func(path string) error
}

// Progress says how far an import is.
type Progress struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	Size  int64  `json:"size"`
	Files int    `json:"files"`
	Done  bool   `json:"done"`
}

// Importer imports session files into a store.
type Importer struct {
	st   store.Store
	svc  *commits.Service
	opts Options
}

// New returns an Importer writing to st.
func New(st store.Store, o Options) *Importer {
	if o.MaxCommitBytes <= 0 {
		o.MaxCommitBytes = 1 << 20
	}
	if o.Formats == nil {
		o.Formats = formats.Registry()
	}
	if o.Registry == nil {
		o.Registry = o.Formats.Commits()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Importer{st: st, svc: commits.New(st, commits.Options{Registry: o.Registry}), opts: o}
}

// Status says what an import did with a file.
type Status string

// The statuses of a file.
const (
	// Imported: the file was new to the store.
	Imported Status = "imported"
	// Grew: the file had been imported and grew; its new lines were added.
	Grew Status = "grew"
	// Unchanged: the file is as it was when last imported.
	Unchanged Status = "unchanged"
	// Rewritten: the file no longer starts with the bytes imported before
	// (edited or truncated); it was imported again as a new chain.
	Rewritten Status = "rewritten"
	// Failed: the file could not be imported (Error says why); nothing of
	// it was written.
	Failed Status = "failed"
)

// Problem is damage found in a file: the line is read past.
type Problem struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.Path, p.Msg) // a database's row (table and id in Msg), or the file as a whole
	}
	return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Msg)
}

// SessionSummary says what an import did with one source session.
type SessionSummary struct {
	Session string `json:"session"`
	Harness string `json:"harness"`
	// Commits made for this session (file-chain commits and branch views).
	Commits     int `json:"commits"`
	Compactions int `json:"compactions"`
	// What the session's records hold (records, prompts, injected
	// content, tool calls and results, responses; skipped, set aside and
	// unknown records by type).
	harness.ImportCounts
	// Branches counts the branches forked (sub-agents, Pi branches).
	Branches int `json:"branches,omitempty"`
	// Tip is the session's last file-chain commit after this import.
	Tip string `json:"tip,omitempty"`
	// Parent is the commit a sub-agent's session (a database's) is
	// forked from, on its first import.
	Parent string `json:"parent,omitempty"`
}

// FileResult is what an import did with one file.
type FileResult struct {
	Path    string `json:"path"`
	Harness string `json:"harness"`
	Format  string `json:"format"`
	Status  Status `json:"status"`
	// Size is the file's size when read; Offset the bytes imported so far
	// (up to the end of the last complete line); Pending the bytes of an
	// incomplete last line, left for a later import.
	Size    int64 `json:"size"`
	Offset  int64 `json:"offset"`
	Pending int64 `json:"pending,omitempty"`
	// Lines is the number of complete lines imported so far; NewLines
	// those this import added.
	Lines    int `json:"lines"`
	NewLines int `json:"new_lines"`
	// Commits are the commits this import added to the file's chains
	// (file chain and branches), in order; some may have been in the store
	// already (the same runs of another file: a resumed session's copied
	// records); Tip the file chain's last commit; Root its
	// first (materialize Tip with stop Root for the file's bytes when the
	// chain is forked from another file's, as a sub-agent's is).
	Commits []string `json:"commits"`
	Tip     string   `json:"tip,omitempty"`
	Root    string   `json:"root,omitempty"`
	// Parent is the commit the file's chain is forked from (a sub-agent
	// file: the commit of its parent session that spawned it).
	Parent string `json:"parent,omitempty"`
	// Lanes are the file's branches and their last commits: Claude Code
	// sub-agents ("agent-..." or their agentId) and Pi tree branches
	// ("branch-<first entry id>"; "" is the first path). Materializing a
	// lane's commit to the root gives that branch alone.
	Lanes map[string]string `json:"lanes,omitempty"`
	// BranchedFrom is the file a Pi session was branched from (its
	// header's branchedFrom); the first commit is tagged with it and with
	// that file's tip when it was imported.
	BranchedFrom string           `json:"branched_from,omitempty"`
	Sessions     []SessionSummary `json:"sessions,omitempty"`
	Problems     []Problem        `json:"problems,omitempty"`
	Error        string           `json:"error,omitempty"`
}

// Result is what an import did.
type Result struct {
	Files []FileResult `json:"files"`
	// Totals over the files.
	Imported  int `json:"imported"`
	Grew      int `json:"grew"`
	Unchanged int `json:"unchanged"`
	Rewritten int `json:"rewritten"`
	Failed    int `json:"failed"`
	Commits   int `json:"commits"`
	Problems  int `json:"problems"`
	// Ignored lists files of a folder that are not session files.
	Ignored []string `json:"ignored,omitempty"`
}

func (r *Result) add(f FileResult) {
	switch f.Status {
	case Imported:
		r.Imported++
	case Grew:
		r.Grew++
	case Unchanged:
		r.Unchanged++
	case Rewritten:
		r.Rewritten++
	case Failed:
		r.Failed++
	}
	r.Commits += len(f.Commits)
	r.Problems += len(f.Problems)
	r.Files = append(r.Files, f)
}

// Import imports a path: a session file, a folder of them (a Claude Code
// project folder, Pi's sessions folder) or a tree of folders (the whole
// ~/.claude/projects). In a folder, *.jsonl and *.traj files are read in
// name order, a Claude Code session's sub-agent files
// (<session>/subagents/agent-*.jsonl) after the session. A file that fails
// does not stop the others: its FileResult says why. The error is for a
// path that cannot be read at all.
func (im *Importer) Import(ctx context.Context, path string) (*Result, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	res := &Result{}
	if !fi.IsDir() {
		f, err := im.ImportFile(ctx, path)
		if err != nil {
			return nil, err
		}
		res.add(*f)
		return res, nil
	}
	files, ignored, err := sessionFiles(path, im.isDatabase)
	if err != nil {
		return nil, err
	}
	res.Ignored = ignored
	for i, p := range files {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		f, err := im.ImportFile(ctx, p)
		if err != nil {
			res.add(FileResult{Path: p, Status: Failed, Error: err.Error()})
		} else {
			res.add(*f)
		}
		if im.opts.Progress != nil {
			im.opts.Progress(Progress{Path: p, Files: i + 1, Done: i == len(files)-1})
		}
	}
	return res, nil
}

// isDatabase reports whether the file at path is a harness database.
func (im *Importer) isDatabase(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := f.ReadAt(head, 0)
	_, ok := im.opts.Formats.Database(path, head[:n])
	return ok
}

// sessionFiles lists the session files under dir: *.jsonl and *.traj (and
// *.db files that are a harness's database, isDB), in
// path order, except that a Claude Code session's sub-agent files come
// right after their session's file (so their fork point exists).
func sessionFiles(dir string, isDB func(string) bool) (files, ignored []string, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".jsonl"), strings.HasSuffix(p, ".traj"):
			files = append(files, p)
		case strings.HasSuffix(p, ".meta.json"):
		case strings.HasSuffix(p, ".db") && isDB(p):
			files = append(files, p)
		case strings.HasSuffix(p, ".db-wal"), strings.HasSuffix(p, ".db-shm"), strings.HasSuffix(p, ".db-journal"):
			// An SQLite database's companions: read with it.
		default:
			ignored = append(ignored, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("import: listing %s: %w", dir, err)
	}
	// <dir>/<sid>.jsonl sorts before <dir>/<sid>/subagents/... once the
	// extension is taken off the key.
	key := func(p string) string {
		return strings.TrimSuffix(strings.TrimSuffix(p, ".jsonl"), ".traj")
	}
	sort.SliceStable(files, func(i, j int) bool { return key(files[i]) < key(files[j]) })
	return files, ignored, nil
}

// The cursor document of a file (docs/import.md "Incremental").
const (
	CursorPrefix  = "import-cursor:"
	DocCursor     = "import_cursor"
	cursorVersion = 1
)

// CursorID is the id of the cursor document of the file at path (made
// absolute): one per file and store.
func CursorID(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	h := sha256.Sum256([]byte(path))
	return CursorPrefix + hex.EncodeToString(h[:16])
}

// cursor is where the import of a file stopped.
type cursor struct {
	Path    string
	Harness Harness
	Offset  int64
	Lines   int
	Prefix  string // sha256 of the file's first Offset bytes
	Tip     string // the file chain's last commit
	Root    string // the file chain's first commit
	Parent  string // the commit the chain is forked from
	// State of the walk, to go on where it stopped: what the lines told
	// of the session (the codec's state), and the importer's own.
	harness.ImportState
	Last     time.Time         // the latest record time seen
	MainTip  string            // the last commit of the main lane
	Lanes    map[string]string // branch lane -> its last view commit
	Pending  string            // a compaction segment's state ("boundary")
	SideRoot map[string]string // lane -> the commit it forked from
	// Pi trees: the previous entry in file order, each lane's last entry,
	// the entry a new lane forks at, and where each entry is on its lane
	// (LaneOf: entry id -> "commit k", its line in that commit).
	LastEntry string
	LaneEnd   map[string]string
	ForkAt    map[string]string
	// Claude Code: the commits holding Task/Agent tool calls (tool use id
	// -> commit) and the sub-agents they spawned (agent id -> commit), for
	// 2.1.x subagents/ files; Template is a sub-agent's agentType.
	Tasks    map[string]string
	Spawns   map[string]string
	Template string
	doc      store.Doc
}

func (c *cursor) toDoc(id string, now time.Time) store.Doc {
	// The first lane is "" in memory and "." in the document (a store
	// refuses empty keys).
	lanes := map[string]any{}
	for k, v := range c.Lanes {
		lanes[laneKey(k)] = v
	}
	laneOf := map[string]any{}
	for k, v := range c.LaneOf {
		laneOf[k] = v
	}
	roots := map[string]any{}
	for k, v := range c.SideRoot {
		roots[laneKey(k)] = v
	}
	laneEnd := map[string]any{}
	for k, v := range c.LaneEnd {
		laneEnd[laneKey(k)] = v
	}
	tasks := map[string]any{}
	for k, v := range c.Tasks {
		tasks[k] = v
	}
	spawns := map[string]any{}
	for k, v := range c.Spawns {
		spawns[k] = v
	}
	forkAt := map[string]any{}
	for k, v := range c.ForkAt {
		forkAt[laneKey(k)] = v
	}
	return store.Doc{store.IDKey: id, "type": DocCursor, "version": cursorVersion, "path": c.Path, "harness": string(c.Harness),
		"offset": c.Offset, "lines": c.Lines, "prefix_sha256": c.Prefix, "tip": c.Tip, "root": c.Root, "parent": c.Parent,
		"state": map[string]any{"session": c.Session, "harness_version": c.Version, "cwd": c.Cwd, "model": c.Model,
			"last": store.FormatTime(c.Last), "main_tip": c.MainTip, "lanes": lanes, "lane_of": laneOf, "pending": c.Pending,
			"header": c.Header, "side_root": roots, "tree": c.Tree, "last_entry": c.LastEntry, "lane_end": laneEnd, "fork_at": forkAt,
			"tasks": tasks, "spawns": spawns, "template": c.Template},
		"updated": store.FormatTime(now)}
}

func cursorFromDoc(d store.Doc) (*cursor, error) {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	num := func(m map[string]any, k string) int64 { f, _ := store.Num(m[k]); return int64(f) }
	strs := func(m map[string]any, k string) map[string]string {
		out := map[string]string{}
		if x, ok := m[k].(map[string]any); ok {
			for a, b := range x {
				if s, ok := b.(string); ok {
					if a == "." {
						a = ""
					}
					out[a] = s
				}
			}
		}
		return out
	}
	if num(d, "version") != cursorVersion {
		return nil, fmt.Errorf("import cursor %v: version %v, want %d", d[store.IDKey], d["version"], cursorVersion)
	}
	st, _ := d["state"].(map[string]any)
	c := &cursor{Path: str(d, "path"), Harness: Harness(str(d, "harness")), Offset: num(d, "offset"), Lines: int(num(d, "lines")),
		Prefix: str(d, "prefix_sha256"), Tip: str(d, "tip"), Root: str(d, "root"), Parent: str(d, "parent"),
		ImportState: harness.ImportState{Session: str(st, "session"), Version: str(st, "harness_version"), Cwd: str(st, "cwd"), Model: str(st, "model"),
			LaneOf: strs(st, "lane_of")},
		MainTip: str(st, "main_tip"), Lanes: strs(st, "lanes"), Pending: str(st, "pending"),
		SideRoot: strs(st, "side_root"), LastEntry: str(st, "last_entry"), LaneEnd: strs(st, "lane_end"), ForkAt: strs(st, "fork_at"),
		Tasks: strs(st, "tasks"), Spawns: strs(st, "spawns"), Template: str(st, "template"), doc: d}
	c.Header, _ = st["header"].(bool)
	c.Tree, _ = st["tree"].(bool)
	if t, err := store.ParseTime(str(st, "last")); err == nil {
		c.Last = t
	}
	return c, nil
}

func (im *Importer) readCursor(ctx context.Context, id string) (*cursor, error) {
	d, err := im.st.Entity(ctx, id, store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return cursorFromDoc(d)
}

func storeMatch(id string, c *cursor) store.Op {
	if c == nil {
		return store.Match(id, nil)
	}
	return store.Match(id, c.doc)
}

func storePut(d store.Doc) store.Op { return store.Put(d) }

func laneKey(k string) string {
	if k == "" {
		return "."
	}
	return k
}

// LooksLikeSession tells whether line (a file's first line) is a record of
// a Claude Code transcript or a Pi session file.
func LooksLikeSession(line []byte) bool {
	var rep harness.Report
	recs := harness.LineRecords(line, 1, &rep, nil)
	return len(recs) > 0 && formats.Registry().Detect(recs) != harness.FormatAuto
}

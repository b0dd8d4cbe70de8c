package importer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/sweagent"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// batchCommits and batchBytes bound one transaction of an import.
const (
	batchCommits = 256
	batchBytes   = 16 << 20
)

// ImportFile imports one session file, or the part of it added since the
// last import (docs/import.md "Incremental"): the file is hashed up to
// where the last import stopped; if it still starts with those bytes, its
// new complete lines are read and committed on top of the file chain's
// tip; if it is unchanged, nothing is written; if it was rewritten, it is
// imported again as a new chain. A last line without its newline is left
// for a later import. The commits and the file's cursor are written in
// transactions of at most 256 commits, each moving the cursor: an import
// that stops half way leaves a consistent cursor, and the next one goes on
// from there.
func (im *Importer) ImportFile(ctx context.Context, path string) (*FileResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := im.importFile(ctx, path)
		if errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue // another import of the same file moved the cursor first
		}
		if err == nil {
			im.deriveCalls(ctx, res)
		}
		return res, err
	}
}

func (im *Importer) importFile(ctx context.Context, path string) (*FileResult, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if im.opts.Allow != nil {
		if err := im.opts.Allow(abs); err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("import %s: a directory (use Import)", path)
	}
	head := make([]byte, 512)
	n, _ := f.ReadAt(head, 0)
	if db, ok := im.opts.Formats.Database(abs, head[:n]); ok && (im.opts.As == Auto || string(im.opts.As) == string(db.Format())) {
		return im.importDatabase(ctx, abs, fi.Size(), db)
	}
	if strings.HasSuffix(abs, ".traj") || im.opts.As == SWEAgent || (im.opts.As == Auto && sweagent.Looks(head[:n])) {
		return im.importTraj(ctx, abs, f, fi.Size())
	}
	id := CursorID(abs)
	cur, err := im.readCursor(ctx, id)
	if err != nil {
		return nil, err
	}
	res := &FileResult{Path: abs, Size: fi.Size(), Status: Imported}
	if cur != nil {
		res.Offset = cur.Offset
	}
	h := sha256.New()
	br := bufio.NewReaderSize(f, 1<<16)
	if cur != nil {
		res.Status = Grew
		ok := cur.Offset <= fi.Size()
		if ok {
			if _, err := io.CopyN(h, br, cur.Offset); err != nil {
				return nil, fmt.Errorf("import %s: reading the imported prefix: %w", path, err)
			}
			ok = hex.EncodeToString(h.Sum(nil)) == cur.Prefix
		}
		if !ok {
			// Rewritten: start again from the first byte, a new chain.
			res.Status = Rewritten
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
			br.Reset(f)
			h.Reset()
			old := cur
			cur = &cursor{doc: old.doc}
		} else if cur.Offset == fi.Size() {
			res.Status = Unchanged
		}
	} else {
		cur = &cursor{}
	}
	cur.Path = abs
	if cur.Lanes == nil {
		cur.Lanes, cur.LaneOf, cur.SideRoot = map[string]string{}, map[string]string{}, map[string]string{}
	}
	if cur.LaneEnd == nil {
		cur.LaneEnd, cur.ForkAt = map[string]string{}, map[string]string{}
	}
	if cur.Tasks == nil {
		cur.Tasks, cur.Spawns = map[string]string{}, map[string]string{}
	}
	w := &walk{im: im, ctx: ctx, path: abs, res: res, cur: cur, h: h, cursorID: id, batch: im.svc.NewBatch(), sessions: map[string]*SessionSummary{}}
	if cur.Tip == "" && res.Status != Unchanged {
		if err := w.subagent(); err != nil {
			return nil, err
		}
	}
	if res.Status == Unchanged {
		w.line, w.startLine = cur.Lines, cur.Lines
		w.finishResult()
		return res, nil
	}
	if err := w.run(br, fi.Size()); err != nil {
		return nil, err
	}
	return res, nil
}

// walk is the import of one file.
type walk struct {
	im       *Importer
	ctx      context.Context
	path     string
	res      *FileResult
	cur      *cursor
	h        hash.Hash
	cursorID string
	batch    *commits.Batch
	format   string

	seg       segment
	sessions  map[string]*SessionSummary
	order     []string
	offset    int64 // bytes read and hashed
	line      int
	startLine int
	lastProg  time.Time
}

// segment is the lines of the commit being made.
type segment struct {
	buf        []byte
	start, end int64
	lines      int
	lane       string // "" for the main thread
	session    string
	created    time.Time
	summary    string
	trigger    commits.Trigger
	compaction bool // the lines are a compaction's
	content    bool // holds a prompt or a response (a turn has begun)
	model      string
	records    int
	entries    []entryLine // Pi trees: the entries and their lines
	tasks      []string    // Claude Code: Task/Agent tool use ids
	results    [][2]string // Claude Code: (tool use id, agent id) of sub-agent results
}

// entryLine is a Pi entry of a segment and its line there (1-based).
type entryLine struct {
	id string
	k  int
}

func (w *walk) run(r *bufio.Reader, size int64) error {
	w.offset, w.line, w.startLine = w.cur.Offset, w.cur.Lines, w.cur.Lines
	if w.cur.Harness == Auto {
		w.cur.Harness = w.im.opts.As
	}
	for {
		b, err := r.ReadSlice('\n')
		var line []byte
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append([]byte(nil), b...)
			for errors.Is(err, bufio.ErrBufferFull) && len(line) <= harness.MaxLineBytes {
				b, err = r.ReadSlice('\n')
				line = append(line, b...)
			}
			if len(line) > harness.MaxLineBytes {
				// Not held: the import stops before this line (docs/security.md).
				w.problem(w.line+1, "the line is over %d bytes, the limit per line; the file is imported up to the line before it", harness.MaxLineBytes)
				w.res.Error = fmt.Sprintf("line %d is over the %d-byte limit per line; imported up to line %d", w.line+1, harness.MaxLineBytes, w.line)
				break
			}
		} else {
			line = b
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("import %s: reading line %d: %w", w.path, w.line+1, err)
		}
		if len(line) > 0 && line[len(line)-1] != '\n' {
			// An incomplete last line: left for a later import.
			w.res.Pending = int64(len(line))
			break
		}
		if len(line) > 0 {
			if err := w.add(line); err != nil {
				return err
			}
		}
		if err != nil {
			break
		}
		if w.im.opts.Progress != nil && time.Since(w.lastProg) > 250*time.Millisecond {
			w.lastProg = time.Now()
			w.im.opts.Progress(Progress{Path: w.path, Bytes: w.offset, Size: size})
		}
	}
	if err := w.flushSegment(); err != nil {
		return err
	}
	if err := w.writeBatch(); err != nil {
		return err
	}
	if w.im.opts.Progress != nil {
		w.im.opts.Progress(Progress{Path: w.path, Bytes: w.offset, Size: size, Done: true})
	}
	w.finishResult()
	return nil
}

func (w *walk) problem(line int, format string, args ...any) {
	if len(w.res.Problems) < 1000 {
		w.res.Problems = append(w.res.Problems, Problem{Path: w.path, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
}

// add reads one complete line: classifies it, cuts the segment before it
// when it starts a turn, a compaction, a lane or would make the segment
// too long, then appends it.
func (w *walk) add(line []byte) error {
	w.line++
	n := w.line
	if !utf8.Valid(line) {
		w.problem(n, "invalid UTF-8 (kept as read; text fields read with U+FFFD)")
	}
	var rep harness.Report
	var recs []harness.Record
	if len(bytes.TrimSpace(line)) > 0 {
		recs = harness.LineRecords(line, n, &rep, w.known)
	}
	for _, p := range rep.Problems {
		w.problem(p.Line, "%s", p.Msg)
	}
	if w.cur.Harness == Auto {
		// Detected from the first record of a known harness; lines before
		// it go into the first commit (a file with none fails at its
		// first commit, flushSegment).
		w.cur.Harness = w.im.detect(recs)
	}
	if w.format == "" && w.cur.Harness != Auto {
		w.format = w.im.formatOf(w.cur.Harness)
	}
	var info harness.LineInfo
	if c, ok := w.im.opts.Formats.Codec(harness.Format(w.cur.Harness)); ok {
		if li, ok := c.(harness.LineImporter); ok {
			w.cur.Problem, w.cur.Lane = w.problem, w.piLane
			info = li.ImportLine(&w.cur.ImportState, recs, n)
		}
	}
	if w.cur.SpawnedBy != nil {
		if w.cur.Tip == "" && w.cur.Parent == "" {
			if err := w.spawned(); err != nil {
				return err
			}
		}
		w.cur.SpawnedBy = nil
	}
	if err := w.cut(info, int64(len(line))); err != nil {
		return err
	}
	if info.Compaction == "boundary" {
		w.cur.Pending = "boundary"
	}
	s := &w.seg
	if s.lines == 0 {
		s.start = w.offset
		s.lane = info.Lane
		s.session = info.Session
		if s.trigger == "" {
			s.trigger = commits.ImportTrigger
			if info.Human {
				s.trigger = commits.TurnBoundary
			}
		}
	}
	if s.session == "" {
		s.session = info.Session
	}
	if s.created.IsZero() && !info.Time.IsZero() {
		s.created = info.Time
	}
	if s.summary == "" && info.Summary != "" {
		s.summary = info.Summary
	}
	if s.model == "" {
		s.model = info.Model
	}
	s.content = s.content || info.Content || info.Human
	s.compaction = info.Compaction != ""
	s.buf = append(s.buf, line...)
	s.lines++
	for _, id := range info.Entries {
		s.entries = append(s.entries, entryLine{id: id, k: s.lines})
	}
	s.tasks = append(s.tasks, info.Tasks...)
	s.results = append(s.results, info.Results...)
	s.records += len(recs)
	w.h.Write(line)
	w.offset += int64(len(line))
	s.end = w.offset
	if !info.Time.IsZero() && info.Time.After(w.cur.Last) {
		w.cur.Last = info.Time
	}
	if info.Count != nil {
		info.Count(&w.summary(s.session, info.Lane).ImportCounts)
	}
	if info.Compaction == "summary" {
		return w.flushSegment()
	}
	return nil
}

// cut closes the open segment before a line when the line must start a new
// one.
func (w *walk) cut(info harness.LineInfo, n int64) error {
	s := &w.seg
	if s.lines == 0 {
		return nil
	}
	switch {
	case s.compaction && info.Compaction != "boundary" && info.Compaction != "summary":
		// A compaction segment ends at the first line that is not part of it.
	case s.compaction && info.Compaction == "summary" && w.cur.Pending == "boundary":
		return nil // the summary that follows its boundary
	case info.Compaction != "":
	case info.Lane != s.lane:
	case info.Human && s.content:
	case len(s.buf)+int(n) > w.im.opts.MaxCommitBytes:
		if err := w.flushSegment(); err != nil {
			return err
		}
		w.seg.trigger = commits.ToolCall
		return nil
	default:
		return nil
	}
	return w.flushSegment()
}

// known reports whether t is a record type of a line format the
// importer's registry knows (for reading past damage).
func (w *walk) known(t string) bool { return w.im.opts.Formats.Known(t) }

// detect returns the harness of the first records that tell
// (harness.Registry.Detect over the importer's line formats).
func (im *Importer) detect(recs []harness.Record) Harness {
	return Harness(im.opts.Formats.Detect(recs))
}

// formatOf is the commit format of a harness's imports: its codec's
// (events-v1 for a harness whose imports are neutral events).
func (im *Importer) formatOf(h Harness) string {
	if c, ok := im.opts.Formats.Codec(harness.Format(h)); ok && c.CommitFormat() != "" {
		return c.CommitFormat()
	}
	return commits.FormatEvents
}

// summary returns the summary of a session (a branch lane counts with its
// session).
func (w *walk) summary(session, lane string) *SessionSummary {
	if session == "" {
		session = w.cur.Session
	}
	s, ok := w.sessions[session]
	if !ok {
		s = &SessionSummary{Session: session, Harness: w.harnessName()}
		w.sessions[session] = s
		w.order = append(w.order, session)
	}
	return s
}

func (w *walk) harnessName() string {
	name := string(w.cur.Harness)
	if w.cur.Version != "" {
		name += " " + w.cur.Version
	}
	return name
}

// flushSegment turns the open segment into commits: the file chain's
// commit, then a branch view for a branch lane, then, for a compaction's
// lines, a compaction commit holding them.
func (w *walk) flushSegment() error {
	s := w.seg
	w.seg = segment{}
	if s.lines == 0 {
		return nil
	}
	if w.format == "" {
		return fmt.Errorf("import %s: lines %d-%d hold no record of a Claude Code transcript or a Pi session file; nothing imported (--as names the harness)", w.path, w.line-s.lines+1, w.line)
	}
	if s.created.IsZero() {
		s.created = w.cur.Last
	}
	session := s.session
	if session == "" {
		session = w.cur.Session
	}
	prov := commits.Provenance{Template: w.cur.Template, Principal: w.im.opts.Principal, Machine: w.im.opts.Machine, Session: session,
		Trigger: s.trigger, Harness: w.harnessName(), Cwd: w.cur.Cwd, Model: s.model, Source: w.path,
		SourceStart: s.start, SourceEnd: s.end}
	if prov.Model == "" {
		prov.Model = w.cur.Model
	}
	if s.compaction {
		prov.Trigger = commits.CompactionTrigger
	}
	tags := []string{"import"}
	if w.cur.Root == "" && w.cur.BranchedFrom != "" {
		// A Pi session branched from another file holds its own copy of the
		// path it branched at: the link is a tag, not a parent.
		tags = append(tags, "branched-from:"+w.cur.BranchedFrom)
		if bc, err := w.im.readCursor(w.ctx, CursorID(w.cur.BranchedFrom)); err == nil && bc != nil && bc.Tip != "" {
			tags = append(tags, "branched-from-commit:"+bc.Tip)
		}
		w.res.BranchedFrom = w.cur.BranchedFrom
	}
	if s.lane != "" {
		tags = append(tags, "sidechain")
		prov.Thread = s.lane
		prov.Session = session + "/" + s.lane
	}
	parent := w.cur.Tip
	if parent == "" {
		parent = w.cur.Parent
	}
	sum := w.summary(session, s.lane)
	c, err := w.batch.Add(w.ctx, commits.CheckpointRequest{Parent: parent, Format: w.format, Content: s.buf,
		Provenance: prov, Summary: clip(s.summary, 200), Tags: tags, Created: s.created})
	if err != nil {
		return fmt.Errorf("import %s: lines %d-%d: %w", w.path, w.line-s.lines+1, w.line, err)
	}
	w.commit(c, sum)
	w.cur.Tip = c.ID
	if w.cur.Root == "" {
		w.cur.Root = c.ID
	}
	for _, id := range s.tasks {
		w.cur.Tasks[id] = c.ID
	}
	for _, r := range s.results {
		if spawn, ok := w.cur.Tasks[r[0]]; ok {
			w.cur.Spawns[r[1]] = spawn
		}
	}
	if w.cur.Tree {
		if err := w.treeLane(&s, c, prov, sum, parent); err != nil {
			return err
		}
	} else if s.lane == "" {
		w.cur.MainTip = c.ID
	} else {
		// The branch: the same lines, forked from the commit that was the
		// main thread's last when the lane began.
		vp, ok := w.cur.Lanes[s.lane]
		if !ok {
			vp = w.cur.SideRoot[s.lane]
			if vp == "" {
				vp = w.cur.MainTip
			}
			sum.Branches++
		}
		if vp == parent {
			// The file chain's commit is the branch's too.
			w.cur.Lanes[s.lane] = c.ID
		} else {
			v, err := w.batch.Add(w.ctx, commits.CheckpointRequest{Parent: vp, Format: w.format, Content: s.buf,
				Provenance: prov, Summary: clip(s.summary, 200), Tags: []string{"import", "branch", "sidechain"}, Created: s.created})
			if err != nil {
				return fmt.Errorf("import %s: lines %d-%d (branch %s): %w", w.path, w.line-s.lines+1, w.line, s.lane, err)
			}
			w.commit(v, sum)
			w.cur.Lanes[s.lane] = v.ID
		}
	}
	if s.compaction {
		cprov := prov
		cprov.Trigger = commits.CompactionTrigger
		cc, err := w.batch.Add(w.ctx, commits.CheckpointRequest{Parent: c.ID, Type: commits.Compaction, Format: w.format, Content: s.buf,
			Provenance: cprov, Summary: clip(s.summary, 2000), Tags: []string{"import"}, Created: s.created})
		if err != nil {
			return fmt.Errorf("import %s: compaction at lines %d-%d: %w", w.path, w.line-s.lines+1, w.line, err)
		}
		w.commit(cc, sum)
		sum.Compactions++
		if w.cur.Tree && w.cur.Lanes[s.lane] == c.ID {
			w.cur.Lanes[s.lane] = cc.ID
		}
		w.cur.Tip = cc.ID
		if s.lane == "" {
			w.cur.MainTip = cc.ID
		}
		w.cur.Pending = ""
	}
	w.cur.Offset, w.cur.Lines = s.end, w.line
	w.cur.Prefix = hex.EncodeToString(w.h.Sum(nil))
	if w.batch.Len() >= batchCommits || w.batch.Bytes() >= batchBytes {
		return w.writeBatch()
	}
	return nil
}

func (w *walk) commit(c *commits.Commit, sum *SessionSummary) {
	w.res.Commits = append(w.res.Commits, c.ID)
	sum.Commits++
	sum.Tip = w.cur.Tip
}

// writeBatch writes the batch's commits with the cursor, guarded by a
// match on the cursor as it was read (a concurrent import of the same
// file makes this one retry).
func (w *walk) writeBatch() error {
	if w.batch.Len() == 0 && w.cur.Offset == w.res.Offset && (w.cur.doc != nil || w.cur.Offset == 0) {
		return nil // nothing new (a new file with no complete line writes no cursor)
	}
	doc := w.cur.toDoc(w.cursorID, w.im.opts.Now().UTC())
	guard := store.Match(w.cursorID, w.cur.doc)
	if err := w.batch.Write(w.ctx, guard, store.Put(doc)); err != nil {
		return fmt.Errorf("import %s: %w", w.path, err)
	}
	w.cur.doc = doc
	w.res.Offset = w.cur.Offset
	return nil
}

func (w *walk) finishResult() {
	r := w.res
	r.Harness = string(w.cur.Harness)
	r.Format = w.im.formatOf(w.cur.Harness)
	r.Offset, r.Lines, r.Tip, r.Root, r.Parent = w.cur.Offset, w.cur.Lines, w.cur.Tip, w.cur.Root, w.cur.Parent
	if len(w.cur.Lanes) > 0 {
		r.Lanes = map[string]string{}
		for k, v := range w.cur.Lanes {
			r.Lanes[k] = v
		}
	}
	r.NewLines = w.line - w.startLine
	if r.Status == Unchanged {
		r.NewLines = 0
	}
	if r.Commits == nil {
		r.Commits = []string{}
	}
	// Records read before any session id (titles at a file's top) count
	// with the first session.
	if un, ok := w.sessions[""]; ok && len(w.order) > 1 {
		var first *SessionSummary
		for _, s := range w.order {
			if s != "" {
				first = w.sessions[s]
				break
			}
		}
		first.Records += un.Records
		first.Commits += un.Commits
		for k, v := range un.Skipped {
			first.Skipped = addCount(first.Skipped, k, v)
		}
		for k, v := range un.Unknown {
			first.Unknown = addCount(first.Unknown, k, v)
		}
		delete(w.sessions, "")
	}
	for _, s := range w.order {
		if w.sessions[s] == nil {
			continue
		}
		ss := *w.sessions[s]
		if ss.Tip == "" {
			ss.Tip = w.cur.Tip
		}
		r.Sessions = append(r.Sessions, ss)
	}
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func count(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

func addCount(m map[string]int, k string, n int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k] += n
	return m
}

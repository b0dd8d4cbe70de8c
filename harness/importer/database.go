package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// DocDBCursor is the type of the cursor document of one session of a
// harness database (docs/import.md "Databases").
const DocDBCursor = "import_db_cursor"

// dbCursor is where the import of a database session stopped: the hash
// of every row line taken, the chain's tip and root, and the commit that
// holds each sub-agent session's start (DBRow.Spawns).
type dbCursor struct {
	tip, root string
	rows      map[string]string // hash of a row's key -> hash of its last line taken
	spawns    map[string]string // sub-agent session -> the commit holding the call that started it
	doc       store.Doc
}

func dbCursorID(path, session string) string { return CursorID(path + "#" + session) }

func (im *Importer) readDBCursor(ctx context.Context, id string) (*dbCursor, error) {
	d, err := im.st.Entity(ctx, id, store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return &dbCursor{rows: map[string]string{}, spawns: map[string]string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	c := &dbCursor{rows: map[string]string{}, spawns: map[string]string{}, doc: d}
	c.tip, _ = d["tip"].(string)
	c.root, _ = d["root"].(string)
	if m, ok := d["rows"].(map[string]any); ok {
		for k, v := range m {
			if s, ok := v.(string); ok {
				c.rows[k] = s
			}
		}
	}
	if m, ok := d["spawns"].(map[string]any); ok {
		for k, v := range m {
			if s, ok := v.(string); ok {
				c.spawns[k] = s
			}
		}
	}
	return c, nil
}

func lineHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// importDatabase imports every session of a harness database that keeps
// sessions in rows (harness.DatabaseReader: opencode's SQLite), read
// without writing to it. Each session is a chain of commits in the
// codec's commit format, one row a line: cut before a person's prompt
// (its message and parts), before a compaction summary's message, and at
// the size bound, a message and its parts always in one commit. A
// session's cursor holds a hash of every row taken: a later import adds
// the rows that are new, and a row that changed since as an update line
// (its new version; nothing is lost, nothing taken twice). A sub-agent's
// session (DBSession.Parent) forks from its parent's commit holding the
// call that started it (the parent, older, is imported before it), or
// from the parent's tip when no imported call names it yet (reported).
func (im *Importer) importDatabase(ctx context.Context, path string, size int64, d harness.DatabaseReader) (*FileResult, error) {
	sessions, err := d.ReadDB(path)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	res := &FileResult{Path: path, Harness: string(d.Format()), Format: d.CommitFormat(), Status: Unchanged, Size: size, Commits: []string{}}
	newSessions, grew := 0, 0
	var last time.Time
	for _, s := range sessions {
		for _, p := range s.Problems {
			res.Problems = append(res.Problems, Problem{Path: path, Msg: p.String()})
		}
		sum, status, err := im.importDBSession(ctx, path, d, s, res)
		if err != nil {
			return nil, err
		}
		switch status {
		case Imported:
			newSessions++
		case Grew:
			grew++
		}
		res.Lines += len(s.Rows)
		if sum != nil {
			res.Sessions = append(res.Sessions, *sum)
			if n := len(s.Rows); n > 0 && !s.Rows[n-1].Time.Before(last) {
				last, res.Tip = s.Rows[n-1].Time, sum.Tip
			}
		}
	}
	switch {
	case newSessions > 0:
		res.Status = Imported
		if grew > 0 {
			res.Status = Grew
		}
	case grew > 0:
		res.Status = Grew
	}
	res.Offset = size
	return res, nil
}

// importDBSession imports one session's new and changed rows.
func (im *Importer) importDBSession(ctx context.Context, path string, d harness.DatabaseReader, s harness.DBSession, res *FileResult) (*SessionSummary, Status, error) {
	id := dbCursorID(path, s.ID)
	cur, err := im.readDBCursor(ctx, id)
	if err != nil {
		return nil, "", err
	}
	status := Grew
	if cur.doc == nil {
		status = Imported
	}
	name := string(d.Format())
	if s.Version != "" {
		name += " " + s.Version
	}
	sum := &SessionSummary{Session: s.ID, Harness: name, Tip: cur.tip}
	if cur.doc == nil && s.Parent != "" {
		pc, err := im.readDBCursor(ctx, dbCursorID(path, s.Parent))
		if err != nil {
			return nil, "", err
		}
		switch {
		case pc.doc == nil:
			res.Problems = append(res.Problems, Problem{Path: path, Msg: fmt.Sprintf("session %s: its parent session %s is not imported; the sub-agent's chain is a root", s.ID, s.Parent)})
		case pc.spawns[s.ID] != "":
			cur.tip = pc.spawns[s.ID]
		default:
			cur.tip = pc.tip
			res.Problems = append(res.Problems, Problem{Path: path, Msg: fmt.Sprintf("session %s: no call of its parent session %s names it (yet); forked at the parent's last commit %s", s.ID, s.Parent, pc.tip)})
		}
		sum.Parent = cur.tip
	}
	b := im.svc.NewBatch()
	var seg []byte
	var segStart time.Time
	segHuman, segContent, segCompaction := false, false, false
	segSummary, segModel := "", ""
	var segSpawns []string
	newLines := 0
	tags := []string{"import"}
	if s.Parent != "" {
		tags = append(tags, "subagent-of:"+s.Parent)
	}
	flush := func() error {
		if len(seg) == 0 {
			return nil
		}
		trigger := commits.ImportTrigger
		switch {
		case segCompaction:
			trigger = commits.CompactionTrigger
			sum.Compactions++
		case segHuman:
			trigger = commits.TurnBoundary
		}
		model := segModel
		if model == "" {
			model = s.Model
		}
		c, err := b.Add(ctx, commits.CheckpointRequest{Parent: cur.tip, Format: d.CommitFormat(), Content: seg, Created: segStart,
			Summary: clip(segSummary, 200), Tags: tags,
			Provenance: commits.Provenance{Principal: im.opts.Principal, Machine: im.opts.Machine, Session: s.ID, Trigger: trigger,
				Harness: name, Cwd: s.Cwd, Model: model, Source: path + "#" + s.ID}})
		if err != nil {
			return fmt.Errorf("import %s session %s: %w", path, s.ID, err)
		}
		res.Commits = append(res.Commits, c.ID)
		sum.Commits++
		for _, sp := range segSpawns {
			cur.spawns[sp] = c.ID
		}
		segSpawns = nil
		cur.tip = c.ID
		if cur.root == "" {
			cur.root = c.ID
		}
		seg, segStart, segHuman, segContent, segCompaction, segSummary, segModel = nil, time.Time{}, false, false, false, "", ""
		return nil
	}
	group := ""
	for _, r := range s.Rows {
		h, key := lineHash(r.Line), lineHash([]byte(r.Key))
		old, seen := cur.rows[key]
		if seen && old == h {
			continue
		}
		line := r.Line
		if seen {
			line = r.Update
		}
		starts := r.Group != group
		group = r.Group
		if starts && !seen && len(seg) > 0 && ((r.Human && segContent) || r.Compaction || len(seg)+len(line) > im.opts.MaxCommitBytes) {
			if err := flush(); err != nil {
				return nil, "", err
			}
		}
		if len(seg) == 0 {
			segStart = r.Time
		}
		seg = append(seg, line...)
		segSpawns = append(segSpawns, r.Spawns...)
		cur.rows[key] = h
		newLines++
		sum.Records++
		if !seen {
			segHuman = segHuman || r.Human
			segCompaction = segCompaction || r.Compaction
			segContent = segContent || r.Group != s.Rows[0].Group
			if r.Human {
				sum.Prompts++
			}
			sum.Responses += r.Responses
			sum.ToolCalls += r.ToolCalls
			sum.ToolResults += r.ToolResults
			sum.Injected += r.Injected
			if segSummary == "" {
				segSummary = r.Summary
			}
			if r.Model != "" {
				segModel = r.Model
			}
		} else {
			count(&sum.Skipped, "update")
		}
	}
	if err := flush(); err != nil {
		return nil, "", err
	}
	if newLines == 0 {
		if cur.doc == nil {
			return nil, Unchanged, nil
		}
		sum.Tip = cur.tip
		return sum, Unchanged, nil
	}
	rows := map[string]any{}
	for k, v := range cur.rows {
		rows[k] = v
	}
	spawns := map[string]any{}
	for k, v := range cur.spawns {
		spawns[k] = v
	}
	doc := store.Doc{store.IDKey: id, "type": DocDBCursor, "version": cursorVersion, "path": path, "session": s.ID,
		"harness": string(d.Format()), "tip": cur.tip, "root": cur.root, "rows": rows, "spawns": spawns, "updated": store.FormatTime(im.opts.Now().UTC())}
	if err := b.Write(ctx, store.Match(id, cur.doc), store.Put(doc)); err != nil {
		return nil, "", fmt.Errorf("import %s session %s: %w", path, s.ID, err)
	}
	sum.Tip = cur.tip
	res.NewLines += newLines
	if res.Root == "" {
		res.Root = cur.root
	}
	return sum, status, nil
}

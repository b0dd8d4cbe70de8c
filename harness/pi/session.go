package pi

import (
	"fmt"

	"github.com/ctxstore/ctxstore/harness"
)

// Read builds the thread of a Pi session file from its records. Version 1 files have no ids:
// the thread is file order. Versions 2 and 3 (entries with id/parentId) are
// a tree: the thread is the path from the root to the last entry of the
// file, Pi's leaf when it loads a session; entries off that path are
// counted as OffBranch. A parent missing from the file is reported and the
// path goes on at the previous entry of the file. A context_edit entry on
// the thread leaves its target's message out of the thread, or puts its
// replacement in its place.
func Read(s *harness.Session, recs []harness.Record) {
	rep := &s.Report
	entries := make([]*Entry, len(recs))
	tree := false
	header := false
	for i, rc := range recs {
		e, err := DecodeEntry(rc)
		if err != nil {
			rep.Problem(rc.Line, "entry does not decode: %v; skipped", err)
			continue
		}
		t := string(e.Type)
		rep.Types[t]++
		switch Types[t] {
		case harness.KindUnknown:
			harness.Count(&rep.Unknown, t) // kept in the tree, emits nothing
		case harness.KindSkip:
			harness.Count(&rep.Skipped, t)
		}
		if t == "session" {
			if !header {
				header = true
				s.ID, s.Cwd = string(e.ID), string(e.Cwd)
				v := int64(e.Version)
				if v == 0 {
					v = 1
				}
				s.Version = fmt.Sprint(v)
				tree = v >= 2
			}
			continue
		}
		if e.ID != "" || e.ParentID.Set {
			tree = true
		}
		entries[i] = e
	}

	order := make([]int, 0, len(recs))
	if !tree {
		for i, e := range entries {
			if e != nil {
				order = append(order, i)
			}
		}
	} else {
		order = piPath(recs, entries, rep)
	}
	// Context edits apply to the thread as Pi's later calls send it: an
	// omitted message is left out, a replaced one is its replacement.
	onThread := make([]*Entry, 0, len(order))
	for _, i := range order {
		onThread = append(onThread, entries[i])
	}
	edits := Edits(onThread)
	c := &Converter{Report: rep}
	for _, e := range onThread {
		if ed, ok := edits[string(e.ID)]; ok && e.ID != "" {
			if ed.Omit {
				harness.Count(&rep.Skipped, "context_edit omitted")
				continue
			}
			// Pi replaces the content and keeps the rest of the message
			// (its role, tool call id, time): projectContextEntry.
			r := *e
			switch {
			case e.Type == "message" && e.Msg != nil:
				m := *e.Msg
				m.Content = ed.Content
				r.Msg = &m
			case e.Type == "custom_message":
				r.Content = ed.Content
			}
			emit(s, c, &r)
			continue
		}
		emit(s, c, e)
	}
}

// piPath returns the record indexes on the path from the root to the last
// entry with an id, in path order.
func piPath(recs []harness.Record, entries []*Entry, rep *harness.Report) []int {
	byID := map[string]int{}
	var withID []int
	for i, e := range entries {
		if e == nil {
			continue
		}
		if e.ID == "" {
			rep.Problem(recs[i].Line, "entry without an id in a tree session; skipped")
			rep.OffBranch++
			continue
		}
		if _, dup := byID[string(e.ID)]; dup {
			rep.Problem(recs[i].Line, "id %s appears again; the first entry is kept", e.ID)
			continue
		}
		byID[string(e.ID)] = i
		withID = append(withID, i)
	}
	if len(withID) == 0 {
		return nil
	}
	pos := make(map[int]int, len(withID))
	for p, i := range withID {
		pos[i] = p
	}
	selected := map[int]bool{}
	var path []int
	for cur := withID[len(withID)-1]; cur >= 0; {
		selected[cur] = true
		path = append(path, cur)
		e := entries[cur]
		next := -1
		if p := e.ParentID.Value; p != "" {
			j, ok := byID[p]
			switch {
			case !ok:
				rep.Problem(recs[cur].Line, "parent %s is not in the file; going on with the previous entry", p)
				for q := pos[cur] - 1; q >= 0; q-- {
					if !selected[withID[q]] {
						next = withID[q]
						break
					}
				}
			case selected[j]:
				rep.Problem(recs[cur].Line, "parent chain loops at %s; stopped", p)
			default:
				next = j
			}
		}
		cur = next
	}
	rep.OffBranch += len(withID) - len(path)
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// emit converts one entry on the thread: a message entry's agent message,
// and compaction, branch summary and custom message entries as the agent
// messages Pi makes of them when it loads a session (compactionSummary,
// branchSummary, custom), all through the one converter. The entry's
// timestamp, when it has one, is the message's time.
func emit(s *harness.Session, c *Converter, e *Entry) {
	if e.MsgErr != nil {
		s.Report.Problem(e.Line, "%v; skipped", e.MsgErr)
		return
	}
	m, ok := e.AgentMessage()
	if !ok || !c.Add(m, e.Line) {
		return
	}
	out := c.Log[len(c.Log)-1]
	c.Log = c.Log[:0] // the session holds the messages
	out.ID = string(e.ID)
	if t := harness.ParseTime(string(e.Timestamp)); !t.IsZero() {
		out.Time = t
	}
	s.Messages = append(s.Messages, out)
	s.MessageLines = append(s.MessageLines, e.Line)
	if m.Role == "compactionSummary" {
		s.MarkCompaction()
	}
}

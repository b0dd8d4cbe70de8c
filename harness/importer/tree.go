package importer

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// piLane places a Pi tree entry on a lane (docs/import.md "Branches"): the
// lane of the entry before it in the file when it continues that entry;
// the lane whose last entry is its parent when it continues another lane
// (Pi went back to a branch); else a new lane "branch-ID" that forks at its
// parent.
func (w *walk) piLane(id, parent string) string {
	c := w.cur
	last := ""
	for l, end := range c.LaneEnd {
		if end == c.LastEntry && c.LastEntry != "" {
			last = l
		}
	}
	lane := ""
	switch {
	case c.LastEntry == "" && parent == "":
		lane = ""
	case parent == c.LastEntry && c.LastEntry != "":
		lane = last
	default:
		found := false
		for l, end := range c.LaneEnd {
			if end == parent && parent != "" {
				lane, found = l, true
				break
			}
		}
		if !found {
			lane = "branch-" + short(id)
			c.ForkAt[lane] = parent
		}
	}
	c.LaneEnd[lane] = id
	c.LastEntry = id
	return lane
}

// treeLane gives a Pi tree's segment its place on its lane: the file
// chain's commit when the lane's last commit is the file chain's previous
// one, else a branch commit (tagged "branch") holding the same lines whose
// parent is the lane's last commit, or for a lane's first segment the
// commit ending at the entry it forks at (a commit split there when the
// entry is inside one).
func (w *walk) treeLane(s *segment, c *commits.Commit, prov commits.Provenance, sum *SessionSummary, parent string) error {
	lane := s.lane
	vp, ok := w.cur.Lanes[lane]
	if !ok {
		if at, forked := w.cur.ForkAt[lane]; forked {
			fp, err := w.commitEndingAt(at)
			if err != nil {
				return err
			}
			if fp == "" {
				w.problem(w.line-s.lines+1, "entry %s forks at %s, which is not in the file; its branch starts a new chain", s.entries[0].id, at)
			}
			vp = fp
			sum.Branches++
		}
	}
	lc := c
	if vp != parent {
		v, err := w.batch.Add(w.ctx, commits.CheckpointRequest{Parent: vp, Format: w.format, Content: s.buf,
			Provenance: prov, Summary: clip(s.summary, 200), Tags: []string{"import", "branch"}, Created: s.created})
		if err != nil {
			return fmt.Errorf("import %s: lines %d-%d (branch %s): %w", w.path, w.line-s.lines+1, w.line, lane, err)
		}
		w.commit(v, sum)
		lc = v
	}
	w.cur.Lanes[lane] = lc.ID
	for _, e := range s.entries {
		w.cur.LaneOf[e.id] = lc.ID + " " + strconv.Itoa(e.k)
	}
	return nil
}

// commitEndingAt returns a commit whose chain ends with the line of entry
// id on its lane: the lane commit holding it when it is that commit's last
// line, else a branch commit holding that commit's lines up to it, parented
// where that commit is. "" when the entry is not known.
func (w *walk) commitEndingAt(id string) (string, error) {
	pos, ok := w.cur.LaneOf[id]
	if !ok {
		return "", nil
	}
	cid, ks, _ := strings.Cut(pos, " ")
	k, _ := strconv.Atoi(ks)
	// The commit may be in the batch being made: write it first.
	if err := w.writeBatch(); err != nil {
		return "", err
	}
	c, err := w.im.svc.Show(w.ctx, cid, store.Basis{})
	if err != nil {
		return "", fmt.Errorf("import %s: the commit of entry %s: %w", w.path, id, err)
	}
	data, err := w.im.svc.Content(w.ctx, c)
	if err != nil {
		return "", err
	}
	end := 0
	for i := 0; i < k; i++ {
		j := bytes.IndexByte(data[end:], '\n')
		if j < 0 {
			return "", fmt.Errorf("import %s: commit %s holds fewer than %d lines", w.path, cid, k)
		}
		end += j + 1
	}
	if end == len(data) {
		return cid, nil
	}
	prov := c.Provenance
	prov.SourceEnd = prov.SourceStart + int64(end)
	sp, err := w.batch.Add(w.ctx, commits.CheckpointRequest{Parent: c.Parent, Format: c.Format, Content: data[:end],
		Provenance: prov, Summary: c.Summary, Tags: []string{"import", "branch"}, Created: c.Created})
	if err != nil {
		return "", fmt.Errorf("import %s: splitting %s at entry %s: %w", w.path, cid, id, err)
	}
	w.res.Commits = append(w.res.Commits, sp.ID)
	return sp.ID, nil
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Paging is how a session's demand paging went: the
// outputs its contexts showed as a preview, and how many of them the model
// then read back whole; the same for outputs shown collapsed. A preview
// is read back ("a fault") by an activate call naming it, by a read of its
// spill file without offset or limit (a bare head), or by a call of the
// same tool with the same arguments with no write or edit between (the
// command run again). A read of
// some lines of the spill file is counted apart (Partial): the preview
// was not enough, but the model did not need it whole.
type Paging struct {
	// Previews counts the outputs shown as a preview, Faulted those read
	// back whole at least once; FaultRate is Faulted / Previews (0 without
	// previews).
	Previews  int     `json:"previews"`
	Faulted   int     `json:"faulted"`
	FaultRate float64 `json:"fault_rate"`
	// ByActivate, BySpillRead and ByRerun count the calls that read a
	// preview back, by how (an output read back twice counts twice here,
	// once in Faulted); Partial the reads of some lines of a spill file.
	ByActivate  int `json:"by_activate"`
	BySpillRead int `json:"by_spill_read"`
	ByRerun     int `json:"by_rerun"`
	Partial     int `json:"partial"`
	// Collapsed counts the outputs shown collapsed (never as a preview),
	// CollapsedReadBack those the model read back whole afterwards.
	Collapsed         int `json:"collapsed"`
	CollapsedReadBack int `json:"collapsed_read_back"`
	// PreviewDoublings is how many times the session's preview size
	// doubled because previews were read back more often than 5%
	// (assemble's adaptive preview size), as of its last call.
	PreviewDoublings int `json:"preview_doublings"`
	// Faults lists each call that read an output back, in stream order.
	Faults []Fault `json:"faults,omitempty"`
}

// Fault is one call that read back an output shown as a preview or
// collapsed.
type Fault struct {
	// Call is the model call whose record first holds the reading call;
	// CallID the reading call's id and How "activate", "spill_read",
	// "spill_lines" or "rerun".
	Call   int    `json:"call"`
	CallID string `json:"call_id"`
	How    string `json:"how"`
	// Output is the call id of the output read back; Preview says whether
	// it was shown as a preview (else collapsed).
	Output  string `json:"output"`
	Preview bool   `json:"preview"`
}

// Paging reads every call record of session sid once (their items) and
// counts its demand paging; a recorded session's is recordedPaging's.
func (in *Inspector) Paging(ctx context.Context, sid string) (*Paging, error) {
	if err := in.exists(ctx, sid); errors.Is(err, store.ErrNotFound) && in.allowed(sid) {
		return in.recordedPaging(ctx, sid, err) // paging_recorded.go
	} else if err != nil {
		return nil, err
	}
	docs, err := in.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", assemble.CommitType), store.Where("session_id", sid)},
		Find: []string{"call", "items", "shape"}})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading call records: %w", sid, err)
	}
	recs := make([]pagingRecord, 0, len(docs))
	last, doublings := 0, 0
	for _, d := range docs {
		r := pagingRecord{n: asInt(d["call"])}
		if err := convert(d["items"], &r.items); err != nil {
			return nil, fmt.Errorf("session %s: call %d: items: %w", sid, r.n, err)
		}
		recs = append(recs, r)
		if sh, ok := d["shape"].(map[string]any); ok && r.n > last {
			last, doublings = r.n, asInt(sh["preview_doublings"])
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].n < recs[j].n })
	// Lines of a spill file that cover the whole output are a whole read
	// (as the read itself and the assembler take them): the output's
	// lines decide, read once per output asked about.
	whole := map[string]string{}
	covers := func(id string, offset, limit int) bool {
		text, ok := whole[id]
		if !ok {
			if o, _, err := expand.Resolve(ctx, in.st, objects.DynamicRef(id)); err == nil && o.Content != nil {
				text = *o.Content
			}
			whole[id] = text
		}
		return text != "" && tools.Covers(text, offset, limit)
	}
	p := countPaging(sid, streamOf(recs), covers)
	p.PreviewDoublings = doublings
	return p, nil
}

// pagingRecord is a call record's number and the items it added after the
// part of its parent it kept: every item ever pushed is in exactly one
// record (a rebase pushes the items it rewrites again).
type pagingRecord struct {
	n     int
	items []assemble.ItemDoc
}

// pagingCall is one tool call of the stream, in the order it first came.
type pagingCall struct {
	n    int // the call record that first holds it
	call assemble.ToolCall
}

// pagingStream is what countPaging reads: every tool call in the order it
// first came, and how and when each output was first shown as a preview or
// collapsed.
type pagingStream struct {
	calls   []pagingCall
	at      map[string]int    // call id -> its index in calls
	shown   map[string]string // output's call id -> "preview" or "collapsed"
	shownAt map[string]int    // output's call id -> the record that first showed it so
}

func streamOf(recs []pagingRecord) pagingStream {
	s := pagingStream{at: map[string]int{}, shown: map[string]string{}, shownAt: map[string]int{}}
	for _, r := range recs {
		for _, it := range r.items {
			switch {
			case it.K == "assistant":
				for _, c := range it.Calls {
					if _, ok := s.at[c.ID]; !ok {
						s.at[c.ID] = len(s.calls)
						s.calls = append(s.calls, pagingCall{n: r.n, call: c})
					}
				}
			case it.K == "toolref" && (it.Out == "preview" || it.Out == "collapsed"), it.K == "stub":
				ref, err := objects.ParseRef(it.Ref)
				if err != nil {
					continue
				}
				if _, call := s.at[ref.ID]; it.K == "stub" && !call {
					continue // a file's or a note's collapsed block
				}
				if _, ok := s.shown[ref.ID]; !ok {
					how := it.Out
					if it.K == "stub" {
						how = "collapsed" // an output shown as a content block (activated, or rendering 1-2)
					}
					s.shown[ref.ID], s.shownAt[ref.ID] = how, r.n
				}
			}
		}
	}
	return s
}

// countPaging counts s's paging; covers(output, offset, limit) says whether
// those lines are the whole output (nil: never).
func countPaging(sid string, s pagingStream, covers func(string, int, int) bool) *Paging {
	p := &Paging{}
	for _, how := range s.shown {
		if how == "preview" {
			p.Previews++
		} else {
			p.Collapsed++
		}
	}
	ids := make([]string, 0, len(s.shown))
	for id := range s.shown {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	spillDir := strings.TrimSuffix(tools.SpillName(sid), ".txt")
	faulted := map[string]bool{}
	lastChange := -1 // the last write or edit call so far
	for i, pc := range s.calls {
		switch ingest.DefaultTools[strings.ToLower(pc.call.Name)] {
		case ingest.KindWrite, ingest.KindEdit:
			lastChange = i
			continue
		}
		out, how := readsBack(pc.call, ids, spillDir)
		if how == "spill_lines" && covers != nil && covers(out, tools.IntArg(pc.call.Args, "offset"), tools.IntArg(pc.call.Args, "limit")) {
			how = "spill_read"
		}
		if out == "" {
			// The same tool with the same arguments as an earlier call
			// whose output was a preview, with no write or edit between:
			// the command run again (after a change it is a new run, as
			// the replay's "reneeded" has it).
			for _, id := range ids {
				if k, ok := s.at[id]; ok && k < i && k > lastChange && s.shown[id] == "preview" && sameCall(s.calls[k].call, pc.call) {
					out, how = id, "rerun"
					break
				}
			}
		}
		if out == "" {
			continue
		}
		if pc.n <= s.shownAt[out] {
			// Made before the model saw the output so: a call first in
			// record n answers context n-1.
			continue
		}
		preview := s.shown[out] == "preview"
		p.Faults = append(p.Faults, Fault{Call: pc.n, CallID: pc.call.ID, How: how, Output: out, Preview: preview})
		switch {
		case how == "spill_lines":
			if preview {
				p.Partial++
			}
			continue
		case !preview:
		case how == "activate":
			p.ByActivate++
		case how == "spill_read":
			p.BySpillRead++
		case how == "rerun":
			p.ByRerun++
		}
		if !faulted[out] {
			faulted[out] = true
			if preview {
				p.Faulted++
			} else {
				p.CollapsedReadBack++
			}
		}
	}
	if p.Previews > 0 {
		p.FaultRate = float64(p.Faulted) / float64(p.Previews)
	}
	return p
}

// readsBack returns the output (a call id of ids) that call c reads back
// by activating it or reading its spill file, and how.
func readsBack(c assemble.ToolCall, ids []string, spillDir string) (string, string) {
	switch strings.ToLower(c.Name) {
	case "activate":
		ref, _ := c.Args["id"].(string)
		if id := matchID(ref, ids); id != "" {
			return id, "activate"
		}
	case "read":
		path, _ := c.Args["path"].(string)
		if path == "" {
			path, _ = c.Args["file_path"].(string)
		}
		if path == "" || filepath.Base(filepath.Dir(path)) != spillDir {
			return "", ""
		}
		id, ok := tools.SpillCallID(filepath.Base(path))
		if !ok || matchID(id, ids) != id {
			return "", ""
		}
		for _, k := range []string{"offset", "limit"} {
			if v, ok := c.Args[k]; ok && v != nil && fmt.Sprint(v) != "0" {
				return id, "spill_lines" // as the assembler reads it: 0 is no bound
			}
		}
		return id, "spill_read"
	}
	return "", ""
}

// matchID resolves what activate takes: an id, or a prefix of at least 8
// characters of exactly one of ids (the display form).
func matchID(ref string, ids []string) string {
	if ref == "" {
		return ""
	}
	found := ""
	for _, id := range ids {
		if id == ref {
			return id
		}
		if len(ref) >= 8 && strings.HasPrefix(id, ref) {
			if found != "" {
				return ""
			}
			found = id
		}
	}
	return found
}

// sameCall reports whether a and b call the same tool with the same
// arguments (compared as JSON, whose object keys are sorted).
func sameCall(a, b assemble.ToolCall) bool {
	if a.Name != b.Name {
		return false
	}
	ja, err1 := json.Marshal(a.Args)
	jb, err2 := json.Marshal(b.Args)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

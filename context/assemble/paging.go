package assemble

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
)

// paging is what keeps the context within its window: the outputs that
// entered as a preview (demand paging), the live ids Overflow offered for
// deactivation, and under a bare head the spill files the stream names.
type paging struct {
	previewed map[string]bool // shown outputs entered as a preview
	previews  int             // outputs entered as a preview so far
	overflow  map[string]bool // live ids Overflow offered for deactivation (the window is full)
	overBy    int             // by how many tokens the context was over when Overflow offered them
	told      bool            // the bare head's spillNote is in the stream
	toSpill   []SpillFile     // outputs named by spill file since the last commit (Assembled.Spill)
}

// wholeOnActivate: when o is an activate call naming an output shown as a
// preview, or under a bare head a whole read of that output's spill file,
// the preview goes stale, so that the next sync shows the output whole (a
// content block), as any activated object.
func (a *Assembler) wholeOnActivate(o *objects.Object) {
	if o.Kind() != objects.KindToolcall || o.Toolcall.Status != objects.StatusOK {
		return
	}
	var ref string
	switch strings.ToLower(o.Toolcall.Tool) {
	case "activate":
		ref, _ = o.Toolcall.Args["id"].(string)
	case "read":
		ref = a.spillRead(o.Toolcall.Args)
	}
	if ref == "" {
		return
	}
	for id := range a.previewed {
		if id == ref || len(ref) >= 8 && strings.HasPrefix(id, ref) {
			if i, ok := a.shown[id]; ok {
				a.markStale(i)
				delete(a.shown, id)
				delete(a.held, id)
			}
			delete(a.previewed, id)
			a.fault(id)
			return
		}
	}
}

// maxFaultRate is the share of previews the model may read back whole
// before previews get larger: under 5%, so that cutting outputs costs
// fewer reads back than it saves.
const maxFaultRate = 0.05

// fault counts preview id read back whole (once per output): an activate
// naming it or a whole read of its spill file (wholeOnActivate). The same
// command run again is not counted here: live, it is as often a new run
// after the model changed the code (the paging report counts re-runs with
// no write or edit between, as the replay does). While the
// session's previews are read back more often than maxFaultRate, each
// such read doubles the size from which outputs enter as a preview
// (previewTokens): the model has shown it needs outputs of that size, so
// only larger ones are cut; at most 10 doublings.
func (a *Assembler) fault(id string) {
	if slices.Contains(a.shape.Faulted, id) {
		return
	}
	a.shape.Faulted = append(slices.Clip(a.shape.Faulted), id)
	if float64(len(a.shape.Faulted)) > maxFaultRate*float64(a.shape.Previews) && a.shape.PreviewDoublings < 10 {
		a.shape.PreviewDoublings++
	}
}

// previewTokens is the size from which a live output enters as a preview
// in this session: Policy.PreviewTokens, doubled at each fault that came
// while the fault rate was over maxFaultRate.
func (a *Assembler) previewTokens() int {
	if a.pol.PreviewTokens <= 0 {
		return a.pol.PreviewTokens
	}
	return a.pol.PreviewTokens << a.shape.PreviewDoublings
}

// spillRead returns the call id whose spill file a read call's arguments
// name whole: no offset or limit, or lines that cover the whole output
// (tools.Covers, as the read itself decides); "" for any other read.
func (a *Assembler) spillRead(args map[string]any) string {
	p, _ := args["path"].(string)
	if a.style.spill == "" || p == "" || filepath.Dir(p) != filepath.Clean(a.style.spill) {
		return ""
	}
	id, _ := tools.SpillCallID(filepath.Base(p))
	offset, limit := tools.IntArg(args, "offset"), tools.IntArg(args, "limit")
	if offset == 0 && limit == 0 {
		return id
	}
	if h := a.held[id]; h != nil && h.obj.Content != nil && tools.Covers(*h.obj.Content, offset, limit) {
		return id
	}
	return "" // a part: the preview stays
}

// Previews returns how many outputs entered as a preview, and whether id
// is one still shown so (its output not whole in the context).
func (a *Assembler) Previews(id string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.previews, a.previewed[id]
}

// spillPath is the file a bare head's text names for a tool call's
// output: dir/tools.SpillName(call id).
func spillPath(dir, callID string) string {
	return strings.TrimSuffix(dir, "/") + "/" + tools.SpillName(callID)
}

// SpillFile is a tool call's output that a bare head's context names by
// its spill file (Assembled.Spill): the harness integration writes Content
// to LeanHead.Spill/tools.SpillName(CallID).
type SpillFile struct {
	CallID  string
	Content string
}

// spillOut lists tool result it, with its output, for its spill file in
// dir when a bare head's text names that file for it (dir is not ""): a
// preview, or a line an output collapsed to.
func (p *paging) spillOut(dir string, it *item) {
	if dir == "" || it.kind != kToolRef || it.obj == nil || it.obj.Content == nil {
		return
	}
	p.toSpill = append(p.toSpill, SpillFile{CallID: it.ref.ID, Content: *it.obj.Content})
}

// spillPattern is how the text of a bare head names spill files in
// general: dir/<placeholder>.txt, the placeholder as it is.
func spillPattern(dir, placeholder string) string {
	return strings.TrimSuffix(dir, "/") + "/" + placeholder + ".txt"
}

// SpillDir is the directory a bare head's text names for the session's
// spill files (its root commit's, after Resume), "" for any other head.
func (a *Assembler) SpillDir() string { return a.style.spill }

// spillDir is the spill directory a session's items name: a bare head's,
// or "" (they name activate).
func spillDir(lh *LeanHead) string {
	if lh == nil || !lh.Bare {
		return ""
	}
	return lh.Spill
}

// spillNote is what a bare head's session is told once, at its first
// collapse, instead of the guide: where a collapsed or cut output is
// whole. A collapsed output's own line stays as short as with the guide
// (a path in each would cost more than the guide: docs/benchmarks.md).
func spillNote(dir string) string {
	return ctxPrefix + "older tool outputs collapse to a line, and a very long one shows only its start and end; each is whole in " +
		spillPattern(dir, "<its call id>") + " for read to load"
}

// loadHint says how the model sees a tool call's output whole: with
// activate, or, under a bare head, by reading its spill file.
func (it *item) loadHint() string {
	if it.style.spill == "" {
		return "activate(<this call's id>) shows the output whole"
	}
	return "read " + spillPath(it.style.spill, it.ref.ID) + " for the output whole"
}

// PreviewText is a large output as it enters (demand paging): its first
// and last lines, cut at line ends, and a line saying what was left out
// and how to see it whole (load).
func PreviewText(s, load string) string {
	h := min(len(s), PreviewHead)
	for h < len(s) && h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	head := s[:h]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i+1]
	}
	t := max(len(head), len(s)-PreviewTail)
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	tail := s[t:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	omitted := s[len(head) : len(s)-len(tail)]
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return fmt.Sprintf("%s[ctxstore] %d of %d chars (%d lines) left out here; %s\n%s",
		head, utf8.RuneCountInString(omitted), utf8.RuneCountInString(s), strings.Count(omitted, "\n"), load, tail)
}

// Preview sizes: the start and the end of a large output shown.
const (
	PreviewHead = 2400
	PreviewTail = 1200
)

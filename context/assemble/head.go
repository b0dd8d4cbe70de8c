package assemble

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/context/tools"
)

// LeanHead keeps a session's head lean until its context has something to
// manage (issue 17 item 2: ctxstore adds nothing until collapsing can
// pay). While lean, the system prompt goes without Guide and the tools
// without those named in Withheld; from the first call whose context
// leaves out something the model saw or needs ctxstore's tools for (a
// rebase, a deactivation to fit the window, a metadata line of an object
// only activate loads), the head is the managed one: the system
// prompt, a blank line and Guide, and every tool. The switch rewrites the
// whole context once (the head precedes everything a prompt cache holds),
// so the cost model counts a rebase taken while lean as a rewrite of the
// whole context. It happens at most once per session and is recorded:
// the root commit holds the LeanHead and every commit of a lean call says
// so ("lean"), so Rebuild and Resume render the head each call was sent
// with. Only the stream layout has a lean head.
type LeanHead struct {
	// Guide is appended to the system prompt once managed (after a blank
	// line when the prompt is not empty).
	Guide string `json:"guide,omitempty"`
	// Withheld names the tools of Options.Tools offered only once managed.
	Withheld []string `json:"withheld,omitempty"`
	// Bare keeps the head lean for the whole session (issue 17): it never
	// switches, so the cost model prices a rebase as with a fixed head,
	// and what the model would load with the withheld tools it loads with
	// the harness's own read instead: a note at the first collapse
	// (spillNote), a preview and a deactivation note name the outputs'
	// spill files, Spill/<call id>.txt (spillPath), which the harness
	// integration writes.
	Bare bool `json:"bare,omitempty"`
	// Spill is the directory of a bare head's spill files.
	Spill string `json:"spill,omitempty"`
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

// spillOut lists tool result it, with its output, for its spill file when
// a bare head's text names that file for it: a preview, or a line an
// output collapsed to.
func (a *Assembler) spillOut(it *item) {
	if a.spill == "" || it.kind != kToolRef || it.obj == nil || it.obj.Content == nil {
		return
	}
	a.toSpill = append(a.toSpill, SpillFile{CallID: it.ref.ID, Content: *it.obj.Content})
}

// spillPattern is how the text of a bare head names spill files in
// general: dir/<placeholder>.txt, the placeholder as it is.
func spillPattern(dir, placeholder string) string {
	return strings.TrimSuffix(dir, "/") + "/" + placeholder + ".txt"
}

// SpillDir is the directory a bare head's text names for the session's
// spill files (its root commit's, after Resume), "" for any other head.
func (a *Assembler) SpillDir() string { return a.spill }

// spillDir is the spill directory a session's items name: a bare head's,
// or "" (they name activate).
func spillDir(lh *LeanHead) string {
	if lh == nil || !lh.Bare {
		return ""
	}
	return lh.Spill
}

// headOf returns the system prompt text and tools of a head: system and
// tools as the session holds them, lh its LeanHead (nil: a fixed head),
// lean whether the call was lean.
func headOf(system string, tools []ToolSpec, lh *LeanHead, lean bool) (string, []ToolSpec) {
	if lh == nil {
		return system, tools
	}
	if lean {
		var out []ToolSpec
		for _, t := range tools {
			if !slices.Contains(lh.Withheld, t.Name) {
				out = append(out, t)
			}
		}
		return system, out
	}
	if lh.Guide != "" {
		if system != "" {
			system += "\n\n"
		}
		system += lh.Guide
	}
	return system, tools
}

// withheld returns the names of tools a lean head leaves out.
func withheld(tools []ToolSpec, lh *LeanHead, lean bool) []string {
	if lh == nil || !lean {
		return nil
	}
	var out []string
	for _, t := range tools {
		if slices.Contains(lh.Withheld, t.Name) {
			out = append(out, t.Name)
		}
	}
	return out
}

// isLean reports whether the head is lean now.
func (a *Assembler) isLean() bool { return a.lean != nil && !a.managed }

// switches reports whether the head is lean now and will switch once the
// context needs it: a lean head that is not bare.
func (a *Assembler) switches() bool { return a.isLean() && !a.lean.Bare }

// needsHead notes that the context now holds something only the managed
// head explains (see LeanHead); the next call switches. A bare head never
// does: the first time, it says in the stream where outputs are whole
// (spillNote), once per session.
func (a *Assembler) needsHead() {
	switch {
	case a.switches():
		a.needHead = true
	case a.spill != "" && !a.told:
		a.told = true
		a.push(&item{kind: kNote, text: spillNote(a.spill)})
	}
}

// spillNote is what a bare head's session is told once, at its first
// collapse, instead of the guide: where a collapsed or cut output is
// whole. A collapsed output's own line stays as short as with the guide
// (a path in each would cost more than the guide: docs/benchmarks.md).
func spillNote(dir string) string {
	return ctxPrefix + "older tool outputs collapse to a line, and a very long one shows only its start and end; each is whole in " +
		spillPattern(dir, "<its call id>") + " for read to load"
}

// manage switches a lean head to the managed one: the head is rendered
// again and every item moves by the difference.
func (a *Assembler) manage() error {
	if a.bufBase != 0 || a.hashedOff != 0 {
		// advanceFrozen does nothing while lean: nothing is hashed or
		// released before the head is final.
		return fmt.Errorf("the frozen prefix moved while the head was lean")
	}
	oldLen, oldTok := len(a.head), a.tok.Count(string(a.head))
	a.managed, a.needHead = true, false
	sys, tools := a.headText()
	head, err := renderHead(sys, tools)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(a.buf)-oldLen+len(head)+4096)
	buf = append(append(buf, head...), a.buf[oldLen:]...)
	d := len(head) - oldLen
	for i := range a.offs {
		a.offs[i] += d
	}
	a.buf, a.head = buf, head // earlier Assembled values keep the old buffer
	a.headTok = a.tok.Count(string(head))
	dt := a.headTok - oldTok
	a.tokens += dt
	a.frozenTok += dt // the head is part of the frozen prefix's tokens
	return nil
}

// headText returns the system prompt text and tools of the head now.
func (a *Assembler) headText() (string, []ToolSpec) {
	return headOf(a.sysContent(), a.o.Tools, a.lean, a.isLean())
}

package assemble

import (
	"fmt"
	"slices"

	"github.com/ctxstore/ctxstore/objects"
)

// headState is the session's head: its system prompt and, for a lean
// head (LeanHead), whether it is the managed one yet. The head's bytes
// are the stream's first.
type headState struct {
	sys    *objects.Object
	sysRef objects.Ref

	lean     *LeanHead // Options.Lean, or the session's first commit's
	managed  bool      // the head is the managed one (always, without lean)
	needHead bool      // the stream needs the managed head from the next call
}

// LeanHead keeps a session's head lean until its context has something to
// manage: ctxstore adds nothing until collapsing can pay. While lean, the system prompt goes without Guide and the tools
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
	// Bare keeps the head lean for the whole session: it never
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
func (h *headState) isLean() bool { return h.lean != nil && !h.managed }

// switches reports whether the head is lean now and will switch once the
// context needs it: a lean head that is not bare.
func (h *headState) switches() bool { return h.isLean() && !h.lean.Bare }

// needsHead notes that the context now holds something only the managed
// head explains (see LeanHead); the next call switches. A bare head never
// does: the first time, it says in the stream where outputs are whole
// (spillNote), once per session.
func (a *Assembler) needsHead() {
	switch {
	case a.switches():
		a.needHead = true
	case a.style.spill != "" && !a.told:
		a.told = true
		a.push(&item{kind: kNote, text: spillNote(a.style.spill)})
	}
}

// manage switches a lean head to the managed one: the head is rendered
// again and every item moves by the difference.
func (a *Assembler) manage() error {
	if a.bufBase != 0 || a.hashedOff != 0 {
		// advanceFrozen does nothing while lean: nothing is hashed or
		// released before the head is final.
		return fmt.Errorf("the frozen prefix moved while the head was lean")
	}
	a.managed, a.needHead = true, false
	sys, tools := a.headText()
	head, err := renderHead(sys, tools)
	if err != nil {
		return err
	}
	a.frozenTok += a.replaceHead(head) // the head is part of the frozen prefix's tokens
	return nil
}

// headText returns the system prompt text and tools of the head now.
func (a *Assembler) headText() (string, []ToolSpec) {
	return headOf(a.sysContent(), a.o.Tools, a.lean, a.isLean())
}

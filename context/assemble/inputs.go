package assemble

import (
	"encoding/json"
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
)

// Tool inputs collapse too (issue 7 item 3): a tool call whose arguments
// are large (a write's content, an edit's replacement text) and whose
// result is a file version keeps its arguments in the stream while the
// call is active. When the call collapses, its large arguments become
// stale like collapsed output, and the next rebase rewrites the assistant
// message with each large string argument replaced by a reference to the
// file version the call produced, which the model can activate.

// input is a collapsible tool input: the file version its call produced.
type input struct {
	file  objects.Ref // static reference to the file version after the call
	saved int         // tokens the collapse saves
	stale bool
}

// minInputBytes is the size from which an argument string is collapsible
// (Policy.InputBytes overrides it).
const minInputBytes = 512

// collapseArgs returns args with every string longer than limit (and
// every "edits" list) replaced by a reference to file, and whether
// anything was replaced.
func collapseArgs(args map[string]any, file objects.Ref, limit int) (map[string]any, bool) {
	out := make(map[string]any, len(args))
	changed := false
	for k, v := range args {
		n := 0
		switch v := v.(type) {
		case string:
			if len(v) > limit {
				n = len([]rune(v))
			}
		case []any:
			if k == "edits" {
				b, _ := json.Marshal(v)
				if len(b) > limit {
					n = len([]rune(string(b)))
				}
			}
		}
		if n == 0 {
			out[k] = v
			continue
		}
		out[k] = fmt.Sprintf("[collapsed input: %d chars; the call produced file %s version %d: activate(%q) to see it]",
			n, file.ID, file.Tx, file.ID)
		changed = true
	}
	return out, changed
}

// noteInput records, when the result of call id is a single file and the
// call's arguments are large, that they can collapse into a reference to
// that file's version, and reports whether they can.
func (a *Assembler) noteInput(id string, file *version) bool {
	i, ok := a.callAt[id]
	if !ok || file == nil || a.items[i].kind != kAssistant {
		return false
	}
	var args map[string]any
	for _, c := range a.items[i].calls {
		if c.ID == id {
			args = c.Args
		}
	}
	collapsed, changed := collapseArgs(args, file.ref, a.pol.InputBytes)
	if !changed {
		return false
	}
	before, _ := json.Marshal(args)
	after, _ := json.Marshal(collapsed)
	saved := a.tok.Count(string(before)) - a.tok.Count(string(after))
	if saved <= 0 {
		return false
	}
	a.inputs[id] = &input{file: file.ref, saved: saved}
	return true
}

// staleInput marks the input of a collapsed call stale.
func (a *Assembler) staleInput(id string) {
	in, ok := a.inputs[id]
	if !ok || in.stale {
		return
	}
	in.stale = true
	a.stale += in.saved
	a.items[a.callAt[id]].staleInput = true
}

// rewriteInputs returns it with its stale inputs collapsed.
func (a *Assembler) rewriteInputs(it *item) *item {
	calls := make([]ToolCall, len(it.calls))
	for j, c := range it.calls {
		calls[j] = c
		if in, ok := a.inputs[c.ID]; ok && in.stale {
			calls[j].Args, _ = collapseArgs(c.Args, in.file, a.pol.InputBytes)
			delete(a.inputs, c.ID)
		}
	}
	return &item{kind: kAssistant, text: it.text, calls: calls}
}

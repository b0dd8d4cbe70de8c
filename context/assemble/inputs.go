package assemble

import (
	"encoding/json"
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
)

// toolCalls are the tool calls of the stream: where each was made, which
// still wait for their result, and the inputs that can collapse.
type toolCalls struct {
	pending  map[string]bool   // tool calls of the last assistant message without a result yet
	deferred map[string]bool   // toolcalls recorded before a Resume whose results are not in the stream yet
	callAt   map[string]int    // tool-call id -> index of the assistant item that made it
	inputs   map[string]*input // collapsible tool inputs by tool-call id
}

// Tool inputs collapse too: a tool call whose arguments
// are large (a write's content, an edit's replacement text) and whose
// result is a file version keeps its arguments in the stream while the
// call is active. When the call collapses, its large arguments become
// stale like collapsed output, and the next rebase rewrites the assistant
// message with each large string argument replaced by a reference to the
// file version the call produced, which the model can activate.

// input is a collapsible tool input: the file version its call produced,
// or the toolcall itself when it produced no single file.
type input struct {
	file  objects.Ref // static reference to the file version after the call, or to the toolcall
	saved int         // tokens the collapse saves
	stale bool
	// holder is the shown file whose view this input is part of (a write
	// or edit shown as a patch naming it): it collapses with that file's
	// content, not with its call.
	holder string
}

// minInputBytes is the size of a call's arguments (JSON) from which they
// are collapsible (Policy.InputBytes overrides it); minValueBytes the size
// from which one value is collapsed (a path or a flag stays).
const (
	minInputBytes = 400
	minValueBytes = 80
)

// collapseArgs returns args, when their JSON is longer than limit, with
// every value whose JSON is longer than minValueBytes replaced by a
// reference to ref, and whether anything was replaced. ref is the file
// version the call produced (the model can activate it) or, when ref names
// the call itself, the toolcall (whose arguments stay in the store).
func collapseArgs(args map[string]any, callID string, ref objects.Ref, limit int) (map[string]any, bool) {
	if all, _ := json.Marshal(args); len(all) <= limit {
		return args, false
	}
	out := make(map[string]any, len(args))
	changed := false
	for k, v := range args {
		n := 0
		switch v := v.(type) {
		case string:
			if len(v) > minValueBytes {
				n = len([]rune(v))
			}
		case []any, map[string]any:
			b, _ := json.Marshal(v)
			if len(b) > minValueBytes {
				n = len([]rune(string(b)))
			}
		}
		if n == 0 {
			out[k] = v
			continue
		}
		if ref.ID == callID {
			out[k] = fmt.Sprintf("[collapsed input, %d chars, kept with toolcall %s]", n, ref.ID)
		} else {
			out[k] = fmt.Sprintf("[collapsed input, %d chars: produced file %s version %d]", n, objects.DisplayID(ref.ID), ref.Tx)
		}
		changed = true
	}
	return out, changed
}

// noteInput records, when the call id's arguments are large, that they can
// collapse into a reference to file (the file version the call produced,
// or the toolcall), and reports whether they can.
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
	collapsed, changed := collapseArgs(args, id, file.ref, a.pol.InputBytes)
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
	if _, live := a.shown[in.holder]; live && in.holder != "" {
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
			calls[j].Args, _ = collapseArgs(c.Args, c.ID, in.file, a.pol.InputBytes)
			delete(a.inputs, c.ID)
		}
	}
	return &item{kind: kAssistant, text: it.text, calls: calls}
}

package assemble

import (
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
)

// Patches (rules.patches: rendering 3 on, stream layout). When an object whose
// content is shown gets a new version, the model already holds the old one:
// the new version is rendered as what changed against it, not as a new full
// copy. When the change is exactly the model's own write or edit (the calls'
// arguments applied to the version shown give the new content), the patch
// is one line naming those calls, and their arguments stay rendered while
// the file's content does (their input is tied to the file, see input.holder).
// Otherwise it is a line diff, when that is smaller than half the new
// content; else the old block goes stale and the new version is shown in
// full, as before. A patch is live while its object's content block is; a
// rebase that rewrites the block replaces block and patches with one block
// of the version held.

// pendingEdit is a write or edit call reported for a shown file since its
// version was last checked.
type pendingEdit struct {
	call, change string
}

// patchFor returns the patch item showing cur against held (the version
// the model holds), or nil when the new version must be shown in full.
func (a *Assembler) patchFor(id string, held, cur *version) *item {
	if held == nil || held.obj.Content == nil || cur.obj.Content == nil {
		return nil
	}
	old, nw := *held.obj.Content, *cur.obj.Content
	did := objects.DisplayID(id)
	head := fmt.Sprintf("%s%s changed, version %d -> %d", ctxPrefix, did, held.ref.Tx, cur.ref.Tx)
	if edits := a.edits[id]; len(edits) > 0 {
		text, ok := old, true
		var calls []ToolCall
		for _, e := range edits {
			args := a.callArgs(e.call)
			if args == nil {
				ok = false
				break
			}
			if text, ok = tools.ApplyEdit(e.change, text, args); !ok {
				break
			}
			calls = append(calls, ToolCall{ID: e.call})
		}
		if ok && text == nw {
			ids := make([]string, len(calls))
			for i, c := range calls {
				ids[i] = c.ID
			}
			if a.style.rules.silentOwnEdit(a.style.spill) {
				// A bare head: the edit result said it all.
				return &item{kind: kPatch, ref: cur.ref, obj: cur.obj, calls: calls}
			}
			// One edit of this file since the version above is named by
			// what it is: the ids say which only when there are several.
			what := "your edit"
			if len(ids) > 1 {
				what = "your calls " + strings.Join(ids, ", ")
			}
			return &item{kind: kPatch, ref: cur.ref, obj: cur.obj, calls: calls,
				text: head + ": " + what + " applied to the version above; nothing else changed"}
		}
	}
	d := lineDiff(old, nw)
	if len(d) > len(nw)/2 {
		return nil
	}
	return &item{kind: kPatch, ref: cur.ref, obj: cur.obj, text: head + "; the lines that differ from the version above:\n" + d}
}

// callArgs returns the arguments of a tool call of the stream, as made.
func (a *Assembler) callArgs(id string) map[string]any {
	i, ok := a.callAt[id]
	if !ok || i >= len(a.items) {
		return nil
	}
	for _, c := range a.items[i].calls {
		if c.ID == id {
			return c.Args
		}
	}
	return nil
}

// lineDiff renders the lines that differ between a and b as one hunk: the
// common leading and trailing lines are left out, and the rest is shown
// as removed ("-") and added ("+") lines under a "@@ -l,n +l,m @@" header
// (1-based line numbers, as in a unified diff without context lines).
func lineDiff(a, b string) string {
	al, bl := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	p := 0
	for p < len(al) && p < len(bl) && al[p] == bl[p] {
		p++
	}
	s := 0
	for s < len(al)-p && s < len(bl)-p && al[len(al)-1-s] == bl[len(bl)-1-s] {
		s++
	}
	del, add := al[p:len(al)-s], bl[p:len(bl)-s]
	var sb strings.Builder
	fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", p+1, len(del), p+1, len(add))
	for _, l := range del {
		sb.WriteString("-")
		sb.WriteString(strings.TrimSuffix(l, "\n"))
		sb.WriteString("\n")
	}
	for _, l := range add {
		sb.WriteString("+")
		sb.WriteString(strings.TrimSuffix(l, "\n"))
		sb.WriteString("\n")
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

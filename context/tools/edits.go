package tools

import "strings"

// ApplyEdit applies the change a write or edit call's arguments describe to
// text, and reports whether it could: a write's "content" replaces the
// text; an edit's replacements (Claude Code's old_string/new_string with
// replace_all, or edits[]; Pi's oldText/newText or edits[]) are applied in
// order, each old text having to occur. The assembler uses it to check
// that the model's own edit explains a file's new version exactly.
func ApplyEdit(change, text string, args map[string]any) (string, bool) {
	switch change {
	case ChangeWrite:
		s, ok := args["content"].(string)
		return s, ok
	case ChangeEdit:
	default:
		return "", false
	}
	edits := []map[string]any{args}
	if list, ok := args["edits"].([]any); ok {
		edits = edits[:0]
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				return "", false
			}
			edits = append(edits, m)
		}
	}
	if len(edits) == 0 {
		return "", false
	}
	for _, e := range edits {
		old, okOld := firstString(e, "old_string", "oldText", "old_str")
		repl, okNew := firstString(e, "new_string", "newText", "new_str")
		if !okOld || !okNew || old == "" || !strings.Contains(text, old) {
			return "", false
		}
		if all, _ := e["replace_all"].(bool); all {
			text = strings.ReplaceAll(text, old, repl)
		} else {
			text = strings.Replace(text, old, repl, 1)
		}
	}
	return text, true
}

func firstString(m map[string]any, keys ...string) (string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

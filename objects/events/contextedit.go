package events

// SubtypeContextEdit is a System event that edits future model context
// without touching history: Metadata "target" names the event id (the
// harness's record or message id) it edits, "action" is "omit" (the
// target is left out of later contexts) or "replace" (Text takes the
// place of the target's text or tool output). Pi writes these as
// context_edit entries.
const SubtypeContextEdit = "context_edit"

// OmittedOutput is the output an omitted tool result keeps, since a tool
// call must have its result.
const OmittedOutput = "[output omitted from context]"

// ApplyContextEdits returns evs as a harness without context edits must
// be given them so that the model sees what the edits say: the events of
// an omitted target are left out (with the results of the tool calls
// left out with them; an omitted tool result keeps its place with
// OmittedOutput as its output), a replaced target's text or tool output is the
// replacement (a replaced message's thinking and other responses are left
// out, its tool calls kept), and the edit events themselves are left out.
// The last edit of a target wins. evs is not modified; without edits it
// is returned as it is.
func ApplyContextEdits(evs []Event) []Event {
	edits := map[string]Event{}
	for _, e := range evs {
		if e.Type == System && e.Subtype == SubtypeContextEdit {
			if t, _ := e.Metadata["target"].(string); t != "" {
				edits[t] = e
			}
		}
	}
	if len(edits) == 0 {
		return evs
	}
	dropped := map[string]bool{} // tool call ids left out
	replaced := map[string]bool{}
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		if e.Type == System && e.Subtype == SubtypeContextEdit {
			continue
		}
		if e.Type == ToolResult && e.Tool != nil && dropped[e.Tool.ID] {
			continue
		}
		ed, ok := edits[e.ID]
		if !ok || e.ID == "" {
			out = append(out, e)
			continue
		}
		if a, _ := ed.Metadata["action"].(string); a != "replace" {
			switch {
			case e.Type == ToolResult && e.Result != nil:
				// A call's result cannot be left out while the call
				// stays: its output is.
				r := *e.Result
				r.Content, r.Blocks = OmittedOutput, nil
				e.Result = &r
				out = append(out, e)
			case e.Type == ToolCall && e.Tool != nil:
				dropped[e.Tool.ID] = true
			}
			continue
		}
		switch e.Type {
		case ToolCall:
			out = append(out, e)
		case ToolResult:
			if e.Result != nil {
				r := *e.Result
				r.Content, r.Blocks = ed.Text, nil
				e.Result = &r
			}
			out = append(out, e)
		case Thinking:
		default:
			if replaced[e.ID] {
				continue
			}
			replaced[e.ID] = true
			e.Text = ed.Text
			out = append(out, e)
		}
	}
	return out
}

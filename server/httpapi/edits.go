package httpapi

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/tools"
)

// EventContextEdit is the harness event of an edit of a tool result in
// the harness's own context (Pi's context_edit entries, docs/pi.md,
// "Context edits"): {"type": "context_edit", "tool_call_id": <the
// harness's id>, "replacement": <the result's text from now on> | null
// (the result is left out)}, plus what the harness identifies it by
// ("entry_id"). Unlike the other events, the service acts on it: the
// result of a call it already recorded is rewritten in the store before
// the call's log is ingested (Server.editResults).
const EventContextEdit = "context_edit"

// resultEdits returns the context_edit events of a request, in order.
// decodeContext checked their members.
func resultEdits(events []map[string]any) []ingest.ResultEdit {
	var out []ingest.ResultEdit
	for _, e := range events {
		if e["type"] != EventContextEdit {
			continue
		}
		id, _ := e["tool_call_id"].(string)
		var r *string
		if s, ok := e["replacement"].(string); ok {
			r = &s
		}
		out = append(out, ingest.ResultEdit{ToolCallID: id, Replacement: r})
	}
	return out
}

// checkEdit checks a context_edit event's members: a tool call id, and a
// replacement that is a string or null.
func checkEdit(i int, e map[string]any) error {
	if id, _ := e["tool_call_id"].(string); id == "" {
		return badRequest("events[%d]: a context_edit needs a tool_call_id (a non-empty string)", i)
	}
	r, ok := e["replacement"]
	if _, isString := r.(string); !ok || (r != nil && !isString) {
		return badRequest("events[%d]: a context_edit needs a replacement: the result's text, or null when it is left out", i)
	}
	return nil
}

// editResults applies the request's edits of results the session
// already recorded (ingest.Ingester.EditResults: the original is evicted
// from the store and the replacement is the toolcall's only version),
// before its log is ingested, and makes the session's spill file of each
// such output hold what the store holds: the replacement, or no file for
// an omitted output; then the assembler reloads its stream from the
// commits (assemble.Assembler.Reload), so that this call rebases from the
// first item that rendered an edited original and answers without it.
// Outputs edited are remembered for the session's life
// in this server (live.edited), so that a spill file the assembler lists
// later for one is written from the store's version.
func (s *Server) editResults(ctx context.Context, l *live, log ingest.Log, events []map[string]any) error {
	edits := resultEdits(events)
	if len(edits) == 0 {
		return nil
	}
	done, err := l.in.EditResults(ctx, log, edits)
	for _, r := range done {
		if l.edited == nil {
			l.edited = map[string]*string{}
		}
		l.edited[r.ID] = r.Object.Content
		s.log.Info("tool result edited by the harness", "session", l.id, "call", r.ID, "omitted", r.Omitted)
	}
	if dir := l.asm.SpillDir(); dir != "" {
		for _, r := range done {
			if e := respill(dir, r.ID, r.Object.Content); e != nil {
				s.log.Warn("rewriting an edited output's spill file", "session", l.id, "call", r.ID, "err", e)
				err = errors.Join(err, e)
			}
		}
	}
	l.spillDue = l.editedSpill(l.spillDue)
	if len(done) > 0 {
		// The assembler renders the original until it rewrites the
		// stream from there: it reloads from the commits, and the call
		// this request makes rebases (assemble.ReasonContextEdit).
		// Failing that (events the commits lack), the answer still
		// quotes the original and the extension replaces it
		// (honourEdits); a resume rebases as the reload would have.
		if e := l.asm.Reload(ctx); e != nil {
			s.log.Warn("reloading the assembler after a context edit", "session", l.id, "err", e)
		}
	}
	return err
}

// respill makes the spill file of call id hold out, when there is one
// (an output the model could read there), and removes it for an omitted
// output (out nil).
func respill(dir, id string, out *string) error {
	p := filepath.Join(dir, tools.SpillName(id))
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if out == nil {
		return os.Remove(p)
	}
	return writeAtomic(p, *out)
}

// editedSpill returns files with the content of each edited output as
// the store holds it now, and without the files of omitted ones: the
// assembler lists a spill file with the output it rendered, which for an
// output edited after it was recorded is the original.
func (l *live) editedSpill(files []assemble.SpillFile) []assemble.SpillFile {
	if len(l.edited) == 0 {
		return files
	}
	out := files[:0:0]
	for _, f := range files {
		if c, ok := l.edited[f.CallID]; ok {
			if c == nil {
				continue
			}
			f.Content = *c
		}
		out = append(out, f)
	}
	return out
}

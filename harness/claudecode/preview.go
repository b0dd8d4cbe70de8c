package claudecode

import (
	"path"
	"strconv"
	"strings"
)

// Previews: ctxstore's Claude Code hook (integrations/claudecode/hooks)
// replaces a large tool output by a preview whose note line names the
// spill file holding the output whole,
//
//	[ctxstore] N of M chars (L lines) left out here; Read <root>/<session>/<call id>.txt for the output whole
//
// and Claude Code's transcript then records only the preview. Decode
// recognizes such a result and names the spill file in the event's
// Metadata "preview" (file, whole_chars, left_out_chars, and object: the
// toolcall object, id the call's, in which the hook's checkpoint keeps the
// output whole), so a reader knows the text is a preview and where the
// whole is; the event's text and the commit's bytes stay the transcript's.

// maxPreviewPath bounds the spill path a note may name.
const maxPreviewPath = 4096

// previewOf reads the note of a preview the hook made of call id's output
// in session: only a note whose file is <dir>/<session>/<id>.txt, an
// absolute clean path, counts (an output that quotes another call's or
// another session's note is not that preview).
func previewOf(text, session, id string) (map[string]any, bool) {
	if session == "" || !plainID(id) || !strings.Contains(text, "[ctxstore] ") {
		return nil, false
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		// A Read's content comes numbered: "     5→text" or "5\ttext".
		if i := strings.Index(line, "[ctxstore] "); i > 0 {
			num := strings.TrimLeft(line[:i], " ")
			num = strings.TrimRight(num, "\t→")
			if num == "" || strings.Trim(num, "0123456789") != "" {
				continue
			}
			line = line[i:]
		}
		rest, ok := strings.CutPrefix(line, "[ctxstore] ")
		if !ok {
			continue
		}
		var n [3]int
		ok = true
		for i, sep := range []string{" of ", " chars (", " lines) left out here; Read "} {
			num, after, found := strings.Cut(rest, sep)
			v, err := strconv.Atoi(num)
			if !found || err != nil || v < 0 {
				ok = false
				break
			}
			n[i], rest = v, after
		}
		if !ok {
			continue
		}
		file, found := strings.CutSuffix(rest, " for the output whole")
		if !found || len(file) > maxPreviewPath || !path.IsAbs(file) || path.Clean(file) != file ||
			path.Base(file) != id+".txt" || path.Base(path.Dir(file)) != session || n[0] > n[1] {
			continue
		}
		return map[string]any{"file": file, "whole_chars": n[1], "left_out_chars": n[0], "object": id}, true
	}
	return nil, false
}

// plainID says id is a tool-call id the hook names files by: 1 to 128
// letters, digits, '_' and '-'.
func plainID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

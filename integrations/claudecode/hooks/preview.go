package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tools"
)

// Previews: a PostToolUse hook may answer
// hookSpecificOutput.updatedToolOutput, which replaces the tool's output
// before Claude Code's model sees it (and in the transcript). The value must
// have the tool's own output shape (the tool_response the hook was given):
// anything else Claude Code drops silently (a plain string for Bash, seen
// under --debug as schema_invalid). So a large output is replaced by the same
// shape with its text cut to a preview that names the spill file holding it
// whole, and every tool whose shape is not known here passes unchanged.

// DefaultPreviewChars is the size (in characters of the output's text) from
// which an output enters as a preview: the Pi extension's 4,000 tokens
// (assemble.Policy.PreviewTokens) at four characters a token.
const DefaultPreviewChars = 16000

// maxSpill bounds what one spill file holds: an output past it passes
// through unchanged (Claude Code cuts its own large outputs before then).
const maxSpill = 64 << 20

// Spill says where a session's outputs are whole: Root holds one directory
// per session, named by its id, and each output is
// Root/<session>/tools.SpillName(<tool_use_id>) (the text the model reads)
// with the call beside it (the same name with .json for .txt: the hook
// input's tool_name, tool_input and tool_response, the tool's original
// response, for an import to restore the output exactly and the store to
// name the call), and once the store keeps it a mark (.stored).
type Spill struct {
	Root string
	// Chars is the preview size (0: DefaultPreviewChars).
	Chars int
}

// PreviewResult is what the preview step did for one PostToolUse.
type PreviewResult struct {
	// Updated is the replacement output (nil: the output passes unchanged).
	Updated json.RawMessage `json:"-"`
	// File is the spill file the preview names.
	File string `json:"file,omitempty"`
	// Whole and Shown are the output's size and the preview's, in chars.
	Whole int `json:"whole,omitempty"`
	Shown int `json:"shown,omitempty"`
	// Activated is set when the tool was the model's Read of one of the
	// session's spill files: the call id whose output it read back.
	Activated string `json:"activated,omitempty"`
	// Refused names another session's spill file the model tried to read.
	Refused string `json:"refused,omitempty"`
}

// Preview decides the PostToolUse answer for in: a preview of a large
// output (its spill files written first), a refusal of another session's
// spill file, or nothing.
func (s Spill) Preview(in Input) (PreviewResult, error) {
	if s.Root == "" || in.Event != "PostToolUse" || !isID(in.SessionID) || len(in.ToolResponse) == 0 {
		return PreviewResult{}, nil
	}
	root, err := filepath.Abs(s.Root)
	if err != nil {
		return PreviewResult{}, err
	}
	dir := filepath.Join(root, in.SessionID)
	if in.ToolName == "Read" {
		var args struct {
			Path   string          `json:"file_path"`
			Offset json.RawMessage `json:"offset"`
			Limit  json.RawMessage `json:"limit"`
		}
		json.Unmarshal(in.ToolInput, &args)
		if !filepath.IsAbs(args.Path) && filepath.IsAbs(in.Cwd) && args.Path != "" {
			args.Path = filepath.Join(in.Cwd, args.Path) // as Claude Code's Read resolves it
		}
		if args.Path != "" && len(args.Path) <= maxReadPath {
			p, own, inside := underRoot(root, in.SessionID, filepath.Clean(args.Path))
			if inside {
				if own {
					// Read back: never cut again. Whole (no offset or
					// limit), it is the output's activation; a part is not.
					if id, ok := tools.SpillCallID(filepath.Base(p)); ok && isNull(args.Offset) && isNull(args.Limit) {
						return PreviewResult{Activated: id}, nil
					}
					return PreviewResult{}, nil
				}
				up, err := refusal(in.ToolResponse)
				if err != nil {
					return PreviewResult{}, nil
				}
				return PreviewResult{Updated: up, Refused: p}, nil
			}
		}
	}
	if !isToolUseID(in.ToolUseID) {
		return PreviewResult{}, nil
	}
	limit := s.Chars
	if limit <= 0 {
		limit = DefaultPreviewChars
	}
	file := filepath.Join(dir, tools.SpillName(in.ToolUseID))
	load := "Read " + file + " for the output whole"
	up, whole, shown, ok := cut(in.ToolName, in.ToolResponse, limit, load)
	if !ok || shown >= utf8.RuneCountInString(whole) {
		return PreviewResult{}, nil // small enough, or a preview no shorter than the output
	}
	if len(whole) > maxSpill {
		return PreviewResult{}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return PreviewResult{}, err
	}
	var call bytes.Buffer
	enc := json.NewEncoder(&call)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(spilledCall{Tool: in.ToolName, Input: in.ToolInput, Response: in.ToolResponse}); err != nil {
		return PreviewResult{}, err
	}
	if err := writeFile(callFile(file), call.Bytes()); err != nil {
		return PreviewResult{}, err
	}
	if err := writeFile(file, []byte(whole)); err != nil {
		return PreviewResult{}, err
	}
	return PreviewResult{Updated: up, File: file, Whole: utf8.RuneCountInString(whole), Shown: shown}, nil
}

// maxReadPath bounds the Read path the hook looks at: a longer one is no
// spill file (the spill files' own paths are far shorter).
const maxReadPath = 4096

// underRoot says whether p (absolute, clean) lies under the spill root
// and whether in session's own directory, judged on p with its symbolic
// links resolved when it resolves under the root resolved (a link to
// another session's file is that file), else on p as written; it returns
// the path judged.
func underRoot(root, session, p string) (path string, own, inside bool) {
	in := func(root, p string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if !filepath.IsAbs(p) {
		return p, false, false
	}
	if rp, rroot := realPath(p), realPath(root); in(rroot, rp) {
		return rp, filepath.Dir(rp) == filepath.Join(rroot, session), true
	}
	if in(root, p) {
		return p, filepath.Dir(p) == filepath.Join(root, session), true
	}
	return p, false, false
}

// realPath is p with its symbolic links resolved, or p when they cannot
// be (a path that does not exist).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// isNull says an optional argument is absent.
func isNull(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

// writeFile writes b to path through a temporary file and a rename, so a
// reader never sees half of it.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".spill-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// refusal is a Read's response with its content replaced by a refusal:
// another session's outputs are not this session's to read.
func refusal(resp json.RawMessage) (json.RawMessage, error) {
	o, err := subObject(resp, "Read response")
	if err != nil {
		return nil, err
	}
	if t, _ := o.get("type"); string(t) != `"text"` {
		return nil, errors.New("not a text read")
	}
	fraw, ok := o.get("file")
	if !ok {
		return nil, errors.New("no file")
	}
	f, err := subObject(fraw, "Read file")
	if err != nil {
		return nil, err
	}
	f = f.set("content", encode("[ctxstore] refused: this is another session's spill file")).set("numLines", encode(1))
	return o.set("file", f.raw()).raw(), nil
}

// cut returns resp with its text cut to a preview naming load, the whole
// text, and the preview's size in chars; ok is false when resp passes
// unchanged (small, or a shape not known here).
func cut(tool string, resp json.RawMessage, limit int, load string) (up json.RawMessage, whole string, shown int, ok bool) {
	str := func(o object, key string) (string, bool) {
		raw, ok := o.get(key)
		if !ok {
			return "", false
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	big := func(s string) bool { return len(s) > limit && utf8.RuneCountInString(s) > limit }
	switch {
	case tool == "Bash":
		o, err := subObject(resp, tool)
		if err != nil {
			return nil, "", 0, false
		}
		if img, _ := o.get("isImage"); string(img) == "true" {
			return nil, "", 0, false
		}
		out, ok1 := str(o, "stdout")
		errOut, ok2 := str(o, "stderr")
		if !ok1 || !ok2 {
			return nil, "", 0, false
		}
		whole = out
		if errOut != "" {
			whole = strings.TrimSuffix(out, "\n") + "\n" + errOut
			if out == "" {
				whole = errOut
			}
		}
		if !big(whole) {
			return nil, "", 0, false
		}
		p := assemble.PreviewText(whole, load)
		return o.set("stdout", encode(p)).set("stderr", encode("")).raw(), whole, utf8.RuneCountInString(p), true
	case tool == "Read":
		o, err := subObject(resp, tool)
		if err != nil {
			return nil, "", 0, false
		}
		if t, _ := o.get("type"); string(t) != `"text"` {
			return nil, "", 0, false
		}
		fraw, _ := o.get("file")
		f, err := subObject(fraw, "Read file")
		if err != nil {
			return nil, "", 0, false
		}
		content, ok := str(f, "content")
		if !ok || !big(content) {
			return nil, "", 0, false
		}
		// Claude Code numbers a Read's lines from startLine: the preview
		// keeps only the start, so that every number shown stays true.
		p := headText(content, load)
		f = f.set("content", encode(p)).set("numLines", encode(strings.Count(p, "\n")+1))
		return o.set("file", f.raw()).raw(), content, utf8.RuneCountInString(p), true
	case tool == "Grep" || tool == "Glob":
		o, err := subObject(resp, tool)
		if err != nil {
			return nil, "", 0, false
		}
		if content, ok := str(o, "content"); ok && big(content) {
			p := assemble.PreviewText(content, load)
			return o.set("content", encode(p)).raw(), content, utf8.RuneCountInString(p), true
		}
		raw, ok := o.get("filenames")
		var names []string
		if !ok || json.Unmarshal(raw, &names) != nil {
			return nil, "", 0, false
		}
		whole = strings.Join(names, "\n")
		if !big(whole) {
			return nil, "", 0, false
		}
		head := strings.Split(strings.TrimSuffix(headText(whole, load), "\n"), "\n")
		return o.set("filenames", encode(head)).raw(), whole, utf8.RuneCountInString(strings.Join(head, "\n")), true
	case tool == "WebFetch":
		o, err := subObject(resp, tool)
		if err != nil {
			return nil, "", 0, false
		}
		result, ok := str(o, "result")
		if !ok || !big(result) {
			return nil, "", 0, false
		}
		p := assemble.PreviewText(result, load)
		return o.set("result", encode(p)).raw(), result, utf8.RuneCountInString(p), true
	case strings.HasPrefix(tool, "mcp__"):
		// An MCP tool's result: a string when it is one text block (what
		// Claude Code 2.1.332 gives the hook then), else its content
		// blocks. The answer is a list of text blocks either way: Claude
		// Code 2.1.332 ignores a string in updatedToolOutput for an MCP
		// tool without a word, and sends a list of blocks (seen at the
		// scripted endpoint). Only all-text results are cut (an image or a
		// resource passes whole).
		var text string
		if json.Unmarshal(resp, &text) == nil {
			if !big(text) {
				return nil, "", 0, false
			}
			p := assemble.PreviewText(text, load)
			return encode([]map[string]string{{"type": "text", "text": p}}), text, utf8.RuneCountInString(p), true
		}
		var blocks []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(resp, &blocks) != nil || len(blocks) == 0 {
			return nil, "", 0, false
		}
		var b strings.Builder
		for i, bl := range blocks {
			if bl.Type != "text" || bl.Text == nil {
				return nil, "", 0, false
			}
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(*bl.Text)
		}
		whole = b.String()
		if !big(whole) {
			return nil, "", 0, false
		}
		p := assemble.PreviewText(whole, load)
		return encode([]map[string]string{{"type": "text", "text": p}}), whole, utf8.RuneCountInString(p), true
	}
	return nil, "", 0, false
}

// headText is the start of s (assemble.PreviewHead+assemble.PreviewTail chars, cut at a line
// end) and a line saying what was left out and how to see it whole.
func headText(s, load string) string {
	h := min(len(s), assemble.PreviewHead+assemble.PreviewTail)
	for h > 0 && h < len(s) && !utf8.RuneStart(s[h]) {
		h--
	}
	head := s[:h]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i+1]
	}
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	omitted := s[min(len(head), len(s)):]
	return fmt.Sprintf("%s[ctxstore] %d of %d chars (%d lines) left out here; %s",
		head, utf8.RuneCountInString(omitted), utf8.RuneCountInString(s), strings.Count(omitted, "\n"), load)
}

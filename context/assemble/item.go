package assemble

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
)

// ItemKind says what an item of the stream is: "user", "assistant",
// "toolref", "meta", "content", "stub" (a collapsed content block) or
// "note".
type ItemKind string

const (
	kUser      ItemKind = "user"      // a user message (Text)
	kAssistant ItemKind = "assistant" // an assistant message (Text, Calls)
	kToolRef   ItemKind = "toolref"   // a tool result as a toolcall_ref line (Ref)
	kMeta      ItemKind = "meta"      // a metadata entry (Ref)
	kContent   ItemKind = "content"   // an active content block (Ref)
	kStub      ItemKind = "stub"      // a collapsed content block after a rebase (Ref)
	kNote      ItemKind = "note"      // a context note (Text)
	// kPatch is a change to a shown object's content, rendered against the
	// version the model holds (rendering version 3): Ref is the new
	// version, Text the rendering (a diff, or a line saying which of the
	// model's own edits produced it), stored inline so rebuilds need no
	// diff code. It is live while its object's content block is.
	kPatch ItemKind = "patch"
)

// chatItem reports whether k belongs to the chat proper (kept by the
// literal layout between its pool and active blocks).
func (k ItemKind) chatItem() bool {
	return k == kUser || k == kAssistant || k == kToolRef || k == kNote
}

// ctxPrefix marks, from rendering version 3, every line ctxstore itself
// writes into a user message (metadata lines, notes, collapsed references,
// patches), so the model does not read them as the user's words.
const ctxPrefix = "[ctxstore] "

// item is one element of the stream. Items are immutable once appended,
// except for stale, which only the live Assembler uses.
type item struct {
	kind  ItemKind
	ref   objects.Ref // static, for object items
	text  string
	calls []ToolCall

	obj    *objects.Object // the version ref names
	f      *frag           // its rendering
	tokens int             // tokens of its rendered bytes
	stale  bool            // content no longer active (or superseded)
	// staleInput marks an assistant message with a collapsed call's
	// large input still rendered.
	staleInput bool
	// input is, for a tool result, the file version its call produced
	// when the call's input can collapse into a reference to it.
	input *objects.Ref
	// out marks a tool result whose output is rendered in it, after its
	// line (rendering version 3, stream layout: the call's output is live);
	// outTok is the tokens of that output, what collapsing it frees.
	// collapsed marks a tool result rewritten by a rebase once its inline
	// output collapsed.
	out       bool
	outTok    int
	collapsed bool
	// preview marks a live output too large to enter whole (demand
	// paging, Policy.PreviewTokens): the result shows its start and end
	// and says how to load it; activate(call id) shows it whole.
	preview bool
	// named are, for a write or edit's tool result (rendering 3), the files
	// it pooled without a metadata line: the call's own path argument
	// names them.
	named []string
	// rv is the rendering version (RenderVersion for new sessions; a
	// session keeps the version of its first commit); mv likewise the
	// metadata line's version (objects.MetadataVersion).
	rv, mv int
	// paths shows file paths from rendering version 4 (Paths).
	paths Paths
	// spill is a bare head's spill directory (LeanHead.Bare): a preview
	// names the output's spill file, which the harness's own read loads,
	// instead of activate. "" otherwise.
	spill string
}

// metadata is the item's object's metadata line as the session's metadata
// version renders it (ReadCommit refuses versions this code does not know).
func (it *item) metadata() string {
	s, err := objects.RenderMetadataPaths(it.obj, max(it.mv, 1), it.pathView())
	if err != nil {
		panic(err) // unreachable: versions are checked when commits are read
	}
	return s
}

// RenderVersion is the rendering of items this code writes:
//
//	1: tool results and collapsed blocks as full metadata lines;
//	2: tool results as "status=… output_chars=…" (the result message names
//	   the call, and the call's tool and arguments are in the assistant
//	   message just before); collapsed blocks as "collapsed: <kind> <id>
//	   version=… chars=…", or "collapsed: output of <id>, N chars" for a
//	   toolcall (the object's metadata is in the stream already); short
//	   context notes; and 64-hex ids shortened (objects.DisplayID) in
//	   metadata, content headers, collapsed blocks and notes;
//	3: a live tool output is its tool result, as the harness would send
//	   it, and a rebase rewrites it once collapsed as "[ctxstore]
//	   collapsed: <tool> output, N chars"; other tool results
//	   name their tool ("status=… output_chars=… tool=…", and a management
//	   tool's answer); metadata lines,
//	   notes and collapsed references start with "[ctxstore] "; outputs
//	   that collapse automatically get no note; a shown object's new version
//	   is a patch against the version shown (kPatch), not a new full copy;
//	4: file and note paths in metadata lines as Paths shows them (relative
//	   to the working directory), the session's Paths recorded in its
//	   first commit; a rebase leaves out collapsed files and notes the
//	   stream already names, and the notes about content it no longer
//	   holds, instead of "collapsed:" lines (Assembler.dropsAtRebase);
//	5: under a bare head (LeanHead.Bare), a shown file's new version that
//	   is exactly the model's own edit or write applied to the version
//	   shown renders nothing: the harness's edit result said so already,
//	   and a bare head's model has no use for ctxstore's ids and versions
//	   (the patch item stays in the stream, silent, so that the version
//	   held is known to a rebase, a rebuild and a resume).
//
// Commits record the version (absent means 1), so every past context is
// rebuilt with the rendering it was sent with.
const RenderVersion = 5

// The values of ItemDoc.Out.
const (
	outInline    = "inline"
	outPreview   = "preview"
	outCollapsed = "collapsed"
)

// ItemDoc is an item as stored in a context commit: Ref is the static
// reference (text form) of object items; Text and Calls hold chat items.
type ItemDoc struct {
	K     ItemKind   `json:"k"`
	Ref   string     `json:"ref,omitempty"`
	Text  string     `json:"text,omitempty"`
	Calls []ToolCall `json:"calls,omitempty"`
	// Input is, for a tool result, the static reference of the file version
	// its call produced when the call's large input can collapse into it.
	Input string `json:"input,omitempty"`
	// Out is, for a tool result (rendering version 3), "inline" when the
	// call's output is rendered in it and "collapsed" when a rebase
	// rewrote it after that output collapsed.
	Out string `json:"out,omitempty"`
	// Named are the files a write or edit pooled without a metadata line
	// (item.named).
	Named []string `json:"named,omitempty"`
}

func (it *item) doc() ItemDoc {
	d := ItemDoc{K: it.kind, Text: it.text, Calls: it.calls}
	if it.kind.hasRef() {
		d.Ref = it.ref.String()
	}
	if it.input != nil {
		d.Input = it.input.String()
	}
	d.Named = it.named
	switch {
	case it.out && it.preview:
		d.Out = outPreview
	case it.out:
		d.Out = outInline
	case it.collapsed:
		d.Out = outCollapsed
	}
	return d
}

// isMeta reports whether k renders metadata: the metadata pool as shown.
func (k ItemKind) isMeta() bool { return k == kMeta || k == kToolRef || k == kStub }

func (k ItemKind) hasRef() bool {
	return k == kToolRef || k == kMeta || k == kContent || k == kStub || k == kPatch
}

// fromDoc reads a stored item; its object is resolved later.
func fromDoc(d ItemDoc) (*item, error) {
	it := &item{kind: d.K, text: d.Text, calls: d.Calls, out: d.Out == outInline || d.Out == outPreview, preview: d.Out == outPreview, collapsed: d.Out == outCollapsed, named: d.Named}
	switch d.K {
	case kUser, kAssistant, kNote:
	case kToolRef, kMeta, kContent, kStub, kPatch:
		r, err := objects.ParseRef(d.Ref)
		if err != nil {
			return nil, err
		}
		it.ref = r
		if d.Input != "" {
			in, err := objects.ParseRef(d.Input)
			if err != nil {
				return nil, fmt.Errorf("input: %w", err)
			}
			it.input = &in
		}
	default:
		return nil, fmt.Errorf("unknown item kind %q", d.K)
	}
	return it, nil
}

// render computes it.f from it's fields and object.
func (it *item) render() {
	switch it.kind {
	case kUser:
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockText, Text: it.text}}}
	case kNote:
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockText, Text: it.text}}}
	case kAssistant:
		var bl []Block
		if it.text != "" {
			bl = append(bl, Block{Type: BlockText, Text: it.text})
		}
		for _, c := range it.calls {
			bl = append(bl, Block{Type: BlockToolCall, ID: c.ID, Name: c.Name, Args: c.Args})
		}
		it.f = &frag{role: RoleAssistant, blocks: bl}
	case kToolRef:
		text := it.metadata()
		if it.rv >= 2 {
			text = toolResultLine(it.obj)
		}
		if it.rv >= 3 {
			text += toolResultNames(it.obj)
		}
		switch {
		case it.out && it.obj.Content != nil:
			// The live output is the result, as the harness would send it.
			out := *it.obj.Content
			if it.preview {
				out = previewText(out, it.loadHint())
			}
			it.f = &frag{role: RoleToolResult, callID: it.ref.ID, blocks: []Block{{Type: BlockText, Text: out}}}
			return
		case it.collapsed:
			text = collapsedResultLine(it.obj)
		}
		it.f = &frag{role: RoleToolResult, callID: it.ref.ID, blocks: []Block{{Type: BlockMetadata, ID: it.ref.ID, Text: text}}}
	case kMeta:
		id, text := it.ref.ID, it.metadata()
		if it.rv >= 2 {
			id = objects.DisplayID(id)
			text = strings.Replace(text, " id="+it.ref.ID, " id="+id, 1)
		}
		if it.rv >= 3 {
			text = ctxPrefix + text
		}
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockMetadata, ID: id, Text: text}}}
	case kStub:
		id, text := it.ref.ID, "collapsed: "+it.metadata()+" version="+fmt.Sprint(it.ref.Tx)
		if it.rv >= 2 {
			id = objects.DisplayID(id)
			text = fmt.Sprintf("collapsed: %s %s version=%d chars=%d", it.obj.Kind(), id, it.ref.Tx, contentChars(it.obj))
			if it.obj.Kind() == objects.KindToolcall {
				text = fmt.Sprintf("collapsed: output of %s, %d chars", id, contentChars(it.obj))
			}
		}
		if it.rv >= 3 {
			text = ctxPrefix + text
		}
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockMetadata, ID: id, Text: text}}}
	case kPatch:
		if it.text == "" { // rendering 5: the model's own edit under a bare head
			it.f = &frag{role: RoleUser, silent: true}
			break
		}
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockText, Text: it.text}}}
	case kContent:
		text := ""
		if it.obj.Content != nil {
			text = *it.obj.Content
		} else {
			text, _ = objects.NullContent(it.obj)
		}
		id := it.ref.ID
		if it.rv >= 2 {
			id = objects.DisplayID(id)
		}
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockContent, ID: id, Version: it.ref.Tx, Text: text}}}
	}
}

// normalizeArgs round-trips args through JSON so that live and rebuilt
// items hold the same values (numbers as float64).
func normalizeArgs(a map[string]any) (map[string]any, error) {
	if a == nil {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// toJSONValue converts v to plain JSON values (maps, slices, float64,
// strings) for a store document.
func toJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// fromJSONValue decodes a plain JSON value into dst.
func fromJSONValue(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// toolResultLine is a tool result's line from rendering version 2: the
// toolcall's id, tool and status, and the size of its output.
func toolResultLine(o *objects.Object) string {
	line := "status=" + string(o.Toolcall.Status)
	if o.Content != nil {
		line += " output_chars=" + strconv.Itoa(contentChars(o))
	}
	return line
}

// toolResultNames is what rendering version 3 adds to a tool result's
// line: the tool (000 §19, 003 §4; the call id is the message's own
// tool-call id, which every provider shows with it), and for ctxstore's own
// management tools (activate, deactivate, pin, unpin), whose calls are not
// shown as output, their one-line answer.
func toolResultNames(o *objects.Object) string {
	s := " tool=" + o.Toolcall.Tool
	if tools.ManagementTools[strings.ToLower(o.Toolcall.Tool)] && o.Content != nil {
		msg := *o.Content
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if r := []rune(msg); len(r) > 160 {
			msg = string(r[:160]) + "…"
		}
		s += " answer: " + msg
	}
	return s
}

// Preview sizes: the start and the end of a large output shown.
const (
	previewHead = 2400
	previewTail = 1200
)

// loadHint says how the model sees a tool call's output whole: with
// activate, or, under a bare head, by reading its spill file.
func (it *item) loadHint() string {
	if it.spill == "" {
		return "activate(<this call's id>) shows the output whole"
	}
	return "read " + spillPath(it.spill, it.ref.ID) + " for the output whole"
}

// previewText is a large output as it enters (demand paging): its first
// and last lines, cut at line ends, and a line saying what was left out
// and how to see it whole (load).
func previewText(s, load string) string {
	h := min(len(s), previewHead)
	for h < len(s) && h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	head := s[:h]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i+1]
	}
	t := max(len(head), len(s)-previewTail)
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	tail := s[t:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	omitted := s[len(head) : len(s)-len(tail)]
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return fmt.Sprintf("%s[ctxstore] %d of %d chars (%d lines) left out here; %s\n%s",
		head, utf8.RuneCountInString(omitted), utf8.RuneCountInString(s), strings.Count(omitted, "\n"), load, tail)
}

// collapsedResultLine is a tool result once its output collapsed
// (rendering version 3): the tool, its size and a failure. The call id,
// which activate takes to bring the output back, is the result's own
// tool-call id (every provider shows it with the result), not repeated.
func collapsedResultLine(o *objects.Object) string {
	s := fmt.Sprintf("%scollapsed: %s output, %d chars", ctxPrefix, o.Toolcall.Tool, contentChars(o))
	if o.Toolcall.Status == objects.StatusFail {
		s += " (failed)"
	}
	return s
}

// contentChars is the length of an object's content in characters.
func contentChars(o *objects.Object) int {
	if o.Content == nil {
		return 0
	}
	return utf8.RuneCountInString(*o.Content)
}

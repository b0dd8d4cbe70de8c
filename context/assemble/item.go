package assemble

import (
	"strings"

	"github.com/ctxstore/ctxstore/objects"
)

// ItemKind says what an item of the stream is: "user", "assistant",
// "toolref", "meta", "content", "stub" (a collapsed content block) or
// "note".
type ItemKind string

const (
	kUser      ItemKind = "user"      // a user message (Text)
	kAssistant ItemKind = "assistant" // an assistant message (Text, Calls)
	kToolRef   ItemKind = "toolref"   // a tool result as a toolcall_ref line (Ref), or as the harness sent it (Text)
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
	// sent marks a tool result rendered as the harness sent it to the
	// model (its output's text, in text), not in ctxstore's form
	// (rendering 6: userfirst.go); sentStale is what it holds beyond
	// ctxstore's form, counted as stale until a rebase rewrites it.
	sent      bool
	sentStale int
	// opens marks a fragment of ctxstore's (a note, a metadata line, a
	// content block) that starts a user message of its own where it would
	// have joined the one before: the first after a call whose context
	// ended in a user message, in rendering 6, whose harness sent its own
	// messages after that one (userfirst.go).
	opens bool
	// named are, for a write or edit's tool result (rendering 3), the files
	// it pooled without a metadata line: the call's own path argument
	// names them.
	named []string
	// style is how the item's session renders (its rendering version,
	// metadata version, paths and spill directory).
	style *style
}

// metadata is the item's object's metadata line as the session's metadata
// version renders it (ReadCommit refuses versions this code does not know).
func (it *item) metadata() string {
	s, err := objects.RenderMetadataPaths(it.obj, it.style.mv, it.style.view)
	if err != nil {
		panic(err) // unreachable: versions are checked when commits are read
	}
	return s
}

// isMeta reports whether k renders metadata: the metadata pool as shown.
func (k ItemKind) isMeta() bool { return k == kMeta || k == kToolRef || k == kStub }

func (k ItemKind) hasRef() bool {
	return k == kToolRef || k == kMeta || k == kContent || k == kStub || k == kPatch
}

// render computes it.f from it's fields and object.
func (it *item) render() {
	if it.opens {
		defer func() { it.f.opens = true }()
	}
	switch it.kind {
	case kUser:
		it.f = &frag{role: RoleUser, alone: it.style.rules.userFirst(), blocks: []Block{{Type: BlockText, Text: it.text}}}
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
		if it.sent {
			it.f = &frag{role: RoleToolResult, callID: it.ref.ID, blocks: []Block{{Type: BlockText, Text: it.text}}}
			return
		}
		text := it.style.r.toolResult(it)
		switch {
		case it.out && it.obj.Content != nil:
			// The live output is the result, as the harness would send it.
			out := *it.obj.Content
			if it.preview {
				out = PreviewText(out, it.loadHint())
			}
			it.f = &frag{role: RoleToolResult, callID: it.ref.ID, blocks: []Block{{Type: BlockText, Text: out}}}
			return
		case it.collapsed:
			text = collapsedResultLine(it.obj)
		}
		it.f = &frag{role: RoleToolResult, callID: it.ref.ID, blocks: []Block{{Type: BlockMetadata, ID: it.ref.ID, Text: text}}}
	case kMeta:
		r := it.style.r
		id := r.id(it.ref.ID)
		text := strings.Replace(it.metadata(), " id="+it.ref.ID, " id="+id, 1)
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockMetadata, ID: id, Text: r.prefix + text}}}
	case kStub:
		r := it.style.r
		id := r.id(it.ref.ID)
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockMetadata, ID: id, Text: r.prefix + r.stub(it, id)}}}
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
		id := it.style.r.id(it.ref.ID)
		it.f = &frag{role: RoleUser, blocks: []Block{{Type: BlockContent, ID: id, Version: it.ref.Tx, Text: text}}}
	}
}

package assemble

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
)

// RenderVersion is the rendering of items this code writes for a new
// session unless its harness asks for another (Options.Render; newer ones:
// RenderUserFirst). Every version is one rendering value (renderings), and
// a session renders with the one its root commit records (absent means 1),
// so every past context is rebuilt with the rendering it was sent with.
const RenderVersion = 5

// rendering is one rendering version: the text of each kind of item and
// the stream rules that changed with the versions. A session's rendering
// is chosen once, when it opens (New, or its root commit in Resume and
// Rebuild), and is never compared with a version number afterwards: what
// a version renders is what its value says.
type rendering struct {
	version int
	// id is how an object's id is shown in metadata lines, content
	// headers, collapsed blocks and state notes.
	id func(string) string
	// prefix opens every line ctxstore writes into a user message
	// (metadata lines, collapsed references, notes), so the model does not
	// read it as the user's words; a note's "[context] " becomes it.
	prefix string
	// toolResult is a tool result's line (not its output).
	toolResult func(it *item) string
	// stub is a collapsed content block's text, id as shown.
	stub func(it *item, id string) string
	// inactiveNote and changedNote open the notes naming the objects
	// deactivated and the objects whose new version is shown in full.
	inactiveNote, changedNote string
	// rules are the version's stream rules (rules.go).
	rules rules
}

// renderings are the rendering versions, indexed by version. Each is the
// one before with what it changed.
var renderings = func() [newestRender + 1]*rendering {
	var r [newestRender + 1]*rendering
	// 1: tool results and collapsed blocks as full metadata lines.
	r[1] = &rendering{version: 1, rules: metadataRules{}, id: func(id string) string { return id },
		toolResult: func(it *item) string { return it.metadata() },
		stub: func(it *item, _ string) string {
			return "collapsed: " + it.metadata() + " version=" + fmt.Sprint(it.ref.Tx)
		},
		inactiveNote: "[context] deactivated, now metadata only (ignore their content above): ",
		changedNote:  "[context] changed since shown (new version follows): "}
	// 2: tool results as "status=… output_chars=…" (the result message
	// names the call, whose tool and arguments are in the assistant message
	// just before); collapsed blocks as "collapsed: <kind> <id> version=…
	// chars=…", or "collapsed: output of <id>, N chars" for a toolcall;
	// short notes; 64-hex ids shortened (objects.DisplayID).
	v2 := *r[1]
	v2.version, v2.id = 2, objects.DisplayID
	v2.toolResult = func(it *item) string { return toolResultLine(it.obj) }
	v2.stub = sizeStub
	v2.inactiveNote, v2.changedNote = "[context] inactive now: ", "[context] changed, new version below: "
	r[2] = &v2
	// 3: live outputs, patches and the lines above (liveRules); other
	// tool results name their tool and a management tool's answer;
	// ctxstore's lines start with ctxPrefix.
	v3 := v2
	v3.version, v3.prefix, v3.rules = 3, ctxPrefix, liveRules{}
	v3.toolResult = func(it *item) string { return toolResultLine(it.obj) + toolResultNames(it.obj) }
	v3.inactiveNote, v3.changedNote = ctxPrefix+"inactive now: ", changedPrefix
	r[3] = &v3
	// 4: paths as Paths shows them; a rebase drops what the stream names.
	v4 := v3
	v4.version, v4.rules = 4, pathRules{}
	r[4] = &v4
	// 5: a bare head's own edits render nothing.
	v5 := v4
	v5.version, v5.rules = 5, bareRules{}
	r[5] = &v5
	// 6: a user message is a message of its own, before what changed
	// since the event before it (userfirst.go).
	v6 := v5
	v6.version, v6.rules = RenderUserFirst, userFirstRules{}
	r[6] = &v6
	return r
}()

// renderingOf returns rendering version v.
func renderingOf(v int) (*rendering, error) {
	if v < 1 || v > newestRender {
		return nil, fmt.Errorf("rendering version %d is not one of 1 to %d", v, newestRender)
	}
	return renderings[v], nil
}

// note is a context note's text as this rendering writes it.
func (r *rendering) note(text string) string {
	if rest, ok := strings.CutPrefix(text, "[context] "); ok && r.prefix != "" {
		return r.prefix + rest
	}
	return text
}

// sizeStub is a collapsed block from rendering version 2: its kind, id,
// version and size, or for a toolcall its output's size.
func sizeStub(it *item, id string) string {
	if it.obj.Kind() == objects.KindToolcall {
		return fmt.Sprintf("collapsed: output of %s, %d chars", id, contentChars(it.obj))
	}
	return fmt.Sprintf("collapsed: %s %s version=%d chars=%d", it.obj.Kind(), id, it.ref.Tx, contentChars(it.obj))
}

// style is how one session renders its items and which stream rules it
// follows: its rendering, its rules (the rendering's, in its layout), its
// metadata line's version (objects.MetadataVersion when it began), how it
// shows paths and, under a bare head, its spill directory. It is fixed
// when the session opens and shared by every item the session renders.
type style struct {
	r     *rendering
	rules rules
	mv    int
	paths Paths
	view  func(string) string // how items show paths (rules.pathView)
	spill string
}

// newStyle returns the style of a session in layout l with rendering
// version rv, metadata version mv, paths p and lean head lh.
func newStyle(l Layout, rv, mv int, p Paths, lh *LeanHead) (*style, error) {
	r, err := renderingOf(rv)
	if err != nil {
		return nil, err
	}
	if mv < 1 || mv > objects.MetadataVersion {
		return nil, fmt.Errorf("metadata version %d is not one of 1 to %d", mv, objects.MetadataVersion)
	}
	s := &style{mv: mv, paths: p, spill: spillDir(lh)}
	s.setRendering(r, l)
	return s, nil
}

// setRendering makes r the style's rendering, with its rules in layout l.
func (s *style) setRendering(r *rendering, l Layout) {
	s.r, s.rules = r, r.rules
	if l == LayoutLiteral {
		s.rules = literalRules{r.rules}
	}
	s.view = s.rules.pathView(s.paths)
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
// line: the tool (the call id is the message's own
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

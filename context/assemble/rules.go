package assemble

import "github.com/ctxstore/ctxstore/objects"

// rules are the stream rules of a session: the decisions about what the
// stream holds that changed from one rendering version to the next (how
// items read is the rendering's text, not a rule). Each version that
// changed them has one implementation, the previous one's with what it
// changed (embedded; versions 1 and 2 share metadataRules), chosen once
// when the session opens (newStyle: a new session takes RenderVersion's,
// a resumed or rebuilt one its root commit's), so the code that assembles
// a call asks its session's rules and never compares version numbers.
// The literal layout keeps only the rules that are not about the stream
// (literalRules).
type rules interface {
	// inlineOutputs reports whether a live tool output is rendered in its
	// own tool result, as the harness would send it (a rebase rewrites
	// the result once the output collapsed), rather than as a content
	// block after the results.
	inlineOutputs() bool
	// namesWrites reports whether a write or edit's tool result names the
	// files it pooled, instead of a metadata line each, and is remembered
	// for the patch of a shown file it changes (pendingEdit).
	namesWrites() bool
	// patches reports whether a shown object's new version can be shown
	// as a patch against the version the model holds (patchFor).
	patches() bool
	// waitsForResult reports whether a toolcall reported before its log
	// waits for its result to be listed (Assembler.awaitsResult).
	waitsForResult() bool
	// deactivated returns the note, if any, that tells the model a shown
	// item went inactive: forWindow when a deactivation was made to fit
	// the window (Overflow).
	deactivated(it *item, forWindow bool) deactivation
	// rebaseDrops reports whether a rebase leaves it out of the rewritten
	// tail instead of rewriting it; listed are the ids the stream names,
	// staleBefore the display ids of the stale blocks before the rebase.
	rebaseDrops(r *rendering, it *item, listed map[string]bool, staleBefore map[string]bool) bool
	// silentOwnEdit reports whether a shown file's new version that is
	// exactly the model's own edits applied to the version shown renders
	// nothing, under a head whose spill directory is spill ("" for none).
	silentOwnEdit(spill string) bool
	// pathView returns how items show file and note paths: the session's
	// Paths, or nil for the paths as stored.
	pathView(p Paths) func(string) string
	// userFirst reports whether a user message is a message of its own,
	// placed before what changed since the previous event (userfirst.go).
	userFirst() bool
	// keepsSent reports whether a tool result the harness already sent the
	// model in its own form renders in that form until a rebase rewrites
	// it (userfirst.go).
	keepsSent() bool
}

// deactivation is which note a deactivated item gets.
type deactivation int

const (
	noteInactive deactivation = iota // named in the "inactive now" note
	noteWindow                       // named in the note of a deactivation to fit the window
	noteNone                         // a live output collapsing: no note
)

// metadataRules are renderings 1 and 2: tool results and collapsed blocks
// as lines, every change of a shown object as a new full block.
type metadataRules struct{}

func (metadataRules) inlineOutputs() bool  { return false }
func (metadataRules) namesWrites() bool    { return false }
func (metadataRules) patches() bool        { return false }
func (metadataRules) waitsForResult() bool { return false }
func (metadataRules) deactivated(*item, bool) deactivation {
	return noteInactive
}
func (metadataRules) rebaseDrops(*rendering, *item, map[string]bool, map[string]bool) bool {
	return false
}
func (metadataRules) silentOwnEdit(string) bool          { return false }
func (metadataRules) pathView(Paths) func(string) string { return nil }
func (metadataRules) userFirst() bool                    { return false }
func (metadataRules) keepsSent() bool                    { return false }

// liveRules are rendering 3: live outputs in their tool results, patches,
// writes naming their files, toolcalls waiting for their results; an
// output collapsing needs no note and a deactivation to fit the window
// has its own.
type liveRules struct{ metadataRules }

func (liveRules) inlineOutputs() bool  { return true }
func (liveRules) namesWrites() bool    { return true }
func (liveRules) patches() bool        { return true }
func (liveRules) waitsForResult() bool { return true }
func (liveRules) deactivated(it *item, forWindow bool) deactivation {
	switch {
	case forWindow:
		return noteWindow
	case it.obj.Kind() == objects.KindToolcall:
		return noteNone
	}
	return noteInactive
}

// pathRules are rendering 4: paths as the session's Paths shows them, and
// a rebase drops what the stream names already (dropsAtRebase).
type pathRules struct{ liveRules }

func (pathRules) rebaseDrops(r *rendering, it *item, listed map[string]bool, staleBefore map[string]bool) bool {
	return dropsAtRebase(r, it, listed, staleBefore)
}

func (pathRules) pathView(p Paths) func(string) string {
	if p.zero() {
		return nil
	}
	return p.Display
}

// bareRules are rendering 5: under a bare head (a spill directory), the
// model's own edits render nothing.
type bareRules struct{ pathRules }

func (bareRules) silentOwnEdit(spill string) bool { return spill != "" }

// literalRules are a rendering's rules in the literal layout, which
// re-renders its pool and active blocks every call: no live outputs,
// patches, named writes or waiting toolcalls; the notes and paths are the
// rendering's.
type literalRules struct{ rules }

func (literalRules) inlineOutputs() bool  { return false }
func (literalRules) namesWrites() bool    { return false }
func (literalRules) patches() bool        { return false }
func (literalRules) waitsForResult() bool { return false }
func (literalRules) keepsSent() bool      { return false }

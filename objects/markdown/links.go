package markdown

import (
	"net/url"
	"regexp"
	"strings"
)

// LinkKind says how a link was written.
type LinkKind string

const (
	// KindWikilink is an Obsidian wikilink: [[target]], ![[target]].
	KindWikilink LinkKind = "wikilink"
	// KindMarkdown is a CommonMark link or image to a local file:
	// [text](path.md), ![alt](image.png), [text][ref].
	KindMarkdown LinkKind = "markdown"
)

// Link is a reference from a note to another object, or to a place in the
// same note. Every field is valid UTF-8 without control characters.
type Link struct {
	// Kind is how the link was written.
	Kind LinkKind
	// Target names what the link points to, as written with the '#'
	// fragment and the '|' alias removed: "Project plan", "notes/a.md",
	// "diagram.png". For Markdown links it is the destination path,
	// percent-decoded, still relative to the note's directory. It is empty
	// for a link into the same note ([[#Heading]], [text](#heading)).
	Target string
	// Heading is the heading the link points into, after '#': "Goals" for
	// [[Plan#Goals]]. Obsidian's nested form [[Plan#Goals#Risks]] is kept as
	// "Goals#Risks". Empty when there is none or when BlockRef is set.
	Heading string
	// BlockRef is the block id the link points at, after "#^" and without
	// the '^': "p1" for [[Plan#^p1]].
	BlockRef string
	// Label is the display text: the alias after '|' in a wikilink (empty
	// when none was written), or the text of a Markdown link (the alt text
	// of an image). For an embedded image wikilink, ![[a.png|100]], it is
	// Obsidian's size ("100").
	Label string
	// Embed is set for ![[...]] and for Markdown images ![alt](path).
	Embed bool
	// Line is the 1-based line of the link's first byte.
	Line int
	// Offset is the byte offset in the source of the link's first byte
	// ('[' or '!').
	Offset int
}

// Self reports whether the link points into the note that contains it
// ([[#Heading]], [[#^block]], [text](#heading)).
func (l Link) Self() bool { return l.Target == "" }

// ExternalLink is a link to a URL with a scheme (https:, mailto:,
// obsidian:, file:, ...): a Markdown link or image, an <autolink>, or a
// bare URL that GFM's autolink extension recognises.
type ExternalLink struct {
	// URL is the link destination, with backslash escapes and entities
	// resolved but otherwise as written (not percent-decoded).
	URL string
	// Label is the link text or alt text; the URL itself for autolinks.
	Label string
	// Embed is set for images.
	Embed bool
	// Line is the 1-based line of the link's first byte.
	Line int
	// Offset is the byte offset in the source of the link's first byte.
	Offset int
}

// ResolvedLink is a Link with what it resolved to.
type ResolvedLink struct {
	Link
	// ID is the id of the object the target resolved to; empty for a
	// dangling link and for a link into the same note.
	ID string
	// Dangling is set when the lookup did not find the target. A dangling
	// link is kept, with its Target, so that it resolves once the object
	// it names exists.
	Dangling bool
}

// splitWikilink splits the inside of a wikilink before any '|' into its
// target and fragment. Obsidian's target ends at the first '#'.
func splitWikilink(inner string) (target, heading, block string) {
	target, frag, _ := strings.Cut(inner, "#")
	target = strings.TrimSpace(target)
	frag = strings.TrimSpace(frag)
	if b, ok := strings.CutPrefix(frag, "^"); ok {
		return target, "", strings.TrimSpace(b)
	}
	return target, frag, ""
}

// schemeRe matches a URL scheme. One letter is not enough: "C:" starts a
// Windows path.
var schemeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]+:`)

// isExternal reports whether a Markdown link destination is a URL rather
// than a path: it has a scheme or is protocol-relative ("//host/...").
func isExternal(dest string) bool {
	return schemeRe.MatchString(dest) || strings.HasPrefix(dest, "//")
}

// splitLocal splits a local Markdown link destination into a
// percent-decoded path and its fragment; a query string is dropped.
func splitLocal(dest string) (target, heading, block string) {
	p, frag, _ := strings.Cut(dest, "#")
	p, _, _ = strings.Cut(p, "?")
	p = unescapePercent(p)
	frag = unescapePercent(frag)
	if b, ok := strings.CutPrefix(frag, "^"); ok {
		return strings.TrimSpace(p), "", b
	}
	return strings.TrimSpace(p), frag, ""
}

func unescapePercent(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	u, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return u
}

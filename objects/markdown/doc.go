// Package markdown parses Obsidian-style Markdown notes into the structured
// fields of a note object: frontmatter, title, aliases, tags, links and
// block ids.
//
// The package is pure: no I/O, no clock, no global mutable state. It uses a
// real CommonMark parser (goldmark, with GFM tables, strikethrough,
// autolinks and footnotes) plus the frontmatter, wikilink and hashtag
// extensions, and reads the syntax tree rather than the text, so nothing
// inside a code span, a fenced or indented code block or raw HTML counts as
// a link, a tag or a block id.
//
// [Parse] returns a [Note]; [ResolvedLink] is a link with the object id it
// resolves to, which the caller looks up (by path, nickname or alias),
// keeping dangling links. [ToNoteFields] maps a Note onto [objects.NoteFields]; its
// links are targets as written, not ids (see its documentation for why).
//
// docs/notes.md describes exactly what is parsed, with examples, and what is
// not.
package markdown

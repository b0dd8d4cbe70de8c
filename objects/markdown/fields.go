package markdown

import (
	"strings"
	"unicode"

	"github.com/ctxstore/ctxstore/objects"
)

// fromFrontmatter reads the keys this package recognises: "title",
// "aliases" and "alias", "tags" and "tag". Keys are matched exactly
// (lowercase), as Obsidian writes them. Values of other types than those
// described on Note are ignored; they stay in Note.Frontmatter.
func (s *state) fromFrontmatter(m map[string]any) {
	if t, ok := m["title"].(string); ok {
		s.note.Title = foldSpace(t)
	}
	seen := make(map[string]bool)
	for _, key := range []string{"aliases", "alias"} {
		for _, a := range stringList(m[key]) {
			a = foldSpace(a)
			if a != "" && !seen[a] {
				seen[a] = true
				s.note.Aliases = append(s.note.Aliases, a)
			}
		}
	}
	for _, key := range []string{"tags", "tag"} {
		for _, v := range stringList(m[key]) {
			// A tag cannot hold white space or commas, so "a, b" and "a b"
			// are two tags (Obsidian's older string form).
			for _, t := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
				t = strings.TrimPrefix(t, "#")
				if strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
					continue // empty or digits only: not a tag in Obsidian
				}
				s.addTag(t)
			}
		}
	}
}

// stringList returns v as a list of strings: a string is a one-element
// list, a list keeps its string elements and drops the others.
func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// ToNoteFields maps a parsed note onto the note fields of the object model.
//
// Title, Tags and Aliases are copied. Frontmatter is a deep copy. Links are
// the link targets as written (Link.Target), not resolved ids: wikilink and
// Markdown link targets, embeds included, each target once, in order of
// first appearance, links into the same note left out. Keeping targets
// makes a note object a function of its bytes alone: its hashes do not
// change when some other object appears, is renamed or is given an alias,
// and a dangling link needs no special value. Resolution to ids (a lookup
// by path, nickname or alias, into ResolvedLink) happens when the links
// are followed or indexed.
//
// The result always passes the object model's validation (objects.New).
// A nil note gives zero fields.
func ToNoteFields(n *Note) objects.NoteFields {
	if n == nil {
		return objects.NoteFields{}
	}
	f := objects.NoteFields{
		Title:   n.Title,
		Tags:    cloneStrings(n.Tags),
		Aliases: cloneStrings(n.Aliases),
	}
	if n.Frontmatter != nil {
		f.Frontmatter = deepCopy(n.Frontmatter).(map[string]any)
	}
	seen := make(map[string]bool)
	for _, l := range n.Links {
		if l.Self() || seen[l.Target] {
			continue
		}
		seen[l.Target] = true
		f.Links = append(f.Links, l.Target)
	}
	return f
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

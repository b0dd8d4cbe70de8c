package tools

import (
	"context"
	"strings"

	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/objects/markdown"
	"github.com/ctxstore/ctxstore/store"
)

// NoteLinks resolves a note's links and finds its backlinks;
// context/notes.Notes implements it. With Options.Notes set, read and
// activate on a note tell the agent where its links lead (ids it can
// activate) and which notes link to it, so it can follow them.
type NoteLinks interface {
	Links(ctx context.Context, st store.Store, ix *files.Indexer, o *objects.Object) ([]markdown.ResolvedLink, error)
	Backlinks(ctx context.Context, st store.Store, o *objects.Object) ([]string, error)
}

// maxNoteLinks bounds the links and backlinks listed in one message.
const maxNoteLinks = 50

// noteLinks is what read and activate add to their message for a note: a
// line of its links ("[[Plan]] -> id", dangling ones marked) and a line of
// the notes linking to it. Empty for anything else, or when the lookups
// fail (the read itself succeeded; the links are a courtesy).
func (t *Tools) noteLinks(ctx context.Context, o *objects.Object) string {
	if t.notes == nil || o == nil || o.Kind() != objects.KindNote || o.Content == nil {
		return ""
	}
	st := t.s.Store()
	var b strings.Builder
	if links, err := t.notes.Links(ctx, st, t.ix, o); err == nil && len(links) > 0 {
		b.WriteString("\nLinks:")
		seen := map[string]bool{}
		n := 0
		for _, l := range links {
			if l.Target == "" || seen[l.Target] {
				continue
			}
			seen[l.Target] = true
			if n++; n > maxNoteLinks {
				b.WriteString(" …")
				break
			}
			b.WriteString(" [[" + l.Target + "]]")
			switch {
			case l.Dangling:
				b.WriteString(" (no such note)")
			case l.ID != "":
				b.WriteString(" -> " + objects.DisplayID(l.ID))
			}
			b.WriteString(";")
		}
	}
	if back, err := t.notes.Backlinks(ctx, st, o); err == nil && len(back) > 0 {
		b.WriteString("\nLinked from:")
		for i, id := range back {
			if i == maxNoteLinks {
				b.WriteString(" …")
				break
			}
			b.WriteString(" " + objects.DisplayID(id))
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

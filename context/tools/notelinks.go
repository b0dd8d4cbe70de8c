package tools

import (
	"context"
	"strings"

	"github.com/ctxstore/ctxstore/context/expand"
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
		var parts []string
		seen := map[string]bool{}
		for _, l := range links {
			if l.Target == "" || seen[l.Target] {
				continue
			}
			seen[l.Target] = true
			if len(parts) == maxNoteLinks {
				parts = append(parts, "…")
				break
			}
			p := "[[" + l.Target + "]]"
			switch {
			case l.Dangling:
				p += " (no such note)"
			case l.ID != "":
				p += " -> " + objects.DisplayID(l.ID)
			}
			parts = append(parts, p)
		}
		b.WriteString("\nLinks: " + strings.Join(parts, "; "))
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
	return b.String()
}

// followLink is activate(target) for a link target the session has not
// indexed yet: the first note of the session (active ones first, then the
// pool) with a link to target that resolves is followed, and the note it
// leads to is read (indexed and activated) by its path, as read(path)
// would. So an agent that sees "[[Plan]]" in a note's content can activate
// "Plan" (or "[[Plan]]"). ok is false when no note of the session links
// to target.
func (t *Tools) followLink(ctx context.Context, target string) (r Result, ok bool, err error) {
	if t.notes == nil {
		return Result{}, false, nil
	}
	want := linkKey(target)
	if want == "" {
		return Result{}, false, nil
	}
	st := t.s.Store()
	state := t.s.State()
	for _, id := range append(append([]string(nil), state.Active...), state.Pool...) {
		o, _, err := expand.Resolve(ctx, st, objects.DynamicRef(id))
		if err != nil || o.Kind() != objects.KindNote || o.Content == nil {
			continue
		}
		links, err := t.notes.Links(ctx, st, t.ix, o)
		if err != nil {
			continue
		}
		for _, l := range links {
			if l.ID == "" || l.Dangling || linkKey(l.Target) != want {
				continue
			}
			to, _, err := expand.Resolve(ctx, st, objects.DynamicRef(l.ID))
			if err != nil {
				continue
			}
			src, isFile := to.Source().(objects.FilesystemSource)
			if !isFile || src.Path == "" {
				continue
			}
			r, err := t.Read(ctx, src.Path)
			if err != nil {
				return Result{}, true, err
			}
			from := o.Note.Title
			if from == "" {
				from = objects.DisplayID(o.ID())
			}
			r.Message = "Followed [[" + l.Target + "]] from " + from + ": " + r.Message
			return r, true, nil
		}
	}
	return Result{}, false, nil
}

// linkKey is a link target as the agent may write it, compared without
// brackets, alias, heading, ".md" or case: "[[Plan#Goals|the plan]]" and
// "plan.md" are "plan".
func linkKey(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "[["), "]]")
	if i := strings.IndexAny(s, "|#"); i >= 0 {
		s = s[:i]
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), ".md"))
}

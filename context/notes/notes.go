// Package notes makes Markdown files under note roots (Obsidian vaults and
// the like) note objects: sourced objects of kind note whose title, tags,
// aliases and frontmatter are fields, whose links are kept as written and
// as lookup keys, and whose links and backlinks resolve with store queries.
//
// It plugs into the file indexer (files.Indexer.WithKinds), so tools.Read,
// the wrapped tools, trackers and resume index notes with the same protocol
// as files: one hash and one lookup for an unchanged note, a new version
// when it changes, a deletion version when it is gone. See
// docs/context-manager.md, "Notes".
package notes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/objects/markdown"
	"github.com/ctxstore/ctxstore/store"
)

// DefaultMaxParseBytes is the largest note whose Markdown is parsed for
// fields and links (goldmark has super-linear worst cases, docs/notes.md).
// A larger note is still a note with its content; its title is its file
// name and it has no tags, links or frontmatter.
const DefaultMaxParseBytes = 1 << 20

// Fields the package adds to note objects (in their Extra).
const (
	// FieldLinkKeys lists the lookup keys of the note's links (see Keys).
	FieldLinkKeys = "link_keys"
	// FieldNameKeys lists the keys the note itself answers to.
	FieldNameKeys = "name_keys"
	// FieldParseError holds the frontmatter error of a note whose
	// frontmatter could not be read (the rest of it was).
	FieldParseError = "parse_error"
)

// Options configure a Notes.
type Options struct {
	// Roots are the note directories. A file is a note when its name ends
	// in ".md" (any case) and it lies under one of them; the longest root
	// containing it is its root. Relative roots are taken relative to the
	// working directory.
	Roots []string
	// MaxParseBytes caps what is parsed (0: DefaultMaxParseBytes).
	MaxParseBytes int
}

// Notes decides which files are notes and builds their objects. It is
// immutable and safe for concurrent use.
type Notes struct {
	roots []string // clean absolute slash paths, longest first
	max   int
}

// New returns a Notes for o.
func New(o Options) (*Notes, error) {
	n := &Notes{max: o.MaxParseBytes}
	if n.max <= 0 {
		n.max = DefaultMaxParseBytes
	}
	for _, r := range o.Roots {
		c, err := files.CleanPath(r)
		if err != nil {
			return nil, fmt.Errorf("notes: root %q: %w", r, err)
		}
		n.roots = append(n.roots, c)
	}
	slices.SortFunc(n.roots, func(a, b string) int { return len(b) - len(a) })
	return n, nil
}

// Roots returns the note roots (absolute paths, longest first).
func (n *Notes) Roots() []string {
	out := make([]string, len(n.roots))
	for i, r := range n.roots {
		out[i] = filepath.FromSlash(r)
	}
	return out
}

// Indexer returns ix indexing the notes under the roots as note objects
// (and everything else as before).
func (n *Notes) Indexer(ix *files.Indexer) *files.Indexer { return ix.WithKinds(n) }

// root returns the root holding the clean path p, "" if none.
func (n *Notes) root(p string) string {
	for _, r := range n.roots {
		if p == r {
			continue
		}
		if r == "/" || strings.HasPrefix(p, r+"/") {
			return r
		}
	}
	return ""
}

// IsNote reports whether the clean slash path p is a note.
func (n *Notes) IsNote(p string) bool {
	return strings.EqualFold(path.Ext(p), ".md") && n.root(p) != ""
}

// Kind implements files.Kinds: notes are objects.KindNote.
func (n *Notes) Kind(p string) objects.Kind {
	if n.IsNote(p) {
		return objects.KindNote
	}
	return objects.KindFile
}

// New implements files.Kinds: it builds a version of the note at
// src.Path. content nil (binary, too large, deleted) gives a note with the
// file name as title and no other fields; a deletion version has no keys.
func (n *Notes) New(src objects.FilesystemSource, content *string, raw []byte) (*objects.Object, error) {
	env, err := objects.NewSourcedEnvelope(objects.KindNote, src)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(path.Base(src.Path), path.Ext(src.Path))
	p := objects.Payload{Content: content, Nickname: name}
	if raw != nil {
		p.SourceHash = objects.HashBytes(raw)
	}
	deleted := content == nil && raw == nil
	if content != nil && len(*content) <= n.max {
		note, perr := markdown.Parse([]byte(*content))
		p.Note = markdown.ToNoteFields(note)
		var fe *markdown.FrontmatterError
		if errors.As(perr, &fe) {
			p.Extra = map[string]any{FieldParseError: fe.Error()}
		} else if perr != nil {
			return nil, perr
		}
		if keys := n.linkKeys(src.Path, note.Links); len(keys) > 0 {
			if p.Extra == nil {
				p.Extra = map[string]any{}
			}
			p.Extra[FieldLinkKeys] = keys
		}
	}
	if p.Note.Title == "" {
		p.Note.Title = name
	}
	if !deleted {
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra[FieldNameKeys] = strs(n.NameKeys(src.Path, p.Note.Aliases))
	}
	o, err := objects.New(env, p)
	if err != nil && p.Nickname != "" {
		// A file name that is no valid nickname: go without one.
		p.Nickname = ""
		o, err = objects.New(env, p)
	}
	return o, err
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Lookup keys. Links and names meet as keys, lower-cased as Obsidian
// matches links without regard to case, with a ".md" extension dropped:
//
//	path:<absolute path>          a note or file at that path
//	name:<root>//<file name>      a note (without .md) or file (with its extension) of that name under root
//	alias:<root>//<alias>         a note under root with that alias
//
// Names and aliases are scoped to the note root, as Obsidian resolves them
// within one vault. A wikilink without '/' may name a note by file name,
// alias or nickname, or a file at the root; with '/', a path under the
// root (Obsidian's vault-relative form). A Markdown link is a path relative
// to the note.

// NameKeys returns the keys an object at the clean path p with the given
// aliases answers to: its path, and, under a note root, its file name
// (a file keeps its extension, "diagram.png"; a note drops ".md") and
// aliases.
func (n *Notes) NameKeys(p string, aliases []string) []string {
	keys := []string{"path:" + normPath(p)}
	if root := n.root(p); root != "" {
		scope := strings.ToLower(root) + "//"
		keys = append(keys, "name:"+scope+normName(path.Base(p)))
		for _, a := range aliases {
			keys = append(keys, "alias:"+scope+strings.ToLower(a))
		}
	}
	return uniq(keys)
}

// LinkKeys returns, for one link of the note at the clean path notePath,
// the keys its target may match, most specific first.
func (n *Notes) LinkKeys(notePath string, l markdown.Link) []string {
	p, byName := n.linkPath(notePath, l)
	if p == "" {
		return nil
	}
	keys := []string{"path:" + normPath(p)}
	if root := n.root(notePath); byName && root != "" {
		scope := strings.ToLower(root) + "//"
		keys = append(keys, "name:"+scope+normName(l.Target), "alias:"+scope+strings.ToLower(l.Target))
	}
	return keys
}

// linkPath returns the path a link names (as written, not lower-cased) and
// whether it may also name a note by file name or alias.
func (n *Notes) linkPath(notePath string, l markdown.Link) (p string, byName bool) {
	if l.Self() {
		return "", false
	}
	t := l.Target
	if l.Kind == markdown.KindMarkdown || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") {
		if path.IsAbs(t) {
			return path.Clean(t), false
		}
		return path.Join(path.Dir(notePath), t), false
	}
	root := n.root(notePath)
	if root == "" {
		root = path.Dir(notePath)
	}
	return path.Join(root, t), !strings.Contains(t, "/")
}

// linkKeys returns every key of a note's links, each once, in order.
func (n *Notes) linkKeys(notePath string, links []markdown.Link) []any {
	var keys []string
	for _, l := range links {
		keys = append(keys, n.LinkKeys(notePath, l)...)
	}
	return strs(uniq(keys))
}

func normPath(p string) string {
	p = strings.ToLower(p)
	return strings.TrimSuffix(p, ".md")
}

func normName(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".md") }

func uniq(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Links resolves the links of note o (a note object read from the store)
// to object ids: by path (a note, or a file object the indexer knows at
// that path), then by note file name, then by alias, then by nickname.
// Several notes matching one key resolve to the one with the shortest path
// (then the smallest id), as Obsidian prefers. A link nothing matches is
// kept as dangling, Target set; links into the same note are neither. ix
// computes file object ids for paths; it may be nil (then only notes and
// nicknames resolve).
func (n *Notes) Links(ctx context.Context, st store.Store, ix *files.Indexer, o *objects.Object) ([]markdown.ResolvedLink, error) {
	src, ok := o.Source().(objects.FilesystemSource)
	if !ok || o.Content == nil || len(*o.Content) > n.max {
		return nil, nil
	}
	note, err := markdown.Parse([]byte(*o.Content))
	if note == nil {
		return nil, err
	}
	out := make([]markdown.ResolvedLink, len(note.Links))
	for i, l := range note.Links {
		out[i].Link = l
		if l.Self() {
			continue
		}
		p, _ := n.linkPath(src.Path, l)
		id, err := n.resolve(ctx, st, ix, n.LinkKeys(src.Path, l), p, l.Target)
		if err != nil {
			return nil, err
		}
		out[i].ID, out[i].Dangling = id, id == ""
	}
	return out, nil
}

// resolve finds the object the first matching key names.
func (n *Notes) resolve(ctx context.Context, st store.Store, ix *files.Indexer, keys []string, linkPath, target string) (string, error) {
	vals := make([]any, len(keys))
	for i, k := range keys {
		vals[i] = k
	}
	docs, err := st.Query(ctx, store.Query{
		Where: []store.Pred{store.Where("type", string(objects.KindNote)), {Field: FieldNameKeys, Op: store.In, Values: vals}},
	})
	if err != nil {
		return "", fmt.Errorf("notes: resolving %q: %w", target, err)
	}
	for _, k := range keys {
		best, bestLen := "", 0
		for _, d := range docs {
			if !hasKey(d[FieldNameKeys], k) {
				continue
			}
			id, _ := d[store.IDKey].(string)
			l := pathLen(d["source"])
			if best == "" || l < bestLen || l == bestLen && id < best {
				best, bestLen = id, l
			}
		}
		if best != "" {
			return best, nil
		}
		// A path that is no note may be a file the store knows.
		if strings.HasPrefix(k, "path:") && ix != nil {
			if id, err := existingFile(ctx, st, ix, linkPath, target); err != nil || id != "" {
				return id, err
			}
		}
	}
	if strings.Contains(target, "/") {
		return "", nil
	}
	// Any other object with that nickname (notes answer by name within
	// their root, above).
	docs, err = st.Query(ctx, store.Query{Where: []store.Pred{store.Where("nickname", target)}})
	if err != nil {
		return "", fmt.Errorf("notes: resolving %q by nickname: %w", target, err)
	}
	for _, d := range docs {
		if d["type"] != string(objects.KindNote) {
			id, _ := d[store.IDKey].(string)
			return id, nil
		}
	}
	return "", nil
}

// existingFile returns the id of the file object at path p (as the link
// wrote it), if the store has a live version of it.
func existingFile(ctx context.Context, st store.Store, ix *files.Indexer, p, target string) (string, error) {
	id, err := ix.ObjectID(p)
	if err != nil {
		return "", nil
	}
	doc, err := st.Entity(ctx, id, store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("notes: resolving %q: %w", target, err)
	}
	if doc["content"] == nil && doc["source_hash"] == nil {
		return "", nil // a deletion version
	}
	return id, nil
}

func hasKey(v any, k string) bool {
	l, _ := v.([]any)
	for _, x := range l {
		if x == k {
			return true
		}
	}
	return false
}

func pathLen(src any) int {
	m, _ := src.(map[string]any)
	p, _ := m["path"].(string)
	return len(p)
}

// Backlinks returns the ids of the notes whose links may name o (a note or
// a file object): one store query for notes whose link keys meet o's name
// keys, sorted. It is a candidate set: a link by file name or alias that
// several notes share is counted for each of them (Links picks one).
// Deletion versions link nothing and are linked by nothing.
func (n *Notes) Backlinks(ctx context.Context, st store.Store, o *objects.Object) ([]string, error) {
	src, ok := o.Source().(objects.FilesystemSource)
	if !ok {
		return nil, nil
	}
	if files.IsDeletedVersion(o) {
		return nil, nil
	}
	keys := n.NameKeys(src.Path, o.Note.Aliases)
	vals := make([]any, len(keys))
	for i, k := range keys {
		vals[i] = k
	}
	docs, err := st.Query(ctx, store.Query{
		Where: []store.Pred{store.Where("type", string(objects.KindNote)), {Field: FieldLinkKeys, Op: store.In, Values: vals}},
		Find:  []string{"type"},
	})
	if err != nil {
		return nil, fmt.Errorf("notes: backlinks of %s: %w", o.ID(), err)
	}
	var ids []string
	for _, d := range docs {
		if id, _ := d[store.IDKey].(string); id != "" && id != o.ID() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// IndexAll indexes every note under the roots through ix (one hash and one
// lookup for a note already indexed and unchanged), so that links between
// notes resolve and backlinks are found before the agent reads any of
// them. It returns how many notes it indexed; errors of single files are
// joined and the rest are still indexed. Hidden directories (".obsidian",
// ".git", ...) are skipped.
func (n *Notes) IndexAll(ctx context.Context, ix *files.Indexer) (int, error) {
	var errs []error
	count := 0
	for _, root := range n.roots {
		err := filepath.WalkDir(filepath.FromSlash(root), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			if d.IsDir() {
				if p != filepath.FromSlash(root) && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			c, cerr := files.CleanPath(p)
			if cerr != nil || !d.Type().IsRegular() || !n.IsNote(c) {
				return nil
			}
			if _, err := ix.Index(ctx, p); err != nil {
				errs = append(errs, fmt.Errorf("notes: %s: %w", p, err))
				return nil
			}
			count++
			return ctx.Err()
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return count, errors.Join(errs...)
}

package notes_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/notes"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

func TestMain(m *testing.M) { storetestenv.Main(m) }

const planMD = `---
title: Project plan
aliases: [The plan]
tags: [project/ctxstore, draft]
owner: ana
---
# Plan

See [[Ideas]] and [[Missing note]], the [goals](sub/Deep.md#Goals) and
![[diagram.png]]. Code does not link: ` + "`[[Ideas]]`" + ` #todo
`

type vault struct {
	t     *testing.T
	ctx   context.Context
	e     *storetestenv.Env
	dir   string // the note root
	out   string // a directory outside it
	n     *notes.Notes
	ix    *files.Indexer
	byRel map[string]*objects.Object
}

func newVault(t *testing.T, e *storetestenv.Env) *vault {
	base := t.TempDir()
	v := &vault{t: t, ctx: context.Background(), e: e, dir: filepath.Join(base, "vault"), out: filepath.Join(base, "repo"), byRel: map[string]*objects.Object{}}
	n, err := notes.New(notes.Options{Roots: []string{v.dir}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-" + e.ID("notes")})
	if err != nil {
		t.Fatal(err)
	}
	v.n, v.ix = n, n.Indexer(files.NewIndexer(e.Store, res, 0))
	return v
}

// write writes a file (rel to the vault, or absolute) and indexes it.
func (v *vault) write(rel, content string) files.Result {
	v.t.Helper()
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(v.dir, rel)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		v.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		v.t.Fatal(err)
	}
	r, err := v.ix.Index(v.ctx, p)
	if err != nil {
		v.t.Fatalf("index %s: %v", rel, err)
	}
	v.byRel[rel] = r.Object
	return r
}

func (v *vault) id(rel string) string { return v.byRel[rel].ID() }

func (v *vault) latest(rel string) *objects.Object {
	v.t.Helper()
	doc, err := v.e.Store.Entity(v.ctx, v.id(rel), store.Basis{})
	if err != nil {
		v.t.Fatal(err)
	}
	o, err := objects.FromDoc(doc)
	if err != nil {
		v.t.Fatal(err)
	}
	return o
}

func (v *vault) backlinks(rel string) []string {
	v.t.Helper()
	ids, err := v.n.Backlinks(v.ctx, v.e.Store, v.latest(rel))
	if err != nil {
		v.t.Fatal(err)
	}
	return ids
}

func (v *vault) ids(rels ...string) []string {
	var out []string
	for _, r := range rels {
		out = append(out, v.id(r))
	}
	slices.Sort(out)
	return out
}

// links returns target -> resolved id ("" dangling) of a note's links.
func (v *vault) links(rel string) map[string]string {
	v.t.Helper()
	ls, err := v.n.Links(v.ctx, v.e.Store, v.ix, v.latest(rel))
	if err != nil {
		v.t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		if l.Dangling != (l.ID == "") {
			v.t.Fatalf("%s: link %q: id %q dangling %v", rel, l.Target, l.ID, l.Dangling)
		}
		out[l.Target] = l.ID
	}
	return out
}

func TestNotes(t *testing.T) {
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		v := newVault(t, e)
		v.write("diagram.png", "\x89PNG\x00\x01")
		plan := v.write("Plan.md", planMD)
		v.write("Ideas.md", "---\naliases: [Brainstorm]\n---\nBack to [[Plan#Goals|the plan]].\n")
		v.write("sub/Deep.md", "# Deep\n\n## Goals\n\nUp: [ideas](../Ideas.md), [[The plan]].\n")
		v.write("Journal.md", "Talked about [[brainstorm]] and [[plan]]. #daily\n")
		readme := v.write(filepath.Join(v.out, "README.md"), "Outside the vault: [[Plan]]\n")

		// What is a note.
		if got := plan.Object.Kind(); got != objects.KindNote {
			t.Fatalf("Plan.md is a %s", got)
		}
		if readme.Object.Kind() != objects.KindFile || v.byRel["diagram.png"].Kind() != objects.KindFile {
			t.Fatal("files outside the root or not .md must stay files")
		}
		if plan.Object.Source().(objects.FilesystemSource).Path != filepath.ToSlash(filepath.Join(v.dir, "Plan.md")) {
			t.Fatalf("source: %+v", plan.Object.Source())
		}
		if id, err := v.ix.ObjectID(filepath.Join(v.dir, "Plan.md")); err != nil || id != plan.Object.ID() {
			t.Fatalf("ObjectID of a note: %s %v", id, err)
		}

		// Fields, as stored.
		o := v.latest("Plan.md")
		want := objects.NoteFields{Title: "Project plan", Tags: []string{"project/ctxstore", "draft", "todo"},
			Aliases: []string{"The plan"}, Links: []string{"Ideas", "Missing note", "sub/Deep.md", "diagram.png"}}
		if o.Note.Title != want.Title || !reflect.DeepEqual(o.Note.Tags, want.Tags) || !reflect.DeepEqual(o.Note.Aliases, want.Aliases) ||
			!reflect.DeepEqual(o.Note.Links, want.Links) || o.Note.Frontmatter["owner"] != "ana" {
			t.Fatalf("note fields: %+v", o.Note)
		}
		if o.Nickname != "Plan" || *o.Content != planMD {
			t.Fatalf("nickname %q", o.Nickname)
		}
		if d := v.latest("Journal.md"); d.Note.Title != "Journal" {
			t.Fatalf("title fallback: %q", d.Note.Title)
		}

		// Links resolve by path, file name, alias; dangling ones stay.
		got := v.links("Plan.md")
		if got["Ideas"] != v.id("Ideas.md") || got["sub/Deep.md"] != v.id("sub/Deep.md") ||
			got["diagram.png"] != v.id("diagram.png") || got["Missing note"] != "" || len(got) != 4 {
			t.Fatalf("Plan's links: %v", got)
		}
		if got := v.links("Journal.md"); got["brainstorm"] != v.id("Ideas.md") || got["plan"] != v.id("Plan.md") {
			t.Fatalf("Journal's links: %v", got)
		}
		if got := v.links("sub/Deep.md"); got["../Ideas.md"] != v.id("Ideas.md") || got["The plan"] != v.id("Plan.md") {
			t.Fatalf("Deep's links: %v", got)
		}

		// Backlinks are one query.
		if got, want := v.backlinks("Plan.md"), v.ids("Ideas.md", "sub/Deep.md", "Journal.md"); !reflect.DeepEqual(got, want) {
			t.Fatalf("backlinks of Plan: %v, want %v", got, want)
		}
		if got, want := v.backlinks("Ideas.md"), v.ids("Plan.md", "sub/Deep.md", "Journal.md"); !reflect.DeepEqual(got, want) {
			t.Fatalf("backlinks of Ideas: %v, want %v", got, want)
		}
		if got, want := v.backlinks("diagram.png"), v.ids("Plan.md"); !reflect.DeepEqual(got, want) {
			t.Fatalf("backlinks of the image: %v, want %v", got, want)
		}

		// A dangling link resolves once its note exists.
		v.write("Missing note.md", "Here now.\n")
		if got := v.links("Plan.md"); got["Missing note"] != v.id("Missing note.md") {
			t.Fatalf("after creating the missing note: %v", got)
		}
		if got, want := v.backlinks("Missing note.md"), v.ids("Plan.md"); !reflect.DeepEqual(got, want) {
			t.Fatalf("backlinks of the new note: %v", got)
		}

		// Unchanged: one lookup, no write. Edited: a new version whose
		// links count from then on. Deleted: it links nothing.
		if r, err := v.ix.Index(v.ctx, filepath.Join(v.dir, "Plan.md")); err != nil || r.Outcome != files.Unchanged {
			t.Fatalf("re-index: %v %v", r.Outcome, err)
		}
		if r := v.write("Plan.md", "# Plan\n\nNothing about ideas now.\n"); r.Outcome != files.Updated {
			t.Fatalf("edit: %v", r.Outcome)
		}
		if got, want := v.backlinks("Ideas.md"), v.ids("sub/Deep.md", "Journal.md"); !reflect.DeepEqual(got, want) {
			t.Fatalf("backlinks of Ideas after the edit: %v", got)
		}
		if err := os.Remove(filepath.Join(v.dir, "Journal.md")); err != nil {
			t.Fatal(err)
		}
		if r, err := v.ix.Sync(v.ctx, filepath.Join(v.dir, "Journal.md")); err != nil || r.Outcome != files.Deleted {
			t.Fatalf("deletion: %v %v", r.Outcome, err)
		}
		if got, want := v.backlinks("Ideas.md"), v.ids("sub/Deep.md"); !reflect.DeepEqual(got, want) {
			t.Fatalf("backlinks of Ideas after the deletion: %v", got)
		}
		// Plan is no longer "Project plan" nor "The plan": the alias link
		// from Deep dangles, its path link does not.
		if got := v.links("sub/Deep.md"); got["The plan"] != "" || got["../Ideas.md"] != v.id("Ideas.md") {
			t.Fatalf("Deep's links after Plan lost its alias: %v", got)
		}
	})
}

// Broken frontmatter: still a note, with its body's links and tags, and
// the error recorded.
func TestBrokenFrontmatter(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		v := newVault(t, e)
		r := v.write("Bad.md", "---\ntitle: [unclosed\n---\n# Heading\n\nSee [[Other]] #tag\n")
		o := v.latest("Bad.md")
		if o.Kind() != objects.KindNote || o.Note.Title != "Heading" || !reflect.DeepEqual(o.Note.Links, []string{"Other"}) ||
			!reflect.DeepEqual(o.Note.Tags, []string{"tag"}) {
			t.Fatalf("note: %+v", o.Note)
		}
		if msg, _ := o.Extra[notes.FieldParseError].(string); !strings.Contains(msg, "invalid YAML frontmatter") {
			t.Fatalf("parse error: %v (%v)", o.Extra, r.Outcome)
		}
	})
}

// The agent's read tool, given the notes-aware indexer, loads a note as a
// note object, and resume reconciles it like a file.
func TestReadNoteThroughTools(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		v := newVault(t, e)
		p := filepath.Join(v.dir, "Idea.md")
		if err := os.MkdirAll(v.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# Idea\n\nLinks to [[Plan]].\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := session.Create(v.ctx, e.Store, e.ID("s"), session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tl := tools.New(s, v.ix, tools.Options{Policy: collapse.Default()})
		r, err := tl.Read(v.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Object.Kind() != objects.KindNote || r.Object.Note.Title != "Idea" || !s.State().IsActive(r.ID) {
			t.Fatalf("read: %+v", r.Object)
		}
		if err := os.WriteFile(p, []byte("# Idea v2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := tl.Resume(v.ctx)
		if err != nil || len(res) != 1 || res[0].Outcome != files.Updated || res[0].Object.Note.Title != "Idea v2" {
			t.Fatalf("resume: %+v %v", res, err)
		}
	})
}

// Package files turns files on disk into versioned file objects:
// filesystem ids, the indexing protocol, text versus binary content,
// tombstone versions for deleted files, and fsnotify trackers that keep
// indexed files up to date.
package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// DefaultMaxTextBytes is the largest file whose text is stored as content;
// larger files are indexed with null content, like binary files.
const DefaultMaxTextBytes = 4 << 20

// Indexer runs the indexing protocol against a store. It is
// safe for concurrent use. Writes are plain puts without match ops: two
// clients that index the same change both write, which is allowed: the later write is the newer version.
type Indexer struct {
	st    store.Store
	res   *Resolver
	max   int64
	kinds Kinds
	ids   *sync.Map // FilesystemSource -> object id (a pure function of it, memoised)
	seen  *sync.Map // object id -> seen: the latest version this indexer wrote or read
	nseen atomic.Int64
}

// maxSeen bounds the versions an Indexer remembers (about 1 KB each).
const maxSeen = 100_000

// seen is a version of an object the indexer wrote or read: the
// transaction that wrote it and the object without its content. A file
// whose bytes still hash to its source hash, and whose visible version is
// still that transaction's (one EntityTx), is that version: its content is
// the file's text (or null, as stored), so re-indexing it needs neither a
// read nor a decode of the stored document.
type seen struct {
	tx         int64
	obj        *objects.Object // Content nil
	hasContent bool
}

// Kinds lets another package index some files as a sourced kind other
// than file: context/notes makes Markdown files under note roots note
// objects. Kind must depend on the path alone, since the object id derives
// from kind and source binding.
type Kinds interface {
	// Kind returns the kind the file at the clean slash path p is indexed
	// as: objects.KindFile, or another kind that may be sourced.
	Kind(p string) objects.Kind
	// New builds a sealed version of such an object. content is nil for
	// binary or too large files and for deletion versions; raw is nil for
	// deletion versions and too large files (whose source hash the indexer
	// sets).
	New(src objects.FilesystemSource, content *string, raw []byte) (*objects.Object, error)
}

// WithKinds returns a copy of ix that indexes files as k says. Files k
// leaves as objects.KindFile are indexed as before.
func (ix *Indexer) WithKinds(k Kinds) *Indexer {
	return &Indexer{st: ix.st, res: ix.res, max: ix.max, kinds: k, ids: new(sync.Map), seen: new(sync.Map)}
}

// kind is the kind the file at p is indexed as.
func (ix *Indexer) kind(p string) objects.Kind {
	if ix.kinds == nil {
		return objects.KindFile
	}
	return ix.kinds.Kind(p)
}

// objectID returns the id of the object of src, its identity hash: a pure
// function of the kind (itself a function of the path) and the binding,
// memoised because it costs a canonical JSON encoding and a hash.
func (ix *Indexer) objectID(src objects.FilesystemSource) (string, error) {
	id, err := ix.lookupID(src)
	if err == nil {
		ix.ids.Store(src, id)
	}
	return id, err
}

// lookupID is objectID without caching a new id: for a path that may
// name no object (a deletion confirmed for a path never indexed), which
// would otherwise stay in the cache for the process's life.
func (ix *Indexer) lookupID(src objects.FilesystemSource) (string, error) {
	if id, ok := ix.ids.Load(src); ok {
		return id.(string), nil
	}
	env, err := objects.NewSourcedEnvelope(ix.kind(src.Path), src)
	if err != nil {
		return "", fmt.Errorf("files: envelope for %s: %w", src.Path, err)
	}
	return env.ID(), nil
}

// newObject builds a version of the object of kind for src.
func (ix *Indexer) newObject(kind objects.Kind, src objects.FilesystemSource, content *string, raw []byte) (*objects.Object, error) {
	if kind == objects.KindFile {
		return objects.NewFile(src, content, raw)
	}
	return ix.kinds.New(src, content, raw)
}

// NewIndexer returns an indexer writing to st and resolving filesystem ids
// with res. maxTextBytes <= 0 means DefaultMaxTextBytes.
func NewIndexer(st store.Store, res *Resolver, maxTextBytes int64) *Indexer {
	if maxTextBytes <= 0 {
		maxTextBytes = DefaultMaxTextBytes
	}
	return &Indexer{st: st, res: res, max: maxTextBytes, ids: new(sync.Map), seen: new(sync.Map)}
}

// Resolver returns the indexer's filesystem resolver.
func (ix *Indexer) Resolver() *Resolver { return ix.res }

// Outcome says what indexing did.
type Outcome string

// The outcomes of Index and MarkDeleted.
const (
	// Created: the file was not in the store; its first version was written.
	Created Outcome = "created"
	// Updated: the file changed; a new version was written.
	Updated Outcome = "updated"
	// Unchanged: the stored version matches; nothing was written.
	Unchanged Outcome = "unchanged"
	// Deleted: a null-content version recording the deletion was written.
	Deleted Outcome = "deleted"
	// Unreachable: the file's directory is gone too, so the file may be
	// unreachable rather than deleted (an unmounted volume); nothing was
	// written and the object stays orphaned. Reconcile only.
	Unreachable Outcome = "unreachable"
)

// Result is the outcome of indexing one path.
type Result struct {
	// Path is the clean absolute slash path indexed.
	Path string
	// Object is the current version (nil only when MarkDeleted found
	// nothing to mark).
	Object  *objects.Object
	Outcome Outcome
	// Tx is the transaction that wrote the version, or -1 when nothing was
	// written (Unchanged): the protocol spends no extra lookup on it; use
	// store.EntityTx when a static reference is needed.
	Tx int64
}

// Written reports whether a version was written.
func (r Result) Written() bool { return r.Outcome != Unchanged && r.Tx >= 0 }

// CleanPath converts an OS path to the absolute, clean, slash-separated
// form source bindings use. A relative path is taken relative to the
// working directory.
func CleanPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("files: absolute path of %q: %w", p, err)
	}
	return path.Clean(filepath.ToSlash(abs)), nil
}

// Source returns the source binding of p: its filesystem id and clean path.
func (ix *Indexer) Source(p string) (objects.FilesystemSource, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return objects.FilesystemSource{}, err
	}
	fsid, err := ix.res.Resolve(clean)
	if err != nil {
		return objects.FilesystemSource{}, err
	}
	return objects.FilesystemSource{FilesystemID: fsid, Path: clean}, nil
}

// ObjectID returns the id the file at p has or would have (its identity
// hash), without touching disk contents or the store.
func (ix *Indexer) ObjectID(p string) (string, error) {
	src, err := ix.Source(p)
	if err != nil {
		return "", err
	}
	return ix.objectID(src)
}

// Index runs the indexing protocol on the regular file at p: resolve the
// filesystem, bind the source, hash the raw bytes, derive the id, and look
// the object up once. A missing object gets its first version, a changed
// source hash a new version, and an unchanged file costs that one hash and
// one lookup, with no write. Text (valid UTF-8 without NUL bytes, at most
// the size limit) is stored as content; anything else gets null content and
// metadata only. A directory or a missing file is an error (wrapping
// fs.ErrNotExist for the latter); use MarkDeleted for a confirmed deletion.
func (ix *Indexer) Index(ctx context.Context, p string) (Result, error) {
	src, err := ix.Source(p)
	if err != nil {
		return Result{}, err
	}
	raw, err := readRegular(src.Path, ix.max)
	if err != nil {
		return Result{}, err
	}
	kind := ix.kind(src.Path)
	id, err := ix.objectID(src)
	if err != nil {
		return Result{}, err
	}
	hash := objects.HashBytes(raw.data)
	var et *store.EntityTx
	if !raw.truncated {
		var o *objects.Object
		if o, et, err = ix.unchanged(ctx, id, hash, raw); err != nil {
			return Result{}, err
		}
		if o != nil {
			return Result{Path: src.Path, Object: o, Outcome: Unchanged, Tx: -1}, nil
		}
	}
	cur, err := ix.currentAt(ctx, id, et)
	if err != nil {
		return Result{}, err
	}
	if cur != nil && cur.SourceHash == hash && !raw.truncated {
		return Result{Path: src.Path, Object: cur, Outcome: Unchanged, Tx: -1}, nil
	}
	o, err := ix.newObject(kind, src, textOf(raw), raw.data)
	if err != nil {
		return Result{}, fmt.Errorf("files: %s object for %s: %w", kind, src.Path, err)
	}
	if raw.truncated {
		// Too large to hold in memory as text: hash the whole file
		// without keeping it.
		if o.SourceHash, err = hashFile(src.Path); err != nil {
			return Result{}, err
		}
		if cur != nil && cur.SourceHash == o.SourceHash {
			return Result{Path: src.Path, Object: cur, Outcome: Unchanged, Tx: -1}, nil
		}
		if err := o.Seal(); err != nil {
			return Result{}, fmt.Errorf("files: sealing %s: %w", src.Path, err)
		}
	}
	outcome := Created
	if cur != nil {
		outcome = Updated
	}
	return ix.write(ctx, src.Path, o, outcome)
}

// MarkDeleted records that the file at p is confirmed gone (an unlink or
// rename event, or a missing file on reconciliation): the object gets a new
// version with null content and no source hash, its history intact.
// A file never indexed, or already marked, is left alone
// (Outcome Unchanged, Object nil for the former). It does not check the
// disk; callers do.
func (ix *Indexer) MarkDeleted(ctx context.Context, p string) (Result, error) {
	src, err := ix.Source(p)
	if err != nil {
		return Result{}, err
	}
	kind := ix.kind(src.Path)
	id, err := ix.lookupID(src)
	if err != nil {
		return Result{}, err
	}
	cur, err := ix.current(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if cur != nil {
		ix.ids.Store(src, id) // an object of the store: worth the cache
	}
	if cur == nil || IsDeletedVersion(cur) {
		return Result{Path: src.Path, Object: cur, Outcome: Unchanged, Tx: -1}, nil
	}
	o, err := ix.newObject(kind, src, nil, nil)
	if err != nil {
		return Result{}, fmt.Errorf("files: deletion version for %s: %w", src.Path, err)
	}
	o.Nickname = cur.Nickname
	if err := o.Seal(); err != nil {
		return Result{}, fmt.Errorf("files: sealing %s: %w", src.Path, err)
	}
	return ix.write(ctx, src.Path, o, Deleted)
}

// Sync brings the object of p in line with the disk: Index when p is a
// file, MarkDeleted when it is confirmed missing. Used by trackers and on
// resume.
func (ix *Indexer) Sync(ctx context.Context, p string) (Result, error) {
	r, err := ix.Index(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return ix.MarkDeleted(ctx, p)
	}
	return r, err
}

// IsDeletedVersion reports whether o is a deletion version: null content
// and no source hash (a binary file has null content but a source hash).
func IsDeletedVersion(o *objects.Object) bool {
	return o.Content == nil && o.SourceHash == ""
}

// textOf returns the content a file's bytes are stored as: the text, or
// nil for binary or too large files.
func textOf(raw rawFile) *string {
	if raw.truncated || !IsText(raw.data) {
		return nil
	}
	s := string(raw.data)
	return &s
}

// unchanged returns the version of id the indexer remembers, with the
// file's content, when the file still hashes to its source hash and one
// EntityTx shows that version is still the visible one. Otherwise it
// returns nil, and the EntityTx it made (nil if none) for currentAt.
func (ix *Indexer) unchanged(ctx context.Context, id, hash string, raw rawFile) (*objects.Object, *store.EntityTx, error) {
	v, ok := ix.seen.Load(id)
	if !ok || v.(seen).obj.SourceHash != hash {
		return nil, nil, nil
	}
	s := v.(seen)
	et, err := ix.st.EntityTx(ctx, id, store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return nil, &store.EntityTx{ID: id, Deleted: true}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("files: looking up %s: %w", id, err)
	}
	if et.Deleted || et.TxID != s.tx {
		return nil, &et, nil
	}
	o := s.obj.Clone()
	if s.hasContent {
		c := string(raw.data)
		o.Content = &c
	}
	return o, nil, nil
}

// remember records o, the version of id transaction tx wrote.
func (ix *Indexer) remember(id string, tx int64, o *objects.Object) {
	if o.SourceHash == "" {
		ix.seen.Delete(id) // a deletion version: nothing to recognise
		return
	}
	if _, ok := ix.seen.Load(id); !ok && ix.nseen.Load() >= maxSeen {
		return
	}
	meta := o.Clone()
	meta.Content = nil
	if _, loaded := ix.seen.Swap(id, seen{tx: tx, obj: meta, hasContent: o.Content != nil}); !loaded {
		ix.nseen.Add(1)
	}
}

// currentAt reads the latest version of id, nil when absent: the version
// et names (a point lookup at the latest basis, made here when et is nil),
// read at its transaction, and remembered.
func (ix *Indexer) currentAt(ctx context.Context, id string, et *store.EntityTx) (*objects.Object, error) {
	if et == nil {
		e, err := ix.st.EntityTx(ctx, id, store.Basis{})
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("files: looking up %s: %w", id, err)
		}
		et = &e
	}
	if et.Deleted {
		return nil, nil
	}
	doc, err := ix.st.Entity(ctx, id, store.AtTx(et.TxID, et.ValidTime))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("files: reading %s: %w", id, err)
	}
	o, err := objects.FromDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("files: decoding stored %s: %w", id, err)
	}
	ix.remember(id, et.TxID, o)
	return o, nil
}

// current fetches the latest version of id, nil when absent.
func (ix *Indexer) current(ctx context.Context, id string) (*objects.Object, error) {
	doc, err := ix.st.Entity(ctx, id, store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("files: looking up %s: %w", id, err)
	}
	o, err := objects.FromDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("files: decoding stored %s: %w", id, err)
	}
	return o, nil
}

func (ix *Indexer) write(ctx context.Context, p string, o *objects.Object, outcome Outcome) (Result, error) {
	doc, err := o.Doc()
	if err != nil {
		return Result{}, fmt.Errorf("files: document for %s: %w", p, err)
	}
	tx, err := store.SubmitWait(ctx, ix.st, []store.Op{store.Put(doc)})
	if err != nil {
		ix.seen.Delete(o.ID())
		return Result{}, fmt.Errorf("files: writing %s: %w", p, err)
	}
	ix.remember(o.ID(), tx.ID, o)
	return Result{Path: p, Object: o, Outcome: outcome, Tx: tx.ID}, nil
}

// IsText reports whether b is stored as text: valid UTF-8 with no NUL byte.
func IsText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

type rawFile struct {
	data      []byte
	truncated bool // larger than the limit: data is nil
}

// readRegular reads p if it is a regular file of at most max bytes.
func readRegular(p string, max int64) (rawFile, error) {
	fi, err := os.Stat(filepath.FromSlash(p))
	if err != nil {
		return rawFile{}, fmt.Errorf("files: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return rawFile{}, fmt.Errorf("files: %s is not a regular file (%s)", p, fi.Mode().Type())
	}
	if fi.Size() > max {
		return rawFile{truncated: true}, nil
	}
	b, err := os.ReadFile(filepath.FromSlash(p))
	if err != nil {
		return rawFile{}, fmt.Errorf("files: %w", err)
	}
	return rawFile{data: b}, nil
}

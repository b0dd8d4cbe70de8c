// Package tools is the agent's tool surface over a session, harness-neutral:
// read, activate, deactivate, pin and unpin
// are ours; write, edit, ls, find and grep are executed by the harness and
// reported here so ctxstore indexes what they touch or list; bash is
// observed, with best-effort file attribution. Every tool call becomes a
// toolcall object, and the auto-activation policy (package collapse) keeps
// the most recent outputs active. Methods return a Result whose Message is
// what the agent should be told; an error means the tool failed and its
// text is the message.
package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// ErrUnknownObject is returned (wrapped) when an id or nickname names no
// object of the session.
var ErrUnknownObject = errors.New("no such object")

// ErrForeignObject is returned (wrapped) when a tool call would write an
// object that another session owns: its id is in the store but not in this
// session's index (a tool call id another session recorded).
var ErrForeignObject = errors.New("the object belongs to another session")

// What a session may reach (docs/security.md, "What a session
// owns"): the objects in its index, i.e. those it created (its chat,
// system prompt and toolcalls) or discovered itself (files it read, wrote
// or saw listed under its roots, objects its tools indexed). Ids, shortened
// ids and nicknames resolve only among them; an id of another session's
// object answers exactly as an id that does not exist, and a tool call id
// another session recorded cannot be recorded again (ErrForeignObject).

// Options configure New.
type Options struct {
	// Policy is the auto-activation window; the zero value means
	// collapse.Default().
	Policy collapse.Config
	// Tracker, if set, watches every file the tools index.
	Tracker *files.Tracker
	// MaxDiscovered caps how many files one ls, find, grep or bash output
	// may index (default 200); the rest are ignored.
	MaxDiscovered int
	// Roots confine every file the tools read or index (read, write, edit,
	// ls, find, grep, bash); nil allows every path. A read outside them
	// fails with ErrOutsideRoots; the other tools skip such files.
	Roots *Roots
	// Notes, when set, resolves notes' links and backlinks for the
	// messages of read and activate (context/notes.Notes).
	Notes NoteLinks
	// Spill is where a bare head's outputs are whole (see Spill): a read
	// of the session's spill file loads its output, and no file under
	// Spill.Root is indexed.
	Spill Spill
}

// Tools drives one session. It is safe for concurrent use as far as the
// session is; a conflicting concurrent writer of the same session makes a
// call fail with an error wrapping store.ErrConflict.
type Tools struct {
	s      *session.Session
	ix     *files.Indexer
	tr     *files.Tracker
	policy collapse.Config
	maxDis int
	roots  *Roots
	notes  NoteLinks
	spill  Spill
}

// New returns the tools of session s, indexing files through ix.
func New(s *session.Session, ix *files.Indexer, o Options) *Tools {
	if o.Policy == (collapse.Config{}) {
		o.Policy = collapse.Default()
	}
	if o.MaxDiscovered <= 0 {
		o.MaxDiscovered = 200
	}
	return &Tools{s: s, ix: ix, tr: o.Tracker, policy: o.Policy, maxDis: o.MaxDiscovered, roots: o.Roots, notes: o.Notes, spill: o.Spill.resolved()}
}

// SetRoots replaces the roots (nil: every path). Not safe concurrently
// with the tools' calls.
func (t *Tools) SetRoots(r *Roots) { t.roots = r }

// Roots returns the roots, nil if every path is allowed.
func (t *Tools) Roots() *Roots { return t.roots }

// Session returns the session the tools drive.
func (t *Tools) Session() *session.Session { return t.s }

// Result is the outcome of a tool.
type Result struct {
	// ID is the object the tool acted on (the file for read, the toolcall
	// for recorded calls).
	ID string
	// Object is its current version, when the tool looked it up.
	Object *objects.Object
	// Ref is a static reference to that version (transaction and hashes),
	// set whenever Object is: what a chat records so that the context of
	// any past call can be rebuilt.
	Ref objects.Ref
	// Message is what to tell the agent.
	Message string
	// Tx is the transaction that wrote the session change, or the
	// session's current version when nothing changed.
	Tx int64
	// Files are the file objects the tool indexed or touched.
	Files []string
	// Change says, for a wrapped write or edit that did not fail, that the
	// call's arguments are the change it made to its file (ChangeWrite:
	// the new content; ChangeEdit: replacements, see ApplyEdit): the
	// assembler then shows the file's new version as that edit applied to
	// the version the model holds, not as a new full copy.
	Change string
}

// The changes a Result can report.
const (
	ChangeWrite = "write"
	ChangeEdit  = "edit"
)

// Read is read(path): index the file (a new version if it
// changed on disk), add it to the metadata pool, and activate it. The
// file's content is in Result.Object for the harness to show the user; the
// model sees it through the active content. A file that cannot be read is
// an error. A path in the spill root (Options.Spill) is no file to index:
// the session's own spill file of a call activates that call's output,
// any other is refused.
func (t *Tools) Read(ctx context.Context, path string) (Result, error) {
	if id, ok, err := t.spillCall(path); ok || err != nil {
		if err != nil {
			return Result{}, err
		}
		return t.readOutput(ctx, path, id)
	}
	if err := t.roots.Check(path); err != nil {
		return Result{}, fmt.Errorf("read %w", err)
	}
	r, err := t.ix.Index(ctx, path)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	t.track(r.Path)
	id := r.Object.ID()
	ref, err := t.staticRef(ctx, r)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	wasActive, wasPooled := t.s.IsActive(id), t.s.InPool(id)
	tx, _, err := t.s.Update(ctx, nil, func(s *session.State) error { s.Activate(id); return nil })
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	var msg string
	switch {
	case wasActive && r.Written():
		msg = "Refreshed (the file changed on disk): "
	case wasActive:
		msg = "Already active and unchanged: "
	case wasPooled:
		msg = "Activated (it was already in your metadata pool; next time use activate(id)): "
	default:
		msg = "Read and activated: "
	}
	msg += objects.RenderMetadata(r.Object) + t.noteLinks(ctx, r.Object)
	if note, null := objects.NullContent(r.Object); null {
		msg = note
	}
	return Result{ID: id, Object: r.Object, Ref: ref, Message: msg, Tx: tx, Files: []string{id}}, nil
}

// Activate is activate(id): load an object's content
// into the active set. ref is an object id or a nickname of an object in
// the session's index; an object the session only indexed is promoted to
// the pool first. A toolcall activated explicitly re-enters the auto-activation
// window as if it had just run. Activating null content succeeds but says
// that nothing can be loaded. With note roots (Options.Notes), ref may also
// be a link target of one of the session's notes ("Plan", "[[Plan]]"):
// the note it leads to is read by its path (followLink).
func (t *Tools) Activate(ctx context.Context, ref string) (Result, error) {
	o, sref, err := t.resolve(ctx, ref)
	if errors.Is(err, ErrUnknownObject) {
		if r, ok, ferr := t.followLink(ctx, ref); ok {
			return r, ferr
		}
		// A path (a file written or edited is named by the call's path,
		// not by a metadata line): activating it is reading it.
		if strings.ContainsRune(ref, '/') {
			if r, rerr := t.Read(ctx, ref); rerr == nil {
				return r, nil
			}
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("activate %s: %w", ref, err)
	}
	id := o.ID()
	was := t.s.IsActive(id)
	tx, _, err := t.s.Update(ctx, nil, func(s *session.State) error {
		s.Activate(id)
		s.TouchToolcall(id)
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("activate %s: %w", ref, err)
	}
	msg := "Activated; the content appears in your context from the next call: " + objects.RenderMetadata(o) + t.noteLinks(ctx, o)
	if was {
		msg = "Already active: " + objects.RenderMetadata(o) + t.noteLinks(ctx, o)
	}
	if note, null := objects.NullContent(o); null {
		msg = note
	}
	return Result{ID: id, Object: o, Ref: sref, Message: msg, Tx: tx}, nil
}

// Deactivate is deactivate(id): collapse an object to its metadata. It is
// refused on locked objects (the chat and the system prompt) with an error
// wrapping session.ErrLocked whose text says why.
func (t *Tools) Deactivate(ctx context.Context, ref string) (Result, error) {
	id, err := t.resolveID(ctx, ref)
	if err != nil {
		return Result{}, fmt.Errorf("deactivate %s: %w", ref, err)
	}
	was := t.s.IsActive(id)
	tx, _, err := t.s.Update(ctx, nil, func(s *session.State) error { return s.Deactivate(id) })
	if err != nil {
		return Result{}, fmt.Errorf("deactivate %s: %w", ref, err)
	}
	msg := "Deactivated " + id + "; its metadata stays visible."
	if !was {
		msg = id + " was not active."
	}
	return Result{ID: id, Message: msg, Tx: tx}, nil
}

// Pin pins an object: it is activated and never auto-collapsed until it is
// deactivated or unpinned.
func (t *Tools) Pin(ctx context.Context, ref string) (Result, error) {
	o, sref, err := t.resolve(ctx, ref)
	if err != nil {
		return Result{}, fmt.Errorf("pin %s: %w", ref, err)
	}
	id := o.ID()
	tx, _, err := t.s.Update(ctx, nil, func(s *session.State) error { s.Pin(id); s.Activate(id); return nil })
	if err != nil {
		return Result{}, fmt.Errorf("pin %s: %w", ref, err)
	}
	return Result{ID: id, Object: o, Ref: sref, Message: "Pinned and active: " + objects.RenderMetadata(o), Tx: tx}, nil
}

// Unpin unpins an object; it stays active until the policy or the agent
// collapses it.
func (t *Tools) Unpin(ctx context.Context, ref string) (Result, error) {
	id, err := t.resolveID(ctx, ref)
	if err != nil {
		return Result{}, fmt.Errorf("unpin %s: %w", ref, err)
	}
	tx, _, err := t.s.Update(ctx, nil, func(s *session.State) error { s.Unpin(id); return nil })
	if err != nil {
		return Result{}, fmt.Errorf("unpin %s: %w", ref, err)
	}
	return Result{ID: id, Message: "Unpinned " + id + ".", Tx: tx}, nil
}

// resolveID maps an id or nickname to an id without loading the object
// when the session already knows the id.
func (t *Tools) resolveID(ctx context.Context, ref string) (string, error) {
	if t.s.Indexed(ref) {
		return ref, nil
	}
	o, _, err := t.resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	return o.ID(), nil
}

// resolve finds the latest version of the object ref names, and a static
// reference to it: ref is an object id, or else a nickname, preferring
// objects in the session's pool.
func (t *Tools) resolve(ctx context.Context, ref string) (*objects.Object, objects.Ref, error) {
	id := ref
	if !t.s.Indexed(ref) {
		var err error
		if id, err = t.lookup(ctx, ref); err != nil {
			return nil, objects.Ref{}, err
		}
	}
	o, tx, err := expand.Resolve(ctx, t.s.Store(), objects.DynamicRef(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, objects.Ref{}, fmt.Errorf("%w: %v", ErrUnknownObject, err)
	}
	if err != nil {
		return nil, objects.Ref{}, err
	}
	return o, objects.StaticRef(o, tx), nil
}

// lookup maps ref, which is not an id of the session index, to one: the
// one id of the index it is a prefix of (8 or more hex digits: contexts
// show 64-hex ids shortened), else the object of the index with that
// nickname, preferring the session's pool. Objects outside the index are
// never found.
func (t *Tools) lookup(ctx context.Context, ref string) (string, error) {
	st := t.s.Store()
	if objects.IsIDPrefix(ref) { // a shortened id, as contexts show them (objects.DisplayID)
		var found []string
		for _, id := range t.s.State().Index {
			if strings.HasPrefix(id, ref) {
				found = append(found, id)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 0:
		default:
			return "", fmt.Errorf("%w: %q is a prefix of %d ids in this session; give more digits", ErrUnknownObject, ref, len(found))
		}
	}
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where("nickname", ref)}, Find: []string{"nickname"}})
	if err != nil {
		return "", fmt.Errorf("looking up nickname: %w", err)
	}
	state := t.s.State()
	best := ""
	for _, d := range docs {
		id, _ := d[store.IDKey].(string)
		if state.InPool(id) {
			return id, nil
		}
		if best == "" && state.Indexed(id) {
			best = id
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w: no object of this session has the id or nickname %q", ErrUnknownObject, ref)
	}
	return best, nil
}

// checkOwn refuses to write toolcall id unless the session may
// (session.Claim, the one rule for every id a session writes): an id
// ctxstore derives (another session's commit, chunk or head; any commit,
// chunk or head) is never a tool call id, and an id the store holds but
// this session's index does not is another session's. The error wraps
// ErrForeignObject and session.ErrForeignID.
func (t *Tools) checkOwn(ctx context.Context, id string) error {
	err := session.Claim(ctx, t.s.Store(), t.s.ID(), id, session.FromClient, t.s.Indexed)
	if errors.Is(err, session.ErrForeignID) {
		return fmt.Errorf("%w: %w", ErrForeignObject, err)
	}
	return err
}

// CheckCallID checks, before anything is written, that the session may
// record a tool call with id (see checkOwn); "" needs no check.
func (t *Tools) CheckCallID(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	if err := t.checkOwn(ctx, id); err != nil {
		return fmt.Errorf("toolcall %s: %w", id, err)
	}
	return nil
}

// staticRef returns a static reference to the version r indexed; an
// unchanged file costs one more lookup for its transaction.
func (t *Tools) staticRef(ctx context.Context, r files.Result) (objects.Ref, error) {
	if r.Written() {
		return objects.StaticRef(r.Object, r.Tx), nil
	}
	et, err := t.s.Store().EntityTx(ctx, r.Object.ID(), store.Basis{})
	if err != nil {
		return objects.Ref{}, fmt.Errorf("transaction of %s: %w", r.Object.ID(), err)
	}
	return objects.StaticRef(r.Object, et.TxID), nil
}

// track starts watching p if there is a tracker; failures only mean the
// file is not watched, so they are not reported to the agent.
func (t *Tools) track(p string) {
	if t.tr != nil {
		_ = t.tr.Track(p)
	}
}

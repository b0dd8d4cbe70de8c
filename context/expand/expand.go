// Package expand resolves references into objects and selects what of them
// to show: the content of given references, every toolcall a chat
// references, or metadata only. Static references resolve to the version
// they pin, read as of their transaction, and are checked against the
// hashes they record. A static reference recording all three hashes is
// portable: in a store where its transaction id means something else (a
// session imported from another store), it resolves by its hashes.
package expand

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Mode selects what an expansion returns.
type Mode int

const (
	// Content returns each object's content (and its metadata line).
	Content Mode = iota
	// Metadata returns only the metadata line.
	Metadata
)

// Item is one expanded reference.
type Item struct {
	// Ref is the reference expanded.
	Ref objects.Ref
	// Object is the resolved version (nil when Err is set).
	Object *objects.Object
	// Tx is the transaction that wrote the resolved version.
	Tx int64
	// Metadata is the object's metadata line (objects.RenderMetadata).
	Metadata string
	// Content is the object's content in Content mode, nil otherwise or
	// when the content is null.
	Content *string
	// Note is set in Content mode when the content is null
	// (objects.NullContent), so the caller can say so instead of showing
	// nothing.
	Note string
	// Err is why the reference could not be expanded: it wraps
	// store.ErrNotFound for a missing object or version,
	// objects.ErrHashMismatch for a static reference whose hashes differ.
	Err error
}

// Resolve returns the version ref names and the transaction that wrote it:
// the latest version for a dynamic reference; for a static one, the
// version visible as of ref.Tx, which must pass ref.Verify (id, the
// object's own hashes, and every hash the reference records).
//
// A static reference that records its content, identity and metadata view
// hashes (objects.StaticRef always does) is portable. When the version
// visible as of ref.Tx is missing, fails verification, or ref.Tx is beyond
// the store's latest transaction, as happens in a store the reference's
// session was imported into (tx ids are the source store's), Resolve
// searches the entity's whole history (with corrections) for a version
// that passes ref.Verify and returns the one the earliest transaction
// wrote. Those three hashes cover everything an object renders (content,
// kind fields, identity and source binding, metadata view), so any version
// that passes is the same object; correctness never rests on tx ids. If no
// version passes, the error is the as-of read's.
func Resolve(ctx context.Context, st store.Store, ref objects.Ref) (*objects.Object, int64, error) {
	o, tx, _, err := resolve(ctx, st, ref)
	return o, tx, err
}

// resolve is Resolve; byHash reports a static reference resolved by its
// hashes rather than as of its tx.
func resolve(ctx context.Context, st store.Store, ref objects.Ref) (o *objects.Object, tx int64, byHash bool, err error) {
	if err := ref.Validate(); err != nil {
		return nil, 0, false, fmt.Errorf("expand: reference %q: %w", ref.String(), err)
	}
	o, tx, err = asOf(ctx, st, ref)
	if err == nil || !portable(ref) || errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
		return o, tx, false, err
	}
	ho, htx, herr := byHashes(ctx, st, ref)
	switch {
	case herr != nil:
		return nil, 0, false, fmt.Errorf("%w (searching its history by hashes: %v)", err, herr)
	case ho == nil:
		return nil, 0, false, err
	}
	return ho, htx, true, nil
}

// asOf reads the version ref names by its tx (the latest for a dynamic
// reference) and verifies it.
func asOf(ctx context.Context, st store.Store, ref objects.Ref) (*objects.Object, int64, error) {
	var b store.Basis
	if ref.Static {
		b = store.AtTx(ref.Tx, time.Time{})
	}
	et, err := st.EntityTx(ctx, ref.ID, b)
	if err == nil && et.Deleted {
		err = &store.Error{Op: "expand", Kind: store.ErrNotFound, ID: ref.ID, Msg: "deleted"}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("expand: resolving %s: %w", ref.String(), err)
	}
	doc, err := st.Entity(ctx, ref.ID, store.AtTx(et.TxID, et.ValidTime))
	if err != nil {
		return nil, 0, fmt.Errorf("expand: resolving %s: %w", ref.String(), err)
	}
	o, err := objects.FromDoc(doc)
	if err != nil {
		return nil, 0, fmt.Errorf("expand: decoding %s: %w", ref.String(), err)
	}
	if err := ref.Verify(o); err != nil {
		return nil, 0, fmt.Errorf("expand: verifying %s: %w", ref.String(), err)
	}
	return o, et.TxID, nil
}

// portable reports whether ref pins a version by all three of its hashes,
// so that a version found by them is the one ref names.
func portable(ref objects.Ref) bool {
	return ref.Static && ref.ContentHash != "" && ref.IdentityHash != "" && ref.MetadataViewHash != ""
}

// byHashes returns the version of ref.ID that passes ref.Verify and was
// written by the earliest transaction, nil if there is none.
func byHashes(ctx context.Context, st store.Store, ref objects.Ref) (*objects.Object, int64, error) {
	rows, err := st.History(ctx, ref.ID, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true,
		Basis: store.Basis{ValidTime: store.FarFuture}})
	if err != nil {
		return nil, 0, err
	}
	var best *objects.Object
	var bestTx int64
	for _, r := range rows {
		if r.Deleted || r.Doc == nil || (best != nil && r.TxID >= bestTx) {
			continue
		}
		// Cheap checks on the stored hashes before decoding.
		if r.Doc["content_hash"] != ref.ContentHash || r.Doc["identity_hash"] != ref.IdentityHash ||
			r.Doc["metadata_view_hash"] != ref.MetadataViewHash {
			continue
		}
		o, err := objects.FromDoc(r.Doc)
		if err != nil || ref.Verify(o) != nil {
			continue
		}
		best, bestTx = o, r.TxID
	}
	return best, bestTx, nil
}

// Refs expands each reference in mode. Failures are reported per item.
func Refs(ctx context.Context, st store.Store, refs []objects.Ref, mode Mode) []Item {
	out := make([]Item, len(refs))
	for i, r := range refs {
		out[i] = one(ctx, st, r, mode)
	}
	return out
}

// ChatToolcalls expands every toolcall the chat references (its
// toolcall_refs, in order). When chat is a static reference the toolcalls
// are read as of the same transaction, so a past chat expands to the
// toolcall versions it saw (as of the transaction that wrote the chat
// version, when the chat was found by its hashes; see Resolve). An error means the chat itself could not be
// resolved; toolcall failures are reported per item.
func ChatToolcalls(ctx context.Context, st store.Store, chat objects.Ref, mode Mode) (*objects.Object, []Item, error) {
	c, tx, byHash, err := resolve(ctx, st, chat)
	if err != nil {
		return nil, nil, err
	}
	if c.Kind() != objects.KindChat {
		return nil, nil, fmt.Errorf("expand: %s is a %s, not a chat", chat.ID, c.Kind())
	}
	// A chat found by its hashes (chat.Tx is another store's) is read as
	// of the transaction that wrote it here.
	at := chat.Tx
	if byHash {
		at = tx
	}
	// The chat's turns (and so its toolcall_refs) are read at the same
	// basis as its head (session.ExpandChat).
	b := store.Basis{}
	if chat.Static {
		b = store.AtTx(at, time.Time{})
	}
	if c, err = session.ExpandChat(ctx, st, c, b); err != nil {
		return nil, nil, err
	}
	refs := make([]objects.Ref, len(c.Chat.ToolcallRefs))
	for i, id := range c.Chat.ToolcallRefs {
		refs[i] = objects.DynamicRef(id)
		if chat.Static {
			refs[i] = objects.Ref{ID: id, Static: true, Tx: at}
		}
	}
	return c, Refs(ctx, st, refs, mode), nil
}

func one(ctx context.Context, st store.Store, r objects.Ref, mode Mode) Item {
	o, tx, err := Resolve(ctx, st, r)
	if err != nil {
		return Item{Ref: r, Err: err}
	}
	it := Item{Ref: r, Object: o, Tx: tx, Metadata: objects.RenderMetadata(o)}
	if mode == Content {
		if note, null := objects.NullContent(o); null {
			it.Note = note
		} else {
			s := *o.Content
			it.Content = &s
		}
	}
	return it
}

// Package expand resolves references into objects and selects what of them
// to show (000 §9): the content of given references, every toolcall a chat
// references, or metadata only. Static references resolve to the version
// they pin, read as of their transaction, and are checked against the
// hashes they record.
package expand

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/objects"
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
func Resolve(ctx context.Context, st store.Store, ref objects.Ref) (*objects.Object, int64, error) {
	if err := ref.Validate(); err != nil {
		return nil, 0, fmt.Errorf("expand: reference %q: %w", ref.String(), err)
	}
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
// toolcall versions it saw. An error means the chat itself could not be
// resolved; toolcall failures are reported per item.
func ChatToolcalls(ctx context.Context, st store.Store, chat objects.Ref, mode Mode) (*objects.Object, []Item, error) {
	c, _, err := Resolve(ctx, st, chat)
	if err != nil {
		return nil, nil, err
	}
	if c.Kind() != objects.KindChat {
		return nil, nil, fmt.Errorf("expand: %s is a %s, not a chat", chat.ID, c.Kind())
	}
	refs := make([]objects.Ref, len(c.Chat.ToolcallRefs))
	for i, id := range c.Chat.ToolcallRefs {
		refs[i] = objects.DynamicRef(id)
		if chat.Static {
			refs[i] = objects.Ref{ID: id, Static: true, Tx: chat.Tx}
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

// Package expand resolves references into the object versions they name.
// Static references resolve to the version they pin, read as of their
// transaction, and are checked against the hashes they record. A static
// reference recording all three hashes is portable: in a store where its
// transaction id means something else (a session imported from another
// store), it resolves by its hashes.
package expand

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

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
	if err := ref.Validate(); err != nil {
		return nil, 0, fmt.Errorf("expand: reference %q: %w", ref.String(), err)
	}
	o, tx, err := asOf(ctx, st, ref)
	if err == nil || !portable(ref) || errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
		return o, tx, err
	}
	ho, htx, herr := byHashes(ctx, st, ref)
	switch {
	case herr != nil:
		return nil, 0, fmt.Errorf("%w (searching its history by hashes: %v)", err, herr)
	case ho == nil:
		return nil, 0, err
	}
	return ho, htx, nil
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

package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Tracked is what the store holds for a file or note object with a
// filesystem source: enough to tell, without reading the content, whether
// the file on disk is the stored version.
type Tracked struct {
	ID     string
	Kind   objects.Kind
	Source objects.FilesystemSource
	// SourceHash is the visible version's source hash; empty for a
	// deletion version.
	SourceHash string
}

// lookupBatch bounds the ids of one metadata query.
const lookupBatch = 500

// LookupTracked reads the visible versions of ids in batched, metadata-only
// queries (type, source and source hash, never content: one query per 500
// ids instead of a document read per id) and returns those that are files
// or notes with a filesystem source, in the order of ids. Ids absent at the
// latest basis, and objects of other kinds, are left out.
func LookupTracked(ctx context.Context, st store.Store, ids []string) ([]Tracked, error) {
	byID := make(map[string]Tracked, len(ids))
	for start := 0; start < len(ids); start += lookupBatch {
		batch := ids[start:min(start+lookupBatch, len(ids))]
		vals := make([]any, len(batch))
		for i, id := range batch {
			vals[i] = id
		}
		docs, err := st.Query(ctx, store.Query{
			Where: []store.Pred{
				{Field: store.IDKey, Op: store.In, Values: vals},
				{Field: "type", Op: store.In, Values: []any{string(objects.KindFile), string(objects.KindNote)}},
			},
			Find: []string{"type", "source", "source_hash"},
		})
		if err != nil {
			return nil, fmt.Errorf("files: looking up tracked files: %w", err)
		}
		for _, d := range docs {
			id, _ := d[store.IDKey].(string)
			src, err := objects.ParseSource(d["source"])
			if err != nil {
				return nil, fmt.Errorf("files: stored %s: %w", id, err)
			}
			fsrc, ok := src.(objects.FilesystemSource)
			if !ok {
				continue
			}
			kind, _ := d["type"].(string)
			hash, _ := d["source_hash"].(string)
			byID[id] = Tracked{ID: id, Kind: objects.Kind(kind), Source: fsrc, SourceHash: hash}
		}
	}
	out := make([]Tracked, 0, len(byID))
	for _, id := range ids {
		if t, ok := byID[id]; ok {
			out = append(out, t)
			delete(byID, id) // an id listed twice is reconciled once
		}
	}
	return out, nil
}

// ReconcileTracked is Reconcile for files whose stored state the caller
// read with LookupTracked (a session resuming in a new process): a file
// whose bytes hash to the stored source hash costs that hash and nothing
// else, no store read, and comes back Unchanged with Object nil (the
// caller has not asked for it; Index gives it). Other files go through
// Reconcile's path: changed ones get new versions, missing ones deletion
// versions when their directory exists.
func (ix *Indexer) ReconcileTracked(ctx context.Context, ts []Tracked) ([]Result, error) {
	var out []Result
	var rest []string
	for _, t := range ts {
		if t.SourceHash != "" {
			raw, err := readRegular(t.Source.Path, ix.max)
			if err == nil && !raw.truncated && objects.HashBytes(raw.data) == t.SourceHash {
				out = append(out, Result{Path: t.Source.Path, Outcome: Unchanged, Tx: -1})
				continue
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				rest = append(rest, t.Source.Path) // Reconcile reports it
				continue
			}
		}
		rest = append(rest, t.Source.Path)
	}
	res, err := ix.Reconcile(ctx, rest)
	return append(out, res...), err
}

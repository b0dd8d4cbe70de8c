package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

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
//
// The kind is checked here, not in the query: a predicate on type would
// have the store gather every file and note it holds for each batch (the
// SQLite backend collects all matches of each predicate once per query),
// which made the lookup grow with the square of the number of files.
func LookupTracked(ctx context.Context, st store.Store, ids []string) ([]Tracked, error) {
	nb := (len(ids) + lookupBatch - 1) / lookupBatch
	found := make([][]Tracked, nb)
	errs := make([]error, nb)
	// Batches run concurrently: the store answers queries concurrently
	// (the SQLite backend from its pool of readers).
	concurrently(nb, func() func(int) bool {
		return func(b int) bool {
			found[b], errs[b] = lookupBatchOf(ctx, st, ids[b*lookupBatch:min((b+1)*lookupBatch, len(ids))])
			return errs[b] == nil
		}
	})
	byID := make(map[string]Tracked, len(ids))
	for b := range found {
		if errs[b] != nil {
			return nil, errs[b]
		}
		for _, t := range found[b] {
			byID[t.ID] = t
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

// lookupBatchOf is LookupTracked's query for one batch of ids.
func lookupBatchOf(ctx context.Context, st store.Store, batch []string) ([]Tracked, error) {
	vals := make([]any, len(batch))
	for i, id := range batch {
		vals[i] = id
	}
	docs, err := st.Query(ctx, store.Query{
		Where: []store.Pred{{Field: store.IDKey, Op: store.In, Values: vals}},
		Find:  []string{"type", "source", "source_hash"},
	})
	if err != nil {
		return nil, fmt.Errorf("files: looking up tracked files: %w", err)
	}
	var out []Tracked
	for _, d := range docs {
		id, _ := d[store.IDKey].(string)
		kind, _ := d["type"].(string)
		if kind != string(objects.KindFile) && kind != string(objects.KindNote) {
			continue
		}
		src, err := objects.ParseSource(d["source"])
		if err != nil {
			return nil, fmt.Errorf("files: stored %s: %w", id, err)
		}
		fsrc, ok := src.(objects.FilesystemSource)
		if !ok {
			continue
		}
		hash, _ := d["source_hash"].(string)
		out = append(out, Tracked{ID: id, Kind: objects.Kind(kind), Source: fsrc, SourceHash: hash})
	}
	return out, nil
}

// ReconcileTracked is Reconcile for files whose stored state the caller
// read with LookupTracked (a session resuming in a new process): a file
// whose bytes hash to the stored source hash costs that hash and nothing
// else, no store read, and comes back Unchanged with Object nil (the
// caller has not asked for it; Index gives it). Other files go through
// Reconcile's path: changed ones get new versions, missing ones deletion
// versions when their directory exists. Files are read and hashed on
// GOMAXPROCS goroutines (a resume is bound by reading and hashing);
// results come in the order of ts, unchanged files first.
func (ix *Indexer) ReconcileTracked(ctx context.Context, ts []Tracked) ([]Result, error) {
	same := make([]bool, len(ts))
	concurrently(len(ts), func() func(int) bool {
		buf := make([]byte, 64<<10) // one per goroutine
		return func(i int) bool {
			same[i] = ix.unchangedSince(ts[i], buf)
			return ctx.Err() == nil
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Result
	var rest []string
	for i, t := range ts {
		if same[i] {
			out = append(out, Result{Path: t.Source.Path, Outcome: Unchanged, Tx: -1})
		} else {
			rest = append(rest, t.Source.Path) // Reconcile reports errors
		}
	}
	res, err := ix.Reconcile(ctx, rest)
	return append(out, res...), err
}

// unchangedSince tells whether t's file is a regular file of at most the
// indexer's maximum size whose bytes hash to t's source hash. It streams
// the file through buf (no allocation per file: a resume reads every
// tracked file). Any failure to read it is false: Reconcile then reads it
// again and reports it.
func (ix *Indexer) unchangedSince(t Tracked, buf []byte) bool {
	if t.SourceHash == "" {
		return false
	}
	p := filepath.FromSlash(t.Source.Path)
	fi, err := os.Stat(p) // before opening: opening a FIFO would block
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > ix.max {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	// The struct hides File.WriteTo, which would copy through a buffer of
	// its own.
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return false
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])) == t.SourceHash
}

// concurrently runs the work for 0..n-1 on up to GOMAXPROCS goroutines,
// each taking the next index until none is left; worker gives each
// goroutine its work function (and whatever state it keeps, a buffer
// say). A goroutine whose work returns false stops taking indexes.
func concurrently(n int, worker func() func(i int) bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			work := worker()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if !work(i) {
					return
				}
			}
		})
	}
	wg.Wait()
}

package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Reconcile syncs each path against the disk, as on resume when nothing
// watched the files: changed files get new versions, unchanged ones cost
// one hash and one lookup, and a missing file gets a deletion version only
// when its directory still exists (the deletion is confirmed); when the
// directory is gone too the source counts as unreachable (Outcome
// Unreachable, nothing written), since a missing mount looks the same. It
// goes through every path and returns the results of those that succeeded
// with the joined errors of those that did not.
func (ix *Indexer) Reconcile(ctx context.Context, paths []string) ([]Result, error) {
	var out []Result
	var errs []error
	for _, p := range paths {
		r, err := ix.Index(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			r, err = ix.confirmDeleted(ctx, p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reconciling %s: %w", p, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// confirmDeleted marks p deleted if its directory exists, else reports it
// unreachable.
func (ix *Indexer) confirmDeleted(ctx context.Context, p string) (Result, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return Result{}, err
	}
	if fi, err := os.Stat(filepath.Dir(filepath.FromSlash(clean))); err != nil || !fi.IsDir() {
		return Result{Path: clean, Outcome: Unreachable, Tx: -1}, nil
	}
	return ix.MarkDeleted(ctx, p)
}

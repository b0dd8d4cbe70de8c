package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Resume reconciles the session's files with the disk after the session is
// reopened (004 §3.6): every file object in the session index whose
// filesystem is this client's (the resolver gives the same filesystem id
// for its path) is synced, so files changed while nothing watched get new
// versions and deleted ones deletion versions; each is then tracked if
// there is a tracker. Files of other filesystems are left as they are
// (orphaned, 004 §5.7). It returns the sync results; errors of single
// files are joined.
func (t *Tools) Resume(ctx context.Context) ([]files.Result, error) {
	st := t.s.Store()
	var paths []string
	var errs []error
	for _, id := range t.s.State().Index {
		if _, _, ok := objects.SessionIDOf(id); ok {
			continue
		}
		doc, err := st.Entity(ctx, id, store.Basis{})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("resume: %s: %w", id, err))
			continue
		}
		if t := doc["type"]; t != string(objects.KindFile) && t != string(objects.KindNote) { // notes kept as files (context/notes)
			continue
		}
		o, err := objects.FromDoc(doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("resume: %s: %w", id, err))
			continue
		}
		src, ok := o.Source().(objects.FilesystemSource)
		if !ok {
			continue
		}
		if fsid, err := t.ix.Resolver().Resolve(src.Path); err != nil || fsid != src.FilesystemID {
			continue
		}
		paths = append(paths, src.Path)
	}
	res, err := t.ix.Reconcile(ctx, paths)
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range paths {
		t.track(p)
	}
	return res, errors.Join(errs...)
}

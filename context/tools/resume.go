package tools

import (
	"context"
	"fmt"

	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/objects"
)

// Resume reconciles the session's files with the disk after the session is
// reopened: every file object in the session index whose
// filesystem is this client's (the resolver gives the same filesystem id
// for its path) is synced, so files changed while nothing watched get new
// versions and deleted ones deletion versions; each is then tracked if
// there is a tracker. Files of other filesystems are left as they are
// (orphaned), and so are files outside the session's roots. It returns the sync results; errors of single
// files are joined.
func (t *Tools) Resume(ctx context.Context) ([]files.Result, error) {
	var ids []string
	for _, id := range t.s.State().Index {
		if _, _, ok := objects.SessionIDOf(id); !ok {
			ids = append(ids, id)
		}
	}
	// One metadata-only query per batch of ids, never a document read
	// per file: an unchanged file then costs one hash (docs/benchmarks.md,
	// "Re-indexing").
	tracked, err := files.LookupTracked(ctx, t.s.Store(), ids)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	var mine []files.Tracked
	for _, tr := range tracked {
		if fsid, err := t.ix.Resolver().Resolve(tr.Source.Path); err != nil || fsid != tr.Source.FilesystemID {
			continue
		}
		if t.roots.Check(tr.Source.Path) != nil {
			continue // outside the roots it runs under now: left as it is
		}
		mine = append(mine, tr)
	}
	res, err := t.ix.ReconcileTracked(ctx, mine)
	for _, tr := range mine {
		t.track(tr.Source.Path)
	}
	return res, err
}

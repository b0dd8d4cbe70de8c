package importer

import (
	"context"

	"github.com/ctxstore/ctxstore/session/commits"
)

// What the tests read of an importer that the program does not.

// Cursor returns where the import of the file at path stopped: the bytes
// and lines imported, the file chain's tip and root; ok false when the
// file was never imported into this store.
func (im *Importer) Cursor(ctx context.Context, path string) (offset int64, lines int, tip, root string, ok bool, err error) {
	c, err := im.readCursor(ctx, CursorID(path))
	if err != nil || c == nil {
		return 0, 0, "", "", false, err
	}
	return c.Offset, c.Lines, c.Tip, c.Root, true, nil
}

// Service returns the commit service the importer writes through.
func (im *Importer) Service() *commits.Service { return im.svc }

// Counted tells whether analytics should count the events of an imported
// commit: every line of an imported file is in exactly one commit that is
// neither a compaction commit nor tagged "branch" (those repeat lines of
// the file chain, docs/import.md "Events").
func Counted(c *commits.Commit) bool {
	if c.Type == commits.Compaction || c.Type == commits.Snapshot {
		return false
	}
	for _, t := range c.Tags {
		if t == "branch" {
			return false
		}
	}
	return true
}

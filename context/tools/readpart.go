package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
)

// ReadPart is read(path, offset, limit) (issue 17 item 4): lines offset..
// offset+limit-1 of a file (offset from 1; limit 0 means to the end). The
// file is indexed and joins the metadata pool without being activated,
// and the part is the output of the call c, recorded as a counted toolcall
// (c.ID is the provider's tool-call id): it is shown as the call's output,
// collapses like any other output, and activate(c.ID) brings it back, while
// activate(the file's id) loads the whole file. The part's first line
// says which lines of how many, of which file and version.
func (t *Tools) ReadPart(ctx context.Context, c Call, path string, offset, limit int) (Result, error) {
	if err := t.roots.Check(path); err != nil {
		return Result{}, fmt.Errorf("read %w", err)
	}
	if offset < 0 || limit < 0 {
		return Result{}, fmt.Errorf("read %s: offset and limit must not be negative", path)
	}
	r, err := t.ix.Index(ctx, path)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	t.track(r.Path)
	if note, null := objects.NullContent(r.Object); null {
		return Result{}, fmt.Errorf("read %s: %s", path, note)
	}
	ref, err := t.staticRef(ctx, r)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	lines := strings.SplitAfter(*r.Object.Content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first := max(offset, 1)
	if first > len(lines) && len(lines) > 0 {
		return Result{}, fmt.Errorf("read %s: offset %d is past the end (%d lines)", path, offset, len(lines))
	}
	last := len(lines)
	if limit > 0 {
		last = min(first+limit-1, len(lines))
	}
	part := fmt.Sprintf("%slines %d-%d of %d of %s (file %s version %d; activate(%s) loads it whole)\n%s",
		"[ctxstore] ", first, last, len(lines), r.Path, objects.DisplayID(r.Object.ID()), ref.Tx, objects.DisplayID(r.Object.ID()),
		strings.Join(lines[first-1:last], ""))
	c.Output = &part
	if c.Tool == "" {
		c.Tool = "read"
	}
	rec, err := t.record(ctx, c, []string{r.Object.ID()}, true)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	rec.Message = part
	return rec, nil
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
)

// ReadPart is read(path, offset, limit): lines offset..
// offset+limit-1 of a file (offset from 1; limit 0 means to the end). The
// file is indexed and joins the metadata pool without being activated,
// and the part is the output of the call c, recorded as a counted toolcall
// (c.ID is the provider's tool-call id): it is shown as the call's output,
// collapses like any other output, and activate(c.ID) brings it back, while
// activate(the file's id) loads the whole file. The part's first line
// says which lines of how many, of which file and version.
func (t *Tools) ReadPart(ctx context.Context, c Call, path string, offset, limit int) (Result, error) {
	if offset < 0 || limit < 0 {
		return Result{}, fmt.Errorf("read %s: offset and limit must not be negative", path)
	}
	if err := t.CheckCallID(ctx, c.ID); err != nil {
		return Result{}, err // before the file is indexed
	}
	if id, ok, err := t.spillCall(path); ok || err != nil {
		if err != nil {
			return Result{}, err
		}
		return t.readOutputPart(ctx, c, path, id, offset, limit)
	}
	if err := t.roots.Check(path); err != nil {
		return Result{}, fmt.Errorf("read %w", err)
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
	lines, first, last, err := lineRange(*r.Object.Content, offset, limit)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	whole := "activate(" + objects.DisplayID(r.Object.ID()) + ") loads it whole"
	if t.spill.Dir != "" {
		whole = "read it without offset and limit to load it whole" // a bare head offers no activate
	}
	part := fmt.Sprintf("%slines %d-%d of %d of %s (file %s version %d; %s)\n%s",
		"[ctxstore] ", first, last, len(lines), r.Path, objects.DisplayID(r.Object.ID()), ref.Tx, whole,
		strings.Join(lines[first-1:last], ""))
	rec, err := t.recordPart(ctx, c, []string{r.Object.ID()}, part)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	return rec, nil
}

// recordPart records part as the output of read call c, a counted
// toolcall referring to files.
func (t *Tools) recordPart(ctx context.Context, c Call, files []string, part string) (Result, error) {
	c.Output = &part
	if c.Tool == "" {
		c.Tool = "read"
	}
	rec, err := t.record(ctx, c, files, true)
	if err != nil {
		return Result{}, err
	}
	rec.Message = part
	return rec, nil
}

// IntArg reads a tool call's whole-number argument key (a fraction is
// cut): a JSON number as decoded (float64), as a decoder with UseNumber
// gives it (json.Number) or as Go code writes it (int, int64); 0 when
// absent or not a number. Offsets and limits of reads come this way from
// every harness.
func IntArg(args map[string]any, key string) int {
	switch v := args[key].(type) {
	case float64:
		return int(v)
	case json.Number:
		f, _ := v.Float64()
		return int(f)
	case int:
		return v
	case int64:
		return int(v)
	}
	return 0
}

// Covers reports whether read(offset, limit) of text returns all of it:
// the range starts at its first line and reaches its last (offset 0 is
// 1, limit 0 is no bound), as lineRange reads them.
func Covers(text string, offset, limit int) bool {
	if offset < 0 || limit < 0 {
		return false
	}
	lines, first, last, err := lineRange(text, offset, limit)
	return err == nil && first == 1 && last == len(lines)
}

// lineRange splits text into lines (each with its newline) and returns
// the lines from offset (from 1; 0 is 1) for limit lines (0: to the end).
func lineRange(text string, offset, limit int) (lines []string, first, last int, err error) {
	lines = strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first = max(offset, 1)
	if first > len(lines) && len(lines) > 0 {
		return nil, 0, 0, fmt.Errorf("offset %d is past the end (%d lines)", offset, len(lines))
	}
	last = len(lines)
	if limit > 0 {
		last = min(first+limit-1, len(lines))
	}
	return lines, first, last, nil
}

package tools

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
)

// Spill is where a bare head's tool outputs are whole (assemble.LeanHead,
// docs/context-manager.md "Lean head"): a session whose head never offers
// activate is told that a collapsed or previewed output is in
// Dir/SpillName(its call id), which the harness integration writes, and
// loads it with read. Every session's spill directory lies in Root.
type Spill struct {
	// Root holds every session's spill directory (a server's, for all
	// its sessions). Files under it are never indexed as files, and a
	// read of one outside Dir is refused (ErrForeignObject): one session
	// never reads another's outputs.
	Root string
	// Dir is this session's spill directory, inside Root; "" when its head
	// is not bare.
	Dir string
}

// ErrNotSpillFile is returned (wrapped) by a read of a path in the
// session's spill directory that names no output of the session.
var ErrNotSpillFile = errors.New("not a spill file of this session")

// SpillName is the name of a tool call's spill file: the call id with
// ".txt", where every byte outside [A-Za-z0-9._-], and a leading '.', is
// written as %XX (a provider's id may hold '/', '|' or worse; the name
// must stay one file in the spill directory and mean the same to a shell).
// SpillCallID reverses it.
func SpillName(callID string) string {
	var b strings.Builder
	for i := 0; i < len(callID); i++ {
		c := callID[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String() + ".txt"
}

// SpillCallID returns the call id a spill file's name (SpillName) stands
// for, and false when name is not one.
func SpillCallID(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".txt")
	if !ok || base == "" {
		return "", false
	}
	id, err := url.PathUnescape(base)
	if err != nil || SpillName(id) != name {
		return "", false
	}
	return id, true
}

// SetSpill sets where the session's bare head names outputs (see Spill).
// Not safe concurrently with the tools' calls.
func (t *Tools) SetSpill(s Spill) { t.spill = s.resolved() }

// resolved is s with its directories cleaned and their symbolic links
// resolved, as far as they exist (paths are compared resolved).
func (s Spill) resolved() Spill {
	for _, d := range []*string{&s.Root, &s.Dir} {
		if *d == "" {
			continue
		}
		if r, err := resolve(*d); err == nil {
			*d = r
		} else {
			*d = filepath.Clean(*d)
		}
	}
	return s
}

// inSpill reports whether path (absolute) lies in the spill root or the
// session's spill directory, and returns it resolved when it does.
func (t *Tools) inSpill(path string) (string, bool) {
	if t.spill.Root == "" && t.spill.Dir == "" {
		return "", false
	}
	p, err := resolve(path)
	if err != nil {
		p = filepath.Clean(path)
	}
	return p, t.spill.Root != "" && within(t.spill.Root, p) || t.spill.Dir != "" && within(t.spill.Dir, p)
}

// SpillDir is session id's spill directory in root: its id written as
// SpillName writes a call id, without ".txt".
func SpillDir(root, id string) string {
	return filepath.Join(root, strings.TrimSuffix(SpillName(id), ".txt"))
}

// within reports whether p is dir or lies under it (both resolved).
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// spillCall returns the call id of a read of path in the spill root: its
// toolcall, when path is a spill file of this session's (Spill.Dir)
// naming one of its calls. A path elsewhere in the root is refused, and a
// path outside it is not a spill path (ok false, nil error).
func (t *Tools) spillCall(path string) (id string, ok bool, err error) {
	p, in := t.inSpill(path)
	if !in {
		return "", false, nil
	}
	if t.spill.Dir == "" || filepath.Dir(p) != t.spill.Dir {
		return "", true, fmt.Errorf("read %s: %w: it is in another session's spill directory (a session reads only its own outputs)", path, ErrForeignObject)
	}
	id, named := SpillCallID(filepath.Base(path))
	if !named || !t.s.Recorded(id) {
		return "", true, fmt.Errorf("read %s: %w: it names no tool call of this session", path, ErrNotSpillFile)
	}
	return id, true, nil
}

// readOutput is read(path) of the session's spill file of call id: the
// call's output is activated (as activate(id) would), so the context shows
// it whole again; the spill file on disk is never indexed as a file.
func (t *Tools) readOutput(ctx context.Context, path, id string) (Result, error) {
	r, err := t.Activate(ctx, id)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	if r.Object != nil && !strings.HasPrefix(r.Message, "Already") {
		r.Message = "Loaded the whole output of " + id + ": " + objects.RenderMetadata(r.Object)
	}
	return r, nil
}

// readOutputPart is read(path, offset, limit) of the session's spill file
// of call id: lines of the call's output, recorded as the output of the
// read call c (as ReadPart does for a file); lines that cover the whole
// output are readOutput, recorded for c.
func (t *Tools) readOutputPart(ctx context.Context, c Call, path, id string, offset, limit int) (Result, error) {
	o, _, err := t.resolve(ctx, id)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	if o.Content == nil {
		return Result{}, fmt.Errorf("read %s: the output of %s is not kept", path, id)
	}
	if Covers(*o.Content, offset, limit) {
		// Lines that are the whole output (offset 1, a limit past its end:
		// what models often send) are the whole read: the output activated.
		r, err := t.readOutput(ctx, path, id)
		if err != nil {
			return Result{}, err
		}
		return t.RecordResult(ctx, c, r)
	}
	lines, first, last, err := lineRange(*o.Content, offset, limit)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	part := fmt.Sprintf("[ctxstore] lines %d-%d of %d of the output of %s (read %s without offset and limit loads it whole)\n%s",
		first, last, len(lines), id, path, strings.Join(lines[first-1:last], ""))
	return t.recordPart(ctx, c, nil, part)
}

// IsSpill reports whether path (absolute) lies in the spill root or the
// session's spill directory: no file there is indexed as a file, whatever
// tool names it, and a read of the session's own spill file is a read of
// the output it holds (Read, ReadPart).
func (t *Tools) IsSpill(path string) bool {
	_, in := t.inSpill(path)
	return in
}

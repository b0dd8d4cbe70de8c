package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write reports a write(path, …) the harness executed: the file is indexed
// (a new version when its bytes changed) and added to the pool, and the
// call is recorded with the file in its file_refs. The file is not
// activated; if it already was, the active content follows the new
// version. A failed call is recorded, and the file is still synced, since a
// failed write may have changed it.
func (t *Tools) Write(ctx context.Context, c Call, path string) (Result, error) {
	r, err := t.touch(ctx, c, "", []string{path}, true)
	if err == nil && !c.Failed {
		r.Change = ChangeWrite
	}
	return r, err
}

// Edit reports an edit(path, …) the harness executed; see Write.
func (t *Tools) Edit(ctx context.Context, c Call, path string) (Result, error) {
	r, err := t.touch(ctx, c, "", []string{path}, true)
	if err == nil && !c.Failed {
		r.Change = ChangeEdit
	}
	return r, err
}

// Ls reports an ls of dir: the regular files its output names (parsed
// best-effort, ParseLs) are indexed and added to the session index (not the
// metadata pool: the listing itself shows them, and a metadata line for each
// would repeat it), and the call is recorded with them in its file_refs.
// Missed names are acceptable; the agent can read any file.
func (t *Tools) Ls(ctx context.Context, c Call, dir string) (Result, error) {
	return t.discover(ctx, c, dir, ParseLs(outputOf(c)))
}

// Find reports a find run in cwd; each output line is a path (ParseFind).
func (t *Tools) Find(ctx context.Context, c Call, cwd string) (Result, error) {
	return t.discover(ctx, c, cwd, ParseFind(outputOf(c)))
}

// Grep reports a grep run in cwd; file names are taken from the output
// (ParseGrep). The grep output itself is an ordinary toolcall output.
func (t *Tools) Grep(ctx context.Context, c Call, cwd string) (Result, error) {
	return t.discover(ctx, c, cwd, ParseGrep(outputOf(c)))
}

// Bash reports a bash command the harness ran in cwd. Attribution is
// best-effort: words of the command and names in its output
// that are files (BashCandidates) are indexed and added to the session
// index (not the pool: they are guesses), and
// files the session knows that a command word names but that are gone get
// a deletion version (as after rm).
func (t *Tools) Bash(ctx context.Context, c Call, cwd, command string) (Result, error) {
	words := map[string]bool{}
	for _, w := range BashCandidates(command, "") {
		words[w] = true
	}
	// A name only the output gives counts if it is on disk: a gone file
	// is marked deleted when a command word names it, and checking every
	// line of a long output against the roots and the store would cost
	// far more than the output itself.
	var paths []string
	for _, n := range BashCandidates(command, outputOf(c)) {
		if words[n] {
			paths = append(paths, n)
		} else if _, err := os.Lstat(join(cwd, n)); err == nil {
			paths = append(paths, n)
		}
	}
	return t.touch(ctx, c, cwd, paths, false)
}

func outputOf(c Call) string {
	if c.Output == nil {
		return ""
	}
	return *c.Output
}

// discover indexes the existing regular files among names (relative to
// dir) and records the call.
func (t *Tools) discover(ctx context.Context, c Call, dir string, names []string) (Result, error) {
	if err := t.CheckCallID(ctx, c.ID); err != nil {
		return Result{}, err // before any file is indexed
	}
	var ids []string
	for _, n := range names {
		if len(ids) >= t.maxDis {
			break
		}
		p := join(dir, n)
		if t.roots.Check(p) != nil || t.IsSpill(p) {
			continue // outside the session's roots, or a spill file: never read
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		r, err := t.ix.Index(ctx, p)
		if err != nil {
			continue // raced with a deletion, unreadable: best-effort
		}
		t.track(r.Path)
		ids = append(ids, r.Object.ID())
	}
	return t.record(ctx, c, dedupe(ids), false)
}

// touch syncs each candidate path with the disk: existing regular files
// are indexed; missing ones get a deletion version only if they were
// indexed before. With explicit (write, edit), other errors are returned;
// otherwise (bash) such paths are skipped.
func (t *Tools) touch(ctx context.Context, c Call, dir string, paths []string, explicit bool) (Result, error) {
	if err := t.CheckCallID(ctx, c.ID); err != nil {
		return Result{}, err // before any file is synced
	}
	var ids []string
	for _, n := range paths {
		if len(ids) >= t.maxDis {
			break
		}
		p := join(dir, n)
		if t.roots.Check(p) != nil || t.IsSpill(p) {
			continue // outside the session's roots, or a spill file: never read or marked deleted
		}
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.Mode().IsRegular():
			continue
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			if explicit {
				return Result{}, fmt.Errorf("%s %s: %w", c.Tool, n, err)
			}
			continue
		}
		r, err := t.ix.Sync(ctx, p)
		if err != nil {
			if explicit {
				return Result{}, fmt.Errorf("%s %s: %w", c.Tool, n, err)
			}
			continue
		}
		if r.Object == nil {
			continue // missing and never indexed
		}
		t.track(r.Path)
		ids = append(ids, r.Object.ID())
	}
	return t.record(ctx, c, dedupe(ids), explicit)
}

// join resolves name against dir unless it is absolute.
func join(dir, name string) string {
	if filepath.IsAbs(name) || dir == "" {
		return name
	}
	return filepath.Join(dir, name)
}

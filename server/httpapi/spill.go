package httpapi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tools"
)

// The spill files of bare heads (OpenRequest.BareHead; docs/service.md,
// "Bare head"). A session opened bare is never offered activate: its
// context says that a collapsed or previewed output is whole in
// <spill dir>/<call id>.txt, and the model loads it with read (ctxstore's,
// which answers from the store and activates the output) or looks into it
// with the harness's other tools (grep, tail). The files are a cache of
// what the store holds: written when a context first names them, listed
// again by the first context call after a session is resumed, and removed
// when the session closes.

// defaultSpillRoot is Options.Spill's default: ctxstore/spill in the
// user's cache directory, or in the temporary directory without one.
func defaultSpillRoot() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "ctxstore", "spill")
}

// writeSpill writes each output to dir/tools.SpillName(its call id),
// readable by the server's user only, unless the file is there already
// (an output never changes). It returns those it could not write, and why.
func writeSpill(dir string, out []assemble.SpillFile) ([]assemble.SpillFile, error) {
	if len(out) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return out, fmt.Errorf("spill directory: %w", err)
	}
	var failed []assemble.SpillFile
	var errs []error
	for _, f := range out {
		p := filepath.Join(dir, tools.SpillName(f.CallID))
		if _, err := os.Lstat(p); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			failed, errs = append(failed, f), append(errs, err)
			continue
		}
		if err := writeAtomic(p, f.Content); err != nil {
			failed, errs = append(failed, f), append(errs, err)
		}
	}
	return failed, errors.Join(errs...)
}

// writeAtomic writes a new file p whole or not at all: a reader never
// sees half an output.
func writeAtomic(p, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".spill-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// spillAfterCall writes what call c's context names for the first time
// (with what an earlier call could not write) to the session's spill
// directory. A failure is logged, not answered: ctxstore's read answers
// from the store whatever is on disk, and the next call tries again.
func (s *Server) spillAfterCall(l *live, c *assemble.Assembled) {
	dir := l.asm.SpillDir()
	if dir == "" {
		return
	}
	due := l.editedSpill(append(l.spillDue, c.Spill...))
	failed, err := writeSpill(dir, due)
	l.spillDue = failed
	if err != nil {
		s.log.Warn("writing spill files", "session", l.id, "dir", dir, "failed", len(failed), "err", err)
	}
}

// removeSpill removes a closing session's spill directory (its files are
// written again when it is resumed); a failure is logged.
func (s *Server) removeSpill(l *live) {
	if l.asm == nil || l.asm.SpillDir() == "" {
		return
	}
	if err := os.RemoveAll(l.asm.SpillDir()); err != nil {
		s.log.Warn("removing spill files", "session", l.id, "err", err)
	}
}

package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideRoots is returned (wrapped) when a tool names a file outside
// the session's roots (docs/security.md).
var ErrOutsideRoots = errors.New("outside the session's roots")

// Roots are the directories a session's tools may read and index: a path is
// inside when, with every symbolic link resolved, it is one of them or
// below one. A nil *Roots allows everything (the library default; the HTTP
// server always sets roots).
type Roots struct {
	dirs []string // absolute, symlinks resolved
}

// NewRoots resolves dirs (absolute paths of existing directories).
func NewRoots(dirs ...string) (*Roots, error) {
	if len(dirs) == 0 {
		return nil, errors.New("roots: at least one directory is needed")
	}
	r := &Roots{}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("root %q: not an absolute path", d)
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("root %s: not a directory", d)
		}
		r.dirs = append(r.dirs, filepath.Clean(real))
	}
	return r, nil
}

// Dirs returns the roots, resolved.
func (r *Roots) Dirs() []string {
	if r == nil {
		return nil
	}
	return append([]string(nil), r.dirs...)
}

// Within reports whether every root of o is inside r.
func (r *Roots) Within(o *Roots) error {
	if r == nil {
		return nil
	}
	for _, d := range o.dirs {
		if !r.contains(d) {
			return fmt.Errorf("%s: %w (%s)", d, ErrOutsideRoots, strings.Join(r.dirs, ", "))
		}
	}
	return nil
}

func (r *Roots) contains(real string) bool {
	for _, d := range r.dirs {
		if real == d || strings.HasPrefix(real, d+string(filepath.Separator)) || d == string(filepath.Separator) {
			return true
		}
	}
	return false
}

// Check returns nil if path (absolute) is inside the roots once its
// symbolic links are resolved; a path that does not exist is judged by its
// nearest existing parent. Otherwise the error wraps ErrOutsideRoots.
func (r *Roots) Check(path string) error {
	if r == nil {
		return nil
	}
	real, err := resolve(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !r.contains(real) {
		return fmt.Errorf("%s: %w (%s)", path, ErrOutsideRoots, strings.Join(r.dirs, ", "))
	}
	return nil
}

// resolve resolves the symbolic links of p, or of its nearest existing
// parent (the rest appended) when p does not exist.
func resolve(p string) (string, error) {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return "", errors.New("not an absolute path")
	}
	rest := ""
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

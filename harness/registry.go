package harness

import (
	"fmt"

	"github.com/ctxstore/ctxstore/session/commits"
)

// Codec is what one harness format's package gives the rest of ctxstore.
// Each format is one package with one decoder (a Record or Entry type
// read once from a line's JSON); the replay reader and the commit codec
// the package gives are both built from it.
type Codec interface {
	// Format names the harness format.
	Format() Format
	// CommitFormat names the commit format whose artifacts hold the
	// harness's own lines ("claude-code-v1"); "" when the format's
	// imports are stored as neutral events.
	CommitFormat() string
	// Commit gives the commit format what the package implements: Decode
	// (artifacts as neutral events), and Encode and ForSession when it
	// writes session files the harness resumes.
	Commit(f *commits.Format)
}

// Registry is the harness formats a program knows, given explicitly to
// NewRegistry where the program is put together.
type Registry struct {
	codecs  []Codec
	commits *commits.Registry
}

// NewRegistry returns a registry of codecs, and the commit formats
// registry of the built-in formats with the codecs' Decode, Encode and
// ForSession in place. It panics when two codecs have one format or a
// codec names a commit format that is not built in: both are mistakes in
// the program, not in its input.
func NewRegistry(codecs ...Codec) *Registry {
	r := &Registry{commits: commits.NewRegistry()}
	seen := map[Format]bool{}
	for _, c := range codecs {
		if seen[c.Format()] {
			panic(fmt.Sprintf("harness: two codecs of format %q", c.Format()))
		}
		seen[c.Format()] = true
		r.codecs = append(r.codecs, c)
		if name := c.CommitFormat(); name != "" {
			if err := r.commits.Extend(name, c.Commit); err != nil {
				panic(fmt.Sprintf("harness: codec of %q: %v", c.Format(), err))
			}
		}
	}
	return r
}

// Codec returns the codec of format f.
func (r *Registry) Codec(f Format) (Codec, bool) {
	for _, c := range r.codecs {
		if c.Format() == f {
			return c, true
		}
	}
	return nil, false
}

// Codecs returns the codecs, in the order given.
func (r *Registry) Codecs() []Codec { return append([]Codec(nil), r.codecs...) }

// Commits returns the commit formats: the built-in ones, with the codecs'
// functions. A commits.Service that reads or writes harness files needs
// it (commits.Options.Registry).
func (r *Registry) Commits() *commits.Registry { return r.commits }

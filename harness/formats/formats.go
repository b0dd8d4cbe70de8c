// Package formats lists the harness formats ctxstore reads and writes:
// the one place a new format's codec is added. Programs build their
// registry here, once, and hand it (or its commit formats) to what needs
// it: the importer, the commits service, materialization.
package formats

import (
	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/codex"
	"github.com/ctxstore/ctxstore/harness/opencode"
	"github.com/ctxstore/ctxstore/harness/pi"
	"github.com/ctxstore/ctxstore/harness/sweagent"
	"github.com/ctxstore/ctxstore/session/commits"
)

// Registry returns a new registry of every harness format.
func Registry() *harness.Registry {
	return harness.NewRegistry(claudecode.Codec{}, pi.Codec{}, sweagent.Codec{}, codex.Codec{}, opencode.Codec{})
}

// Commits returns a new commit formats registry with every harness
// format's codec: what a commits.Service needs to read imported sessions
// and write session files (commits.Options.Registry).
func Commits() *commits.Registry { return Registry().Commits() }

package sweagent

import (
	"io"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/session/commits"
)

// Codec is the SWE-agent format (harness.Codec). A trajectory is one JSON
// document, not lines a commit can hold as they are: imports store it as
// neutral events (events-v1), so the format has no commit format of its
// own.
type Codec struct{}

var _ harness.DocumentReader = Codec{}

// Format is harness.FormatSWEAgent.
func (Codec) Format() harness.Format { return harness.FormatSWEAgent }

// CommitFormat is "": trajectories are imported as events-v1.
func (Codec) CommitFormat() string { return "" }

// Commit does nothing: there is no commit format to give functions to.
func (Codec) Commit(*commits.Format) {}

// Looks is the package's Looks.
func (Codec) Looks(head []byte) bool { return Looks(head) }

// ReadDocument reads a trajectory (ReadAll).
func (Codec) ReadDocument(s *harness.Session, r io.Reader) error {
	_, err := ReadAll(s, r)
	return err
}

// Package transcripttest reads one transcript file over the built-in
// harness formats, for tests that replay or import dataset sessions: the
// program itself reads every conversation of a file
// (transcript.ReadAllFile) through the registry it builds.
package transcripttest

import (
	"fmt"
	"io"
	"os"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/transcript"
)

// ReadFile reads the transcript at path, detecting its format: its last
// conversation, as transcript.Reader.Read gives it.
func ReadFile(path string) (*transcript.Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	s, err := Read(f, transcript.FormatAuto)
	if s != nil {
		transcript.Named(s, path)
	}
	if err != nil {
		return s, fmt.Errorf("transcript: %s: %w", path, err)
	}
	return s, nil
}

// Read reads a transcript in the given format (FormatAuto detects it).
func Read(r io.Reader, format transcript.Format) (*transcript.Session, error) {
	return transcript.Reader{Formats: formats.Registry()}.Read(r, format)
}

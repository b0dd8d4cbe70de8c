package transcript

import (
	"fmt"
	"io"
	"os"

	"github.com/ctxstore/ctxstore/harness/formats"
)

// The readers over the built-in formats that the tests of this package
// use; other packages' tests have them in transcripttest.

func ReadFile(path string) (*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	s, err := Read(f, FormatAuto)
	if s != nil {
		Named(s, path)
	}
	if err != nil {
		return s, fmt.Errorf("transcript: %s: %w", path, err)
	}
	return s, nil
}

func Read(r io.Reader, format Format) (*Session, error) {
	return Reader{formats.Registry()}.Read(r, format)
}

func ReadAll(r io.Reader, format Format) ([]*Session, error) {
	return Reader{formats.Registry()}.ReadAll(r, format)
}

package hooks

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/ctxstore/ctxstore/context/tools"
)

// File returns the spill file of tool call toolUseID's output in
// session's spill directory (Root/<session>/tools.SpillName(toolUseID)),
// the path the preview step writes and the hook accepts a Read of; ok is
// false when the ids cannot name a file there.
func (s Spill) File(session, toolUseID string) (string, bool) {
	if s.Root == "" || !isID(session) || !isToolUseID(toolUseID) {
		return "", false
	}
	root, err := filepath.Abs(s.Root)
	if err != nil {
		return "", false
	}
	return filepath.Join(root, session, tools.SpillName(toolUseID)), true
}

// ErrSpillSize is returned by Keep for an output past the size one spill
// file holds.
var ErrSpillSize = errors.New("the output is past the size a spill file holds")

// Keep makes sure tool call toolUseID's output is whole in its spill file
// (File): one already there (the preview step's, written when the output
// entered) is kept as it is, else whole is written. It returns the file.
func (s Spill) Keep(session, toolUseID, whole string) (string, error) {
	file, ok := s.File(session, toolUseID)
	if !ok {
		return "", errors.New("no spill file for these ids")
	}
	if _, err := os.Stat(file); err == nil {
		return file, nil
	}
	if len(whole) > maxSpill {
		return "", ErrSpillSize
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return file, writeFile(file, []byte(whole))
}

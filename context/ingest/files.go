package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Files is how ingestion reaches the files that tool calls name.
type Files interface {
	// Local returns the path on this machine of an absolute path the
	// harness used.
	Local(path string) string
	// Observe is told of each file tool call (read, write, edit) before
	// ctxstore indexes local, with the call's arguments and the output the
	// harness recorded. It may materialize the file (Mirror); an error is
	// reported and ingestion goes on.
	Observe(kind Kind, local string, args map[string]any, output string, failed bool) error
}

// Live is Files for a harness running on this machine: paths are used as
// they are and files are read from disk.
type Live struct{}

// Local returns path.
func (Live) Local(path string) string { return path }

// Observe does nothing: the file on disk is the truth.
func (Live) Observe(Kind, string, map[string]any, string, bool) error { return nil }

// Mirror is Files for replaying a transcript on another machine: each path
// the harness used is mapped under a directory, and the file there is made
// from what the session's tool calls showed: a read's output (line-number
// prefixes and trailing system reminders removed), a write's content, an
// edit applied to the mirrored file.
type Mirror string

// Local maps path under the mirror directory.
func (m Mirror) Local(path string) string {
	return filepath.Join(string(m), filepath.FromSlash(strings.TrimPrefix(filepath.ToSlash(path), "/")))
}

// Mount returns the mirror's directory: the recorded machine's "/".
func (m Mirror) Mount() string { return filepath.Clean(string(m)) }

// Observe materializes the file the call showed.
func (m Mirror) Observe(kind Kind, local string, args map[string]any, output string, failed bool) error {
	if failed {
		return nil
	}
	switch kind {
	case KindRead:
		return writeFile(local, ReadOutputContent(output))
	case KindWrite:
		s, ok := args["content"].(string)
		if !ok {
			return nil
		}
		return writeFile(local, s)
	case KindEdit:
		b, err := os.ReadFile(local)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // never shown: nothing to edit
		}
		if err != nil {
			return err
		}
		text, changed := applyEdits(string(b), args)
		if !changed {
			return nil
		}
		return writeFile(local, text)
	}
	return nil
}

func writeFile(p, s string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	return nil
}

// applyEdits applies the replacements of an edit call: Claude Code's
// old_string/new_string (replace_all) or edits[], Pi's oldText/newText or
// edits[].
func applyEdits(text string, args map[string]any) (string, bool) {
	edits := []map[string]any{args}
	if list, ok := args["edits"].([]any); ok {
		edits = edits[:0]
		for _, e := range list {
			if m, ok := e.(map[string]any); ok {
				edits = append(edits, m)
			}
		}
	}
	changed := false
	for _, e := range edits {
		old, okOld := firstString(e, "old_string", "oldText", "old_str")
		repl, okNew := firstString(e, "new_string", "newText", "new_str")
		if !okOld || !okNew || old == "" || !strings.Contains(text, old) {
			continue
		}
		if all, _ := e["replace_all"].(bool); all {
			text = strings.ReplaceAll(text, old, repl)
		} else {
			text = strings.Replace(text, old, repl, 1)
		}
		changed = true
	}
	return text, changed
}

func firstString(m map[string]any, keys ...string) (string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

var (
	numbered = regexp.MustCompile(`^ *\d+(\t|→)`)
	reminder = regexp.MustCompile(`(?s)\n*<system-reminder>.*?</system-reminder>\s*$`)
)

// ReadOutputContent returns the file content a read tool's output shows:
// Claude Code numbers lines ("     1→text" or "     1\ttext") and may
// append a <system-reminder>; both are removed when every non-empty line
// is numbered. Other output is returned as it is.
func ReadOutputContent(out string) string {
	out = reminder.ReplaceAllString(out, "")
	lines := strings.Split(out, "\n")
	n := 0
	for _, l := range lines {
		if l == "" {
			continue
		}
		if !numbered.MatchString(l) {
			return out
		}
		n++
	}
	if n == 0 {
		return out
	}
	var b strings.Builder
	for i, l := range lines {
		if l == "" && i == len(lines)-1 {
			break
		}
		if loc := numbered.FindStringIndex(l); loc != nil {
			l = l[loc[1]:]
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

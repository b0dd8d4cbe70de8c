package tools

import (
	"strings"
)

// ParseLs extracts candidate names from ls output, best-effort: plain
// listings (one or more names per line), long listings (-l: the last
// field, with "name -> target" cut at the arrow), and classifier suffixes
// (-F: / * @ = | >). "total" lines, directory headers ("dir:") and . and ..
// are skipped. Names with spaces survive only in one-per-line output.
func ParseLs(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "total ") || strings.HasSuffix(trimmed, ":") {
			continue
		}
		if before, _, ok := strings.Cut(trimmed, " -> "); ok {
			trimmed = before
		}
		fields := strings.Fields(trimmed)
		if len(fields) >= 8 && isMode(fields[0]) {
			names = append(names, classify(fields[len(fields)-1]))
			continue
		}
		// The whole line (one name per line, possibly with spaces), then
		// every field (several names per line).
		names = append(names, classify(trimmed))
		if len(fields) > 1 {
			for _, f := range fields {
				names = append(names, classify(f))
			}
		}
	}
	return clean(names)
}

// isMode reports whether s looks like an ls -l mode field (-rw-r--r--).
func isMode(s string) bool {
	if len(s) < 10 {
		return false
	}
	return strings.ContainsRune("-dlcbps", rune(s[0])) && strings.Trim(s[1:10], "rwxsStT-") == ""
}

func classify(s string) string { return strings.TrimRight(s, "/*@=|>") }

// ParseFind takes each non-empty output line as a path.
func ParseFind(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		names = append(names, strings.TrimSpace(strings.TrimRight(line, "\r")))
	}
	return clean(names)
}

// ParseGrep extracts file names from grep or ripgrep output, best-effort:
// "file:line:text", "file:text", "file-line-text" context lines are not
// parsed, and "-l" output (bare names) is taken whole. Binary-match notices
// ("Binary file x matches") name x.
func ParseGrep(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line == "--" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Binary file "); ok {
			if name, _, ok := strings.Cut(rest, " matches"); ok {
				names = append(names, name)
			}
			continue
		}
		names = append(names, line) // -l output
		if i := strings.IndexByte(line, ':'); i > 0 {
			names = append(names, line[:i])
		}
	}
	return clean(names)
}

// BashCandidates returns the words of a shell command, and the output's
// lines and words, that could be file names: words are split at white
// space and shell operators, quotes are dropped, and options, variables
// and globs are skipped. Callers check which exist.
func BashCandidates(command, output string) []string {
	names := strings.FieldsFunc(command, func(r rune) bool {
		return strings.ContainsRune(" \t\n;|&<>()`'\"", r)
	})
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		names = append(names, line)
		if i := strings.IndexByte(line, ':'); i > 0 {
			names = append(names, line[:i])
		}
	}
	return clean(names)
}

// MaxCandidates is how many names one tool output may offer (clean): each
// is checked against the roots and the disk, and bash's also against the
// store, so an output of millions of lines would cost that many lookups.
// An output naming files names them early; MaxDiscovered caps the files
// indexed anyway.
const MaxCandidates = 1000

// clean drops empty names, options, variables, globs, "." and "..", and
// duplicates, keeping the first occurrence, and keeps at most
// MaxCandidates names.
func clean(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if len(out) == MaxCandidates {
			break
		}
		if n == "" || n == "." || n == ".." || seen[n] || len(n) > 4096 ||
			strings.HasPrefix(n, "-") || strings.ContainsAny(n, "$*?\x00") {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

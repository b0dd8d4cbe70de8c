// Package datasets finds the shared datasets of real agent sessions
// (../shared/datasets beside the repository) for tests and benchmarks.
package datasets

import (
	"os"
	"path/filepath"
	"testing"
)

// Env names a directory that overrides the search.
const Env = "CTXSTORE_DATASETS"

// Find returns the datasets directory, or "" when there is none: $Env if
// set; else shared/datasets beside the working directory or beside any
// directory above it (../shared/datasets beside the checkout). Nothing
// else: no path of one machine's layout.
func Find() string {
	if d := os.Getenv(Env); d != "" {
		return d
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			if d := filepath.Join(dir, "..", "shared", "datasets"); isDir(d) {
				return filepath.Clean(d)
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return ""
}

// Dir is Find for a test: with no datasets it fails the test under
// CI=true, where they must be read, and skips it otherwise.
func Dir(tb testing.TB) string {
	tb.Helper()
	d := Find()
	if d == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("datasets not found: set %s, or put them at ../shared/datasets beside the repository", Env)
		}
		tb.Skipf("datasets not found (set %s)", Env)
	}
	return d
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

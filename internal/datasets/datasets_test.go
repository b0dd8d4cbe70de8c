package datasets

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindRelativeOnly: the datasets are found by the environment variable
// or beside the checkout (or a directory above it), never at a fixed path.
func TestFindRelativeOnly(t *testing.T) {
	root := t.TempDir()
	checkout := filepath.Join(root, "wt", "repo", "pkg")
	if err := os.MkdirAll(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, "")
	t.Chdir(checkout)
	if d := Find(); d != "" {
		t.Fatalf("no datasets beside the checkout, but Find found %q", d)
	}
	shared := filepath.Join(root, "shared", "datasets")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if d := Find(); d != shared {
		t.Fatalf("Find = %q, want %q (beside a directory above the checkout)", d, shared)
	}
	t.Setenv(Env, "/elsewhere")
	if d := Find(); d != "/elsewhere" {
		t.Fatalf("Find = %q with %s set", d, Env)
	}
}

package hooks

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSpillFileKeep(t *testing.T) {
	root := t.TempDir()
	s := Spill{Root: root}
	for _, bad := range [][2]string{{"../x", "toolu_1"}, {"sess", "toolu/../1"}, {"", "toolu_1"}, {"sess", ""}} {
		if f, ok := s.File(bad[0], bad[1]); ok {
			t.Errorf("File(%q, %q) = %s: ids that cannot name a file", bad[0], bad[1], f)
		}
	}
	f, err := s.Keep("sess", "toolu_1", "whole output\n")
	if err != nil || f != filepath.Join(root, "sess", "toolu_1.txt") {
		t.Fatalf("Keep: %s, %v", f, err)
	}
	if b, _ := os.ReadFile(f); string(b) != "whole output\n" {
		t.Fatalf("the spill file holds %q", b)
	}
	// A file already there (the preview step's) is kept as it is.
	if _, err := s.Keep("sess", "toolu_1", "a preview"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f); string(b) != "whole output\n" {
		t.Fatalf("Keep overwrote the spill file: %q", b)
	}
}

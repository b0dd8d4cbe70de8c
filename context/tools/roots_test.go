package tools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRoots(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(out, "secret"), filepath.Join(root, "link")))
	must(os.Symlink(out, filepath.Join(root, "dir")))
	must(os.Symlink(root, filepath.Join(out, "back")))
	must(os.Mkdir(filepath.Join(root, "sub"), 0o755))
	r, err := NewRoots(root)
	must(err)
	for p, ok := range map[string]bool{
		root: true, filepath.Join(root, "sub", "x.go"): true, filepath.Join(root, "new", "deeper", "f"): true,
		filepath.Join(out, "back", "sub"): true, // a link from outside into the root reaches a file inside
		filepath.Join(root, "link"):       false, filepath.Join(root, "dir", "secret"): false, filepath.Join(root, "dir", "missing"): false,
		filepath.Join(root, "..", filepath.Base(out), "secret"): false, root + "x": false, "/etc/passwd": false, "relative": false,
	} {
		err := r.Check(p)
		if (err == nil) != ok || (!ok && p != "relative" && !errors.Is(err, ErrOutsideRoots)) {
			t.Errorf("Check(%s) = %v, want ok %v", p, err, ok)
		}
	}
	var none *Roots
	if none.Check("/etc/passwd") != nil {
		t.Error("nil roots refused a path")
	}
	if _, err := NewRoots("rel"); err == nil {
		t.Error("a relative root was accepted")
	}
	if _, err := NewRoots(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing root was accepted")
	}
	wide, _ := NewRoots(filepath.Dir(root))
	if wide.Within(r) != nil || r.Within(wide) == nil {
		t.Error("Within")
	}
}

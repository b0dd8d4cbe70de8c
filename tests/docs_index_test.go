package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsIndex keeps docs/README.md the index of the documentation: every
// document under docs/ is linked from it, every link in it names a file that
// exists, and the repository's README links the index.
func TestDocsIndex(t *testing.T) {
	docs := filepath.Join("..", "docs")
	index, err := os.ReadFile(filepath.Join(docs, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([^)#\s]+)\)`).FindAllStringSubmatch(string(index), -1) {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		linked[target] = true
		if _, err := os.Stat(filepath.Join(docs, target)); err != nil {
			t.Errorf("docs/README.md links %s, which does not exist", target)
		}
	}
	err = filepath.WalkDir(docs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(docs, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		ext := filepath.Ext(rel)
		if rel == "README.md" || (ext != ".md" && ext != ".yaml") {
			return nil
		}
		if !linked[rel] {
			t.Errorf("docs/%s is not listed in docs/README.md", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(docs/README.md)", "(docs/architecture.md)", "(docs/status.md)", "(docs/context-manager.md)"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not link %s", strings.Trim(want, "()"))
		}
	}
}

// TestArchitectureNamesEveryPackage keeps docs/architecture.md the map of
// the code: every package of the module has its line there, named in
// backticks.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	arch, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if !strings.Contains(string(arch), "`"+rel+"`") {
			t.Errorf("docs/architecture.md does not name package %s", rel)
		}
	}
}

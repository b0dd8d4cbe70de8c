package tests

import (
	"encoding/json"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/ctxstore/ctxstore"

// floors are the layers of docs/architecture.md, bottom up. A package sits on
// the floor of the longest prefix that names it; it may import packages on its
// own floor or below, never above.
var floors = []struct {
	name     string
	prefixes []string
}{
	{"object model", []string{"objects", "internal/canonjson", "internal/datasets", "internal/jsonlimit", "internal/jsontext", "internal/filelock", "internal/svgplot"}},
	{"store contract", []string{"store"}},
	{"backends", []string{"bitemporal", "migrations", "xtdb", "internal/storetestenv"}},
	{"sessions and context commits", []string{"session"}},
	{"harness formats", []string{"harness"}},
	{"context manager", []string{"context"}},
	{"portability", []string{"sync"}},
	{"evaluation", []string{"eval"}},
	{"read models", []string{"explain"}},
	{"integrations", []string{"integrations"}},
	{"faces", []string{"server", "cmd"}},
	{"end-to-end tests", []string{"tests"}},
}

// floorOf returns the floor index of a package path relative to the module,
// or -1 when no floor names it.
func floorOf(rel string) int {
	best, bestLen := -1, -1
	for i, f := range floors {
		for _, p := range f.prefixes {
			if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

type listedPackage struct {
	ImportPath  string
	Imports     []string
	TestImports []string
	Deps        []string
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestFloors checks that no package imports a package on a higher floor
// (the floors of docs/architecture.md), in its code or its in-package tests.
func TestFloors(t *testing.T) {
	var bad []string
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		from := floorOf(rel)
		if from < 0 {
			bad = append(bad, rel+": on no floor (add it to docs/architecture.md and tests/layers_test.go)")
			continue
		}
		for _, imp := range append(append([]string{}, p.Imports...), p.TestImports...) {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			irel := strings.TrimPrefix(imp, module+"/")
			if to := floorOf(irel); to > from {
				bad = append(bad, rel+" ("+floors[from].name+") imports "+irel+" ("+floors[to].name+")")
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestShippedBinaryLinksNoTesting checks that the CLI does not link package
// testing (test helpers live in packages of their own, such as xtdbtest).
func TestShippedBinaryLinksNoTesting(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/cmd/ctxstore" {
			continue
		}
		for _, d := range p.Deps {
			if d == "testing" {
				t.Fatal("cmd/ctxstore depends on package testing")
			}
		}
		return
	}
	t.Fatal("cmd/ctxstore not listed")
}

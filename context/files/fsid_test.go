package files

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolverMounts(t *testing.T) {
	r, err := NewResolver(ResolverOptions{DefaultID: "sandbox", Mounts: []Mount{
		{Prefix: "/workspace", FilesystemID: "host"},
		{Prefix: "/workspace/data", FilesystemID: "nas"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"/workspace":             "host",
		"/workspace/a.go":        "host",
		"/workspace/data/x.csv":  "nas",
		"/workspace/database.go": "host",
		"/workspacex/a":          "sandbox",
		"/etc/hosts":             "sandbox",
	} {
		got, err := r.Resolve(p)
		if err != nil || got != want {
			t.Errorf("Resolve(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	if _, err := NewResolver(ResolverOptions{DefaultID: "x", Mounts: []Mount{{Prefix: "rel", FilesystemID: "y"}}}); err == nil {
		t.Error("relative mount prefix accepted")
	}
	if _, err := NewResolver(ResolverOptions{}); err == nil {
		t.Error("missing default id accepted")
	}
}

func TestResolverDevices(t *testing.T) {
	dir := t.TempDir()
	r, err := NewResolver(ResolverOptions{DefaultID: "root", DetectDevices: true, DetectRoot: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Same device as the detection root, existing or not.
	for _, p := range []string{dir, filepath.ToSlash(filepath.Join(dir, "missing", "deeper.txt"))} {
		if got, err := r.Resolve(p); err != nil || got != "root" {
			t.Errorf("Resolve(%s) = %q, %v", p, got, err)
		}
	}
	// /proc is a different filesystem on Linux: it gets a derived id,
	// stable across resolvers.
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	devA, _ := deviceOf("/proc")
	devR, _ := deviceOf(dir)
	if devA == devR {
		t.Skip("/proc on the same device")
	}
	a, err := r.Resolve("/proc/self")
	if err != nil || a == "root" || a == "" {
		t.Fatalf("Resolve(/proc/self) = %q, %v", a, err)
	}
	r2, _ := NewResolver(ResolverOptions{DefaultID: "root", DetectDevices: true, DetectRoot: dir})
	if b, _ := r2.Resolve("/proc/self"); b != a {
		t.Fatalf("device id not stable: %q vs %q", a, b)
	}
}

func TestMachineFilesystemID(t *testing.T) {
	fallback := filepath.Join(t.TempDir(), "sub", "machine-id")
	a, err := MachineFilesystemID(fallback)
	if err != nil || len(a) != 64 {
		t.Fatalf("id %q, %v", a, err)
	}
	b, err := MachineFilesystemID(fallback)
	if err != nil || a != b {
		t.Fatalf("not stable: %q vs %q (%v)", a, b, err)
	}
	// The generated fallback is stable too.
	g1, err := persistedID(fallback)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := persistedID(fallback)
	if err != nil || g1 != g2 || len(g1) != 64 {
		t.Fatalf("generated id not stable: %q %q %v", g1, g2, err)
	}
}

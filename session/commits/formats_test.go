package commits

import (
	"strings"
	"testing"
)

// TestRegistryExtend: a format's codec is given by extending it in place;
// the name, family and version stay, an unknown format is an error naming
// it, and two extensions add up.
func TestRegistryExtend(t *testing.T) {
	r := NewRegistry()
	enc := func(b []byte) int64 { return 42 }
	if err := r.Extend(FormatPi, func(f *Format) { f.Count = enc; f.Name = "renamed-v9" }); err != nil {
		t.Fatal(err)
	}
	if err := r.Extend(FormatPi, func(f *Format) { f.Text = func([]byte) string { return "t" } }); err != nil {
		t.Fatal(err)
	}
	f, ok := r.Lookup(FormatPi)
	if !ok || f.Name != FormatPi || f.Family != "pi" || f.Version != 3 || f.Count == nil || f.Count(nil) != 42 || f.Text == nil || f.Concat == nil {
		t.Fatalf("extended format %+v", f)
	}
	if _, ok := r.Lookup("renamed-v9"); ok {
		t.Fatal("Extend renamed the format")
	}
	if err := r.Extend("nothing-v1", func(*Format) {}); err == nil || !strings.Contains(err.Error(), "nothing-v1") {
		t.Fatalf("Extend of an unknown format: %v", err)
	}
}

package runtime

import (
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ingest"
)

func TestDisplayPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    ingest.Options
		want assemble.Paths
	}{
		{"live", ingest.Options{Cwd: "/home/me/proj"}, assemble.Paths{Root: "/home/me/proj"}},
		{"mirror", ingest.Options{Cwd: "/Users/x/proj", Files: ingest.Mirror("/tmp/r/files/")},
			assemble.Paths{Root: "/tmp/r/files/Users/x/proj", Mount: "/tmp/r/files"}},
		{"no cwd", ingest.Options{}, assemble.Paths{}},
		{"relative cwd", ingest.Options{Cwd: "proj"}, assemble.Paths{}},
	} {
		if got := displayPaths(tc.o); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// what the replay's model reads for a mirrored file
	p := displayPaths(ingest.Options{Cwd: "/Users/x/proj", Files: ingest.Mirror("/tmp/r/files")})
	if got := p.Display(ingest.Mirror("/tmp/r/files").Local("/Users/x/proj/src/a.ts")); got != "src/a.ts" {
		t.Errorf("a mirrored file below the cwd shows as %q", got)
	}
	if got := p.Display(ingest.Mirror("/tmp/r/files").Local("/etc/hosts")); got != "/etc/hosts" {
		t.Errorf("a mirrored file elsewhere shows as %q", got)
	}
}

package sessionbundle

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// A manifest line holding a lone surrogate escape (the header's session,
// the source's id, an entity's id) is refused by Verify and ImportFile,
// naming the line, the field and the byte, before anything is written:
// encoding/json would read "\ud800" and "\udfff" alike as U+FFFD.
func TestManifestLoneSurrogateRefused(t *testing.T) {
	src := openSQLite(t, "src.db")
	s := sessionbundletest.New(t, src, "sa", "")
	s.Turns(1)
	bundle, _ := exportBytes(t, src, "sa")
	lines := bytes.SplitAfter(bundle, []byte("\n"))
	entity := -1
	for i, l := range lines {
		if bytes.HasPrefix(l, []byte(`{"t":"entity","id":"session:sa"`)) {
			entity = i
		}
	}
	if entity < 0 {
		t.Fatal("no entity line for session:sa")
	}
	cases := []struct {
		name  string
		line  int // 0-based
		old   string
		new   string
		field string
	}{
		{"header session", 0, `"session":"sa"`, `"session":"s\ud800"`, "field session,"},
		{"source id", 0, `"source":{"id":"`, `"source":{"id":"\udfff`, "field source.id,"},
		{"entity id", entity, `"id":"session:sa"`, `"id":"session:sa\ud800"`, "field id,"},
		{"high half then a non-low", entity, `"id":"session:sa"`, `"id":"session:sa\ud800\u0041"`, "field id,"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Contains(lines[c.line], []byte(c.old)) {
				t.Fatalf("line %d lacks %s: %s", c.line+1, c.old, lines[c.line])
			}
			var b bytes.Buffer
			for i, l := range lines {
				if i == c.line {
					l = bytes.Replace(l, []byte(c.old), []byte(c.new), 1)
				}
				b.Write(l)
			}
			tampered := b.Bytes()
			dst := openSQLite(t, "dst.db")
			before := latestTx(t, dst)
			path := writeFile(t, tampered)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			_, verr := Verify(f)
			f.Close()
			_, ierr := ImportFile(ctx, dst, path, ImportOptions{})
			for _, e := range []error{verr, ierr} {
				var le *versionlog.LineError
				if !errors.Is(e, ErrCorrupt) || !errors.As(e, &le) || le.Line != int64(c.line+1) ||
					!strings.Contains(e.Error(), c.field) || !strings.Contains(e.Error(), "surrogate") {
					t.Errorf("got %v, want ErrCorrupt on line %d naming %q and the surrogate", e, c.line+1, c.field)
				}
			}
			if got := latestTx(t, dst); got != before {
				t.Errorf("the refused import wrote: latest tx %d, was %d", got, before)
			}
		})
	}
}

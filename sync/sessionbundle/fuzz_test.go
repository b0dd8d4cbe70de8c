package sessionbundle

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// FuzzVerify: any bytes given to the bundle reader give a checked bundle
// or an error naming a line, never a panic.
func FuzzVerify(f *testing.F) {
	src := openSQLite(f, "fz.db")
	s := sessionbundletest.New(f, src, "fz", "")
	s.Turns(1)
	var b bytes.Buffer
	if _, err := Export(ctx, src, "fz", &b, ExportOptions{TempDir: f.TempDir()}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:b.Len()/2])
	f.Add([]byte("{\"t\":\"session_bundle\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := Verify(bytes.NewReader(data))
		if err == nil {
			if info == nil {
				t.Fatal("no error and no info")
			}
			return
		}
		var le *versionlog.LineError
		if !errors.As(err, &le) || le.Line < 1 {
			t.Fatalf("error without a line: %v", err)
		}
	})
}

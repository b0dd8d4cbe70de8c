package sessionbundle

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
)

// A bundle carrying an object whose self-describing hashes do not match
// its content (a toolcall's identity_hash, or its content changed
// under its content_hash) is refused whole by Verify and by ImportFile, before
// anything is written, naming the entity and the field; the same bundle
// untampered imports.
func TestSelfInconsistentObjectRefused(t *testing.T) {
	cases := map[string]struct {
		id    func(s *sessionbundletest.Session) string
		field string
		edit  func(store.Doc)
	}{
		"identity_hash": {func(s *sessionbundletest.Session) string { return firstToolcall(t, s) }, "identity_hash",
			func(d store.Doc) { d["identity_hash"] = strings.Repeat("0", 64) }},
		"content_hash": {func(s *sessionbundletest.Session) string { return firstToolcall(t, s) }, "content_hash",
			func(d store.Doc) { d["content"] = "not what was hashed" }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src := openSQLite(t, "src.db")
			s := sessionbundletest.New(t, src, "sa", "")
			s.Turns(1)
			id := c.id(s)
			doc, err := src.Entity(ctx, id, store.Basis{})
			if err != nil {
				t.Fatal(err)
			}
			c.edit(doc)
			if _, err := store.SubmitWait(ctx, src, []store.Op{store.Put(doc)}); err != nil {
				t.Fatal(err)
			}
			bundle, _ := exportBytes(t, src, "sa")
			dst := openSQLite(t, "dst.db")
			before := latestTx(t, dst)
			path := writeFile(t, bundle)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			_, verr := Verify(f)
			f.Close()
			_, err = ImportFile(ctx, dst, path, ImportOptions{})
			for _, e := range []error{verr, err} {
				if !errors.Is(e, ErrCorrupt) || !strings.Contains(e.Error(), id) || !strings.Contains(e.Error(), c.field) ||
					!strings.Contains(e.Error(), "line ") {
					t.Errorf("got %v, want ErrCorrupt naming the line, %s and %s", e, id, c.field)
				}
			}
			if latestTx(t, dst) != before {
				t.Fatal("the refused import wrote")
			}
		})
	}
}

// firstToolcall returns the id of a toolcall object the session indexes.
func firstToolcall(t *testing.T, s *sessionbundletest.Session) string {
	t.Helper()
	docs, err := s.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", string(objects.KindToolcall))}, Limit: 1})
	if err != nil || len(docs) == 0 {
		t.Fatalf("no toolcall: %v", err)
	}
	return docs[0][store.IDKey].(string)
}

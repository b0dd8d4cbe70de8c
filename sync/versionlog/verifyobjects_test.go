package versionlog_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// A version log putting an object whose identity_hash, or content under
// its content_hash, does not match is refused by Verify and by
// ImportFile before anything is written, naming the line, the entity and
// the field; the same log with the object as made imports.
func TestSelfInconsistentObjectRefused(t *testing.T) {
	ctx := context.Background()
	o, err := objects.NewSystemPrompt("sv", "You are careful.")
	if err != nil {
		t.Fatal(err)
	}
	good, err := o.Doc()
	if err != nil {
		t.Fatal(err)
	}
	for field, edit := range map[string]func(store.Doc){
		"":              func(store.Doc) {},
		"identity_hash": func(d store.Doc) { d["identity_hash"] = strings.Repeat("0", 64) },
		"content_hash":  func(d store.Doc) { d["content"] = "You are careless." },
	} {
		src := openSQLite(t, "src-"+field+".db")
		doc := store.Doc{}
		for k, v := range good {
			doc[k] = v
		}
		edit(doc)
		if _, err := store.SubmitWait(ctx, src, []store.Op{store.Put(doc)}); err != nil {
			t.Fatal(err)
		}
		log := exportBytes(t, src, -1)
		path := filepath.Join(t.TempDir(), "log.jsonl")
		if err := os.WriteFile(path, log, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := openSQLite(t, "dst-"+field+".db")
		_, _, verr := versionlog.Verify(bytes.NewReader(log))
		_, err := versionlog.ImportFile(ctx, dst, path, versionlog.ImportOptions{})
		st, serr := dst.Status(ctx)
		if serr != nil {
			t.Fatal(serr)
		}
		if field == "" {
			if verr != nil || err != nil || st.LatestCompleted == nil {
				t.Fatalf("the log as made: verify %v, import %v", verr, err)
			}
			continue
		}
		for _, e := range []error{verr, err} {
			var le *versionlog.LineError
			if !errors.Is(e, versionlog.ErrCorrupt) || !errors.As(e, &le) || !strings.Contains(e.Error(), o.ID()) || !strings.Contains(e.Error(), field) {
				t.Errorf("%s: got %v, want a corrupt-log error naming the line, %s and %s", field, e, o.ID(), field)
			}
		}
		if st.LatestCompleted != nil {
			t.Errorf("%s: the refused import wrote tx %d", field, st.LatestCompleted.ID)
		}
	}
}

package inspector_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// A damaged session object in the store never answers 500 for the pages
// of others: the object page of a file two sessions read lists the good
// session's calls and names the damaged one, the damaged object's own page
// marks it, and the damaged session's page shows its calls with its state
// marked unreadable.
func TestBadObjectPages(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	shared := ""
	for _, sid := range []string{"good", "bad"} {
		l := inspecttest.NewLive(t, se.Store, sid)
		l.Turn("read it")
		if shared == "" {
			shared = l.File("shared.go", "package shared\n")
		}
		l.Read(shared)
		l.Call(time.Second)
	}
	docs, err := se.Store.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", string(objects.KindFile))}})
	if err != nil || len(docs) != 1 {
		t.Fatalf("file objects: %v %v", docs, err)
	}
	fileID := docs[0][store.IDKey].(string)
	inspecttest.BreakSessionObject(t, se.Store, "bad")
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	s := &site{url: ts.URL}
	for path, want := range map[string][]string{
		"/inspect/o/" + fileID: {`id="unreadable"`, `href="/inspect/s/bad"`, "identity_hash", `href="/inspect/s/good/c/1"`},
		"/inspect/o/" + url.PathEscape(objects.SessionObjectID("bad")): {`id="object-invalid"`, "identity_hash"},
		"/inspect/s/bad":  {`id="state-error"`, "identity_hash", `id="call-count">1 `},
		"/inspect/s/good": {`id="call-count">1 `},
		"/inspect/":       {`href="/inspect/s/bad"`, `href="/inspect/s/good"`},
	} {
		code, _, body := get(t, s, "", path)
		if code != 200 {
			t.Errorf("%s: %d\n%s", path, code, body)
			continue
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: no %s in\n%s", path, w, body)
			}
		}
	}
}

package inspector_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// An object used by more sessions than a page walks shows the first
// page's sessions and a link to the sessions after them, and the link's
// page shows the rest.
func TestObjectPageSessionsLink(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	shared := ""
	n := inspect.ObjectSessionsShown + 3
	for i := range n {
		l := inspecttest.NewLive(t, se.Store, fmt.Sprintf("s%03d", i))
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
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	s := &site{url: ts.URL}
	last := fmt.Sprintf("s%03d", inspect.ObjectSessionsShown-1)
	code, _, body := get(t, s, "", "/inspect/o/"+fileID)
	if code != 200 || !strings.Contains(body, `id="more-sessions" href="?after=`+last+`"`) ||
		!strings.Contains(body, `href="/inspect/s/`+last+`/c/1"`) || strings.Contains(body, fmt.Sprintf(`href="/inspect/s/s%03d/c/1"`, n-1)) {
		t.Fatalf("first page: %d\n%s", code, body)
	}
	code, _, body = get(t, s, "", "/inspect/o/"+fileID+"?after="+last)
	if code != 200 || strings.Contains(body, `id="more-sessions"`) || strings.Contains(body, `href="/inspect/s/`+last+`/c/1"`) ||
		!strings.Contains(body, fmt.Sprintf(`href="/inspect/s/s%03d/c/1"`, n-1)) {
		t.Fatalf("second page: %d\n%s", code, body)
	}
}

package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// `ctxstore object` of a file more sessions use than a page walks prints
// the first page's sessions and the command for the sessions after them;
// that command prints the rest.
func TestCLIObjectSessionPages(t *testing.T) {
	c := newCLI(t)
	db := c.path("s.db")
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := inspect.ObjectSessionsShown + 2
	shared := ""
	for i := range n {
		l := inspecttest.NewLive(t, st, fmt.Sprintf("s%03d", i))
		l.Turn("read it")
		if shared == "" {
			shared = l.File("shared.go", "package shared\n")
		}
		l.Read(shared)
		l.Call(time.Second)
	}
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", string(objects.KindFile))}})
	if err != nil || len(docs) != 1 {
		t.Fatalf("file objects: %v %v", docs, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	id := docs[0][store.IDKey].(string)
	last := fmt.Sprintf("s%03d", inspect.ObjectSessionsShown-1)
	out := c.ok("", "--store", db, "object", id)
	if !strings.Contains(out, fmt.Sprintf("used by %d sessions", inspect.ObjectSessionsShown)) ||
		!strings.Contains(out, "ctxstore object "+id+" --after "+last) || strings.Contains(out, fmt.Sprintf("s%03d call", n-1)) {
		t.Fatalf("first page:\n%s", out)
	}
	out = c.ok("", "--store", db, "object", id, "--after", last)
	if !strings.Contains(out, "used by 2 sessions") || strings.Contains(out, "--after") || !strings.Contains(out, fmt.Sprintf("s%03d call 1", n-1)) {
		t.Fatalf("second page:\n%s", out)
	}
}

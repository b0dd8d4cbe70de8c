package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// `ctxstore object` of a file two sessions read answers with the good
// session's calls when the other session's object is damaged in the
// store, naming the damaged one, and the damaged object's own history
// marks it, exit 0 both: one bad object never fails the command for
// every object.
func TestCLIObjectWithBadSession(t *testing.T) {
	c := newCLI(t)
	db := c.path("s.db")
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	shared := ""
	for _, sid := range []string{"good", "bad"} {
		l := inspecttest.NewLive(t, st, sid)
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
	inspecttest.BreakSessionObject(t, st, "bad")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out := c.ok("", "--store", db, "object", docs[0][store.IDKey].(string))
	if !strings.Contains(out, "used by 1 sessions") || !strings.Contains(out, "good call 1") ||
		!strings.Contains(out, "session bad left out") || !strings.Contains(out, "identity_hash") {
		t.Fatalf("object of the shared file:\n%s", out)
	}
	out = c.ok("", "--store", db, "object", objects.SessionObjectID("bad"))
	if !strings.Contains(out, "not a valid object") || !strings.Contains(out, "identity_hash") {
		t.Fatalf("object of the damaged session object:\n%s", out)
	}
}

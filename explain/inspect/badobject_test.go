package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// badObjectStore makes sessions "good" and "bad" that both read one
// file, and then breaks session "bad"'s session object in the store (its
// identity_hash no longer matches). It returns the file's object id.
func badObjectStore(t *testing.T) (store.Store, string) {
	t.Helper()
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	var fileID string
	shared := ""
	for _, sid := range []string{"good", "bad"} {
		l := inspecttest.NewLive(t, se.Store, sid)
		l.Turn("read it")
		if shared == "" {
			shared = l.File("shared.go", "package shared\n")
		}
		l.Read(shared)
		l.Call(time.Second)
		docs, err := se.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", string(objects.KindFile))}})
		if err != nil || len(docs) == 0 {
			t.Fatalf("no file object: %v", err)
		}
		fileID = docs[0][store.IDKey].(string)
	}
	inspecttest.BreakSessionObject(t, se.Store, "bad")
	return se.Store, fileID
}

// One session whose session object is self-inconsistent never breaks the
// object pages of others: an object both sessions use is read with the
// good session's calls and the bad session marked unreadable (not an
// error for the whole store), the bad session's own object page marks the
// object, and the bad session's page shows what it can.
func TestBadObjectDoesNotBreakOthers(t *testing.T) {
	st, fileID := badObjectStore(t)
	ctx := context.Background()
	in := inspect.New(st, inspect.Options{})
	o, err := in.Object(ctx, fileID, "")
	if err != nil {
		t.Fatalf("object page of a file with one bad session in the store: %v", err)
	}
	if len(o.Sessions) != 1 || o.Sessions[0] != "good" || len(o.Versions) == 0 || len(o.Versions[0].Shown) == 0 {
		t.Fatalf("object: sessions %v, versions %+v; want good's calls", o.Sessions, o.Versions)
	}
	if len(o.Unreadable) != 1 || o.Unreadable[0].Session != "bad" || !strings.Contains(o.Unreadable[0].Error, "identity_hash") {
		t.Fatalf("unreadable: %+v, want session bad named with the field", o.Unreadable)
	}
	head, err := in.Object(ctx, objects.SessionObjectID("bad"), "")
	if err != nil {
		t.Fatalf("the bad object's own page: %v", err)
	}
	if !strings.Contains(head.Invalid, "identity_hash") || len(head.Versions) == 0 {
		t.Fatalf("the bad object's page: invalid %q, %d versions; want it marked", head.Invalid, len(head.Versions))
	}
	good, err := in.Object(ctx, objects.SessionObjectID("good"), "")
	if err != nil || good.Invalid != "" {
		t.Fatalf("a good object: %v, invalid %q", err, good.Invalid)
	}
	d, err := in.Session(ctx, "bad")
	if err != nil {
		t.Fatalf("the bad session's page: %v", err)
	}
	if d.Calls != 1 || !strings.Contains(d.StateError, "identity_hash") {
		t.Fatalf("the bad session: %d calls, state error %q", d.Calls, d.StateError)
	}
	if _, err := in.Object(ctx, "no-such-object", ""); !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("a missing object: %v", err)
	}
}

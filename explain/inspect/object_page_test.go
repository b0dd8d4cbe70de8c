package inspect_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// countingStore counts the reads made through it.
type countingStore struct {
	store.Store
	reads atomic.Int64
}

func (c *countingStore) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	c.reads.Add(1)
	return c.Store.Entity(ctx, id, b)
}

func (c *countingStore) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	c.reads.Add(1)
	return c.Store.EntityTx(ctx, id, b)
}

func (c *countingStore) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	c.reads.Add(1)
	return c.Store.History(ctx, id, o)
}

func (c *countingStore) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	c.reads.Add(1)
	return c.Store.Query(ctx, q)
}

// An object's page reads the sessions that index it a page at a time: with
// many sessions using one file, the first page's reads are the same
// whether the store holds a few more sessions than a page or many more,
// and following More gives every session once, with its calls.
func TestObjectPageBounded(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	var shared, fileID string
	using := func(from, to int) {
		for i := from; i < to; i++ {
			l := inspecttest.NewLive(t, se.Store, fmt.Sprintf("s%03d", i))
			l.Turn("read it")
			if shared == "" {
				shared = l.File("shared.go", "package shared\n")
			}
			l.Read(shared)
			l.Call(time.Second)
		}
	}
	firstPage := func() (*inspect.Object, int64) {
		cs := &countingStore{Store: se.Store}
		o, err := inspect.New(cs, inspect.Options{}).Object(ctx, fileID, "")
		if err != nil {
			t.Fatal(err)
		}
		return o, cs.reads.Load()
	}
	few := inspect.ObjectSessionsShown + 5
	using(0, few)
	docs, err := se.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", string(objects.KindFile))}, Find: []string{store.IDKey}})
	if err != nil || len(docs) != 1 {
		t.Fatalf("file objects: %v %v", docs, err)
	}
	fileID = docs[0][store.IDKey].(string)
	o1, reads1 := firstPage()
	many := few + 2*inspect.ObjectSessionsShown
	using(few, many)
	o2, reads2 := firstPage()
	if len(o1.Sessions) != inspect.ObjectSessionsShown || o1.More == "" || !slices.Equal(o1.Sessions, o2.Sessions) || o1.More != o2.More {
		t.Fatalf("first page: %d sessions, more %q; with more sessions %d, more %q", len(o1.Sessions), o1.More, len(o2.Sessions), o2.More)
	}
	if reads2 != reads1 {
		t.Fatalf("the first page read the store %d times with %d sessions and %d times with %d", reads1, few, reads2, many)
	}

	// The pages together: every session once, in id order, each with its
	// call showing the file.
	in := inspect.New(se.Store, inspect.Options{})
	var got []string
	shownBy := map[string]bool{}
	after := ""
	for pages := 0; ; pages++ {
		if pages > many {
			t.Fatal("pages do not end")
		}
		o, err := in.ObjectFrom(ctx, fileID, "", after)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Sessions) > inspect.ObjectSessionsShown || o.After != after {
			t.Fatalf("page after %q: %d sessions, after %q", after, len(o.Sessions), o.After)
		}
		got = append(got, o.Sessions...)
		for _, v := range o.Versions {
			for _, s := range v.Shown {
				shownBy[s.Session] = true
			}
		}
		if o.More == "" {
			break
		}
		after = o.More
	}
	var want []string
	for i := range many {
		want = append(want, fmt.Sprintf("s%03d", i))
	}
	if !slices.Equal(got, want) || len(shownBy) != many {
		t.Fatalf("pages: sessions %v, %d with calls shown; want %v", got, len(shownBy), want)
	}
}

// Sessions that do not use the object bound a page too: a page reads at
// most ObjectSessionsRead sessions' states, and a token limited to one
// session still finds the object its session uses past them.
func TestObjectPageBoundedUnused(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	for i := range inspect.ObjectSessionsRead + 10 {
		if _, err := session.Create(ctx, se.Store, fmt.Sprintf("a%03d", i), session.CreateOptions{SystemPrompt: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	l := inspecttest.NewLive(t, se.Store, "z")
	l.Turn("read it")
	l.Read(l.File("mine.go", "package mine\n"))
	l.Call(time.Second)
	docs, err := se.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", string(objects.KindFile))}, Find: []string{store.IDKey}})
	if err != nil || len(docs) != 1 {
		t.Fatalf("file objects: %v %v", docs, err)
	}
	fileID := docs[0][store.IDKey].(string)
	cs := &countingStore{Store: se.Store}
	o, err := inspect.New(cs, inspect.Options{}).Object(ctx, fileID, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Sessions) != 0 || o.More != fmt.Sprintf("a%03d", inspect.ObjectSessionsRead-1) {
		t.Fatalf("first page: sessions %v, more %q", o.Sessions, o.More)
	}
	// A session's state is one read (its head; its chunks a second): the
	// page's reads are those of the sessions it read, not of the store's.
	if n := cs.reads.Load(); n > 2*inspect.ObjectSessionsRead+10 {
		t.Fatalf("the first page read the store %d times", n)
	}
	o, err = inspect.New(se.Store, inspect.Options{}).ObjectFrom(ctx, fileID, "", o.More)
	if err != nil || !slices.Equal(o.Sessions, []string{"z"}) || o.More != "" {
		t.Fatalf("second page: %v %+v", err, o)
	}
	lim := inspect.New(se.Store, inspect.Options{Allowed: func(sid string) bool { return sid == "z" }})
	if o, err := lim.Object(ctx, fileID, ""); err != nil || !slices.Equal(o.Sessions, []string{"z"}) {
		t.Fatalf("limited grant: %v %+v", err, o)
	}
}

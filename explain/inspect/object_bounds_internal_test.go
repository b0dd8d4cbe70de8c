package inspect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// readLog records the history reads' limits and counts the call records
// read.
type readLog struct {
	store.Store
	limits  []int
	records int
}

func (r *readLog) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	r.limits = append(r.limits, o.Limit)
	return r.Store.History(ctx, id, o)
}

func (r *readLog) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	if strings.HasPrefix(id, "ctx-") {
		r.records++
	}
	return r.Store.Entity(ctx, id, b)
}

// An object's page reads at most ObjectVersionsShown versions of its
// history (its latest) and walks at most ObjectCallsWalked calls of a
// session, and says where it stopped; under the bounds it shows all.
func TestObjectPageVersionsAndCallsBounded(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	l := inspecttest.NewLive(t, se.Store, "s")
	l.Turn("read it, again and again")
	path := l.File("f.go", "package f // 0\n")
	for i := range 6 {
		l.File("f.go", fmt.Sprintf("package f // %d\n", i))
		l.Read(path)
		l.Call(time.Second)
	}
	for range 6 {
		l.Bash("true", "")
		l.Call(time.Second)
	}
	docs, err := se.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", string(objects.KindFile))}, Find: []string{store.IDKey}})
	if err != nil || len(docs) != 1 {
		t.Fatalf("file objects: %v %v", docs, err)
	}
	id := docs[0][store.IDKey].(string)

	whole, err := New(se.Store, Options{}).Object(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Versions) != 6 || whole.OlderVersions || len(whole.CallsCut) != 0 {
		t.Fatalf("under the bounds: %d versions, older %v, cut %v; want 6, none", len(whole.Versions), whole.OlderVersions, whole.CallsCut)
	}

	defer func(v, c int) { objectVersionsShown, objectCallsWalked = v, c }(objectVersionsShown, objectCallsWalked)
	objectVersionsShown, objectCallsWalked = 3, 4
	r := &readLog{Store: se.Store}
	o, err := New(r, Options{}).Object(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.limits) != 1 || r.limits[0] != 4 {
		t.Errorf("history reads with limits %v, want one of 4", r.limits)
	}
	if r.records > 4 {
		t.Errorf("%d call records read, want at most 4", r.records)
	}
	if len(o.Versions) != 3 || !o.OlderVersions {
		t.Fatalf("%d versions, older %v; want the latest 3 and older", len(o.Versions), o.OlderVersions)
	}
	for i, v := range o.Versions {
		if v.Tx != whole.Versions[3+i].Tx {
			t.Errorf("version %d is @%d, want the latest three (@%d)", i, v.Tx, whole.Versions[3+i].Tx)
		}
	}
	if len(o.CallsCut) != 1 || o.CallsCut[0] != (CallsCut{Session: "s", Walked: 4, Calls: 12}) {
		t.Errorf("calls cut %+v, want s: 4 of 12", o.CallsCut)
	}
	for _, v := range o.Versions {
		for _, sh := range v.Shown {
			if sh.To > 4 {
				t.Errorf("shown up to call %d, past the 4 walked: %+v", sh.To, sh)
			}
		}
	}
}

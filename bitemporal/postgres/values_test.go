package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/ctxstore/ctxstore/store"
)

// TestValuesWalkTheIndex: listing the sessions that have commits answers
// as store.ValuesByQuery, and the next value is found by a seek in the
// field's value index (migration 00003), not by reading the versions
// holding the field: the plan of the statement Values runs names the
// index.
func TestValuesWalkTheIndex(t *testing.T) {
	ctx := context.Background()
	u := newSchema(t)
	st := openURL(t, u, nil)
	var ops []store.Op
	for i := range 3000 {
		ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("big-%d", i), "type": "commit", "session": "big"}))
	}
	for i := range 3 {
		ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("small-%d", i), "type": "commit", "session": "small"}),
			store.Put(store.Doc{store.IDKey: fmt.Sprintf("other-%d", i), "type": "other", "session": "elsewhere"}))
	}
	if _, err := store.SubmitWait(ctx, st, ops); err != nil {
		t.Fatal(err)
	}
	q := store.Query{Where: []store.Pred{store.Where("type", "commit")}}
	got, err := st.Values(ctx, q, "session", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := store.ValuesByQuery(ctx, st, q, "session", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || !slices.Equal(got, []string{"big", "small"}) {
		t.Fatalf("Values %v, ValuesByQuery %v, want [big small]", got, want)
	}
	if got, err := st.Values(ctx, q, "session", "big", 1); err != nil || !slices.Equal(got, []string{"small"}) {
		t.Fatalf("Values after big, limit 1: %v %v", got, err)
	}
	db, err := sqlx.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "ANALYZE docs"); err != nil {
		t.Fatal(err)
	}
	var plan []string
	if err := db.SelectContext(ctx, &plan, `EXPLAIN SELECT (d.doc ->> 'session') COLLATE "C" FROM docs d WHERE jsonb_typeof(d.doc -> 'session') = 'string' AND (d.doc ->> 'session') COLLATE "C" > $1 ORDER BY 1 LIMIT 1`, "big"); err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "\n"); !strings.Contains(p, "docs_value_session") {
		t.Errorf("the next value is not read from the value index:\n%s", p)
	}
}

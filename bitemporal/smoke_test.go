package bitemporal_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

func day(s string) time.Time { t, _ := time.Parse("2006-01-02", s); return t }

func TestSmokeRange(t *testing.T) {
	ctx := context.Background()
	s, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doc := func(v int) store.Doc { return store.Doc{"xt/id": "ivan", "value": json.Number(string(rune('0' + v)))} }
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.PutAt(doc(5), day("2019-11-25"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.PutRange(doc(6), day("2019-11-26"), day("2019-11-29"))}); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, "ivan", store.HistoryOptions{Order: store.Asc, WithDocs: true, Basis: store.Basis{ValidTime: day("9999-01-01")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		vt string
		tx int64
		v  string
	}{{"2019-11-25", 0, "5"}, {"2019-11-26", 1, "6"}, {"2019-11-29", 0, "5"}}
	if len(h) != len(want) {
		t.Fatalf("history %+v", h)
	}
	for i, w := range want {
		if !h[i].ValidTime.Equal(day(w.vt)) || h[i].TxID != w.tx || h[i].Doc["value"].(json.Number).String() != w.v {
			t.Errorf("row %d = %+v, want %+v", i, h[i], w)
		}
	}
	res, err := s.Query(ctx, store.Query{Where: []store.Pred{store.Where("value", 5)}, Basis: store.Basis{ValidTime: day("2019-11-27")}})
	if err != nil || len(res) != 0 {
		t.Fatalf("query at 11-27: %v %v", res, err)
	}
	res, err = s.Query(ctx, store.Query{Where: []store.Pred{store.Where("value", 5)}, Basis: store.Basis{ValidTime: day("2019-11-30")}, Find: []string{"value"}})
	if err != nil || len(res) != 1 {
		t.Fatalf("query at 11-30: %v %v", res, err)
	}
}

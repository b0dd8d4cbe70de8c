package xtdb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// The benchmarks time each driver operation against raw HTTP round trips of
// the same requests to the same server (the driver's overhead, "x-raw"),
// and the same operation on the embedded SQLite backend ("x-sqlite": how
// much slower XTDB is). See docs/benchmarks.md.

var bt0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type benchEnv struct {
	base string
	x    *xtdb.Store
	sq   *bitemporal.Store
	hc   *http.Client
	pfx  string
}

func newBenchEnv(b *testing.B) *benchEnv {
	base := xtdbtest.ForTest(b)
	x, err := xtdb.Open(context.Background(), base, xtdb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sq, err := bitemporal.Open(context.Background(), b.TempDir()+"/bench.db", bitemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Close(); sq.Close() })
	return &benchEnv{base: base, x: x, sq: sq, hc: &http.Client{}, pfx: "bench" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"}
}

func (e *benchEnv) rawGet(b *testing.B, path string, q url.Values) []byte {
	req, _ := http.NewRequest(http.MethodGet, e.base+"/_xtdb"+path+"?"+q.Encode(), nil)
	req.Header.Set("Accept", "application/edn")
	resp, err := e.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 && resp.StatusCode != 202 {
		b.Fatalf("%s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

func (e *benchEnv) rawSubmitAwait(b *testing.B, doc store.Doc, vt time.Time) {
	body, _ := json.Marshal(map[string]any{"tx-ops": []any{[]any{"put", doc, store.FormatTime(vt)}}})
	req, _ := http.NewRequest(http.MethodPost, e.base+"/_xtdb/submit-tx", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/edn")
	resp, err := e.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The tx id is the first integer after "tx-id ".
	i := bytes.Index(out, []byte("tx-id ")) + len("tx-id ")
	j := i
	for j < len(out) && out[j] >= '0' && out[j] <= '9' {
		j++
	}
	e.rawGet(b, "/await-tx", url.Values{"tx-id": {string(out[i:j])}, "timeout": {"30000"}})
}

func (e *benchEnv) doc(i, v int) store.Doc {
	return store.Doc{"xt/id": e.pfx + strconv.Itoa(i), "type": e.pfx, "n": v}
}

// timeIt runs f n times and returns the mean duration.
func timeIt(n int, f func(i int)) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		f(i)
	}
	return time.Since(start) / time.Duration(n)
}

func report(b *testing.B, unit string, drv, raw, sq time.Duration) {
	b.ReportMetric(float64(drv.Nanoseconds()), "ns/"+unit)
	b.ReportMetric(float64(raw.Nanoseconds()), "raw-ns/"+unit)
	b.ReportMetric(float64(sq.Nanoseconds()), "sqlite-ns/"+unit)
	b.ReportMetric(float64(drv)/float64(raw), "x-raw")
	b.ReportMetric(float64(drv)/float64(sq), "x-sqlite")
}

func BenchmarkPutAwait(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	n := b.N
	// The driver's Submit + AwaitTx send the same two requests as the raw
	// loop; store.SubmitWait adds a tx-committed round trip to learn whether
	// a match aborted the transaction.
	drv := timeIt(n, func(i int) {
		tx, err := e.x.Submit(ctx, []store.Op{store.PutAt(e.doc(i, i), bt0)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.x.AwaitTx(ctx, tx.ID, 0); err != nil {
			b.Fatal(err)
		}
	})
	raw := timeIt(n, func(i int) { e.rawSubmitAwait(b, e.doc(i, i+1), bt0) })
	sq := timeIt(n, func(i int) {
		if _, err := store.SubmitWait(ctx, e.sq, []store.Op{store.PutAt(e.doc(i, i), bt0)}); err != nil {
			b.Fatal(err)
		}
	})
	report(b, "put", drv, raw, sq)
}

// seed writes 100 entities with 10 versions each to both backends.
func (e *benchEnv) seed(b *testing.B) int64 {
	ctx := context.Background()
	var last store.Tx
	for v := 0; v < 10; v++ {
		ops := make([]store.Op, 100)
		for i := range ops {
			ops[i] = store.PutAt(e.doc(i, v), bt0.Add(time.Duration(v)*time.Hour))
		}
		var err error
		if last, err = store.SubmitWait(ctx, e.x, ops); err != nil {
			b.Fatal(err)
		}
		if _, err := e.sq.Submit(ctx, ops); err != nil {
			b.Fatal(err)
		}
	}
	return last.ID
}

func BenchmarkAsOfRead(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	last := e.seed(b)
	b.ResetTimer()
	vt := bt0.Add(5*time.Hour + time.Minute)
	drv := timeIt(b.N, func(i int) {
		if _, err := e.x.Entity(ctx, e.pfx+strconv.Itoa(i%100), store.AtTx(last, vt)); err != nil {
			b.Fatal(err)
		}
	})
	raw := timeIt(b.N, func(i int) {
		e.rawGet(b, "/entity", url.Values{"eid": {e.pfx + strconv.Itoa(i%100)}, "tx-id": {strconv.FormatInt(last, 10)}, "valid-time": {store.FormatTime(vt)}})
	})
	sq := timeIt(b.N, func(i int) {
		if _, err := e.sq.Entity(ctx, e.pfx+strconv.Itoa(i%100), store.Basis{ValidTime: vt}); err != nil {
			b.Fatal(err)
		}
	})
	report(b, "read", drv, raw, sq)
}

func BenchmarkHistory(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	e.seed(b)
	b.ResetTimer()
	far := bt0.AddDate(100, 0, 0)
	opts := store.HistoryOptions{Order: store.Asc, WithDocs: true, Basis: store.Basis{ValidTime: far}}
	drv := timeIt(b.N, func(i int) {
		if h, err := e.x.History(ctx, e.pfx+strconv.Itoa(i%100), opts); err != nil || len(h) != 10 {
			b.Fatal(len(h), err)
		}
	})
	raw := timeIt(b.N, func(i int) {
		e.rawGet(b, "/entity", url.Values{"eid": {e.pfx + strconv.Itoa(i%100)}, "history": {"true"}, "sort-order": {"asc"},
			"with-docs": {"true"}, "with-corrections": {"false"}, "valid-time": {store.FormatTime(far)}})
	})
	sq := timeIt(b.N, func(i int) {
		if h, err := e.sq.History(ctx, e.pfx+strconv.Itoa(i%100), opts); err != nil || len(h) != 10 {
			b.Fatal(len(h), err)
		}
	})
	report(b, "history", drv, raw, sq)
}

func BenchmarkQuery(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	e.seed(b)
	b.ResetTimer()
	vt := bt0.Add(5*time.Hour + time.Minute)
	q := store.Query{Where: []store.Pred{store.Where("type", e.pfx)}, Find: []string{"n"}, Limit: 20, Basis: store.Basis{ValidTime: vt}}
	drv := timeIt(b.N, func(i int) {
		if res, err := e.x.Query(ctx, q); err != nil || len(res) != 20 {
			b.Fatal(len(res), err)
		}
	})
	// The same Datalog text the driver sends (see datalog in query.go).
	text := `{:query {:find [(pull e [:xt/id :n]) id] :where [[e :type ` + strconv.Quote(e.pfx) +
		`] [e :xt/id id]] :order-by [[id :asc]] :limit 20}}`
	raw := timeIt(b.N, func(i int) {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/_xtdb/query?valid-time="+url.QueryEscape(store.FormatTime(vt)), bytes.NewReader([]byte(text)))
		req.Header.Set("Content-Type", "application/edn")
		req.Header.Set("Accept", "application/edn")
		resp, err := e.hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	})
	sq := timeIt(b.N, func(i int) {
		if res, err := e.sq.Query(ctx, q); err != nil || len(res) != 20 {
			b.Fatal(len(res), err)
		}
	})
	report(b, "query", drv, raw, sq)
}

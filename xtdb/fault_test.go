package xtdb_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// faultProxy sits between the driver and the real server and injects
// failures: it is the only fake in these tests, and only for the faults.
type faultProxy struct {
	*httptest.Server
	// failReads makes the next n GET requests fail with a closed connection
	// before they reach the server.
	failReads atomic.Int32
	// loseSubmitReply makes the next n submit-tx requests reach the server
	// but lose the reply (the connection is closed instead).
	loseSubmitReply atomic.Int32
	// unavailable answers 503 to the next n requests.
	unavailable atomic.Int32
	// dropSubmit closes the connection of the next n submit-tx requests
	// without forwarding them: sent, but never arrived.
	dropSubmit atomic.Int32
	// stall makes the next n requests other than await-tx hang until the
	// client gives up: a node that stopped answering.
	stall atomic.Int32
	// notFound answers 404 to the next n requests (a wrong route, a proxy).
	notFound atomic.Int32
	// emptyAscFrom answers () to the next n ascending history reads with a
	// start-valid-time, as a stock XTDB 1.24.5 RocksDB node does for the
	// entity whose keys sort last (docs/xtdb-cluster.md).
	emptyAscFrom atomic.Int32
	// unendedHistory sends the next n history answers without their
	// closing bracket and holds the connection until the client drops it:
	// a history longer than the client will ever read.
	unendedHistory atomic.Int32
	// dropped counts unended answers whose client dropped the connection.
	dropped atomic.Int32
	submits atomic.Int32
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &faultProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hijackClose := func() {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}
		if !strings.HasSuffix(r.URL.Path, "/await-tx") && p.stall.Load() > 0 {
			p.stall.Add(-1)
			<-r.Context().Done()
			return
		}
		if p.notFound.Load() > 0 {
			p.notFound.Add(-1)
			http.Error(w, "injected 404", http.StatusNotFound)
			return
		}
		if q := r.URL.Query(); q.Get("history") == "true" && q.Get("sort-order") == "asc" && q.Has("start-valid-time") && p.emptyAscFrom.Load() > 0 {
			p.emptyAscFrom.Add(-1)
			w.Header().Set("Content-Type", "application/edn")
			_, _ = w.Write([]byte("()"))
			return
		}
		if r.URL.Query().Get("history") == "true" && p.unendedHistory.Load() > 0 {
			p.unendedHistory.Add(-1)
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			body := strings.TrimSpace(rec.Body.String())
			w.Header().Set("Content-Type", "application/edn")
			_, _ = w.Write([]byte(strings.TrimSuffix(body, ")") + " "))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				p.dropped.Add(1)
			case <-time.After(time.Minute):
			}
			return
		}
		if p.unavailable.Load() > 0 {
			p.unavailable.Add(-1)
			http.Error(w, "injected 503", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodGet && p.failReads.Load() > 0 {
			p.failReads.Add(-1)
			hijackClose()
			return
		}
		if strings.HasSuffix(r.URL.Path, "/submit-tx") {
			p.submits.Add(1)
			if p.dropSubmit.Load() > 0 {
				p.dropSubmit.Add(-1)
				hijackClose()
				return
			}
			if p.loseSubmitReply.Load() > 0 {
				p.loseSubmitReply.Add(-1)
				// Forward, let the server log the tx, then drop the reply.
				rec := httptest.NewRecorder()
				rp.ServeHTTP(rec, r)
				hijackClose()
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func openVia(t *testing.T, base string) *xtdb.Store {
	t.Helper()
	s, err := xtdb.Open(context.Background(), base, xtdb.Options{Backoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestReadsRetryTransientFailures(t *testing.T) {
	p := newFaultProxy(t, xtdbtest.ForTest(t))
	s := openVia(t, p.URL)
	ctx := context.Background()
	id := "fault-read-" + time.Now().Format("150405.000000")
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.Put(store.Doc{"xt/id": id, "v": "x"})}); err != nil {
		t.Fatal(err)
	}
	p.failReads.Store(3)
	doc, err := s.Entity(ctx, id, store.Basis{})
	if err != nil || doc["v"] != "x" {
		t.Fatalf("entity after 3 dropped connections: %v %v", doc, err)
	}
	p.unavailable.Store(2)
	if _, err := s.History(ctx, id, store.HistoryOptions{Order: store.Asc}); err != nil {
		t.Fatalf("history after two 503s: %v", err)
	}
	// More failures than retries: the error says the server is unavailable.
	p.failReads.Store(100)
	_, err = s.Entity(ctx, id, store.Basis{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("entity with the server gone: %v, want ErrUnavailable", err)
	}
	p.failReads.Store(0)
}

// XTDB answers a history read with a list (empty for an unknown entity),
// never 404: a 404 is an error naming the entity, not an empty history
// (docs/xtdb-cluster.md, "Known problem").
func TestHistory404IsAnError(t *testing.T) {
	p := newFaultProxy(t, xtdbtest.ForTest(t))
	s := openVia(t, p.URL)
	ctx := context.Background()
	if h, err := s.History(ctx, "fault-no-such-entity", store.HistoryOptions{Order: store.Asc}); err != nil || len(h) != 0 {
		t.Fatalf("history of an unknown entity: %v %v, want an empty history", h, err)
	}
	p.notFound.Store(1)
	_, err := s.History(ctx, "fault-no-such-entity", store.HistoryOptions{Order: store.Asc})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "fault-no-such-entity") || !strings.Contains(err.Error(), "404") {
		t.Fatalf("history answered 404: %v, want ErrUnavailable naming the entity and the 404", err)
	}
}

// TestAscendingHistoryFromBeforeTheFirstVersion: a server answering () to
// an ascending history read from a start valid time (XTDB 1.24.5's RocksDB
// bug, injected) still gives the rows from the start on, and a history
// really empty from the start stays empty.
func TestAscendingHistoryFromBeforeTheFirstVersion(t *testing.T) {
	p := newFaultProxy(t, xtdbtest.ForTest(t))
	s := openVia(t, p.URL)
	ctx := context.Background()
	id := "fault-asc-" + time.Now().Format("150405.000000")
	v1, v2 := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.PutAt(store.Doc{"xt/id": id, "n": 1}, v1), store.PutAt(store.Doc{"xt/id": id, "n": 2}, v2)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		from time.Time
		want []time.Time
	}{
		{"from before the first version", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), []time.Time{v1, v2}},
		{"from between the versions", time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC), []time.Time{v2}},
		{"from after the last version", time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			from := c.from
			read := func() []time.Time {
				h, err := s.History(ctx, id, store.HistoryOptions{Order: store.Asc, StartValidTime: &from})
				if err != nil {
					t.Fatal(err)
				}
				var got []time.Time
				for _, e := range h {
					got = append(got, e.ValidTime)
				}
				return got
			}
			// The server's own answer, then the answer through the fault.
			if got := read(); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("the server's valid times %v, want %v", got, c.want)
			}
			p.emptyAscFrom.Store(1)
			if got := read(); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("valid times through the fault %v, want %v", got, c.want)
			}
			if p.emptyAscFrom.Load() != 0 {
				t.Fatal("the injected empty answer was not used")
			}
		})
	}
}

// TestHistoryLimitReadsNoFurther: XTDB's history endpoint takes no limit,
// so a limited read must stop reading the answer after its rows and drop
// the connection. The proxy sends a real answer without its end and holds
// the connection: a read that went on reading would wait for the rest.
func TestHistoryLimitReadsNoFurther(t *testing.T) {
	p := newFaultProxy(t, xtdbtest.ForTest(t))
	s, err := xtdb.Open(context.Background(), p.URL, xtdb.Options{Backoff: 5 * time.Millisecond, RequestTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	id := "fault-limit-" + time.Now().Format("150405.000000")
	var ops []store.Op
	for i := range 5 {
		ops = append(ops, store.PutAt(store.Doc{"xt/id": id, "n": i}, time.Date(2021, 1, 1+i, 0, 0, 0, 0, time.UTC)))
	}
	if _, err := store.SubmitWait(ctx, s, ops); err != nil {
		t.Fatal(err)
	}
	for _, order := range []store.SortOrder{store.Asc, store.Desc} {
		p.unendedHistory.Store(1)
		start := time.Now()
		h, err := s.History(ctx, id, store.HistoryOptions{Order: order, WithDocs: true, Limit: 2})
		if err != nil {
			t.Fatalf("%s history, limit 2: %v", order, err)
		}
		if len(h) != 2 {
			t.Fatalf("%s history, limit 2: %d rows", order, len(h))
		}
		first := 0
		if order == store.Desc {
			first = 4
		}
		if fmt.Sprint(h[0].Doc["n"]) != fmt.Sprint(first) {
			t.Fatalf("%s history, limit 2: first row %v, want n=%d", order, h[0].Doc, first)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%s history, limit 2, took %s: it waited for the rest of the answer", order, d)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.dropped.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := p.dropped.Load(); got != 2 {
		t.Fatalf("%d of 2 held answers were dropped by the client", got)
	}
}

// TestSubmitWithUnknownOutcome breaks the connection of a submit after the
// request was sent: either the server logged the transaction (its reply is
// lost) or it never saw it. The driver must find out which before sending
// again, so the transaction lands exactly once.
func TestSubmitWithUnknownOutcome(t *testing.T) {
	base := xtdbtest.ForTest(t)
	for _, c := range []struct {
		name  string
		fault func(*faultProxy)
		sends int32
	}{
		{"reply lost after the server logged it", func(p *faultProxy) { p.loseSubmitReply.Store(1) }, 1},
		{"request lost before the server", func(p *faultProxy) { p.dropSubmit.Store(1) }, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newFaultProxy(t, base)
			s := openVia(t, p.URL)
			ctx := context.Background()
			id := "fault-submit-" + time.Now().Format("150405.000000")
			vt := time.Date(2021, 3, 4, 5, 6, 7, 8e6, time.UTC)
			c.fault(p)
			tx, err := store.SubmitWait(ctx, s, []store.Op{store.PutAt(store.Doc{"xt/id": id, "n": 1}, vt)})
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			if got := p.submits.Load(); got != c.sends {
				t.Errorf("the driver sent the transaction %d times, want %d", got, c.sends)
			}
			// Exactly one transaction wrote the entity, and it is the one reported.
			h, err := openVia(t, base).History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, Basis: store.Basis{ValidTime: vt.AddDate(1, 0, 0)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != 1 || h[0].TxID != tx.ID {
				t.Fatalf("history %+v, want one point by tx %d", h, tx.ID)
			}
		})
	}
}

func TestSubmitRetriedWhenDialFails(t *testing.T) {
	base := xtdbtest.ForTest(t)
	var dials atomic.Int32
	failing := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) <= 3 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("injected: connection refused")}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	s, err := xtdb.Open(context.Background(), base, xtdb.Options{HTTPClient: &http.Client{Transport: failing}, Backoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatalf("open (its status read retries the refused dials): %v", err)
	}
	defer s.Close()
	failing.CloseIdleConnections()
	dials.Store(0)
	id := "fault-dial-" + time.Now().Format("150405.000000")
	tx, err := store.SubmitWait(context.Background(), s, []store.Op{store.Put(store.Doc{"xt/id": id})})
	if err != nil {
		t.Fatalf("submit while dials are refused: %v", err)
	}
	if _, err := s.Entity(context.Background(), id, store.AtTx(tx.ID, time.Time{})); err != nil {
		t.Fatalf("entity written through the retried submit: %v", err)
	}
}

// TestRequestTimeout: a node that stops answering gives ErrUnavailable
// after Options.RequestTimeout instead of a call that never returns, and
// AwaitTx, a long poll, may wait its own timeout beyond it.
func TestRequestTimeout(t *testing.T) {
	p := newFaultProxy(t, xtdbtest.ForTest(t))
	s, err := xtdb.Open(context.Background(), p.URL, xtdb.Options{RequestTimeout: 300 * time.Millisecond, Backoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	p.stall.Store(1)
	done := make(chan error, 1)
	go func() { _, err := s.Entity(ctx, "stalled", store.Basis{}); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "did not answer within 300ms") {
			t.Fatalf("Entity from a stalled node: %v, want ErrUnavailable saying it did not answer", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Entity from a stalled node has not returned after 20s")
	}
	// An await of the next tx outlives the request timeout: it ends when
	// the tx lands, submitted well after 300ms.
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	if st.LatestSubmitted != nil {
		next = st.LatestSubmitted.ID + 1
	}
	awaited := make(chan error, 1)
	go func() { _, err := s.AwaitTx(ctx, next, 20*time.Second); awaited <- err }()
	time.Sleep(time.Second)
	id := "timeout-" + time.Now().Format("150405.000000")
	if _, err := s.Submit(ctx, []store.Op{store.Put(store.Doc{"xt/id": id})}); err != nil {
		t.Fatal(err)
	}
	if err := <-awaited; err != nil {
		t.Fatalf("AwaitTx(%d, 20s) with a 300ms request timeout: %v", next, err)
	}
}

package httpapi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestHistoryPages: a history longer than the page answers the page and a
// cursor, and following the cursors gives every entry once, in order, in
// either order and with or without corrections.
func TestHistoryPages(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(i, v int) {
		tx, err := e.st.Submit(ctx, []store.Op{store.PutAt(store.Doc{store.IDKey: "h", "v": v}, t0.Add(time.Duration(i)*time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.AwaitTx(ctx, tx.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 7 {
		put(i, i)
	}
	put(2, 20) // corrections: a second version at the same valid time
	put(5, 50)
	put(5, 51)

	for _, order := range []string{"asc", "desc"} {
		for _, corr := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s corrections=%v", order, corr), func(t *testing.T) {
				q := url.Values{"order": {order}, "with_corrections": {fmt.Sprint(corr)}}
				var all HistoryResponse
				e.ok("GET", "/v1/history/h?"+q.Encode(), nil, &all)
				want := 7
				if corr {
					want = 10
				}
				if len(all.Entries) != want || all.Next != "" {
					t.Fatalf("whole history: %d entries, next %q; want %d and none", len(all.Entries), all.Next, want)
				}
				q.Set("limit", "3")
				var got []store.HistoryEntry
				pages := 0
				for {
					var p HistoryResponse
					e.ok("GET", "/v1/history/h?"+q.Encode(), nil, &p)
					pages++
					if len(p.Entries) > 3 {
						t.Fatalf("page %d: %d entries, over the limit of 3", pages, len(p.Entries))
					}
					got = append(got, p.Entries...)
					if p.Next == "" {
						break
					}
					if len(p.Entries) != 3 || pages > 10 {
						t.Fatalf("page %d: %d entries with a next cursor", pages, len(p.Entries))
					}
					q.Set("cursor", p.Next)
				}
				if pages != (want+2)/3 {
					t.Errorf("%d pages, want %d", pages, (want+2)/3)
				}
				key := func(e store.HistoryEntry) string { return fmt.Sprint(e.ValidTime.UnixNano(), e.TxID) }
				a, b := make([]string, len(got)), make([]string, len(all.Entries))
				for i := range got {
					a[i] = key(got[i])
				}
				for i := range all.Entries {
					b[i] = key(all.Entries[i])
				}
				if !slices.Equal(a, b) {
					t.Errorf("pages followed:\n%v\nwant the whole history:\n%v", a, b)
				}
			})
		}
	}
	e.fails(http.StatusBadRequest, CodeBadRequest, "GET", "/v1/history/h?cursor=nope", nil)
	e.check = false // a limit over the maximum is outside the document too
	e.fails(http.StatusBadRequest, CodeBadRequest, "GET", fmt.Sprintf("/v1/history/h?limit=%d", MaxPageLimit+1), nil)
}

// TestCommitHistoryPages: a chain longer than the page answers the page
// and the commit to continue from; following it reaches the root with
// every commit once.
func TestCommitHistoryPages(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Principal = "alice" })
	var chain []string // root first
	parent := ""
	for i := range 5 {
		var c commits.Commit
		body := map[string]any{"content": fmt.Sprintf(`[{"type":"response","text":"%d"}]`, i),
			"session": "s1", "principal": "alice", "created": fmt.Sprintf("2026-01-0%dT00:00:00Z", i+1)}
		if parent != "" {
			body["parent"] = parent
		}
		e.ok("POST", "/v1/commits", body, &c)
		chain = append(chain, c.ID)
		parent = c.ID
	}
	slices.Reverse(chain) // tip first, as the history answers
	var got []string
	next, pages := chain[0], 0
	for next != "" {
		var h CommitHistoryResponse
		e.ok("GET", "/v1/commits/"+next+"/history?limit=2", nil, &h)
		if pages++; len(h.Commits) > 2 || pages > 5 {
			t.Fatalf("page %d: %d commits, over the limit of 2", pages, len(h.Commits))
		}
		for _, c := range h.Commits {
			got = append(got, c.ID)
		}
		next = h.Next
	}
	if !slices.Equal(got, chain) || pages != 3 {
		t.Errorf("%d pages followed: %v\nwant the chain %v", pages, got, chain)
	}
	var whole CommitHistoryResponse
	e.ok("GET", "/v1/commits/"+chain[0]+"/history", nil, &whole)
	if len(whole.Commits) != 5 || whole.Next != "" {
		t.Errorf("whole chain: %d commits, next %q", len(whole.Commits), whole.Next)
	}
	e.check = false // a limit over the maximum is outside the document too
	e.fails(http.StatusBadRequest, CodeBadRequest, "GET", fmt.Sprintf("/v1/commits/%s/history?limit=%d", chain[0], MaxPageLimit+1), nil)
}

// TestQueryBounded: a query answers at most its limit, or MaxPageLimit
// when it names none, and says when more matched.
func TestQueryBounded(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	ops := make([]store.Op, MaxPageLimit+1)
	for i := range ops {
		ops[i] = store.Put(store.Doc{store.IDKey: fmt.Sprintf("q%05d", i), "kind": "paged", "n": i})
	}
	tx, err := e.st.Submit(ctx, ops)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AwaitTx(ctx, tx.ID, 0); err != nil {
		t.Fatal(err)
	}
	where := []any{map[string]any{"field": "kind", "op": "eq", "value": "paged"}}
	var all QueryResponse
	e.ok("POST", "/v1/query", map[string]any{"where": where, "find": []string{"n"}}, &all)
	if len(all.Docs) != MaxPageLimit || !all.Truncated {
		t.Fatalf("no limit: %d documents, truncated %v; want %d and true", len(all.Docs), all.Truncated, MaxPageLimit)
	}
	var two QueryResponse
	e.ok("POST", "/v1/query", map[string]any{"where": where, "limit": 2}, &two)
	if len(two.Docs) != 2 || !two.Truncated || two.Docs[0][store.IDKey] != "q00000" {
		t.Fatalf("limit 2: %+v", two)
	}
	var rest QueryResponse
	e.ok("POST", "/v1/query", map[string]any{"where": append(where, map[string]any{"field": "n", "op": "gte", "value": MaxPageLimit}), "limit": 5}, &rest)
	if len(rest.Docs) != 1 || rest.Truncated {
		t.Fatalf("the last one: %+v", rest)
	}
	e.check = false // a limit over the maximum is outside the document too
	e.fails(http.StatusBadRequest, CodeBadRequest, "POST", "/v1/query", map[string]any{"where": where, "limit": MaxPageLimit + 1})
}

// historyReads wraps a store and records what each History read asked
// for and answered.
type historyReads struct {
	store.Store
	mu    sync.Mutex
	reads [][2]int // Limit, entries answered
}

func (h *historyReads) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	es, err := h.Store.History(ctx, id, o)
	h.mu.Lock()
	h.reads = append(h.reads, [2]int{o.Limit, len(es)})
	h.mu.Unlock()
	return es, err
}

func (h *historyReads) take() [][2]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.reads
	h.reads = nil
	return r
}

// A history page reads one page and the entry after it from the store,
// not the history from the cursor to its end; from a cursor inside a valid
// time of many corrections it reads past those the previous page answered
// and no further than twice what it needs.
func TestHistoryPageReadsOnePage(t *testing.T) {
	var hr *historyReads
	e := newEnv(t, func(o *Options) {
		hr = &historyReads{Store: o.Store}
		o.Store = hr
	})
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(i, v int) {
		tx, err := e.st.Submit(ctx, []store.Op{store.PutAt(store.Doc{store.IDKey: "h", "v": v}, t0.Add(time.Duration(i)*time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.AwaitTx(ctx, tx.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	const times, corrections, limit = 40, 12, 3
	for i := range times {
		put(i, i)
	}
	for c := range corrections {
		put(20, 100+c) // one valid time of many versions
	}
	for _, order := range []string{"asc", "desc"} {
		for _, corr := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s corrections=%v", order, corr), func(t *testing.T) {
				q := url.Values{"order": {order}, "with_corrections": {fmt.Sprint(corr)}, "limit": {fmt.Sprint(limit)}}
				total, seen := times, 0
				if corr {
					total += corrections
				}
				hr.take()
				for pages := 1; ; pages++ {
					var p HistoryResponse
					e.ok("GET", "/v1/history/h?"+q.Encode(), nil, &p)
					seen += len(p.Entries)
					read := 0
					for _, r := range hr.take() {
						if r[0] <= 0 {
							t.Fatalf("page %d: a history read without a limit", pages)
						}
						if !corr && (r[0] != limit+1 || r[1] > limit+1) {
							t.Fatalf("page %d: a read of limit %d answered %d entries; want limit %d", pages, r[0], r[1], limit+1)
						}
						read += r[1]
					}
					if bound := 2 * (corrections + limit + 1); read > bound {
						t.Fatalf("page %d read %d entries from the store, over %d", pages, read, bound)
					}
					if p.Next == "" {
						break
					}
					if pages > total {
						t.Fatal("the pages do not end")
					}
					q.Set("cursor", p.Next)
				}
				if seen != total {
					t.Errorf("the pages answered %d entries, want %d", seen, total)
				}
			})
		}
	}
}

// TestQueryPages: POST /v1/query pages through an answer of more than
// MaxPageLimit documents on a SQLite store with next, every document once
// and in the query's order, at the basis of the first page (documents
// written between pages do not appear); a damaged cursor, or one sent with
// another query, answers 400 naming cursor.
func TestQueryPages(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	const n = 2*MaxPageLimit + 345
	put := func(from, to int) {
		ops := make([]store.Op, 0, to-from)
		for i := from; i < to; i++ {
			// n repeats every 7 documents, so order_by n leans on the id.
			ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("p%05d", i), "kind": "paged", "n": i % 7}))
		}
		tx, err := e.st.Submit(ctx, ops)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.AwaitTx(ctx, tx.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	put(0, n)
	total := n // documents written so far
	where := []any{map[string]any{"field": "kind", "op": "eq", "value": "paged"}}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		limit int
		less  func(a, b int) bool
	}{
		{"by id, default limit", map[string]any{"where": where}, MaxPageLimit, func(a, b int) bool { return a < b }},
		{"by n desc, limit 700", map[string]any{"where": where, "order_by": []any{map[string]any{"field": "n", "desc": true}}, "find": []string{"n"}, "limit": 700}, 700,
			func(a, b int) bool { return a%7 > b%7 || a%7 == b%7 && a < b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			body, before := maps.Clone(tc.body), total
			for pages := 0; ; pages++ {
				if pages > n/tc.limit+1 {
					t.Fatalf("more pages than %d documents take", n)
				}
				var r QueryResponse
				e.ok("POST", "/v1/query", body, &r)
				if len(r.Docs) > tc.limit || (r.Next != "" && len(r.Docs) != tc.limit) || r.Truncated != (r.Next != "") {
					t.Fatalf("page %d: %d documents, next %q, truncated %v", pages, len(r.Docs), r.Next, r.Truncated)
				}
				for _, d := range r.Docs {
					var i int
					if _, err := fmt.Sscanf(docID(d), "p%05d", &i); err != nil {
						t.Fatalf("page %d: %v", pages, d)
					}
					got = append(got, i)
				}
				if pages == 0 {
					put(total, total+3) // after the first page: not in this answer
					total += 3
				}
				if r.Next == "" {
					break
				}
				body["cursor"] = r.Next
			}
			want := make([]int, before)
			for i := range want {
				want[i] = i
			}
			slices.SortFunc(want, func(a, b int) int {
				if tc.less(a, b) {
					return -1
				}
				return 1
			})
			if !slices.Equal(got, want) {
				t.Fatalf("%d documents answered, want each of %d once in order (first difference at %d)", len(got), before, firstIntDiff(got, want))
			}
		})
	}

	var first QueryResponse
	e.ok("POST", "/v1/query", map[string]any{"where": where, "limit": 10}, &first)
	if first.Next == "" {
		t.Fatal("no next")
	}
	b := []byte(first.Next)
	b[3] ^= 1 // one character of the cursor changed
	for _, body := range []map[string]any{
		{"where": where, "limit": 10, "cursor": string(b)},
		{"where": where, "limit": 10, "cursor": "x"},
		{"where": where, "limit": 10, "cursor": first.Next + "A"},
		{"where": []any{map[string]any{"field": "kind", "op": "eq", "value": "other"}}, "limit": 10, "cursor": first.Next},
		{"where": where, "limit": 10, "cursor": first.Next, "basis": map[string]any{"tx_id": 1}},
	} {
		eb := e.fails(http.StatusBadRequest, CodeBadRequest, "POST", "/v1/query", body)
		if !strings.HasPrefix(eb.Message, "cursor: ") {
			t.Errorf("%v: message %q does not name cursor", body["cursor"], eb.Message)
		}
	}
}

// A document evicted since the first page changes the answer at the
// cursor's basis: a cursor of a query with an order_by (an offset) then
// answers 409 rather than skip or repeat; one in id order (a key) goes on
// after its last id, which the evict does not move.
func TestQueryCursorEvicted(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	submit := func(ops ...store.Op) {
		tx, err := e.st.Submit(ctx, ops)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.AwaitTx(ctx, tx.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		submit(store.Put(store.Doc{store.IDKey: fmt.Sprintf("e%d", i), "kind": "evicted"}))
	}
	body := map[string]any{"where": []any{map[string]any{"field": "kind", "op": "eq", "value": "evicted"}}, "limit": 2}
	var first QueryResponse
	e.ok("POST", "/v1/query", body, &first)
	body["cursor"] = first.Next
	var second QueryResponse
	e.ok("POST", "/v1/query", body, &second)
	if len(second.Docs) != 2 || docID(second.Docs[0]) != "e2" {
		t.Fatalf("second page: %v", second.Docs)
	}
	ordered := map[string]any{"where": body["where"], "limit": 2, "order_by": []any{map[string]any{"field": "kind"}}}
	e.ok("POST", "/v1/query", ordered, &first)
	ordered["cursor"] = first.Next
	submit(store.Evict("e0"))
	e.fails(http.StatusConflict, CodeConflict, "POST", "/v1/query", ordered)
	var again QueryResponse
	e.ok("POST", "/v1/query", body, &again)
	if len(again.Docs) != 2 || docID(again.Docs[0]) != "e2" || docID(again.Docs[1]) != "e3" {
		t.Fatalf("second page by key after the evict: %v", again.Docs)
	}
}

// rowsCounted records the most documents one query of a request returned.
type rowsCounted struct {
	store.Store
	most atomic.Int64
}

func (r *rowsCounted) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	docs, err := r.Store.Query(ctx, q)
	if n := int64(len(docs)); n > r.most.Load() {
		r.most.Store(n)
	}
	return docs, err
}

// A later page of a query in id order reads the documents after its
// cursor's key, never the ids before it: with 2,000 matches and pages of
// 100, the last page's queries return at most 101 documents (before,
// the ids up to the page's end: 2,000).
func TestQueryLaterPageReadsItsPage(t *testing.T) {
	var rc *rowsCounted
	e := newEnv(t, func(o *Options) { rc = &rowsCounted{Store: o.Store}; o.Store = rc })
	ctx := context.Background()
	var ops []store.Op
	for i := range 2000 {
		ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("k%05d", i), "kind": "keyed"}))
	}
	tx, err := e.st.Submit(ctx, ops)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AwaitTx(ctx, tx.ID, 0); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"where": []any{map[string]any{"field": "kind", "op": "eq", "value": "keyed"}}, "limit": 100}
	n := 0
	for pages := 1; ; pages++ {
		rc.most.Store(0)
		var r QueryResponse
		e.ok("POST", "/v1/query", body, &r)
		if m := rc.most.Load(); m > 101 {
			t.Fatalf("page %d: a query returned %d documents, more than the page and one", pages, m)
		}
		for _, d := range r.Docs {
			if want := fmt.Sprintf("k%05d", n); docID(d) != want {
				t.Fatalf("page %d: %s, want %s", pages, docID(d), want)
			}
			n++
		}
		if r.Next == "" {
			break
		}
		body["cursor"] = r.Next
	}
	if n != 2000 {
		t.Fatalf("%d documents over the pages, want 2000", n)
	}
}

func firstIntDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

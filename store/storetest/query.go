package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

func queryCases() []testCase {
	return []testCase{
		{"query-contract", testQueryContract},
		{"query-at-a-basis", testQueryBasis},
		{"invalid-query", testInvalidQuery},
		{"query-on-long-strings", testQueryLongStrings},
		{"query-compares-numbers-by-value", testQueryNumbersByValue},
	}
}

// queryWant is one query of a table and the ids (unprefixed) it returns,
// in order; find, if set, gives the projected documents instead.
type queryWant struct {
	name string
	q    store.Query
	ids  []string
	find []store.Doc
}

// runQueries checks each query, scoped to the case's documents by the
// "suite" field, against its expected result (as an ordered list: results
// are ordered by OrderBy and then by id).
func (e *env) runQueries(table []queryWant) {
	e.t.Helper()
	for _, c := range table {
		q := c.q
		q.Where = append([]store.Pred{store.Where("suite", e.pfx)}, q.Where...)
		got, err := e.s.Query(e.ctx, q)
		if err != nil {
			e.t.Errorf("%s: Query: %v", c.name, err)
			continue
		}
		if c.find != nil {
			e.sameDocs(c.name, got, c.find)
			continue
		}
		var gotIDs []string
		for _, d := range got {
			id, _ := d[store.IDKey].(string)
			gotIDs = append(gotIDs, strings.TrimPrefix(id, e.pfx))
		}
		if fmt.Sprint(gotIDs) != fmt.Sprint(c.ids) {
			e.t.Errorf("%s: got ids %v, want %v", c.name, gotIDs, c.ids)
		}
	}
}

// sameDocs compares two document lists in order with SameDoc.
func (e *env) sameDocs(what string, got, want []store.Doc) {
	e.t.Helper()
	render := func(ds []store.Doc) string {
		parts := make([]string, len(ds))
		for i, d := range ds {
			parts[i] = showDoc(d)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	if g, w := render(got), render(want); g != w {
		e.t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

// testQueryContract covers the portable query: equality, In, ranges,
// Exists, element-wise matching of arrays (back-links), RefBy, projection,
// ordering with the id tie-break, Limit and set semantics.
func testQueryContract(e *env) {
	s := func(name string, kv ...any) store.Doc {
		return e.doc(name, append([]any{"suite", e.pfx}, kv...)...)
	}
	a := s("a", "kind", "note", "title", "Alpha", "n", 3, "tags", []any{"x", "y", "x"}, "links", []any{e.id("b"), e.id("c")})
	b := s("b", "kind", "note", "title", "Bravo", "n", 1, "tags", []any{"y"}, "links", []any{e.id("c")})
	c := s("c", "kind", "file", "title", "Charlie", "n", 2, "path", "/c")
	d := s("d", "kind", "file", "n", 2)
	x := s("e", "kind", "chat", "title", nil)
	var ops []store.Op
	for _, doc := range []store.Doc{a, b, c, d, x} {
		ops = append(ops, store.PutAt(doc, inst("2020-01-01")))
	}
	e.submit(ops...)
	w := store.Where
	p := func(field string, op store.PredOp, v any) store.Pred {
		return store.Pred{Field: field, Op: op, Value: v}
	}
	e.runQueries([]queryWant{
		{name: "all, ordered by id", ids: []string{"a", "b", "c", "d", "e"}},
		{name: "eq", q: store.Query{Where: []store.Pred{w("kind", "note")}}, ids: []string{"a", "b"}},
		{name: "eq on the id", q: store.Query{Where: []store.Pred{w(store.IDKey, e.id("c"))}}, ids: []string{"c"}},
		{name: "gt on the id (a page after a key)", q: store.Query{Where: []store.Pred{p(store.IDKey, store.Gt, e.id("b"))}}, ids: []string{"c", "d", "e"}},
		{name: "gt on the id and eq, with a limit", q: store.Query{Where: []store.Pred{w("kind", "file"), p(store.IDKey, store.Gt, e.id("c"))}, Limit: 1}, ids: []string{"d"}},
		{name: "lte on the id", q: store.Query{Where: []store.Pred{p(store.IDKey, store.Lte, e.id("b"))}}, ids: []string{"a", "b"}},
		{name: "two predicates", q: store.Query{Where: []store.Pred{w("kind", "file"), w("n", 2)}}, ids: []string{"c", "d"}},
		{name: "no match", q: store.Query{Where: []store.Pred{w("kind", "nothing")}}, ids: nil},
		{name: "in", q: store.Query{Where: []store.Pred{{Field: "kind", Op: store.In, Values: []any{"file", "chat"}}}}, ids: []string{"c", "d", "e"}},
		{name: "gt", q: store.Query{Where: []store.Pred{p("n", store.Gt, 1)}}, ids: []string{"a", "c", "d"}},
		{name: "gte", q: store.Query{Where: []store.Pred{p("n", store.Gte, 2)}}, ids: []string{"a", "c", "d"}},
		{name: "lt", q: store.Query{Where: []store.Pred{p("n", store.Lt, 2)}}, ids: []string{"b"}},
		{name: "lte", q: store.Query{Where: []store.Pred{p("n", store.Lte, 2)}}, ids: []string{"b", "c", "d"}},
		{name: "range", q: store.Query{Where: []store.Pred{p("n", store.Gt, 1), p("n", store.Lt, 3)}}, ids: []string{"c", "d"}},
		{name: "lt on strings", q: store.Query{Where: []store.Pred{p("title", store.Lt, "C")}}, ids: []string{"a", "b"}},
		{name: "numbers do not compare with strings", q: store.Query{Where: []store.Pred{p("title", store.Gt, 0)}}, ids: nil},
		{name: "exists (null does not count)", q: store.Query{Where: []store.Pred{{Field: "title", Op: store.Exists}}}, ids: []string{"a", "b", "c"}},
		{name: "exists on an array field", q: store.Query{Where: []store.Pred{{Field: "tags", Op: store.Exists}}}, ids: []string{"a", "b"}},
		{name: "eq on an array element", q: store.Query{Where: []store.Pred{w("tags", "x")}}, ids: []string{"a"}},
		{name: "in on array elements, no duplicates", q: store.Query{Where: []store.Pred{{Field: "tags", Op: store.In, Values: []any{"x", "y"}}}}, ids: []string{"a", "b"}},
		{name: "back-links", q: store.Query{Where: []store.Pred{w("links", e.id("c"))}}, ids: []string{"a", "b"}},
		{name: "ref_by (forward refs)", q: store.Query{Where: []store.Pred{p("links", store.RefBy, e.id("a"))}}, ids: []string{"b", "c"}},
		{name: "ref_by and eq", q: store.Query{Where: []store.Pred{p("links", store.RefBy, e.id("a")), w("kind", "file")}}, ids: []string{"c"}},
		{name: "ref_by of a document without the field", q: store.Query{Where: []store.Pred{p("links", store.RefBy, e.id("c"))}}, ids: nil},
		{name: "ref_by of an unknown document", q: store.Query{Where: []store.Pred{p("links", store.RefBy, e.id("nobody"))}}, ids: nil},
		{name: "order asc, ties by id, docs lacking the field left out", q: store.Query{OrderBy: []store.Order{{Field: "n"}}}, ids: []string{"b", "c", "d", "a"}},
		{name: "order desc, ties by id ascending", q: store.Query{OrderBy: []store.Order{{Field: "n", Desc: true}}}, ids: []string{"a", "c", "d", "b"}},
		{name: "order by a string field, null left out", q: store.Query{OrderBy: []store.Order{{Field: "title"}}}, ids: []string{"a", "b", "c"}},
		{name: "two order keys", q: store.Query{OrderBy: []store.Order{{Field: "kind"}, {Field: "n", Desc: true}}}, ids: []string{"c", "d", "a", "b"}},
		{name: "order and limit", q: store.Query{OrderBy: []store.Order{{Field: "n"}}, Limit: 2}, ids: []string{"b", "c"}},
		{name: "limit alone keeps the id order", q: store.Query{Limit: 2}, ids: []string{"a", "b"}},
		{name: "limit beyond the results", q: store.Query{Where: []store.Pred{w("kind", "note")}, Limit: 10}, ids: []string{"a", "b"}},
		{name: "find projects chosen fields and the id; missing fields left out",
			q: store.Query{Where: []store.Pred{w("kind", "file")}, Find: []string{"title", "path"}},
			find: []store.Doc{
				{store.IDKey: e.id("c"), "title": "Charlie", "path": "/c"},
				{store.IDKey: e.id("d")},
			}},
		{name: "find an array field with order",
			q: store.Query{Where: []store.Pred{w("kind", "note")}, Find: []string{"links"}, OrderBy: []store.Order{{Field: "n"}}},
			find: []store.Doc{
				{store.IDKey: e.id("b"), "links": []any{e.id("c")}},
				{store.IDKey: e.id("a"), "links": []any{e.id("b"), e.id("c")}},
			}},
		{name: "whole documents", q: store.Query{Where: []store.Pred{w("kind", "note")}}, find: []store.Doc{a, b}},
	})
}

// testQueryBasis: a query reads at its basis, in valid time and tx.
func testQueryBasis(e *env) {
	s := func(name string, kv ...any) store.Doc {
		return e.doc(name, append([]any{"suite", e.pfx}, kv...)...)
	}
	a1, b1 := s("a", "n", 1), s("b", "n", 2)
	tx0 := e.submit(store.PutAt(a1, inst("2020-01-01")), store.PutAt(b1, inst("2020-01-01")))
	a2 := s("a", "n", 5)
	tx1 := e.submit(store.PutAt(a2, inst("2020-06-01")), store.DeleteRange(e.id("b"), inst("2020-06-01"), nil))
	gt := store.Pred{Field: "n", Op: store.Gt, Value: 0}
	e.runQueries([]queryWant{
		{name: "now", q: store.Query{Where: []store.Pred{gt}}, find: []store.Doc{a2}},
		{name: "at vt 2020-03-01", q: store.Query{Where: []store.Pred{gt}, Basis: store.Basis{ValidTime: inst("2020-03-01")}}, find: []store.Doc{a1, b1}},
		{name: "at vt 2019-01-01", q: store.Query{Where: []store.Pred{gt}, Basis: store.Basis{ValidTime: inst("2019-01-01")}}, ids: nil},
		{name: "at tx#0, now", q: store.Query{Where: []store.Pred{gt}, Basis: store.AtTx(tx0.ID, inst("2020-07-01"))}, find: []store.Doc{a1, b1}},
		{name: "at tx#1, vt 2020-07-01", q: store.Query{Where: []store.Pred{gt}, Basis: store.AtTx(tx1.ID, inst("2020-07-01"))}, find: []store.Doc{a2}},
		{name: "order at tx#0", q: store.Query{OrderBy: []store.Order{{Field: "n", Desc: true}}, Basis: store.AtTx(tx0.ID, inst("2020-07-01"))}, ids: []string{"b", "a"}},
		{name: "eq on an old value now", q: store.Query{Where: []store.Pred{store.Where("n", 1)}}, ids: nil},
	})
}

// testQueryLongStrings: values far longer than any id (a file's content)
// answer every predicate exactly as short ones do, although a backend may
// index only a prefix of them (bitemporal does): long strings that
// share a long prefix and differ at the end, with multi-byte characters, as
// scalars and as array elements, against short and long operands. Order
// comparisons that a long value takes part in run where the harness says
// the backend holds them (Harness.LongStringRanges: SQLite, not XTDB 1.x).
func testQueryLongStrings(e *env) {
	s := func(name string, kv ...any) store.Doc {
		return e.doc(name, append([]any{"suite", e.pfx}, kv...)...)
	}
	base := strings.Repeat("é日x", 1200) // 7,200 bytes, 3,600 characters
	la, lb, lc := base+"a", base+"b", base+"c"
	a := s("a", "body", la, "n", 1)
	b := s("b", "body", lb, "n", 2)
	c := s("c", "body", "short", "parts", []any{"p", lc}, "n", 3)
	d := s("d", "body", base, "n", 4)
	e.submit(store.PutAt(a, inst("2020-01-01")), store.PutAt(b, inst("2020-01-01")),
		store.PutAt(c, inst("2020-01-01")), store.PutAt(d, inst("2020-01-01")))
	w := store.Where
	p := func(field string, op store.PredOp, v any) store.Pred {
		return store.Pred{Field: field, Op: op, Value: v}
	}
	e.runQueries([]queryWant{
		{name: "eq on a long string", q: store.Query{Where: []store.Pred{w("body", lb)}}, ids: []string{"b"}},
		{name: "eq on a long string and a number", q: store.Query{Where: []store.Pred{w("body", la), w("n", 1)}}, ids: []string{"a"}},
		{name: "eq on a long string no document holds", q: store.Query{Where: []store.Pred{w("body", base+"z")}}, ids: nil},
		{name: "eq on the long prefix alone", q: store.Query{Where: []store.Pred{w("body", base)}}, ids: []string{"d"}},
		{name: "eq on a short string among long ones", q: store.Query{Where: []store.Pred{w("body", "short")}}, ids: []string{"c"}},
		{name: "eq on a long array element", q: store.Query{Where: []store.Pred{w("parts", lc)}}, ids: []string{"c"}},
		{name: "in, long and short", q: store.Query{Where: []store.Pred{{Field: "body", Op: store.In, Values: []any{la, "short", base + "q"}}}}, ids: []string{"a", "c"}},
		{name: "in, long only", q: store.Query{Where: []store.Pred{{Field: "body", Op: store.In, Values: []any{lb, la}}}}, ids: []string{"a", "b"}},
		{name: "lte a short string", q: store.Query{Where: []store.Pred{p("body", store.Lte, "t")}}, ids: []string{"c"}},
		{name: "exists", q: store.Query{Where: []store.Pred{{Field: "parts", Op: store.Exists}}}, ids: []string{"c"}},
		{name: "order by a long string", q: store.Query{OrderBy: []store.Order{{Field: "body", Desc: true}}}, ids: []string{"b", "a", "d", "c"}},
		{name: "find a long string", q: store.Query{Where: []store.Pred{w("n", 2)}, Find: []string{"body"}},
			find: []store.Doc{{store.IDKey: e.id("b"), "body": lb}}},
	})
	if !e.h.LongStringRanges {
		return
	}
	e.runQueries([]queryWant{
		{name: "gt a long string", q: store.Query{Where: []store.Pred{p("body", store.Gt, la)}}, ids: []string{"b"}},
		{name: "gte a long string", q: store.Query{Where: []store.Pred{p("body", store.Gte, la)}}, ids: []string{"a", "b"}},
		{name: "lt a long string", q: store.Query{Where: []store.Pred{p("body", store.Lt, lb)}}, ids: []string{"a", "c", "d"}},
		{name: "gt a short string", q: store.Query{Where: []store.Pred{p("body", store.Gt, "t")}}, ids: []string{"a", "b", "d"}},
		{name: "range between two long strings", q: store.Query{Where: []store.Pred{p("body", store.Gt, base), p("body", store.Lt, lb)}}, ids: []string{"a"}},
		{name: "gt on array elements", q: store.Query{Where: []store.Pred{p("parts", store.Gt, lb)}}, ids: []string{"c"}},
	})
}

// testQueryNumbersByValue: numbers compare by value, as JSON numbers,
// whatever their spelling or a backend's own types: whole and fractional
// values (scalars and array elements) against whole and fractional bounds
// in every comparison operator, each answer checked against a comparison
// of float64 values.
func testQueryNumbersByValue(e *env) {
	num := func(s string) json.Number { return json.Number(s) }
	values := map[string]any{
		"i1":   num("1"),
		"f15":  num("1.5"),
		"i2":   num("2"),
		"f2":   num("2.0"), // the same number as 2
		"i3":   num("3"),
		"fneg": num("-0.5"),
		"big":  num("2000000000000000"), // whole, beyond 10^15
		"huge": num("1e21"),             // whole, beyond 2^53
		"arr":  []any{num("0.25"), num("4")},
	}
	var ops []store.Op
	for name, v := range values {
		ops = append(ops, store.PutAt(e.doc(name, "suite", e.pfx, "n", v), inst("2020-01-01")))
	}
	e.submit(ops...)
	holds := func(v float64, op store.PredOp, b float64) bool {
		switch op {
		case store.Eq:
			return v == b
		case store.Lt:
			return v < b
		case store.Lte:
			return v <= b
		case store.Gt:
			return v > b
		}
		return v >= b
	}
	matching := func(pred func(float64) bool) []string {
		var ids []string
		for name, v := range values {
			vs := []any{v}
			if arr, ok := v.([]any); ok {
				vs = arr
			}
			if slices.ContainsFunc(vs, func(x any) bool { f, _ := store.Num(x); return pred(f) }) {
				ids = append(ids, name)
			}
		}
		slices.Sort(ids)
		return ids
	}
	bounds := []any{num("-1"), num("-0.5"), num("0"), num("0.25"), num("0.5"), num("1"), num("1.0"), num("1.5"),
		num("2"), num("2.5"), num("3"), num("3.5"), num("4"), num("4.5"), num("2e15"), num("1e21"), num("1.5e21"),
		2.5, 2, int64(3), -0.75}
	var table []queryWant
	for _, b := range bounds {
		bf, _ := store.Num(b)
		for _, op := range []store.PredOp{store.Eq, store.Lt, store.Lte, store.Gt, store.Gte} {
			table = append(table, queryWant{
				name: fmt.Sprintf("n %s %v (%T)", op, b, b),
				q:    store.Query{Where: []store.Pred{{Field: "n", Op: op, Value: b}}},
				ids:  matching(func(v float64) bool { return holds(v, op, bf) }),
			})
		}
	}
	for _, r := range [][2]any{{num("0.5"), num("2.5")}, {1, num("2.0")}, {num("1.5"), 3}, {num("-1"), num("0.3")}} {
		lo, _ := store.Num(r[0])
		hi, _ := store.Num(r[1])
		table = append(table, queryWant{
			name: fmt.Sprintf("%v < n < %v", r[0], r[1]),
			q:    store.Query{Where: []store.Pred{{Field: "n", Op: store.Gt, Value: r[0]}, {Field: "n", Op: store.Lt, Value: r[1]}}},
			// Each predicate holds on any element of an array, separately.
			ids: func() []string {
				var ids []string
				for _, id := range matching(func(v float64) bool { return v > lo }) {
					if slices.Contains(matching(func(v float64) bool { return v < hi }), id) {
						ids = append(ids, id)
					}
				}
				return ids
			}(),
		})
	}
	table = append(table,
		queryWant{name: "in, whole and fractional spellings", q: store.Query{Where: []store.Pred{{Field: "n", Op: store.In, Values: []any{num("1.0"), num("1.5"), 2.0, num("4e0")}}}},
			ids: []string{"arr", "f15", "f2", "i1", "i2"}},
		// arr holds an array in the order field: left out.
		queryWant{name: "order by mixed numbers", q: store.Query{Where: []store.Pred{{Field: "n", Op: store.Lte, Value: num("3")}},
			OrderBy: []store.Order{{Field: "n", Desc: true}}, Find: []string{"n"}},
			find: []store.Doc{{store.IDKey: e.id("i3"), "n": num("3")}, {store.IDKey: e.id("f2"), "n": num("2")}, {store.IDKey: e.id("i2"), "n": num("2")},
				{store.IDKey: e.id("f15"), "n": num("1.5")}, {store.IDKey: e.id("i1"), "n": num("1")}, {store.IDKey: e.id("fneg"), "n": num("-0.5")}}},
		queryWant{name: "order by a field holding an array, found elsewhere", q: store.Query{Where: []store.Pred{{Field: "n", Op: store.Lt, Value: num("1")}},
			OrderBy: []store.Order{{Field: "n"}}, Find: []string{"suite"}},
			find: []store.Doc{{store.IDKey: e.id("fneg"), "suite": e.pfx}}},
		queryWant{name: "order by a field holding an array, whole documents", q: store.Query{Where: []store.Pred{{Field: "n", Op: store.Lt, Value: num("1")}},
			OrderBy: []store.Order{{Field: "n", Desc: true}}}, ids: []string{"fneg"}},
	)
	e.runQueries(table)
}

// testInvalidQuery: a malformed query gives ErrInvalid.
func testInvalidQuery(e *env) {
	for _, c := range []struct {
		name string
		q    store.Query
	}{
		{"unknown operator", store.Query{Where: []store.Pred{{Field: "n", Op: "like", Value: "x"}}}},
		{"empty field", store.Query{Where: []store.Pred{{Field: "", Op: store.Eq, Value: 1}}}},
		{"field with a bracket", store.Query{Where: []store.Pred{{Field: "a[0]", Op: store.Eq, Value: 1}}}},
		{"eq without a value", store.Query{Where: []store.Pred{{Field: "n", Op: store.Eq}}}},
		{"eq on an object", store.Query{Where: []store.Pred{{Field: "n", Op: store.Eq, Value: map[string]any{"a": 1}}}}},
		{"lt on a boolean", store.Query{Where: []store.Pred{{Field: "n", Op: store.Lt, Value: true}}}},
		{"in without values", store.Query{Where: []store.Pred{{Field: "n", Op: store.In}}}},
		{"ref_by without an id", store.Query{Where: []store.Pred{{Field: "links", Op: store.RefBy}}}},
		{"bad find field", store.Query{Find: []string{"a b"}}},
		{"bad order field", store.Query{OrderBy: []store.Order{{Field: ""}}}},
		{"negative limit", store.Query{Limit: -1}},
	} {
		_, err := e.s.Query(e.ctx, c.q)
		e.wantErr("Query "+c.name, err, store.ErrInvalid)
	}
}

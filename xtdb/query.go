package xtdb

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

// datalog renders a portable query as XTDB Datalog EDN text. Every value
// is an escaped literal; field names were validated by Query.Validate. The
// entity var is e, its id id; order keys o0..; predicate vars v0...
// sendLimit says whether :limit can be left to the server: only when no
// clause can match one entity more than once (the server's results are a
// bag, so a limit there could count duplicates).
func datalog(q store.Query) (text string, sendLimit bool, err error) {
	where, multi, err := datalogWhere(q.Where)
	if err != nil {
		return "", false, err
	}
	where = append(where, "[e :xt/id id]")
	find := []string{"(pull e [*])"}
	if len(q.Find) > 0 {
		keys := []string{":xt/id"}
		for _, f := range append(slices.Clone(q.Find), orderOnly(q)...) {
			keys = append(keys, ednKeyword(f))
		}
		find = []string{"(pull e [" + strings.Join(keys, " ") + "])"}
	}
	find = append(find, "id")
	var order []string
	for i, o := range q.OrderBy {
		v := fmt.Sprintf("o%d", i)
		where = append(where, fmt.Sprintf("[e %s %s] %s", ednKeyword(o.Field), v, scalarGuard(v)))
		find = append(find, v)
		dir := ":asc"
		if o.Desc {
			dir = ":desc"
		}
		order = append(order, fmt.Sprintf("[%s %s]", v, dir))
	}
	order = append(order, "[id :asc]")
	var b strings.Builder
	fmt.Fprintf(&b, "{:find [%s] :where [%s] :order-by [%s]", strings.Join(find, " "), strings.Join(where, " "), strings.Join(order, " "))
	sendLimit = !multi && len(q.OrderBy) == 0
	if q.Limit > 0 && sendLimit {
		fmt.Fprintf(&b, " :limit %d", q.Limit)
	}
	b.WriteString("}")
	return b.String(), sendLimit, nil
}

// scalarGuard is a clause binding v only to a scalar.
func scalarGuard(v string) string {
	return fmt.Sprintf("(or [(string? %[1]s)] [(number? %[1]s)] [(boolean? %[1]s)])", v)
}

// datalogWhere renders predicates as Datalog clauses on the entity var e
// (predicate vars v0...); multi says whether a clause can match one
// entity more than once.
func datalogWhere(preds []store.Pred) (where []string, multi bool, err error) {
	for i, p := range preds {
		v := fmt.Sprintf("v%d", i)
		attr := ednKeyword(p.Field)
		switch p.Op {
		case store.Eq:
			if _, isNum := store.Num(p.Value); isNum {
				lit, err := ednScalar(p.Value)
				if err != nil {
					return nil, false, err
				}
				where = append(where, fmt.Sprintf("[e %s %s] [(number? %s)] [(== %s %s)]", attr, v, v, v, lit))
				multi = true
				continue
			}
			lit, err := ednScalar(p.Value)
			if err != nil {
				return nil, false, err
			}
			where = append(where, fmt.Sprintf("[e %s %s]", attr, lit))
		case store.In:
			allStrings := true
			for _, val := range p.Values {
				if _, isNum := store.Num(val); isNum {
					allStrings = false
				}
			}
			if allStrings {
				// An index lookup per value, as Eq does: a filter over a
				// bound var would scan every entity holding the field.
				// A collection binding of the literals, then an index
				// lookup per value (an "or" of many branches is slow too).
				var lits []string
				for _, val := range p.Values {
					lit, err := ednScalar(val)
					if err != nil {
						return nil, false, err
					}
					lits = append(lits, lit)
				}
				where = append(where, fmt.Sprintf("[(identity [%s]) [%s ...]] [e %s %s]", strings.Join(lits, " "), v, attr, v))
				multi = true
				continue
			}
			var alts []string
			for _, val := range p.Values {
				lit, err := ednScalar(val)
				if err != nil {
					return nil, false, err
				}
				if _, isNum := store.Num(val); isNum {
					alts = append(alts, fmt.Sprintf("(and [(number? %s)] [(== %s %s)])", v, v, lit))
				} else {
					alts = append(alts, fmt.Sprintf("[(= %s %s)]", v, lit))
				}
			}
			where = append(where, fmt.Sprintf("[e %s %s] (or %s)", attr, v, strings.Join(alts, " ")))
			multi = true
		case store.Lt, store.Lte, store.Gt, store.Gte:
			if f, isNum := store.Num(p.Value); isNum {
				where = append(where, numRange(attr, v, p.Op, f))
				multi = true
				continue
			}
			lit, err := ednScalar(p.Value)
			if err != nil {
				return nil, false, err
			}
			where = append(where, fmt.Sprintf("[e %s %s] [(string? %s)] [(%s %s %s)]", attr, v, v, rangeSym[p.Op], v, lit))
			multi = true
		case store.Exists:
			where = append(where, fmt.Sprintf("[e %s %s] %s", attr, v, scalarGuard(v)))
			multi = true
		case store.RefBy:
			src, _ := p.Value.(string)
			where = append(where, fmt.Sprintf("[%s %s %s] [(string? %s)] [(= e %s)]", "src"+v, attr, v, v, v),
				fmt.Sprintf("[%s :xt/id %s]", "src"+v, ednString(src)))
			multi = true
		default:
			return nil, false, fmt.Errorf("unknown operator %q", p.Op)
		}
	}
	return where, multi, nil
}

var rangeSym = map[store.PredOp]string{store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}

// longBoundLimit bounds the long a numeric range is rewritten to: beyond
// every long the store holds (±2^53), and exact as a float64.
const longBoundLimit = 1 << 62

// numRange renders a range predicate with a numeric bound f so that it
// compares by value, as the contract says (store.Query). XTDB 1.24.5 turns
// a range predicate against a literal into a range over its value index
// restricted to the literal's type: [(< v 1.5)] finds only doubles and
// [(< v 2)] only longs, so either alone misses the other type's values.
// The driver stores whole numbers within ±2^53 as longs and every other
// number as a double (writeEDNValue), so the predicate becomes one branch
// per type: the bound as a double, and for longs the equivalent whole
// bound (v < 1.5 is v < 2 for a long, v >= 1.5 is v >= 2, v <= 1.5 is
// v <= 1, v > 1.5 is v > 1). Each branch keeps its index range.
func numRange(attr, v string, op store.PredOp, f float64) string {
	var whole float64
	switch op {
	case store.Lt, store.Gte:
		whole = math.Ceil(f)
	default:
		whole = math.Floor(f)
	}
	whole = math.Max(-longBoundLimit, math.Min(longBoundLimit, whole))
	sym := rangeSym[op]
	return fmt.Sprintf("(or-join [e] (and [e %[1]s %[2]s] [(%[3]s %[2]s %[4]s)]) (and [e %[1]s %[2]s] [(%[3]s %[2]s %[5]s)]))",
		attr, v, sym, strconv.FormatInt(int64(whole), 10), ednDouble(f))
}

// orderOnly lists the order fields a projecting query does not find: the
// pull reads them too, for Query to check, and Query drops them.
func orderOnly(q store.Query) []string {
	if len(q.Find) == 0 {
		return nil
	}
	var out []string
	for _, o := range q.OrderBy {
		if !slices.Contains(q.Find, o.Field) && !slices.Contains(out, o.Field) && o.Field != store.IDKey {
			out = append(out, o.Field)
		}
	}
	return out
}

// Query implements store.Store: the query runs as Datalog on the server at
// the basis; results are de-duplicated by id, keeping the first (ordered)
// occurrence, then cut to the limit. A document whose order field holds
// an array or an object is left out, as the contract says: XTDB binds an
// array's elements one by one, so the order clause alone would rank the
// document by each of them.
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Basis.TxID != nil && *q.Basis.TxID < 0 {
		return nil, nil
	}
	text, _, err := datalog(q)
	if err != nil {
		return nil, &store.Error{Op: "query", Kind: store.ErrInvalid, Err: err}
	}
	body := "{:query " + text + "}"
	v, err := s.readEDN(ctx, request{op: "query", method: http.MethodPost, path: "/query",
		query: basisParams(nil, q.Basis), body: []byte(body), ctype: "application/edn"})
	if err != nil {
		return nil, err
	}
	rows, ok := v.([]any)
	if !ok && v != nil {
		return nil, store.Errorf("query", store.ErrUnavailable, "", fmt.Sprintf("unexpected answer %T", v))
	}
	seen := map[string]bool{}
	var out []store.Doc
	for _, r := range rows {
		tuple, ok := r.([]any)
		if !ok || len(tuple) < 2 {
			return nil, store.Errorf("query", store.ErrUnavailable, "", "unexpected result row")
		}
		id, _ := tuple[1].(string)
		if seen[id] {
			continue
		}
		seen[id] = true
		doc, err := ednDoc(tuple[0])
		if err != nil {
			return nil, &store.Error{Op: "query", Kind: store.ErrUnavailable, ID: id, Err: err}
		}
		if !scalarOrder(doc, q.OrderBy) {
			continue
		}
		for _, f := range orderOnly(q) {
			delete(doc, f)
		}
		out = append(out, doc)
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

// scalarOrder reports whether doc holds no array or object in an order
// field.
func scalarOrder(doc store.Doc, order []store.Order) bool {
	for _, o := range order {
		switch doc[o.Field].(type) {
		case []any, map[string]any:
			return false
		}
	}
	return true
}

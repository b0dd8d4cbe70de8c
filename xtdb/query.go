package xtdb

import (
	"context"
	"fmt"
	"net/http"
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
	var where []string
	multi := false
	scalarGuard := func(v string) string {
		return fmt.Sprintf("(or [(string? %[1]s)] [(number? %[1]s)] [(boolean? %[1]s)])", v)
	}
	for i, p := range q.Where {
		v := fmt.Sprintf("v%d", i)
		attr := ednKeyword(p.Field)
		switch p.Op {
		case store.Eq:
			if _, isNum := store.Num(p.Value); isNum {
				lit, err := ednScalar(p.Value)
				if err != nil {
					return "", false, err
				}
				where = append(where, fmt.Sprintf("[e %s %s] [(number? %s)] [(== %s %s)]", attr, v, v, v, lit))
				multi = true
				continue
			}
			lit, err := ednScalar(p.Value)
			if err != nil {
				return "", false, err
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
						return "", false, err
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
					return "", false, err
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
			lit, err := ednScalar(p.Value)
			if err != nil {
				return "", false, err
			}
			guard := "string?"
			if _, isNum := store.Num(p.Value); isNum {
				guard = "number?"
			}
			sym := map[store.PredOp]string{store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}[p.Op]
			where = append(where, fmt.Sprintf("[e %s %s] [(%s %s)] [(%s %s %s)]", attr, v, guard, v, sym, v, lit))
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
			return "", false, fmt.Errorf("unknown operator %q", p.Op)
		}
	}
	where = append(where, "[e :xt/id id]")
	find := []string{"(pull e [*])"}
	if len(q.Find) > 0 {
		keys := []string{":xt/id"}
		for _, f := range q.Find {
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

// Query implements store.Store: the query runs as Datalog on the server at
// the basis; results are de-duplicated by id, keeping the first (ordered)
// occurrence, then cut to the limit.
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
		out = append(out, doc)
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

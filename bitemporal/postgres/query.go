package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

// sqlArgs collects a statement's arguments and numbers their placeholders.
type sqlArgs []any

// add appends v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// query is Query, one attempt: one SQL statement on the jsonb copies of
// the documents: each document is kept only if it is its entity's visible
// version at the basis, and is filtered and ordered in SQL (equality
// through the GIN index on docs.doc); results are cut to the limit in SQL
// and projected from the canonical text.
func (s *Store) query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, "query", q.Basis)
	if err != nil {
		return nil, err
	}
	var args sqlArgs
	vtP, txP := args.add(vt), args.add(tx)
	visible := func(ent string) string {
		return "(SELECT v.doc FROM points v WHERE v.ent = " + ent + " AND v.vt <= " + vtP + " AND v.tx_id <= " + txP + " ORDER BY v.vt DESC, v.tx_id DESC LIMIT 1)"
	}
	var conds []string
	for _, p := range q.Where {
		conds = append(conds, predSQL(p, &args, visible))
	}
	conds = append(conds, "d.id = "+visible("d.ent"))
	var order []string
	for _, o := range q.OrderBy {
		f := "d.doc -> " + args.add(o.Field) + "::text"
		conds = append(conds, "jsonb_typeof("+f+") IN ('string', 'number', 'boolean')")
		dir := "ASC"
		if o.Desc {
			dir = "DESC"
		}
		order = append(order,
			"(CASE WHEN jsonb_typeof("+f+") = 'number' THEN ("+f+")::numeric END) "+dir+" NULLS LAST",
			"(CASE WHEN jsonb_typeof("+f+") = 'string' THEN ("+f+" #>> '{}') END) COLLATE \"C\" "+dir+" NULLS LAST",
			"(CASE WHEN jsonb_typeof("+f+") = 'boolean' THEN ("+f+")::boolean END) "+dir+" NULLS LAST")
	}
	order = append(order, "d.ent ASC")
	stmt := "SELECT d.ent, d.body FROM docs d WHERE " + strings.Join(conds, " AND ") + " ORDER BY " + strings.Join(order, ", ")
	if q.Limit > 0 {
		stmt += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, dbErr("query", "", err)
	}
	defer rows.Close()
	var out []store.Doc
	for rows.Next() {
		var ent []byte
		var raw string
		if err := rows.Scan(&ent, &raw); err != nil {
			return nil, dbErr("query", "", err)
		}
		doc, err := decodeStored(raw, string(ent))
		if err != nil {
			return nil, err
		}
		if len(q.Find) > 0 {
			p := store.Doc{store.IDKey: doc[store.IDKey]}
			for _, f := range q.Find {
				if v, ok := doc[f]; ok {
					p[f] = v
				}
			}
			doc = p
		}
		out = append(out, doc)
	}
	return out, dbErr("query", "", rows.Err())
}

// predSQL renders one predicate as a condition on document d, with the
// portable query's semantics: a value of the predicate's JSON type
// (strings with strings, compared bytewise; numbers with numbers, by
// value; booleans only equal), an array holding when an element does.
func predSQL(p store.Pred, args *sqlArgs, visible func(string) string) string {
	if p.Field == store.IDKey && (p.Op == store.Eq || p.Op == store.In) {
		return idPredSQL(p, args)
	}
	if op := map[store.PredOp]string{store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}[p.Op]; p.Field == store.IDKey && op != "" {
		// The entity id, bytewise (bytea), as the query's tie-break
		// orders: not the jsonb copy, where U+0000 is U+FFFD.
		s, ok := p.Value.(string)
		if !ok {
			return "false"
		}
		return "d.ent " + op + " " + args.add([]byte(s)) + "::bytea"
	}
	// Each branch adds the field as an argument when it uses it: an
	// argument the statement does not use has no type PostgreSQL can tell.
	var f, vals string
	if p.Op != store.Eq && p.Op != store.In {
		f = args.add(p.Field) + "::text"
		vals = "ctxs_vals(d.doc -> " + f + ") j"
	}
	switch p.Op {
	case store.RefBy:
		return "d.ent IN (SELECT convert_to(j #>> '{}', 'UTF8') FROM docs r, ctxs_vals(r.doc -> " + f + ") j WHERE r.id = " +
			visible(args.add([]byte(p.Value.(string)))) + " AND jsonb_typeof(j) = 'string')"
	case store.Exists:
		return "EXISTS (SELECT 1 FROM " + vals + " WHERE jsonb_typeof(j) IN ('string', 'number', 'boolean'))"
	case store.Eq, store.In:
		// Containment, which the GIN index answers: the field holds the
		// value, or an array holding it.
		values := p.Values
		if p.Op == store.Eq {
			values = []any{p.Value}
		}
		var alts []any
		for _, v := range values {
			v = jsonScalar(v)
			alts = append(alts, map[string]any{p.Field: v}, map[string]any{p.Field: []any{v}})
		}
		list, _ := json.Marshal(alts) // scalars only (Query.Validate)
		return "d.doc @> ANY (SELECT jsonb_array_elements(" + args.add(string(list)) + "::jsonb))"
	}
	op := map[store.PredOp]string{store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}[p.Op]
	if s, ok := p.Value.(string); ok {
		return "EXISTS (SELECT 1 FROM " + vals + " WHERE (CASE WHEN jsonb_typeof(j) = 'string' THEN j #>> '{}' END) COLLATE \"C\" " + op + " " + args.add(s) + "::text COLLATE \"C\")"
	}
	// AND does not order its operands' evaluation: CASE keeps a cast from
	// meeting a value of another type.
	n, _ := json.Marshal(jsonScalar(p.Value))
	return "EXISTS (SELECT 1 FROM " + vals + " WHERE (CASE WHEN jsonb_typeof(j) = 'number' THEN j::numeric END) " + op + " " + args.add(string(n)) + "::numeric)"
}

// jsonScalar is v as encoding/json writes it, with U+0000 in a string as
// U+FFFD, as in the jsonb copies of the documents (jsonbText).
func jsonScalar(v any) any {
	if s, ok := v.(string); ok {
		return strings.ReplaceAll(s, "\x00", "\ufffd")
	}
	return v
}

// idPredSQL renders an equality or In list on the entity id as a
// condition on docs.ent. An id is always a string, so other values match
// nothing.
func idPredSQL(p store.Pred, args *sqlArgs) string {
	vals := p.Values
	if p.Op == store.Eq {
		vals = []any{p.Value}
	}
	var ids [][]byte
	for _, v := range vals {
		if s, ok := v.(string); ok {
			ids = append(ids, []byte(s))
		}
	}
	if len(ids) == 0 {
		return "false"
	}
	return "d.ent = ANY (" + args.add(ids) + "::bytea[])"
}

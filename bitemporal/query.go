package bitemporal

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

// visibleDocSQL is the docs.id of the document of entity <eid expr> visible at the
// query basis (bound as the vt and tx parameters that follow it).
const visibleDocSQL = `(SELECT q.doc FROM points q WHERE q.eid = %s AND q.vt <= ? AND q.tx_id <= ? ORDER BY q.vt DESC, q.tx_id DESC LIMIT 1)`

// Query implements store.Store as one SQL statement: candidate documents
// come from the field index (or every document), are kept only if they are
// their entity's visible version at the basis, and are filtered, ordered and
// cut in SQL; projection happens on the decoded documents.
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, s.r, "query", q.Basis)
	if err != nil {
		return nil, err
	}
	var conds []string
	var args []any
	for _, p := range q.Where {
		c, a := predSQL(p, vt, tx)
		conds = append(conds, c)
		args = append(args, a...)
	}
	conds = append(conds, "d.id = "+fmt.Sprintf(visibleDocSQL, "d.eid"))
	args = append(args, vt, tx)
	var order []string
	for _, o := range q.OrderBy {
		path := jsonPath(o.Field)
		conds = append(conds, "json_type(d.doc, ?) IN ('text', 'integer', 'real', 'true', 'false')")
		args = append(args, path)
		dir := "ASC"
		if o.Desc {
			dir = "DESC"
		}
		order = append(order, fmt.Sprintf("json_extract(d.doc, %s) %s", sqlString(path), dir))
	}
	order = append(order, "d.eid ASC")
	stmt := "SELECT d.eid, d.doc FROM docs d WHERE " + strings.Join(conds, " AND ") + " ORDER BY " + strings.Join(order, ", ")
	if q.Limit > 0 {
		stmt += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.r.QueryxContext(ctx, stmt, args...)
	if err != nil {
		return nil, dbErr("query", "", err)
	}
	defer rows.Close()
	var out []store.Doc
	for rows.Next() {
		var eid, raw string
		if err := rows.Scan(&eid, &raw); err != nil {
			return nil, dbErr("query", "", err)
		}
		doc, err := decodeStored(raw, eid)
		if err != nil {
			return nil, err
		}
		out = append(out, project(doc, q.Find))
	}
	return out, dbErr("query", "", rows.Err())
}

// predSQL renders one predicate as a condition on document d.
func predSQL(p store.Pred, vt, tx int64) (string, []any) {
	if p.Op == store.RefBy {
		return fmt.Sprintf(`d.eid IN (SELECT f.value FROM fields f WHERE f.field = ? AND f.kind = 's' AND f.doc = %s)`,
			fmt.Sprintf(visibleDocSQL, "?")), []any{p.Field, p.Value, vt, tx}
	}
	var cond string
	args := []any{p.Field}
	switch p.Op {
	case store.Exists:
		cond = "f.field = ?"
	case store.In:
		var alts []string
		for _, v := range p.Values {
			kind, val := sqlValue(v)
			alts = append(alts, "(f.kind = ? AND f.value = ?)")
			args = append(args, kind, val)
		}
		cond = "f.field = ? AND (" + strings.Join(alts, " OR ") + ")"
	default:
		kind, val := sqlValue(p.Value)
		ops := map[store.PredOp]string{store.Eq: "=", store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}
		cond = "f.field = ? AND f.kind = ? AND f.value " + ops[p.Op] + " ?"
		args = append(args, kind, val)
	}
	return "d.id IN (SELECT f.doc FROM fields f WHERE " + cond + ")", args
}

// sqlValue maps a scalar to its field-index kind and stored value.
func sqlValue(v any) (string, any) {
	rows := fieldRows(store.Doc{"v": v})
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].kind, rows[0].value
}

// jsonPath is the SQLite JSON path of a top-level key.
func jsonPath(field string) string {
	return `$."` + field + `"`
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func project(doc store.Doc, find []string) store.Doc {
	if len(find) == 0 {
		return doc
	}
	out := store.Doc{store.IDKey: doc[store.IDKey]}
	for _, f := range find {
		if v, ok := doc[f]; ok {
			out[f] = v
		}
	}
	return out
}

package bitemporal

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

// visibleDocSQL is the docs.id of the document of entity <ents.id expr>
// visible at the query basis (bound as the vt and tx parameters that follow
// it).
const visibleDocSQL = `(SELECT q.doc FROM points q WHERE q.ent = %s AND q.vt <= ? AND q.tx_id <= ? ORDER BY q.vt DESC, q.tx_id DESC LIMIT 1)`

// Query implements store.Store as one SQL statement: candidate documents
// come from the field index (or every document), are kept only if they are
// their entity's visible version at the basis, and are filtered, ordered,
// cut and projected in SQL.
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, s.r, "query", q.Basis)
	if err != nil {
		return nil, err
	}
	conds, args, err := s.whereSQL(ctx, q.Where, vt, tx, -1)
	if err != nil {
		return nil, err
	}
	var order []string
	for _, o := range q.OrderBy {
		path := jsonPath(o.Field)
		conds = append(conds, "json_type(ctxs_part(d.doc, ?, "+baseOf("d")+"), ?) IN ('text', 'integer', 'real', 'true', 'false')")
		args = append(args, o.Field, path)
		dir := "ASC"
		if o.Desc {
			dir = "DESC"
		}
		order = append(order, fmt.Sprintf("json_extract(ctxs_part(d.doc, %s, %s), %s) %s", sqlString(o.Field), baseOf("d"), sqlString(path), dir))
	}
	order = append(order, "e.eid ASC")
	// A projection is done in SQL: only the chosen fields leave the
	// database and are decoded, and on JSONB documents (migration 00006)
	// SQLite reaches a field by skipping over the ones before it, so a
	// metadata-only query over large documents does not parse their
	// content.
	cols := "json(ctxs_doc(d.doc, " + baseOf("d") + "))"
	if len(q.Find) > 0 {
		var sel []string
		for _, f := range q.Find {
			sel = append(sel, "ctxs_part(d.doc, "+sqlString(f)+", "+baseOf("d")+") -> "+sqlString(jsonPath(f)))
		}
		cols = strings.Join(sel, ", ")
	}
	stmt := "SELECT e.eid, " + cols + " FROM docs d JOIN ents e ON e.id = d.ent WHERE " + strings.Join(conds, " AND ") + " ORDER BY " + strings.Join(order, ", ")
	if q.Limit > 0 {
		stmt += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.r.QueryxContext(ctx, stmt, args...)
	if err != nil {
		return nil, dbErr("query", "", err)
	}
	defer rows.Close()
	var out []store.Doc
	vals := make([]sql.NullString, len(q.Find))
	for rows.Next() {
		var eid, raw string
		dest := []any{&eid, &raw}
		if len(q.Find) > 0 {
			dest = dest[:1]
			for i := range vals {
				dest = append(dest, &vals[i])
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, dbErr("query", "", err)
		}
		if len(q.Find) > 0 {
			raw = projectedJSON(eid, q.Find, vals)
		}
		doc, err := decodeStored(raw, eid)
		if err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	return out, dbErr("query", "", rows.Err())
}

// fieldsPrefix starts predSQL's rendering of a predicate the field index
// answers alone: its candidates are the documents of the rows it selects.
const fieldsPrefix = "d.id IN (SELECT f.doc FROM fields f WHERE "

// fieldsCandidates returns the condition on field-index rows f of a
// predicate predSQL rendered as fieldsPrefix + condition + ")", else "".
func fieldsCandidates(c string) string {
	if !strings.HasPrefix(c, fieldsPrefix) || !strings.HasSuffix(c, ")") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(c, fieldsPrefix), ")")
}

// probeRows is the first bound of driver's row counts.
const probeRows = 64

// firstRows is the most rows driver counts of a way when the statement
// stops at its first match (an existence probe, as Values runs one per
// value): past it, the preferred way drives without being counted.
const firstRows = 1024

// driver chooses the candidates of a query whose predicates could give
// them several ways: SQLite would build the full candidate set of every
// field-index predicate and intersect them, so a page of one session's
// 500,000 commits (session = S, depth among the page's) cost as much as
// reading them all. The field-index predicate with the fewest rows drives:
// rows are counted up to a bound that doubles while every count reaches
// it, so choosing costs a few times the driver's own rows, which the
// query reads anyway. A statement that stops at its first match (first
// >= 0: an existence probe) reads far fewer than its driver's rows, so
// there the bound stops doubling at firstRows and, when every way
// reaches it, where[first] drives uncounted: the probe of whether one
// session of 500,000 commits has a commit (type = commit, session = S,
// both 500,000 rows) counts 2,000 rows, not a million. counted, when not
// nil, is told how many rows were counted (the tests read it). It returns
// the driver's condition on rows f with its arguments; the query checks
// every field-index predicate on the driver's candidates' documents
// (jsonPredSQL: the same answer, each predicate on its own, as an array
// field needs). "": leave the query as it is (an equality or In on the
// id, whose candidates are the ids, or fewer than two field-index
// predicates).
func (s *Store) driver(ctx context.Context, where []store.Pred, vt, tx int64, first int) (string, []any, error) {
	type way struct {
		cond string
		args []any
		rows int
		pred int
	}
	var ways []way
	for i, p := range where {
		if p.Field == store.IDKey && (p.Op == store.Eq || p.Op == store.In) {
			return "", nil, nil
		}
		c, a := predSQL(p, vt, tx, s.indexed)
		if f := fieldsCandidates(c); f != "" {
			ways = append(ways, way{cond: f, args: a, pred: i})
		}
	}
	if len(ways) < 2 {
		return "", nil, nil
	}
	for bound := probeRows; ; bound *= 2 {
		if first >= 0 && bound > firstRows {
			for _, w := range ways {
				if w.pred == first {
					return w.cond, w.args, nil
				}
			}
			return ways[0].cond, ways[0].args, nil
		}
		best := -1
		for i := range ways {
			w := &ways[i]
			if err := s.r.GetContext(ctx, &w.rows, "SELECT count(*) FROM (SELECT 1 FROM fields f WHERE "+w.cond+fmt.Sprintf(" LIMIT %d)", bound), w.args...); err != nil {
				return "", nil, dbErr("query", "", err)
			}
			if s.counted != nil {
				s.counted.Add(int64(w.rows))
			}
			if w.rows < bound && (best < 0 || w.rows < ways[best].rows) {
				best = i
			}
		}
		if best >= 0 {
			return ways[best].cond, ways[best].args, nil
		}
	}
}

// whereSQL renders where as conditions on documents d (their candidates
// from the driver, when one is chosen) and keeps only the visible version
// of each entity at vt and tx. first is driver's: the predicate that
// drives an existence probe when every way is long, -1 for a query that
// reads every match.
func (s *Store) whereSQL(ctx context.Context, where []store.Pred, vt, tx int64, first int) ([]string, []any, error) {
	var conds []string
	var args []any
	driver, dargs, err := s.driver(ctx, where, vt, tx, first)
	if err != nil {
		return nil, nil, err
	}
	if driver != "" {
		conds, args = append(conds, fieldsPrefix+driver+")"), append(args, dargs...)
	}
	for _, p := range where {
		c, a := predSQL(p, vt, tx, s.indexed)
		if driver != "" && fieldsCandidates(c) != "" {
			c, a = jsonPredSQL(p, vt, tx) // checked on the driver's candidates
		}
		conds = append(conds, c)
		args = append(args, a...)
	}
	conds = append(conds, "d.id = "+fmt.Sprintf(visibleDocSQL, "d.ent"))
	args = append(args, vt, tx)
	return conds, args, nil
}

// projectedJSON assembles the JSON text of a projected result from the id
// and the chosen fields' JSON texts (NULL: the document lacks the field, so
// the result leaves it out).
func projectedJSON(eid string, find []string, vals []sql.NullString) string {
	var b strings.Builder
	id, _ := json.Marshal(eid)
	b.WriteString(`{"xt/id":`)
	b.Write(id)
	seen := map[string]bool{store.IDKey: true}
	for i, f := range find {
		if !vals[i].Valid || seen[f] {
			continue
		}
		seen[f] = true
		name, _ := json.Marshal(f)
		b.WriteByte(',')
		b.Write(name)
		b.WriteByte(':')
		b.WriteString(vals[i].String)
	}
	b.WriteByte('}')
	return b.String()
}

// predSQL renders one predicate as a condition on document d: through the
// field index if it holds the field, else on the document itself.
func predSQL(p store.Pred, vt, tx int64, indexed indexSet) (string, []any) {
	if p.Field == store.IDKey && (p.Op == store.Eq || p.Op == store.In) {
		return idPredSQL(p)
	}
	if p.Field == store.IDKey && idRangeOps[p.Op] != "" {
		return idRangeSQL(p)
	}
	// RefBy reads the referring entity's one visible document itself: the
	// field index is keyed by value (migration 00016), not by document.
	if !indexed.has(p.Field) || p.Op == store.RefBy {
		return jsonPredSQL(p, vt, tx)
	}
	if c, a, ok := longStringPredSQL(p, indexed); ok {
		return c, a
	}
	var cond string
	args := []any{p.Field}
	switch p.Op {
	case store.Exists:
		cond = "f.field = ?"
	case store.In:
		// One IN list per value kind: an OR per value would hit SQLite's
		// expression depth limit (1,000) on long lists.
		byKind := map[string][]any{}
		var kinds []string
		for _, v := range p.Values {
			kind, val := sqlValue(v)
			if _, ok := byKind[kind]; !ok {
				kinds = append(kinds, kind)
			}
			byKind[kind] = append(byKind[kind], val)
		}
		var alts []string
		for _, k := range kinds {
			vals := byKind[k]
			alts = append(alts, "(f.kind = ? AND f.value IN (?"+strings.Repeat(", ?", len(vals)-1)+"))")
			args = append(args, k)
			args = append(args, vals...)
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

// jsonValuesSQL selects, as rows j of json_each, the values of top-level
// field ? of document %s that fieldRows would index: the field's value, or
// each element of an array (an object's members, whose keys are text, are
// not values of the field; nulls, objects and arrays are filtered out by
// the caller's type test).
const jsonValuesSQL = "SELECT 1 FROM json_each(%s, ?) j WHERE typeof(j.key) <> 'text' AND "

// jsonTypes is the json_each type test of a field-index kind.
var jsonTypes = map[string]string{
	"s": "j.type = 'text'",
	"n": "j.type IN ('integer', 'real')",
	"b": "j.type IN ('true', 'false')",
}

// jsonPredSQL renders a predicate on a field the field index does not hold
// (indexSet) as a condition on the document itself, with the semantics
// of the index: a value of the predicate's JSON kind (strings with strings,
// numbers with numbers, booleans as 1 and 0), an array holding when an
// element does, strings compared whole and bytewise as in the index. Its
// candidates are those of the query's other predicates, or every visible
// document when none uses the index.
func jsonPredSQL(p store.Pred, vt, tx int64) (string, []any) {
	path := jsonPath(p.Field)
	if p.Op == store.RefBy {
		return "d.ent IN (SELECT e.id FROM docs r, json_each(ctxs_part(r.doc, ?, " + baseOf("r") + "), ?) j JOIN ents e ON e.h = " + idHashFunc + "(j.value) AND e.eid = j.value WHERE r.id = " +
				fmt.Sprintf(visibleDocSQL, entSQL) + " AND typeof(j.key) <> 'text' AND j.type = 'text')",
			[]any{p.Field, path, p.Value, vt, tx}
	}
	exists := "EXISTS (" + fmt.Sprintf(jsonValuesSQL, "ctxs_part(d.doc, ?, "+baseOf("d")+")")
	args := []any{p.Field, path}
	switch p.Op {
	case store.Exists:
		return exists + "j.type IN ('text', 'integer', 'real', 'true', 'false'))", args
	case store.In:
		byKind := map[string][]any{}
		var kinds []string
		for _, v := range p.Values {
			kind, val := jsonValue(v)
			if jsonTypes[kind] == "" {
				continue
			}
			if _, ok := byKind[kind]; !ok {
				kinds = append(kinds, kind)
			}
			byKind[kind] = append(byKind[kind], val)
		}
		if len(kinds) == 0 {
			return "0", nil
		}
		var alts []string
		for _, k := range kinds {
			vals := byKind[k]
			alts = append(alts, "("+jsonTypes[k]+" AND j.value IN (?"+strings.Repeat(", ?", len(vals)-1)+"))")
			args = append(args, vals...)
		}
		return exists + "(" + strings.Join(alts, " OR ") + "))", args
	}
	kind, val := jsonValue(p.Value)
	if jsonTypes[kind] == "" {
		return "0", nil
	}
	ops := map[store.PredOp]string{store.Eq: "=", store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}
	return exists + jsonTypes[kind] + " AND j.value " + ops[p.Op] + " ?)", append(args, val)
}

// jsonValue is sqlValue with strings whole, however long (the document
// holds them whole; the index cuts long ones to a prefix).
func jsonValue(v any) (string, any) {
	if s, ok := v.(string); ok {
		return "s", s
	}
	return sqlValue(v)
}

// idPredSQL renders an equality or In list on the entity id as a condition
// on docs.ent (its own index): the candidates are the ids' documents, found
// directly rather than through the field index. An id is always a string,
// so other values match nothing (and must not be compared with the text
// column, whose affinity would turn a number into text).
func idPredSQL(p store.Pred) (string, []any) {
	vals := p.Values
	if p.Op == store.Eq {
		vals = []any{p.Value}
	}
	var ids []any
	for _, v := range vals {
		if s, ok := v.(string); ok {
			ids = append(ids, s)
		}
	}
	if len(ids) == 0 {
		return "0", nil
	}
	list, _ := json.Marshal(ids) // strings only
	return "d.ent IN (SELECT e.id FROM json_each(?) x JOIN ents e ON e.h = " + idHashFunc + "(x.value) AND e.eid = x.value)", []any{string(list)}
}

// idRangeOps are the SQL comparisons of the range operators.
var idRangeOps = map[store.PredOp]string{store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}

// idRangeSQL renders a range predicate on the entity id as a comparison of
// the interned id (ents.eid, text compared bytewise, the order of the
// query's tie-break), not of the document's copy of it: a page after a
// key (POST /v1/query's cursor) decodes no document it leaves out. An id
// is always a string, so another value matches nothing.
func idRangeSQL(p store.Pred) (string, []any) {
	s, ok := p.Value.(string)
	if !ok {
		return "0", nil
	}
	return "(SELECT x.eid FROM ents x WHERE x.id = d.ent) " + idRangeOps[p.Op] + " ?", []any{s}
}

// sqlValue maps a scalar to its field-index kind and stored value.
func sqlValue(v any) (string, any) {
	rows := fieldRows(store.Doc{"v": v})
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].kind, rows[0].value
}

// baseOf is the stored form of the row docs row alias's delta is against
// (docs.base, migration 00011), NULL for every other row: the last
// argument of ctxs_doc and ctxs_part.
func baseOf(alias string) string {
	return "(SELECT b.doc FROM docs b WHERE b.id = " + alias + ".base)"
}

// jsonPath is the SQLite JSON path of a top-level key.
func jsonPath(field string) string {
	return `$."` + field + `"`
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// longStringPredSQL renders a predicate that can hold on strings indexed by
// prefix only (kind 'S', see stringField): an equality with a long string,
// an In list holding one, or an order comparison with a string, which a
// long value may satisfy whatever its prefix. Such candidates are checked
// against the document's own value (json_each gives the element of an
// array, or the value itself). ok is false for every other predicate,
// which the field index answers alone.
func longStringPredSQL(p store.Pred, indexed indexSet) (cond string, args []any, ok bool) {
	path := jsonPath(p.Field)
	short := func(op string, v any) (string, []any) {
		return "d.id IN (SELECT f.doc FROM fields f WHERE f.field = ? AND f.kind = 's' AND f.value " + op + " ?)", []any{p.Field, v}
	}
	long := func(op string, v string) (string, []any) {
		c := "(d.id IN (SELECT f.doc FROM fields f WHERE f.field = ? AND f.kind = 'S'%s) AND " +
			"EXISTS (SELECT 1 FROM json_each(ctxs_part(d.doc, ?, " + baseOf("d") + "), ?) j WHERE j.type = 'text' AND j.value " + op + " ?))"
		if op == "=" {
			return fmt.Sprintf(c, " AND f.value = ?"), []any{p.Field, prefixChars(v, longPrefixChars), p.Field, path, v}
		}
		return fmt.Sprintf(c, ""), []any{p.Field, p.Field, path, v}
	}
	switch p.Op {
	case store.Eq:
		if v, isStr := p.Value.(string); isStr && len(v) > longStringBytes {
			c, a := long("=", v)
			return c, a, true
		}
	case store.Lt, store.Lte, store.Gt, store.Gte:
		v, isStr := p.Value.(string)
		if !isStr {
			return "", nil, false
		}
		op := map[store.PredOp]string{store.Lt: "<", store.Lte: "<=", store.Gt: ">", store.Gte: ">="}[p.Op]
		c1, a1 := short(op, v)
		c2, a2 := long(op, v)
		return "(" + c1 + " OR " + c2 + ")", append(a1, a2...), true
	case store.In:
		var rest []any
		var alts []string
		for _, v := range p.Values {
			if s, isStr := v.(string); isStr && len(s) > longStringBytes {
				c, a := long("=", s)
				alts = append(alts, c)
				args = append(args, a...)
				continue
			}
			rest = append(rest, v)
		}
		if len(alts) == 0 {
			return "", nil, false
		}
		if len(rest) > 0 {
			c, a := predSQL(store.Pred{Field: p.Field, Op: store.In, Values: rest}, 0, 0, indexed)
			alts = append(alts, c)
			args = append(args, a...)
		}
		return "(" + strings.Join(alts, " OR ") + ")", args, true
	}
	return "", nil, false
}

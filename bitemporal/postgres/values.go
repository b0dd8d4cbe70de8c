package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

// valueFields are the fields whose string values an index holds in
// bytewise order (migration 00003): Values walks it for them.
var valueFields = map[string]bool{"session": true, "session_id": true}

// Values implements store.ValueLister. For a field of valueFields it walks
// the field's value index: the next string value after the last one
// listed (one index seek), kept when a visible document matching q holds
// it (a query stopping at the first such document), until limit are
// listed; its cost follows the distinct values, not the versions holding
// them. Any other field, a field some document holds as an array (whose
// elements the index does not hold), or a value holding U+FFFD (the jsonb
// copy's stand-in for U+0000) is answered by store.ValuesByQuery, from
// every matching document.
func (s *Store) Values(ctx context.Context, q store.Query, field, after string, limit int) ([]string, error) {
	return retry(ctx, func() ([]string, error) { return s.values(ctx, q, field, after, limit) })
}

func (s *Store) values(ctx context.Context, q store.Query, field, after string, limit int) ([]string, error) {
	probe := q
	probe.Find, probe.OrderBy, probe.Limit = []string{field}, nil, 0
	if err := probe.Validate(); err != nil {
		return nil, err
	}
	if !valueFields[field] {
		return store.ValuesByQuery(ctx, s, q, field, after, limit)
	}
	lit := "'" + field + "'" // a name of valueFields: no quote to escape
	var arrays bool
	if err := s.db.GetContext(ctx, &arrays, "SELECT EXISTS (SELECT 1 FROM docs WHERE jsonb_typeof(doc -> "+lit+") = 'array')"); err != nil {
		return nil, dbErr("values", "", err)
	}
	if arrays {
		return store.ValuesByQuery(ctx, s, q, field, after, limit)
	}
	vt, tx, err := s.resolve(ctx, "values", q.Basis)
	if err != nil {
		return nil, err
	}
	value := "(d.doc ->> " + lit + ") COLLATE \"C\""
	isString := "jsonb_typeof(d.doc -> " + lit + ") = 'string'"
	var out []string
	for limit <= 0 || len(out) < limit {
		var v string
		err := s.db.GetContext(ctx, &v, "SELECT "+value+" FROM docs d WHERE "+isString+" AND "+value+" > $1 ORDER BY 1 LIMIT 1", after)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, dbErr("values", "", err)
		}
		if strings.ContainsRune(v, '\uFFFD') {
			return store.ValuesByQuery(ctx, s, q, field, after, limit)
		}
		after = v
		var args sqlArgs
		vtP, txP := args.add(vt), args.add(tx)
		visible := func(ent string) string {
			return "(SELECT v.doc FROM points v WHERE v.ent = " + ent + " AND v.vt <= " + vtP + " AND v.tx_id <= " + txP + " ORDER BY v.vt DESC, v.tx_id DESC LIMIT 1)"
		}
		conds := []string{isString, value + " = " + args.add(v) + "::text COLLATE \"C\""}
		for _, p := range q.Where {
			conds = append(conds, predSQL(p, &args, visible))
		}
		conds = append(conds, "d.id = "+visible("d.ent"))
		var one int
		err = s.db.GetContext(ctx, &one, "SELECT 1 FROM docs d WHERE "+strings.Join(conds, " AND ")+" LIMIT 1", args...)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, dbErr("values", "", err)
		}
		out = append(out, v)
	}
	return out, nil
}

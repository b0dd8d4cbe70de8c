package xtdb

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

// Values implements store.ValueLister with one Datalog query that finds
// the distinct strings the field holds (an array's elements each, as XTDB
// binds them) among the entities q matches at its basis: the server
// answers a set of values, not a document per entity, so listing the
// sessions of a store whose one session has 500,000 commits sends back
// one string, not 500,000 projections. XTDB still walks the matching
// entities inside its engine (it has no index this could seek in from
// outside it). The values are ordered, cut past after and to limit here,
// bytewise, as the contract says (XTDB compares strings by UTF-16 code
// units).
func (s *Store) Values(ctx context.Context, q store.Query, field, after string, limit int) ([]string, error) {
	probe := q
	probe.Find, probe.OrderBy, probe.Limit = []string{field}, nil, 0
	if err := probe.Validate(); err != nil {
		return nil, err
	}
	if q.Basis.TxID != nil && *q.Basis.TxID < 0 {
		return nil, nil
	}
	where, _, err := datalogWhere(q.Where)
	if err != nil {
		return nil, &store.Error{Op: "values", Kind: store.ErrInvalid, Err: err}
	}
	where = append(where, fmt.Sprintf("[e %s fv] [(string? fv)]", ednKeyword(field)))
	body := "{:query {:find [fv] :where [" + strings.Join(where, " ") + "]}}"
	v, err := s.readEDN(ctx, request{op: "values", method: http.MethodPost, path: "/query",
		query: basisParams(nil, q.Basis), body: []byte(body), ctype: "application/edn"})
	if err != nil {
		return nil, err
	}
	rows, ok := v.([]any)
	if !ok && v != nil {
		return nil, store.Errorf("values", store.ErrUnavailable, "", fmt.Sprintf("unexpected answer %T", v))
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		tuple, ok := r.([]any)
		if !ok || len(tuple) != 1 {
			return nil, store.Errorf("values", store.ErrUnavailable, "", "unexpected result row")
		}
		if str, ok := tuple[0].(string); ok && str > after && !seen[str] {
			seen[str] = true
			out = append(out, str)
		}
	}
	slices.Sort(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

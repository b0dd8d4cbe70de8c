package storetest

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/ctxstore/ctxstore/store"
)

// MatchDoc reports whether doc satisfies every predicate, with the
// portable query's element-wise semantics. at returns the document of an
// id at the query's basis (nil if absent), for RefBy.
func MatchDoc(doc store.Doc, where []store.Pred, at func(string) store.Doc) bool {
	for _, p := range where {
		if !matchPred(doc, p, at) {
			return false
		}
	}
	return true
}

func matchPred(doc store.Doc, p store.Pred, at func(string) store.Doc) bool {
	if p.Op == store.RefBy {
		src := at(p.Value.(string))
		if src == nil {
			return false
		}
		id, _ := doc[store.IDKey].(string)
		for _, v := range Elements(src[p.Field]) {
			if s, ok := v.(string); ok && s == id {
				return true
			}
		}
		return false
	}
	for _, v := range Elements(doc[p.Field]) {
		switch p.Op {
		case store.Exists:
			return true
		case store.In:
			for _, w := range p.Values {
				if c, ok := Compare(v, w); ok && c == 0 {
					return true
				}
			}
		default:
			c, ok := Compare(v, p.Value)
			if !ok {
				continue
			}
			if (p.Op == store.Eq && c == 0) || (p.Op == store.Lt && c < 0) || (p.Op == store.Lte && c <= 0) ||
				(p.Op == store.Gt && c > 0) || (p.Op == store.Gte && c >= 0) {
				return true
			}
		}
	}
	return false
}

// Elements returns the scalar values a field holds: the value itself, or
// the scalar elements of an array. Null, objects and nested arrays are not
// scalars.
func Elements(v any) []any {
	switch x := v.(type) {
	case []any:
		var out []any
		for _, e := range x {
			if IsScalar(e) {
				out = append(out, e)
			}
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	if IsScalar(v) {
		return []any{v}
	}
	return nil
}

// IsScalar reports whether v is a string, number or boolean.
func IsScalar(v any) bool {
	switch v.(type) {
	case string, bool, json.Number, float64, float32, int, int64, int32:
		return true
	}
	return false
}

// Compare orders two scalars of the same JSON type; ok is false for values
// of different types.
func Compare(a, b any) (c int, ok bool) {
	if fa, isNum := Num(a); isNum {
		fb, isNum := Num(b)
		if !isNum {
			return 0, false
		}
		return cmp.Compare(fa, fb), true
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return cmp.Compare(x, y), true
	case bool:
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		if x == y {
			return 0, true
		}
		if !x {
			return -1, true
		}
		return 1, true
	}
	return 0, false
}

// Num returns v as a float64 if it is a number (see store.Num).
func Num(v any) (float64, bool) { return store.Num(v) }

// FinishQuery orders, cuts and projects matching documents the way every
// backend must: documents lacking a scalar order field are dropped, then
// order keys, then id ascending; Limit; then Find projection.
func FinishQuery(docs []store.Doc, q store.Query) []store.Doc {
	docs = slices.DeleteFunc(docs, func(d store.Doc) bool {
		for _, o := range q.OrderBy {
			if !IsScalar(d[o.Field]) {
				return true
			}
		}
		return false
	})
	slices.SortFunc(docs, func(a, b store.Doc) int {
		for _, o := range q.OrderBy {
			c, _ := Compare(a[o.Field], b[o.Field])
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Compare(a[store.IDKey].(string), b[store.IDKey].(string))
	})
	if q.Limit > 0 && len(docs) > q.Limit {
		docs = docs[:q.Limit]
	}
	if len(q.Find) == 0 {
		return docs
	}
	out := make([]store.Doc, len(docs))
	for i, d := range docs {
		p := store.Doc{store.IDKey: d[store.IDKey]}
		for _, f := range q.Find {
			if v, ok := d[f]; ok {
				p[f] = v
			}
		}
		out[i] = p
	}
	return out
}

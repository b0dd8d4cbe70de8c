package store

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Query is the portable query both backends run natively: XTDB as Datalog,
// SQLite as SQL over an index of the top-level fields queries filter on
// (a predicate on another field is evaluated on the document: the answer is
// the same, only slower when no predicate of the query uses the index).
//
// A document matches when every predicate holds. A predicate on a field
// whose value is an array holds when it holds for any element (XTDB's
// attribute semantics), so an equality predicate on a field of ids finds
// back-links. Results are a set of documents (no duplicates), ordered by
// OrderBy and then by id, cut to Limit.
type Query struct {
	Where []Pred `json:"where,omitempty"`
	// Find lists the top-level fields to return; empty returns whole
	// documents. "xt/id" is always returned. Fields a document lacks are left
	// out of its result.
	Find []string `json:"find,omitempty"`
	// OrderBy sorts results; a document lacking an order field (or holding a
	// non-scalar value there) is not returned. The id is always the final
	// tie-break.
	OrderBy []Order `json:"order_by,omitempty"`
	// Limit caps the number of results; 0 means no limit.
	Limit int   `json:"limit,omitempty"`
	Basis Basis `json:"-"`
}

// PredOp is a predicate operator.
type PredOp string

// Predicate operators. Comparisons hold only between values of the same
// JSON type (numbers with numbers, strings with strings). Numbers compare
// by value as JSON numbers: whole and fractional numbers are one type, so
// 1 < 1.5 < 2, 2 equals 2.0, and a fractional bound finds whole values
// (n < 1.5 holds for 1) on every backend, whatever types the backend keeps
// numbers in. Strings compare bytewise (UTF-8).
const (
	Eq     PredOp = "eq"     // field equals Value (or an element does)
	In     PredOp = "in"     // field equals one of Values
	Lt     PredOp = "lt"     // field < Value
	Lte    PredOp = "lte"    // field <= Value
	Gt     PredOp = "gt"     // field > Value
	Gte    PredOp = "gte"    // field >= Value
	Exists PredOp = "exists" // field is present with a non-null scalar value
	// RefBy holds for documents whose id is among the values of field Field
	// of the document with id Value (forward reference traversal). Eq on a
	// reference field is the reverse (back-links).
	RefBy PredOp = "ref_by"
)

// Pred is one predicate of a query.
type Pred struct {
	Field  string `json:"field"`
	Op     PredOp `json:"op"`
	Value  any    `json:"value,omitempty"`
	Values []any  `json:"values,omitempty"`
}

// Order is one sort key.
type Order struct {
	Field string `json:"field"`
	Desc  bool   `json:"desc,omitempty"`
}

// Where builds an equality predicate, the common case.
func Where(field string, value any) Pred { return Pred{Field: field, Op: Eq, Value: value} }

// Validate checks q and returns an error wrapping ErrInvalid naming the
// predicate or field at fault.
func (q Query) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &Error{Op: "query", Kind: ErrInvalid, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for i, p := range q.Where {
		if err := validField(p.Field); err != nil {
			return bad(p.Field, "where[%d]: %v", i, err)
		}
		switch p.Op {
		case Eq, Lt, Lte, Gt, Gte:
			if err := scalar(p.Value); err != nil {
				return bad(p.Field, "where[%d] %s: %v", i, p.Op, err)
			}
			if p.Op != Eq {
				if _, ok := p.Value.(bool); ok {
					return bad(p.Field, "where[%d] %s: booleans are not ordered", i, p.Op)
				}
			}
		case In:
			if len(p.Values) == 0 {
				return bad(p.Field, "where[%d] in: needs at least one value", i)
			}
			for _, v := range p.Values {
				if err := scalar(v); err != nil {
					return bad(p.Field, "where[%d] in: %v", i, err)
				}
			}
		case Exists:
		case RefBy:
			if s, ok := p.Value.(string); !ok || s == "" {
				return bad(p.Field, "where[%d] ref_by: value must be the referring document's id", i)
			}
		default:
			return bad(p.Field, "where[%d]: unknown operator %q", i, p.Op)
		}
	}
	for _, f := range q.Find {
		if err := validField(f); err != nil {
			return bad(f, "find: %v", err)
		}
	}
	for _, o := range q.OrderBy {
		if err := validField(o.Field); err != nil {
			return bad(o.Field, "order_by: %v", err)
		}
	}
	if q.Limit < 0 {
		return bad("limit", "limit must not be negative")
	}
	return nil
}

func validField(f string) error {
	if f == "" {
		return fmt.Errorf("empty field name")
	}
	if strings.ContainsAny(f, " \t\n\"\\()[]{}") {
		return fmt.Errorf("field name %q holds a character fields cannot have", f)
	}
	return nil
}

func scalar(v any) error {
	switch x := v.(type) {
	case string, bool, float64, int, int64:
		return nil
	case json.Number:
		if _, err := x.Float64(); err != nil {
			return fmt.Errorf("value %s is not a number", x)
		}
		return nil
	case nil:
		return fmt.Errorf("value is missing (null never matches; use exists)")
	}
	return fmt.Errorf("value of type %T is not a string, number or boolean", v)
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

type queryCmd struct {
	Where []string `name:"where" short:"w" sep:"none" placeholder:"PRED" help:"Predicate, repeatable (all must hold): FIELD=VALUE, FIELD<VALUE, FIELD<=VALUE, FIELD>VALUE, FIELD>=VALUE, FIELD? (exists), FIELD@=ID (documents that document ID references in FIELD). VALUE is JSON if it parses, else a string; a JSON array after = matches any of its values."`
	Find  []string `name:"find" placeholder:"FIELDS" help:"Comma-separated fields to return (xt/id is always returned); default: whole documents."`
	Order []string `name:"order" placeholder:"FIELD[:desc]" help:"Sort key, repeatable or comma-separated; :asc (default) or :desc."`
	Limit int      `name:"limit" placeholder:"N" help:"Return at most N documents (0: no limit)."`
	File  string   `name:"file" placeholder:"FILE" help:"Read the query from a JSON file (- for stdin) in the store.Query form; excludes --where, --find, --order and --limit."`
	basisFlags
}

// Run implements query.
func (c *queryCmd) Run(a *app) error {
	q, err := c.query(a)
	if err != nil {
		return err
	}
	q.Basis = c.basis()
	if err := q.Validate(); err != nil {
		return err
	}
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	docs, err := s.Query(a.ctx, q)
	if err != nil {
		return err
	}
	if a.cli.JSON {
		out := make([]jsonDoc, len(docs))
		for i, d := range docs {
			out[i] = jsonDoc(d)
		}
		return a.printJSON(out)
	}
	if len(docs) == 0 {
		fmt.Fprintln(a.stderr, "ctxstore: no documents match")
		return nil
	}
	if len(q.Find) == 0 {
		for _, d := range docs {
			text, err := docText(d, false)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, text)
		}
		return nil
	}
	cols := []string{store.IDKey}
	for _, f := range q.Find {
		if f != store.IDKey {
			cols = append(cols, f)
		}
	}
	header := make([]any, len(cols))
	for i, f := range cols {
		header[i] = f
	}
	t := newTable(a.stdout, header...)
	for _, d := range docs {
		cells := make([]any, len(cols))
		for i, f := range cols {
			cells[i] = "-"
			if v, ok := d[f]; ok {
				cells[i] = valueText(v)
			}
		}
		t.row(cells...)
	}
	return t.flush()
}

// query builds the query from --file or from the flags.
func (c *queryCmd) query(a *app) (store.Query, error) {
	if c.Limit < 0 {
		return store.Query{}, usagef("--limit %d: must not be negative", c.Limit)
	}
	if c.File != "" {
		if len(c.Where) > 0 || len(c.Find) > 0 || len(c.Order) > 0 || c.Limit != 0 {
			return store.Query{}, usagef("--file cannot be combined with --where, --find, --order or --limit")
		}
		name, data, err := a.readInput(c.File)
		if err != nil {
			return store.Query{}, err
		}
		return decodeQuery(name, data)
	}
	q := store.Query{Limit: c.Limit}
	for _, w := range c.Where {
		p, err := parseWhere(w)
		if err != nil {
			return q, err
		}
		q.Where = append(q.Where, p)
	}
	for _, f := range c.Find {
		if f = strings.TrimSpace(f); f != "" {
			q.Find = append(q.Find, f)
		}
	}
	for _, o := range c.Order {
		ord, err := parseOrder(o)
		if err != nil {
			return q, err
		}
		q.OrderBy = append(q.OrderBy, ord)
	}
	return q, nil
}

// decodeQuery reads the JSON form of store.Query; unknown keys are errors.
func decodeQuery(name string, data []byte) (store.Query, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var q store.Query
	if err := dec.Decode(&q); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return q, fmt.Errorf("%s:%d: malformed query JSON: %v", name, lineOf(data, se.Offset), err)
		}
		return q, fmt.Errorf("%s: bad query: %v", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return q, fmt.Errorf("%s: bad query: data after the query object", name)
	}
	return q, nil
}

// whereOps are the operators of --where, longest first so "<=" wins over "<".
var whereOps = []struct {
	text string
	op   store.PredOp
}{
	{"<=", store.Lte}, {">=", store.Gte}, {"@=", store.RefBy},
	{"<", store.Lt}, {">", store.Gt}, {"=", store.Eq}, {"?", store.Exists},
}

const whereForms = "want FIELD=VALUE, FIELD<VALUE, FIELD<=VALUE, FIELD>VALUE, FIELD>=VALUE, FIELD? or FIELD@=ID"

// parseWhere parses one --where predicate. The field is everything before
// the first of the characters < > = ? @.
func parseWhere(s string) (store.Pred, error) {
	i := strings.IndexAny(s, "<>=?@")
	if i <= 0 {
		return store.Pred{}, usagef("--where %q: %s", s, whereForms)
	}
	field, rest := s[:i], s[i:]
	if strings.HasSuffix(field, "!") {
		return store.Pred{}, usagef("--where %q: there is no not-equal operator", s)
	}
	for _, w := range whereOps {
		if !strings.HasPrefix(rest, w.text) {
			continue
		}
		raw := rest[len(w.text):]
		p := store.Pred{Field: field, Op: w.op}
		switch w.op {
		case store.Exists:
			if raw != "" {
				return store.Pred{}, usagef("--where %q: FIELD? takes no value", s)
			}
			return p, nil
		case store.RefBy:
			p.Value = raw
			if v, err := jsonValue(raw); err == nil {
				if str, ok := v.(string); ok {
					p.Value = str
				}
			}
			if p.Value == "" {
				return store.Pred{}, usagef("--where %q: FIELD@=ID needs an id", s)
			}
			return p, nil
		}
		v, err := jsonValue(raw)
		if err != nil && (strings.HasPrefix(raw, "[") || strings.HasPrefix(raw, "{")) {
			// It looks like a list or an object but is not JSON (tags=[a,b]):
			// taken as text it would silently match nothing.
			return store.Pred{}, usagef("--where %q: %s is not valid JSON (%v); quote the strings of a list: %s=[\"a\",\"b\"]", s, raw, err, field)
		}
		if err != nil { // not JSON: the text itself
			p.Value = raw
			return p, nil
		}
		switch x := v.(type) {
		case nil:
			return store.Pred{}, usagef("--where %q: null never matches; use %s? to test presence", s, field)
		case map[string]any:
			return store.Pred{}, usagef("--where %q: objects cannot be compared; give a string, number or boolean", s)
		case []any:
			if w.op != store.Eq {
				return store.Pred{}, usagef("--where %q: a list of values needs =", s)
			}
			if len(x) == 0 {
				return store.Pred{}, usagef("--where %q: the list of values is empty", s)
			}
			p.Op, p.Values = store.In, x
			return p, nil
		}
		p.Value = v
		return p, nil
	}
	return store.Pred{}, usagef("--where %q: %s", s, whereForms)
}

// jsonValue decodes s as one JSON value, numbers as json.Number.
func jsonValue(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// parseOrder parses FIELD, FIELD:asc or FIELD:desc.
func parseOrder(s string) (store.Order, error) {
	s = strings.TrimSpace(s)
	field, dir := s, ""
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		switch strings.ToLower(s[i+1:]) {
		case "asc", "desc":
			field, dir = s[:i], strings.ToLower(s[i+1:])
		}
	}
	if field == "" {
		return store.Order{}, usagef("--order %q: want FIELD, FIELD:asc or FIELD:desc", s)
	}
	return store.Order{Field: field, Desc: dir == "desc"}, nil
}

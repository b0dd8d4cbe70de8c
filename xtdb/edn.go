package xtdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"olympos.io/encoding/edn"

	"github.com/ctxstore/ctxstore/store"
)

// ednString renders s as an EDN string literal that the Clojure reader
// reads back exactly: quote, backslash and every control character are
// escaped; everything else is written as UTF-8.
func ednString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ednScalar renders a query value: a string, a number or a boolean.
func ednScalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return ednString(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return "", err
		}
		return formatNum(f), nil
	case float64:
		return formatNum(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", fmt.Errorf("%T is not a query value", v)
}

// formatNum writes a query's number as the type a document's number of
// the same value is stored as (writeEDNValue): a long if whole within
// ±2^53, else a double. XTDB compares a literal only with values of its
// type in an index lookup ([(== v 2)] misses 2.0).
func formatNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return ednDouble(f)
}

// ednKeyword renders a document field name as a keyword.
func ednKeyword(field string) string { return ":" + field }

// decodeEDN parses an EDN response body.
func decodeEDN(body []byte) (any, error) {
	v, err := readEDN(body)
	if err != nil {
		return nil, fmt.Errorf("decoding EDN response: %w", err)
	}
	return v, nil
}

// ednMap returns v as a map keyed by keyword or string names.
func ednMap(v any) (map[string]any, bool) {
	m, ok := v.(map[any]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[keyName(k)] = e
	}
	return out, true
}

func keyName(k any) string {
	switch x := k.(type) {
	case edn.Keyword:
		return string(x)
	case string:
		return x
	case edn.Symbol:
		return string(x)
	}
	return fmt.Sprint(k)
}

// ednDoc converts an EDN document to a JSON-shaped store.Doc.
func ednDoc(v any) (store.Doc, error) {
	m, ok := v.(map[any]any)
	if !ok {
		return nil, fmt.Errorf("document is %T, not a map", v)
	}
	out := make(store.Doc, len(m))
	for k, e := range m {
		j, err := ednJSON(e)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", keyName(k), err)
		}
		out[keyName(k)] = j
	}
	return out, nil
}

func ednJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case edn.Keyword:
		return string(x), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case *big.Int:
		return json.Number(x.String()), nil
	case big.Int:
		return json.Number(x.String()), nil
	case *big.Float:
		return json.Number(x.Text('g', -1)), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			j, err := ednJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	case map[any]any:
		return ednDoc(x)
	case time.Time:
		return store.FormatTime(x), nil
	}
	return nil, fmt.Errorf("unsupported EDN value %T", v)
}

// ednTime reads an #inst value.
func ednTime(v any) (time.Time, error) {
	t, ok := v.(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("expected #inst, got %T", v)
	}
	return store.MS(t), nil
}

// ednInt reads an integer.
func ednInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	}
	return 0, fmt.Errorf("expected an integer, got %T", v)
}

// ednHash reads a #xtdb/id content hash; "" for the all-zero tombstone
// hash or nil.
func ednHash(v any) string {
	var s string
	switch x := v.(type) {
	case edn.Tag:
		s, _ = x.Value.(string)
	case string:
		s = x
	}
	if strings.Trim(s, "0") == "" {
		return ""
	}
	return s
}

// ednKeywordName reports whether name can be written as an EDN keyword
// that the Clojure reader reads back as (keyword name): the keyword a JSON
// key becomes in XTDB. Conservative: no white space, delimiters, reader
// macro characters or leading digit; at most one '/' between a non-empty
// namespace and name; no "::" and no trailing ':'.
func ednKeywordName(name string) bool {
	if name == "" || strings.HasSuffix(name, ":") || strings.Contains(name, "::") || strings.HasPrefix(name, ":") {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || unicode.IsSpace(r) {
			return false
		}
		if strings.ContainsRune("\"';@^`~()[]{}\\,#%", r) {
			return false
		}
	}
	ns, nm, hasNS := strings.Cut(name, "/")
	if !hasNS {
		return !startsNumeric(name)
	}
	return ns != "" && nm != "" && !strings.Contains(nm, "/") && !startsNumeric(ns) && !startsNumeric(nm)
}

// startsNumeric reports whether s would read as a number (a digit, or a
// sign then a digit).
func startsNumeric(s string) bool {
	if s[0] >= '0' && s[0] <= '9' {
		return true
	}
	return len(s) > 1 && (s[0] == '+' || s[0] == '-') && s[1] >= '0' && s[1] <= '9'
}

// writeEDNValue writes a JSON-shaped value as EDN as XTDB's JSON reader
// would have built it: object keys as keywords (as strings when no keyword
// literal can spell them), arrays as vectors,
// integers as longs (every integer, where XTDB 1.24.5's JSON reader makes
// small ones java.lang.Integer and so changes content hashes), other
// numbers as doubles.
func writeEDNValue(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("nil")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(ednString(x))
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			f, err := x.Float64()
			if err != nil {
				return err
			}
			b.WriteString(ednDouble(f))
		} else {
			if _, err := strconv.ParseInt(s, 10, 64); err != nil {
				return fmt.Errorf("integer %s does not fit in 64 bits", s)
			}
			b.WriteString(s)
		}
	case float64:
		b.WriteString(jsonFloat(x))
	case float32:
		b.WriteString(jsonFloat(float64(x)))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case uint32:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case []string:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(ednString(e))
		}
		b.WriteByte(']')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(' ')
			}
			if err := writeEDNValue(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		return writeEDNMap(b, x)
	default:
		// Anything else is written as its JSON form, as the JSON path did.
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var j any
		if err := d.Decode(&j); err != nil {
			return err
		}
		return writeEDNValue(b, j)
	}
	return nil
}

func writeEDNMap(b *strings.Builder, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		if ednKeywordName(k) {
			b.WriteByte(':')
			b.WriteString(k)
		} else {
			// No keyword literal spells it: a string key, the same in
			// every write of the document (docs/xtdb.md).
			b.WriteString(ednString(k))
		}
		b.WriteByte(' ')
		if err := writeEDNValue(b, m[k]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// jsonFloat writes a Go float as the number encoding/json would send: an
// integral value within 2^53 as an integer (XTDB stored it as one), else a
// double.
func jsonFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return ednDouble(f)
}

// ednDouble writes f so that the reader reads a double.
func ednDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") { // "n": NaN/Inf are refused by ValidateDoc
		s += ".0"
	}
	return s
}

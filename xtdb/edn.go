package xtdb

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

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

func formatNum(f float64) string {
	if f == float64(int64(f)) && f < 1e15 && f > -1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
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
